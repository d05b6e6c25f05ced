from __future__ import annotations

from celery import shared_task


@shared_task(name="advisor.ping")
def ping(payload: str) -> dict[str, str]:
    """Round trip used by health checks and the worker integration test."""
    return {"pong": payload}
