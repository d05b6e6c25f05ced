"""Failing dependencies: Redis down, PostgreSQL cut in the middle of a request.

Redis "down" is a closed local port (the shared Redis server is never touched); PostgreSQL is cut
through a small TCP proxy this test starts between Django and the server.
(A Celery worker killed mid-refresh is in test_worker_kill.py.)"""

from __future__ import annotations

import json
import socket
import time
import uuid
from collections.abc import Iterator

import pytest
from django.test import Client
from rest_framework.test import APIClient

from advisor import scenarios as store
from advisor.web import forms
from config.celery import app
from core.queueing import record_issued
from tests.api.examples import scenario


def _closed_port() -> int:
    """A local port that was just bound and closed: connecting to it is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def redis_down(settings) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """Cache, broker and result backend all pointed at a Redis that does not answer."""
    url = f"redis://127.0.0.1:{_closed_port()}/0"
    settings.CACHES = {
        "default": {
            "BACKEND": "core.cache.ResilientRedisCache",
            "LOCATION": url,
            "OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1, "SOCKET_TIMEOUT": 1},
        }
    }
    settings.REDIS_URL = url
    previous = {key: app.conf[key] for key in ("broker_url", "result_backend", "task_always_eager")}
    app.conf.update(broker_url=url, result_backend=url, task_always_eager=False)
    _reset_celery_connections()
    try:
        yield url
    finally:
        app.conf.update(previous)
        _reset_celery_connections()


def _reset_celery_connections() -> None:
    """Celery caches its result backend (per thread), connection pool and producer pool; drop the
    references (without closing pools other code may still hold) so the changed conf applies."""
    app._local.__dict__.pop("backend", None)
    app._pool = None
    app.amqp._producer_pool = None


@pytest.mark.django_db
def test_with_redis_down_pages_and_api_keep_answering(redis_down, user, staff_user) -> None:  # type: ignore[no-untyped-def]
    from pricing.services import load_bundled_data

    load_bundled_data()
    web = Client()
    web.force_login(user)
    api = APIClient()
    api.force_authenticate(user)
    started = time.monotonic()
    assert web.get("/healthz").status_code == 200
    assert web.get("/").status_code == 200
    assert web.get("/plan/").status_code == 200
    assert web.get("/prices/").status_code == 200
    results = web.post("/plan/results/", dict(forms.preset_initial("7b-pretrain")))
    assert results.status_code == 200, results.status_code
    assert 'data-testid="results-table"' in results.content.decode()
    advice = api.post("/api/v1/advice", scenario(), format="json")
    assert advice.status_code == 200, advice.content[:500]
    assert advice.json()["sizes"]
    offers = api.get("/api/v1/offers?gpu=h100-sxm")
    assert offers.status_code == 200
    saved = api.post("/api/v1/scenarios", {"name": "during outage", "scenario": scenario()}, format="json")
    assert saved.status_code == 201
    # Nothing above waited on Redis timeouts: a closed port refuses at once.
    assert time.monotonic() - started < 60


@pytest.mark.django_db
def test_with_redis_down_a_feed_refresh_is_refused_with_a_clear_message(redis_down, staff_user) -> None:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(staff_user)
    started = time.monotonic()
    response = api.post("/api/v1/feeds/aws/refresh")
    assert response.status_code == 503, response.content[:500]
    assert response["Content-Type"].startswith("application/problem+json")
    assert "queue" in response.json()["detail"].lower()
    assert "Retry-After" in response
    web = Client()
    web.force_login(staff_user)
    page = web.post("/prices/refresh/", {"feed": "aws"}, follow=True)
    assert page.status_code == 200
    body = page.content.decode()
    assert "could not be queued" in body
    assert time.monotonic() - started < 60


@pytest.mark.django_db
def test_with_redis_down_saved_scenario_advice_still_answers(redis_down, user) -> None:  # type: ignore[no-untyped-def]
    saved = store.scenario_create(owner=user, name="outage", document=scenario())
    api = APIClient()
    api.force_authenticate(user)
    response = api.get(f"/api/v1/scenarios/{saved.pk}/advice")
    assert response.status_code == 200


@pytest.mark.services
def test_the_resilient_cache_is_a_plain_redis_cache_while_redis_answers(redis_url: str) -> None:
    from core.cache import ResilientRedisCache

    cache = ResilientRedisCache(redis_url, {"TIMEOUT": 120, "KEY_PREFIX": f"resilient-test-{uuid.uuid4().hex[:8]}"})
    cache.set("a", {"x": 1})
    assert cache.get("a") == {"x": 1}
    client = cache.client.get_client()
    assert 100 < client.ttl(cache.make_and_validate_key("a")) <= 120  # the default timeout, not "forever"
    cache.set("b", 1, timeout=5)
    assert 0 < client.ttl(cache.make_and_validate_key("b")) <= 5
    assert cache.add("c", 1) is True
    assert cache.add("c", 2) is False
    assert cache.incr("c") == 2
    with pytest.raises(ValueError):
        cache.incr("missing")  # Django's contract, not an outage
    cache.delete_many(["a", "b", "c"])
    assert cache.get_many(["a", "b", "c"]) == {}


def test_the_resilient_cache_degrades_when_redis_is_down() -> None:
    from core.cache import ResilientRedisCache

    cache = ResilientRedisCache(f"redis://127.0.0.1:{_closed_port()}/0", {"OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1}})
    started = time.monotonic()
    cache.set("a", 1)
    assert cache.get("a", "fallback") == "fallback"
    assert cache.add("a", 1) is False
    assert cache.incr("a") == 0
    assert cache.get_many(["a"]) == {}
    assert cache.delete("a") is False
    cache.clear()
    assert time.monotonic() - started < 10


def test_a_redis_outage_is_logged_once_a_minute_not_per_call(caplog) -> None:  # type: ignore[no-untyped-def]
    import logging

    from core.cache import OncePerInterval, ResilientRedisCache

    logger = logging.getLogger("django_redis.cache")
    # Settings install it; a test that re-applies LOGGING (a Celery worker's setup) may have added a second.
    throttles = [f for f in logger.filters if isinstance(f, OncePerInterval)]
    assert throttles
    for throttle in throttles:
        throttle._last = float("-inf")
    cache = ResilientRedisCache(f"redis://127.0.0.1:{_closed_port()}/0", {"OPTIONS": {"SOCKET_CONNECT_TIMEOUT": 1}})
    with caplog.at_level(logging.ERROR, logger="django_redis.cache"):
        for _ in range(5):
            cache.get("a")
            cache.incr("a")
    logged = [r for r in caplog.records if r.name == "django_redis.cache"]
    assert len(logged) == 1
    assert logged[0].exc_info is not None  # the one record keeps the traceback that says why


@pytest.mark.django_db
def test_with_redis_down_a_task_status_answers_503_with_retry_after(redis_down, staff_user) -> None:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(staff_user)
    task_id = str(uuid.uuid4())
    record_issued(task_id=task_id, kind="pricing.tasks.refresh_feed")  # an id the app handed out
    started = time.monotonic()
    response = api.get(f"/api/v1/tasks/{task_id}")
    assert response.status_code == 503, response.content[:500]
    assert response["Content-Type"].startswith("application/problem+json")
    assert int(response["Retry-After"]) > 0
    assert "Redis" in response.json()["detail"]
    assert time.monotonic() - started < 30


@pytest.mark.django_db
def test_healthz_with_the_database_down_says_so_without_connection_details(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from django.db import OperationalError, connection

    secret = 'connection to server at "db.internal" (10.1.2.3), port 5432 failed: Connection refused'

    def refuse() -> None:
        raise OperationalError(secret)

    monkeypatch.setattr(connection, "cursor", refuse)
    response = Client().get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "error", "database": "unavailable"}
    assert "10.1.2.3" not in response.content.decode() and "5432" not in response.content.decode()
    assert int(response["Retry-After"]) > 0


@pytest.mark.django_db
def test_feed_status_json_shows_an_error_category_not_the_exception_text() -> None:
    from pricing.models import FeedRun

    FeedRun.objects.create(
        feed="aws",
        status=FeedRun.Status.FAILED,
        error="unexpected ConnectionError: HTTPSConnectionPool(host='10.9.9.9', port=8443): Max retries exceeded",
    )
    feeds = {f["feed"]: f for f in Client().get("/prices/feeds/status.json").json()["feeds"]}
    assert feeds["aws"]["last_run"]["error"] == "failed"
    assert "10.9.9.9" not in json.dumps(feeds)


@pytest.mark.django_db
def test_a_running_feed_run_whose_holder_is_gone_is_shown_failed() -> None:
    from pricing.models import FeedRun

    orphan = FeedRun.objects.create(feed="aws")  # "running", and no refresh holds the feed's lock
    feeds = {f["feed"]: f for f in Client().get("/prices/feeds/status.json").json()["feeds"]}
    assert feeds["aws"]["last_run"]["status"] == "failed"
    assert feeds["aws"]["last_run"]["error"] == "interrupted"
    orphan.refresh_from_db()
    assert orphan.status == FeedRun.Status.FAILED and orphan.finished_at is not None


@pytest.mark.django_db
def test_a_running_feed_run_with_a_live_holder_stays_running() -> None:
    from pricing import services
    from pricing.models import FeedRun

    token = services.feed_lock_acquire(feed="aws")
    assert token is not None
    FeedRun.objects.create(feed="aws")
    assert services.fail_orphaned_runs() == 0
    assert FeedRun.objects.get(feed="aws").status == FeedRun.Status.RUNNING


def test_clean_json_text_is_not_walked_value_by_value(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # A 4.6 MB body of 60,000 runs spent about 4 s checking each of its 360,000 values for NUL and surrogates before
    # the row cap could refuse it: only text with a \u0000 or \ud800-\udfff escape can hold one.
    import core.jsontext

    def walked(*_: object) -> None:
        raise AssertionError("walked")

    monkeypatch.setattr(core.jsontext, "_located_problems", walked)
    assert core.jsontext.parse_json_text(b'{"runs": [{"gpu": "h100-sxm", "num_gpus": 8, "ok": "\\u00e9"}]}')
    with pytest.raises(AssertionError):
        core.jsontext.parse_json_text(b'{"name": "a\\u0000"}')
    with pytest.raises(AssertionError):
        core.jsontext.parse_json_text(b'{"a": 1, "a": 2}')
