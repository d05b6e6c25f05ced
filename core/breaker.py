"""Circuit breakers for the dependencies a request waits on (Redis as cache, Redis as broker).

A Redis that accepts connections but never answers costs every call its full socket timeout (and
redis-py retries a timed-out command, so several). After one failure a breaker stays open for
`settings.DEPENDENCY_BREAKER_OPEN_S`: calls fail at once, so the cache degrades to a miss and an
enqueue answers 503 immediately, instead of each request waiting out the timeouts again. After the
window one call is let through; its success closes the breaker, its failure opens it again.

`BreakerConnection` puts the breaker under any redis-py client: Django's RedisCache, django-redis
(`CONNECTION_POOL_KWARGS`) or a plain `redis.Redis`; `cache_with_breaker` installs it in a CACHES
entry whatever the Redis backend.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_OPEN_S = 15.0
TRIPPING_ERRORS: tuple[type[BaseException], ...] = (RedisConnectionError, RedisTimeoutError, OSError)


class BreakerOpen(RedisConnectionError):
    """The dependency failed moments ago; not tried again until the breaker's window ends.

    A redis ConnectionError, so every caller that already tolerates an outage tolerates this too."""


def _open_seconds() -> float:
    try:
        from django.conf import settings

        return float(getattr(settings, "DEPENDENCY_BREAKER_OPEN_S", DEFAULT_OPEN_S))
    except Exception:  # settings not configured (a plain script): the default window
        return DEFAULT_OPEN_S


class CircuitBreaker:
    """Open for a window after a failure; thread-safe; one per dependency per process."""

    def __init__(self, name: str, *, open_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.name = name
        self._open_s = open_s
        self._clock = clock
        self._lock = threading.Lock()
        self._open_until = 0.0

    @property
    def open_s(self) -> float:
        return self._open_s if self._open_s is not None else _open_seconds()

    def is_open(self) -> bool:
        return self._clock() < self._open_until

    def retry_after_s(self) -> int:
        """Whole seconds until the next try is let through (at least 1)."""
        return max(1, round(self._open_until - self._clock() + 0.5))

    def check(self) -> None:
        if self.is_open():
            raise BreakerOpen(f"{self.name} failed recently; not retried for {self.retry_after_s()} s")

    def record_failure(self, error: BaseException) -> None:
        with self._lock:
            was_closed = not self.is_open()
            self._open_until = self._clock() + self.open_s
        if was_closed:
            logger.warning(
                "%s unavailable (%s: %s); skipped for %.0f s", self.name, type(error).__name__, error, self.open_s
            )

    def record_success(self) -> None:
        self._open_until = 0.0

    def call(self, operation: Callable[[], T]) -> T:
        """Run `operation` unless open; a tripping error opens the breaker and is re-raised."""
        self.check()
        try:
            result = operation()
        except BreakerOpen:
            raise
        except TRIPPING_ERRORS as error:
            self.record_failure(error)
            raise
        self.record_success()
        return result


_breakers: dict[str, CircuitBreaker] = {}
_registry_lock = threading.Lock()


def breaker_for(name: str) -> CircuitBreaker:
    """The process-wide breaker of one dependency (e.g. "redis 127.0.0.1:6379")."""
    with _registry_lock:
        if name not in _breakers:
            _breakers[name] = CircuitBreaker(name)
        return _breakers[name]


class BreakerConnection(redis.Connection):
    """A redis-py connection that consults its server's breaker before connecting or sending."""

    def _breaker(self) -> CircuitBreaker:
        return breaker_for(f"redis {self.host}:{self.port}")

    def connect(self, *args: Any, **kwargs: Any) -> None:
        self._breaker().call(lambda: super(BreakerConnection, self).connect(*args, **kwargs))

    def send_packed_command(self, *args: Any, **kwargs: Any) -> None:
        self._breaker().call(lambda: super(BreakerConnection, self).send_packed_command(*args, **kwargs))

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        return self._breaker().call(lambda: super(BreakerConnection, self).read_response(*args, **kwargs))


def cache_with_breaker(cache: dict[str, Any]) -> dict[str, Any]:
    """A copy of one CACHES entry whose Redis connections go through BreakerConnection."""
    backend = str(cache.get("BACKEND", ""))
    if "redis" not in backend.lower() or str(cache.get("LOCATION", "")).startswith("rediss://"):
        return cache  # not Redis, or TLS (needs redis.SSLConnection): left as configured
    options = dict(cache.get("OPTIONS", {}))
    if backend.startswith("django_redis"):
        pool_kwargs = dict(options.get("CONNECTION_POOL_KWARGS", {}))
        pool_kwargs["connection_class"] = BreakerConnection
        options["CONNECTION_POOL_KWARGS"] = pool_kwargs
    else:
        options["connection_class"] = BreakerConnection
    return {**cache, "OPTIONS": options}
