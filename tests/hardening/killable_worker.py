"""Subprocess side of test_worker_kill.py: a fake price feed, and a real Celery worker that can be
made to stop inside the refresh's database transaction.

    python -m tests.hardening.killable_worker seed PRICE     # one refresh of the fake feed, in-process
    python -m tests.hardening.killable_worker state          # JSON: offers, runs, locks
    python -m tests.hardening.killable_worker worker QUEUE   # a solo-pool worker on QUEUE

Environment: DATABASE_URL, REDIS_URL (broker), FAKE_PRICE (USD per GPU-hour the feed reports),
PAUSE_MARKER (when set, the worker writes this file inside the transaction, after the new prices
are written and before it commits, then sleeps until killed).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

FEED = "fakefeed"
INSTANCES = ("fake.8xh100.a", "fake.8xh100.b", "fake.8xh100.c")


class FakeFeed:
    name = FEED
    label = "Fake feed (tests)"

    def __init__(self, price: Decimal) -> None:
        self.price = price

    def is_configured(self) -> bool:
        return True

    def not_configured_reason(self) -> str:
        return ""

    def fetch(self, *, progress: Any) -> Iterator[Any]:
        from pricing.feeds.base import OfferRecord

        for instance in INSTANCES:
            yield OfferRecord(
                provider="fakecloud",
                instance_type=instance,
                region="test-1",
                market="on_demand",
                gpu_name="H100",
                gpu="h100-sxm",
                gpu_count=Decimal(8),
                usd_per_hour=self.price * 8,
                source="fake feed for the worker-kill test",
            )


def install_fake_feed() -> None:
    import pricing.services as services
    import pricing.tasks as tasks

    real_get_feed = services.get_feed
    real_feed_units = tasks.feed_units
    # The task asks which units a feed name refreshes (a group fans out); the fake feed is one unit.
    tasks.feed_units = lambda name: [FEED] if name == FEED else real_feed_units(name)  # type: ignore[assignment]
    price = Decimal(os.environ.get("FAKE_PRICE", "1"))
    services.get_feed = lambda name: FakeFeed(price) if name == FEED else real_get_feed(name)  # type: ignore[assignment]
    marker = os.environ.get("PAUSE_MARKER")
    if marker:
        real_withdraw = services.withdraw_missing

        def paused(**kwargs: Any) -> int:
            Path(marker).write_text(str(os.getpid()))
            for _ in range(600):  # bounded: 5 minutes at most, the test kills it long before
                time.sleep(0.5)
            return real_withdraw(**kwargs)

        services.withdraw_missing = paused  # type: ignore[assignment]


def state() -> dict[str, Any]:
    from pricing.models import FeedLock, FeedRun, Offer

    return {
        "offers": {
            o.instance_type: str(o.usd_per_gpu_hour.normalize())
            for o in Offer.objects.filter(feed=FEED, withdrawn_at__isnull=True)
        },
        "runs": list(FeedRun.objects.filter(feed=FEED).order_by("id").values_list("status", flat=True)),
        "locks": FeedLock.objects.filter(feed=FEED).count(),
    }


def main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    install_fake_feed()
    command = argv[0]
    if command == "seed":
        os.environ["FAKE_PRICE"] = argv[1]
        install_fake_feed()
        from pricing.services import feed_refresh

        run = feed_refresh(name=FEED)
        print(json.dumps({"status": run.status, "error": run.error}))
        return 0
    if command == "state":
        print(json.dumps(state()))
        return 0
    if command == "worker":
        from config.celery import app

        # Redelivery of unacknowledged tasks after 3 s (swept every second) instead of an hour.
        app.conf.broker_transport_options = {
            "visibility_timeout": 3,
            "unacked_restore_interval": 1,
            "unacked_restore_throttle": 1,
        }
        app.worker_main(
            [
                "worker",
                "--pool=solo",
                "-Q",
                argv[1],
                "--loglevel=INFO",
                "--without-mingle",
                "--without-gossip",
                "--without-heartbeat",
                "-n",
                f"killable-{os.getpid()}@%h",
            ]
        )
        return 0
    raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
