"""Celery tasks: thin wrappers that take feed names and call the refresh service.

A run that failed on the network is retried by Celery's own `autoretry_for` with exponential
backoff (`retry_backoff`: 60 s, 120 s, ... capped at an hour; the last attempt's run records that its retries are
exhausted and when beat refreshes the feed next); each HTTP request has already been retried on the
spot by urllib3 (pricing/feeds/http.py), so a task retry means the source stayed down. In the
embedded eager mode (and from `refresh_prices`) nothing retries, so the failed run says "not retried; refresh
again". A group feed (skypilot) queues one task per part, so each cloud runs, fails and retries on its own.
Refreshing is idempotent and locked per feed, so a redelivered task is harmless.
"""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.conf import settings

from pricing.feeds import FEED_NAMES, feed_units

RETRY_BASE_S = 60
RETRY_CAP_S = 3600
MAX_RETRIES = 4


class FeedRunRetryable(RuntimeError):
    """The run failed on the network; Celery retries the task later (autoretry_for)."""


@shared_task(
    bind=True,
    acks_late=True,
    autoretry_for=(FeedRunRetryable,),
    retry_backoff=RETRY_BASE_S,
    retry_backoff_max=RETRY_CAP_S,
    retry_jitter=False,  # full jitter could retry at once; the feeds' beat intervals already differ
    max_retries=MAX_RETRIES,
    # Named settings (CELERY_TASK_[SOFT_]TIME_LIMIT do not apply here); PRICING_LOCK_TTL_S is at least the hard one.
    soft_time_limit=settings.PRICING_REFRESH_SOFT_TIME_LIMIT_S,
    time_limit=settings.PRICING_REFRESH_TIME_LIMIT_S,
    operator_command="python manage.py refresh_prices --feed {0}",  # core.queueing: named when Redis is down
)
def refresh_feed(self: Any, name: str) -> dict[str, Any]:
    from pricing.services import feed_refresh, record_retries_exhausted

    units = feed_units(name)
    if units != [name]:
        for unit in units:
            refresh_feed.delay(unit)
        return {"feed": name, "queued": units}
    run = feed_refresh(name=name, worker_retries=not self.request.is_eager)  # eager: nothing retries it
    if run.retryable:
        # Celery's retry() gives up once request.retries reaches max_retries: this attempt is the last one, and
        # nothing retries the feed until beat's next refresh, which the run now says instead of "will retry".
        if self.max_retries is not None and self.request.retries >= self.max_retries:
            record_retries_exhausted(run=run)
        raise FeedRunRetryable(f"{name}: {run.error}")
    return {"feed": name, "run_id": run.id, "status": run.status, "error": run.error}


@shared_task(acks_late=True, operator_command="python manage.py refresh_prices")
def refresh_all() -> list[str]:
    """Queue one refresh per feed; each runs, fails and retries on its own."""
    feeds = [name for name in FEED_NAMES if name in settings.PRICING_REFRESH_HOURS]
    for name in feeds:
        refresh_feed.delay(name)
    return feeds
