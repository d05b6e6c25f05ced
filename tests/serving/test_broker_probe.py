"""Enqueueing against a hung broker answers at once with 503: bounded probe, then the breaker."""

from __future__ import annotations

import time

import pytest

from advisor.tasks import ping
from core.queueing import QueueUnavailable, enqueue
from tests.conftest import celery_broker
from tests.serving.hung import hung_server


@pytest.fixture(autouse=True)
def _fresh_breakers(settings):  # type: ignore[no-untyped-def]
    from core import breaker

    settings.DEPENDENCY_BREAKER_OPEN_S = 30
    breaker._breakers.clear()
    yield
    breaker._breakers.clear()


def _enqueue_time() -> tuple[float, QueueUnavailable]:
    started = time.perf_counter()
    with pytest.raises(QueueUnavailable) as raised:
        enqueue(ping, "x")
    return time.perf_counter() - started, raised.value


def test_a_hung_broker_costs_one_bounded_probe_then_nothing() -> None:
    from config.celery import app

    with hung_server() as port, celery_broker(f"redis://127.0.0.1:{port}/0"):
        app.conf.broker_transport_options = {"socket_timeout": 1, "socket_connect_timeout": 1}
        try:
            first, _ = _enqueue_time()
            later = [_enqueue_time() for _ in range(5)]
        finally:
            app.conf.broker_transport_options = {}
    assert first < 10, first
    assert all(elapsed < 0.1 for elapsed, _ in later), later
    assert all(1 <= error.retry_after_s <= 30 for _, error in later)


@pytest.mark.django_db
def test_the_refresh_endpoint_answers_503_with_retry_after_at_once(carol) -> None:  # type: ignore[no-untyped-def]
    from config.celery import app

    with hung_server() as port, celery_broker(f"redis://127.0.0.1:{port}/0"):
        app.conf.broker_transport_options = {"socket_timeout": 1, "socket_connect_timeout": 1}
        try:
            carol.post("/api/v1/feeds/aws/refresh")  # trips the breaker (one bounded probe)
            started = time.perf_counter()
            response = carol.post("/api/v1/feeds/aws/refresh")
            elapsed = time.perf_counter() - started
        finally:
            app.conf.broker_transport_options = {}
    assert response.status_code == 503, response.content[:500]
    assert response["Content-Type"].startswith("application/problem+json")
    # The breaker's remaining window (30 s here), not a fixed minute.
    assert 1 <= int(response["Retry-After"]) <= 30, response["Retry-After"]
    assert elapsed < 0.5, elapsed


@pytest.mark.django_db
def test_the_refusal_names_the_tasks_own_command_and_the_wait_retry_after_gives(carol) -> None:  # type: ignore[no-untyped-def]
    # An ops probe: a calibration upload refused with Redis down said 'Try again in a minute; an operator can run it
    # now with `manage.py refresh_prices`' (one message for every task) while Retry-After was 15.
    from advisor.tasks import fit_calibration
    from pricing.tasks import refresh_all, refresh_feed

    with celery_broker("redis://127.0.0.1:1/0"):  # nothing listens on port 1: refused at once
        refused = {}
        for task, args in ((refresh_feed, ("lambda",)), (refresh_all, ()), (fit_calibration, (1,))):
            with pytest.raises(QueueUnavailable) as raised:
                enqueue(task, *args)
            refused[task.name] = raised.value
        response = carol.post("/api/v1/feeds/lambda/refresh")
    assert "run it now with `python manage.py refresh_prices --feed lambda`" in str(refused[refresh_feed.name])
    assert "run it now with `python manage.py refresh_prices`." in str(refused[refresh_all.name])
    fit = str(refused[fit_calibration.name])
    assert "refresh_prices" not in fit and "manage.py" not in fit and "minute" not in fit
    for error in refused.values():
        assert f"Try again in {error.retry_after_s} s" in str(error), error
    assert response.status_code == 503
    assert f"Try again in {response['Retry-After']} s" in response.json()["detail"]
