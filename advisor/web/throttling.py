"""The API's per-client throttle scopes applied to the costly pages: each PDF (about 2 s of CPU) counts
against the "pdf" rate, each planner results fragment against "advice" (API_THROTTLE_PDF,
API_THROTTLE_ADVICE). Checked before any work; over the rate the page answers 429 with Retry-After.
Signed-in users are counted per user, anonymous visitors per address; counts live in the shared cache."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.http import HttpRequest, HttpResponse
from django.utils.html import escape
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from core.ratelimit import Limit, client_address, reserve, retry_after_s


def scope_limit(scope: str) -> Limit:
    """The API's rate for ``scope`` (read per request, so a changed setting applies at once)."""
    # DRF parse_rate reads only its argument: the same "N/period" syntax and meaning as the API.
    rate = str(api_settings.DEFAULT_THROTTLE_RATES[scope])
    count, window_s = SimpleRateThrottle.parse_rate(None, rate)  # type: ignore[arg-type]
    if count is None or window_s is None:  # parse_rate answers (None, None) only for an unset rate
        raise ValueError(f"no rate set for the {scope!r} scope")
    return Limit(count=int(count), window_s=int(window_s))


def _identity(request: HttpRequest) -> str:
    user = getattr(request, "user", None)
    return f"user:{user.pk}" if user is not None and user.is_authenticated else f"addr:{client_address(request)}"


def throttled(scope: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def limited(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
            limit = scope_limit(scope)
            identity = _identity(request)
            # One atomic increment takes the request's slot before any work: concurrent requests cannot all pass.
            if reserve(identities=[(f"web-{scope}", identity)], limit=limit) is None:
                wait = retry_after_s(limit.window_s)
                text = f"Too many requests: at most {limit.count} per {limit.window_s} s. Try again in {wait} s."
                response = HttpResponse(f'<p class="errors" role="alert">{escape(text)}</p>', status=429)
                response["Retry-After"] = str(wait)
                return response
            return view(request, *args, **kwargs)

        return limited

    return decorate
