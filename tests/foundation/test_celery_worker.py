"""A real Celery worker (celery.contrib.testing) runs a task through Redis and the result comes back."""

from __future__ import annotations

import pytest
from celery.contrib.testing.worker import start_worker

from advisor.tasks import ping
from config.celery import app
from tests.conftest import celery_broker


@pytest.mark.services
def test_a_real_worker_executes_a_task_through_redis(redis_url: str) -> None:
    with celery_broker(redis_url), start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=20):
        result = ping.delay("round-trip")
        assert result.get(timeout=30) == {"pong": "round-trip"}
        assert result.status == "SUCCESS"
