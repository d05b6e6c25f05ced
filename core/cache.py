"""The Redis cache, degraded instead of failing when Redis does not answer: django-redis with
IGNORE_EXCEPTIONS.

The cache holds throttle counts, login-attempt counts, feed progress and cached advice: all of it
can be lost or missed without a wrong answer. With Django's own RedisCache an outage would turn
every API request into a 500 (the throttles read the cache first); with django-redis ignoring
connection errors a read misses, a write is dropped and the error is logged, so pages and the API
keep answering. The subclass only restores Django's return types (django-redis answers None for an
ignored add/incr/delete), so callers such as the login limiter can compare counts while Redis is down.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django_redis.cache import RedisCache

# How often an outage is logged: django-redis logs every ignored error with its traceback, and
# during an outage every request meets several (throttles, login counts).
WARN_EVERY_S = 60.0


class ResilientRedisCache(RedisCache):
    """django-redis's cache with IGNORE_EXCEPTIONS forced on and Django's return types kept."""

    def __init__(self, server: str, params: dict[str, Any]) -> None:
        options = dict(params.get("OPTIONS") or {})
        options["IGNORE_EXCEPTIONS"] = True
        super().__init__(server, {**params, "OPTIONS": options})

    def add(self, *args: Any, **kwargs: Any) -> bool:
        return bool(super().add(*args, **kwargs))

    def incr(self, *args: Any, **kwargs: Any) -> int:
        # A missing key still raises ValueError (Django's contract); only an outage reads as 0.
        return int(super().incr(*args, **kwargs) or 0)

    def decr(self, *args: Any, **kwargs: Any) -> int:
        return int(super().decr(*args, **kwargs) or 0)

    def delete(self, *args: Any, **kwargs: Any) -> bool:
        return bool(super().delete(*args, **kwargs))

    def has_key(self, *args: Any, **kwargs: Any) -> bool:
        return bool(super().has_key(*args, **kwargs))

    def touch(self, *args: Any, **kwargs: Any) -> bool:
        return bool(super().touch(*args, **kwargs))


class OncePerInterval(logging.Filter):
    """Let one record through per WARN_EVERY_S; the rest of an outage's identical errors are dropped."""

    def __init__(self, name: str = "") -> None:
        super().__init__(name)
        self._last = -WARN_EVERY_S

    def filter(self, record: logging.LogRecord) -> bool:
        now = time.monotonic()
        if now - self._last < WARN_EVERY_S:
            return False
        self._last = now
        return True
