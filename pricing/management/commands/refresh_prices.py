"""`python manage.py refresh_prices [--feed NAME | --accept-smaller FEED]`: run feeds now, in this process, with a
progress bar; NAME is a feed or one SkyPilot cloud (`skypilot:vast`). `--accept-smaller FEED` refreshes that one
feed (or SkyPilot cloud) and accepts its catalog once even when it is below PRICING_MIN_FRACTION_OF_LAST_RUN of the
last successful refresh (a catalog or a region list that shrank for good); a run with no valid offers is still
refused."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.db import DatabaseError

from core.exitcodes import INVALID_INPUT
from pricing.feeds import FEED_NAMES, UnknownFeed, UnknownFeedPart, feed_units, refreshable
from pricing.models import FeedRun
from pricing.services import database_error_text, feed_refresh

BAR_WIDTH = 30


class ProgressBar:
    """Redraws one line on a terminal; prints a line per change of note elsewhere (logs, CI)."""

    def __init__(self, stream: OutputWrapper, label: str) -> None:
        self.stream = stream
        self.label = label
        self.tty = stream.isatty()
        self.last_note = ""

    def __call__(self, done: int, total: int, note: str) -> None:
        if total:
            filled = min(BAR_WIDTH, BAR_WIDTH * done // total)
            bar = f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {100 * done // total:3d}%"
        else:
            bar = f"[{'.' * (done % BAR_WIDTH):<{BAR_WIDTH}}] {done:>4}"
        line = f"{self.label:<9} {bar} {note}"
        if self.tty:
            self.stream.write("\r" + line[:120].ljust(120), ending="")
            self.stream.flush()
        elif note != self.last_note:
            self.stream.write(line)
        self.last_note = note

    def close(self) -> None:
        if self.tty:
            self.stream.write("")


class Command(BaseCommand):
    help = "Fetch cloud GPU prices now. A failing feed keeps its previous offers; the summary says why."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--feed",
            metavar="FEED",
            help=f"one feed ({', '.join(FEED_NAMES)}) or one SkyPilot cloud (skypilot:<cloud>, e.g. skypilot:vast); "
            "default: all",
        )
        parser.add_argument(
            "--accept-smaller",
            metavar="FEED",
            help="refresh this one feed (e.g. aws, skypilot:vast) and accept its catalog once although it is "
            "smaller than PRICING_MIN_FRACTION_OF_LAST_RUN of the last successful refresh",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        accept_smaller = options["accept_smaller"]
        names = [self._known("--feed", options["feed"])] if options["feed"] is not None else list(FEED_NAMES)
        if accept_smaller is not None:  # '' too: an empty name refreshed every feed (a hostile probe)
            if options["feed"]:
                raise CommandError("--accept-smaller FEED names the one feed to refresh; leave out --feed")
            names = [self._one_feed(accept_smaller)]
        failed = []
        for name in names:
            bar = ProgressBar(self.stdout, name)
            for unit in feed_units(name):  # a group (skypilot): one run per cloud, each on its own
                try:
                    run = feed_refresh(name=unit, progress=bar, accept_smaller=accept_smaller is not None)
                except DatabaseError as error:  # the run says so where it could be saved; the offers were kept
                    bar.close()
                    self.stdout.write(self.style.ERROR(f"{unit}: Failed - {database_error_text(error)}"))
                    failed.append(unit)
                    continue
                bar.close()
                self.stdout.write(self._summary(run))
                if run.status in (FeedRun.Status.FAILED, FeedRun.Status.REJECTED):
                    failed.append(run.feed)
        if failed:
            raise CommandError(f"{len(failed)} feed(s) did not refresh: {', '.join(failed)} (previous offers kept)")

    @staticmethod
    def _known(option: str, name: str) -> str:
        """`name` when it names a feed or a part of one (`skypilot:<cloud>`, as README and /api/v1/feeds name them);
        else exit 2 naming the option and the known names."""
        try:
            refreshable(name)
            feed_units(name)
        except (UnknownFeed, UnknownFeedPart) as error:
            raise CommandError(f"{option}: {error.args[0]}", returncode=INVALID_INPUT) from error
        return name

    def _one_feed(self, name: str) -> str:
        """`name` when it is one refreshable feed or part; a group would accept every part's size at once."""
        units = feed_units(self._known("--accept-smaller", name))
        if units != [name]:
            raise CommandError(f"--accept-smaller takes one feed; {name} is refreshed as {', '.join(units)}")
        return name

    def _summary(self, run: FeedRun) -> str:
        text = f"{run.feed}: {run.get_status_display()}"
        if run.status == FeedRun.Status.SUCCESS:
            text += (
                f": {run.fetched} fetched, {run.accepted} accepted, {run.rejected} rejected; "
                f"{run.created} new, {run.changed} changed, {run.unchanged} unchanged, {run.withdrawn} withdrawn"
            )
            style = self.style.SUCCESS
        elif run.status in (FeedRun.Status.NOT_CONFIGURED, FeedRun.Status.SKIPPED):
            style = self.style.WARNING
        else:
            style = self.style.ERROR
        if run.rejections:
            reasons = ", ".join(f"{reason} x{entry['count']}" for reason, entry in run.rejections.items())
            text += f" [rejected: {reasons}]"
        if run.error:
            text += f" - {run.error}"
        return style(text)
