"""`python manage.py import_prices --feed NAME [--cloud C] [--observed-at WHEN] FILE...`: offers from provider payloads
saved to files. Every record counts as observed at --observed-at (when the payload was captured) when it is given, over
any date the adapter infers from the file (a SkyPilot CSV states none, so it is dated by the file's modification time:
a copy made today is today's); without it a record keeps that date, else counts as observed now: a month-old payload
imported without it shows as fresh live prices.

The same adapter, validation and ingest as a refresh; prints one JSON summary:
{"accepted": n, "rejected": {reason: n}, "offers": [{provider, instance, region, market, gpu,
gpu_count, usd_per_gpu_hour}]}. Exit status 2 naming the file on unreadable input or a database error (one
line; nothing stored), and 2 after the summary when no record was accepted (an import that stored nothing is
not a success to a cron job or a script).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError
from django.utils import timezone

from core.exitcodes import INVALID_INPUT
from pricing.api.selectors import HISTORY_EARLIEST
from pricing.feeds import FEED_NAMES, UnknownFeed, UnknownFeedPart
from pricing.feeds.base import FeedError, FeedFileError
from pricing.services import ImportResult, database_error_text, feed_import


class Command(BaseCommand):
    help = "Import cloud GPU prices from provider payloads saved to files (air-gapped sites, negotiated price sheets)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--feed", choices=FEED_NAMES, required=True, help="the adapter that reads the files")
        parser.add_argument("--cloud", help="the SkyPilot cloud the catalog CSVs are for (skypilot only)")
        parser.add_argument(
            "--observed-at",
            type=observed_at,
            metavar="WHEN",
            help="when the payload was captured, an ISO 8601 date-time (e.g. 2026-11-05T14:00:00Z; no zone means "
            "UTC), from 2010-11-01 (pricing.api.selectors.HISTORY_EARLIEST) to now; it dates every offer imported, "
            "over a SkyPilot CSV's file modification time (a copy made today is dated today). Default: that "
            "modification time for SkyPilot CSVs, now for the other feeds, so an old payload imported without it "
            "counts as fresh",
        )
        parser.add_argument("files", nargs="+", type=Path, metavar="FILE")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = feed_import(
                name=options["feed"], paths=options["files"], cloud=options["cloud"], observed_at=options["observed_at"]
            )
        except FeedFileError as error:
            raise CommandError(f"cannot import {error.path}: {error}", returncode=INVALID_INPUT) from error
        except FeedError as error:
            raise CommandError(str(error), returncode=INVALID_INPUT) from error
        except UnknownFeed as error:
            raise CommandError(error.args[0], returncode=INVALID_INPUT) from error
        except UnknownFeedPart as error:
            raise CommandError(f"--cloud: {error.args[0]}", returncode=INVALID_INPUT) from error
        except DatabaseError as error:  # rolled back: nothing was stored
            files = ", ".join(str(path) for path in options["files"])
            raise CommandError(
                f"cannot import {files}: {database_error_text(error)}", returncode=INVALID_INPUT
            ) from error
        self.stdout.write(json.dumps(summary(result), indent=2))
        if not result.checked.accepted:
            rejected = ", ".join(f"{reason} x{count}" for reason, count in summary(result)["rejected"].items())
            files = ", ".join(str(path) for path in options["files"])
            raise CommandError(
                f"{files}: no offer accepted ({rejected or 'no records'}); nothing was stored", returncode=INVALID_INPUT
            )


def observed_at(text: str) -> dt.datetime:
    """--observed-at: an ISO 8601 date-time from HISTORY_EARLIEST (no cloud sold GPU-hours before) to now, in UTC
    (argparse names the option on a refusal)."""
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an ISO 8601 date-time; use e.g. 2026-11-05T14:00:00Z (no zone means UTC)"
        ) from None
    if timezone.is_naive(when):
        when = when.replace(tzinfo=dt.UTC)
    allowed = f"must be from {HISTORY_EARLIEST} to now"
    try:
        when = when.astimezone(dt.UTC)  # the calendar's ends overflow in UTC (0001-01-01T00:00+01:00)
    except OverflowError:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range; {allowed}") from None
    if when > timezone.now():
        raise argparse.ArgumentTypeError(f"{text!r} is in the future; give when the payload was captured")
    if when.date() < HISTORY_EARLIEST:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range; {allowed}")
    return when


def summary(result: ImportResult) -> dict[str, Any]:
    checked = result.checked
    return {
        "accepted": len(checked.accepted),
        "rejected": {reason: entry["count"] for reason, entry in checked.rejections.items()},
        "offers": [
            {
                "provider": offer.record.provider,
                "instance": offer.record.instance_type,
                "region": offer.record.region,
                "market": offer.record.market,
                "gpu": offer.gpu,
                "gpu_count": float(offer.gpu_count),
                "usd_per_gpu_hour": float(offer.usd_per_gpu_hour),
            }
            for offer in checked.accepted
        ],
    }
