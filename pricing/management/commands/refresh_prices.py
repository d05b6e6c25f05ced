"""`python manage.py refresh_prices [--feed NAME]`: run feeds now, in this process, with a progress bar."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper

from pricing.feeds import FEED_NAMES
from pricing.models import FeedRun
from pricing.services import feeds_refresh

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
        parser.add_argument("--feed", choices=FEED_NAMES, help="one feed (default: all)")

    def handle(self, *args: Any, **options: Any) -> None:
        names = [options["feed"]] if options["feed"] else list(FEED_NAMES)
        failed = []
        for name in names:
            bar = ProgressBar(self.stdout, name)
            for run in feeds_refresh(name=name, progress=bar):  # a group (skypilot): one run per cloud
                bar.close()
                self.stdout.write(self._summary(run))
                if run.status in (FeedRun.Status.FAILED, FeedRun.Status.REJECTED):
                    failed.append(run.feed)
        if failed:
            raise CommandError(f"{len(failed)} feed(s) did not refresh: {', '.join(failed)} (previous offers kept)")

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
