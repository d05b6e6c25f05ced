"""A hung Redis (accepts, never answers) costs one timeout, not one per call: the breaker skips it."""

from __future__ import annotations

import time

import pytest
import redis
from django.core.cache.backends.redis import RedisCache

from core.breaker import BreakerConnection, BreakerOpen, CircuitBreaker, breaker_for, cache_with_breaker
from tests.serving.hung import hung_server

TIMEOUT_S = 0.5


@pytest.fixture(autouse=True)
def _fresh_breakers(settings):  # type: ignore[no-untyped-def]
    from core import breaker

    settings.DEPENDENCY_BREAKER_OPEN_S = 30
    breaker._breakers.clear()
    yield
    breaker._breakers.clear()


def _timed(call) -> tuple[float, BaseException | None]:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    try:
        call()
    except Exception as error:
        return time.perf_counter() - started, error
    return time.perf_counter() - started, None


def test_a_plain_redis_client_waits_on_every_call_without_the_breaker() -> None:
    """The problem itself: each call against a hung Redis waits its timeout (the naive baseline)."""
    with hung_server() as port:
        client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S)
        elapsed, error = _timed(lambda: client.get("k"))
    # redis-py retries a timed-out command with backoff: one call waits several timeouts.
    assert isinstance(error, redis.TimeoutError) and elapsed >= TIMEOUT_S * 2


def test_after_one_timeout_calls_fail_at_once() -> None:
    with hung_server() as port:
        pool = redis.ConnectionPool(
            host="127.0.0.1",
            port=port,
            socket_timeout=TIMEOUT_S,
            socket_connect_timeout=TIMEOUT_S,
            connection_class=BreakerConnection,
        )
        client = redis.Redis(connection_pool=pool)
        first, first_error = _timed(lambda: client.get("k"))
        later = [_timed(lambda: client.get("k")) for _ in range(20)]
    assert first_error is not None and first >= TIMEOUT_S * 0.9
    assert all(isinstance(error, redis.ConnectionError) for _, error in later)
    assert sum(elapsed for elapsed, _ in later) < 0.2, later
    assert breaker_for(f"redis 127.0.0.1:{port}").is_open()


def test_the_django_cache_misses_fast_once_the_breaker_is_open() -> None:
    with hung_server() as port:
        config = cache_with_breaker(
            {
                "BACKEND": "django.core.cache.backends.redis.RedisCache",
                "LOCATION": f"redis://127.0.0.1:{port}/0",
                "OPTIONS": {"socket_timeout": TIMEOUT_S, "socket_connect_timeout": TIMEOUT_S},
            }
        )
        cache = RedisCache(config["LOCATION"], {"OPTIONS": config["OPTIONS"]})
        _timed(lambda: cache.get("k"))
        elapsed, error = _timed(lambda: [cache.get("k") for _ in range(50)])
    assert isinstance(error, redis.ConnectionError)
    assert elapsed < 0.2


def test_cache_with_breaker_installs_the_connection_for_both_redis_backends() -> None:
    django_builtin = cache_with_breaker({"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "x"})
    assert django_builtin["OPTIONS"]["connection_class"] is BreakerConnection
    django_redis = cache_with_breaker(
        {"BACKEND": "django_redis.cache.RedisCache", "OPTIONS": {"CONNECTION_POOL_KWARGS": {"max_connections": 5}}}
    )
    assert django_redis["OPTIONS"]["CONNECTION_POOL_KWARGS"] == {
        "max_connections": 5,
        "connection_class": BreakerConnection,
    }
    locmem = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    assert cache_with_breaker(locmem) is locmem


def test_the_breaker_lets_one_call_through_after_its_window() -> None:
    now = [100.0]
    breaker = CircuitBreaker("probe", open_s=10, clock=lambda: now[0])
    with pytest.raises(redis.TimeoutError):
        breaker.call(lambda: (_ for _ in ()).throw(redis.TimeoutError("hung")))
    with pytest.raises(BreakerOpen):
        breaker.call(lambda: "not run")
    assert breaker.retry_after_s() == 10
    now[0] += 10.5
    assert breaker.call(lambda: "answered") == "answered"
    assert not breaker.is_open()
