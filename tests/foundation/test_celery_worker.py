"""A real Celery worker (celery.contrib.testing) runs a task through Redis and the result comes back."""

from __future__ import annotations

import pytest
from celery.contrib.testing.worker import start_worker

from advisor.celery import app
from advisor.tasks import ping


@pytest.mark.services
def test_a_real_worker_executes_a_task_through_redis(redis_url: str) -> None:
    previous = {key: app.conf[key] for key in ("broker_url", "result_backend", "task_always_eager")}
    app.conf.update(broker_url=redis_url, result_backend=redis_url, task_always_eager=False)
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=20):
            result = ping.delay("round-trip")
            assert result.get(timeout=30) == {"pong": "round-trip"}
            assert result.status == "SUCCESS"
    finally:
        app.conf.update(previous)
