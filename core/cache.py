"""The Redis cache, degraded instead of failing when Redis does not answer.

The cache holds throttle counts, login-attempt counts, feed progress and cached advice: all of it
can be lost or missed without a wrong answer. With Django's own RedisCache an outage would turn
every API request into a 500 (the throttles read the cache first); here a read misses, a write is
dropped, a counter reads 0, and one warning a minute is logged, so pages and the API keep answering.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

OUTAGE_ERRORS = (RedisConnectionError, RedisTimeoutError, OSError)
WARN_EVERY_S = 60.0
T = TypeVar("T")


class ResilientRedisCache(RedisCache):
    """RedisCache whose operations fall back to a miss (or a no-op) while Redis is unreachable."""

    _last_warning = 0.0

    def _degraded(self, operation: str, call: Callable[[], T], fallback: T) -> T:
        try:
            return call()
        except OUTAGE_ERRORS as error:
            now = time.monotonic()
            if now - ResilientRedisCache._last_warning > WARN_EVERY_S:
                ResilientRedisCache._last_warning = now
                logger.warning(
                    "cache unavailable (%s: %s); %s degraded to a miss", type(error).__name__, error, operation
                )
            return fallback

    def get(self, key: Any, default: Any = None, version: int | None = None) -> Any:
        return self._degraded("get", lambda: super(ResilientRedisCache, self).get(key, default, version), default)

    def get_many(self, keys: Any, version: int | None = None) -> dict[Any, Any]:
        return self._degraded("get_many", lambda: super(ResilientRedisCache, self).get_many(keys, version), {})

    def has_key(self, key: Any, version: int | None = None) -> bool:
        return self._degraded("has_key", lambda: super(ResilientRedisCache, self).has_key(key, version), False)

    def set(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> None:
        self._degraded("set", lambda: super(ResilientRedisCache, self).set(key, value, timeout, version), None)

    def add(self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        return self._degraded("add", lambda: super(ResilientRedisCache, self).add(key, value, timeout, version), False)

    def set_many(self, data: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> list[Any]:
        return self._degraded("set_many", lambda: super(ResilientRedisCache, self).set_many(data, timeout, version), [])

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        return self._degraded("touch", lambda: super(ResilientRedisCache, self).touch(key, timeout, version), False)

    def delete(self, key: Any, version: int | None = None) -> bool:
        return self._degraded("delete", lambda: super(ResilientRedisCache, self).delete(key, version), False)

    def delete_many(self, keys: Any, version: int | None = None) -> None:
        self._degraded("delete_many", lambda: super(ResilientRedisCache, self).delete_many(keys, version), None)

    def incr(self, key: Any, delta: int = 1, version: int | None = None) -> int:
        # A missing key still raises ValueError (Django's contract); only an outage reads as 0.
        return self._degraded("incr", lambda: super(ResilientRedisCache, self).incr(key, delta, version), 0)

    def clear(self) -> None:
        self._degraded("clear", lambda: super(ResilientRedisCache, self).clear(), None)
