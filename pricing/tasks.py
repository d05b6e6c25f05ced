"""Celery tasks: thin wrappers that take feed names and call the refresh service.

Network failures are retried with exponential backoff and a cap (a worker schedules the retry;
in the embedded eager mode there is no worker to wait, so the failed run is simply recorded).
Refreshing is idempotent and locked per feed, so a redelivered task is harmless.
"""

from __future__ import annotations

import random
from typing import Any

from celery import shared_task
from django.conf import settings

from pricing.feeds import FEED_NAMES

RETRY_BASE_S = 60
RETRY_CAP_S = 3600
MAX_RETRIES = 4


def retry_countdown(retries: int) -> float:
    """60 s, 120 s, 240 s ... capped at an hour, with up to 10% jitter so feeds do not retry in lockstep."""
    delay = min(RETRY_CAP_S, RETRY_BASE_S * 2**retries)
    return delay * (1 + random.random() / 10)


@shared_task(bind=True, acks_late=True, max_retries=MAX_RETRIES, soft_time_limit=600, time_limit=660)
def refresh_feed(self: Any, name: str) -> dict[str, Any]:
    from pricing.services import feed_refresh

    run = feed_refresh(name=name)
    if run.retryable and not self.request.is_eager and self.request.retries < self.max_retries:
        raise self.retry(countdown=retry_countdown(self.request.retries), exc=RuntimeError(run.error))
    return {"feed": name, "run_id": run.id, "status": run.status, "error": run.error}


@shared_task(acks_late=True)
def refresh_all() -> list[str]:
    """Queue one refresh per feed; each runs, fails and retries on its own."""
    feeds = [name for name in FEED_NAMES if name in settings.PRICING_REFRESH_HOURS]
    for name in feeds:
        refresh_feed.delay(name)
    return feeds
