"""Rate limits, counted in Django's cache (Redis in production, so all workers share the counts).

Rates come from REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] (environment-driven in settings), read at
request time: DRF's own classes bind the rates at import, which makes them impossible to change in
a running test process. Throttling is a fairness tool, not a defence against denial of service."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, ScopedRateThrottle, UserRateThrottle

from core.ratelimit import client_address


class _RatesAtRequestTime:
    scope: str | None

    def get_rate(self) -> str | None:
        rates = api_settings.DEFAULT_THROTTLE_RATES
        if self.scope not in rates:
            raise ImproperlyConfigured(f"No throttle rate set for scope {self.scope!r}")
        # The DRF stubs type the rates as numbers; DRF parses them as "<count>/<period>" strings.
        return rates[self.scope]  # type: ignore[return-value]

    def get_ident(self, request: Request) -> str:
        # DRF's own reads the whole X-Forwarded-For header when NUM_PROXIES is unset (a client-written value, a
        # fresh budget per made-up header); the sign-in limits' address honours TRUSTED_PROXIES instead.
        return client_address(request)


class AnonThrottle(_RatesAtRequestTime, AnonRateThrottle):
    """Per client address, for requests without credentials (they mostly get 401 anyway)."""


class UserThrottle(_RatesAtRequestTime, UserRateThrottle):
    """Per user, across every endpoint."""


class ScopedThrottle(_RatesAtRequestTime, ScopedRateThrottle):
    """Per user and scope, on views that set `throttle_scope` ("advice", "pdf": the CPU-heavy ones)."""
