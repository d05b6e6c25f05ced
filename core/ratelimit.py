"""A small fixed-window limiter counted in Django's cache, and the login view that uses it.

Failed logins are counted per client address and per username; once either reaches
LOGIN_MAX_FAILURES within LOGIN_FAILURE_WINDOW_S, further attempts answer 429 with the login page
and a message saying when to retry (a correct password does not bypass it). Counts live in the
cache (Redis in production, so every gunicorn worker shares them); when the cache is down the
limiter reads 0 and lets attempts through rather than lock everyone out.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps

from django.conf import settings
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.utils.html import escape


@dataclass(frozen=True)
class Limit:
    count: int
    window_s: int


def _key(scope: str, identity: str, window_s: int) -> str:
    digest = hashlib.sha256(identity.encode()).hexdigest()[:32]
    return f"ratelimit:{scope}:{digest}:{int(time.time() // window_s)}"


def retry_after_s(window_s: int) -> int:
    return max(1, window_s - int(time.time() % window_s))


def count(*, scope: str, identity: str, limit: Limit) -> int:
    """Hits recorded in the current window."""
    return int(cache.get(_key(scope, identity, limit.window_s), 0) or 0)


def hit(*, scope: str, identity: str, limit: Limit) -> int:
    """Record one hit and return the window's count (0 when the cache is unavailable)."""
    key = _key(scope, identity, limit.window_s)
    if cache.add(key, 1, timeout=limit.window_s + 1):
        return 1
    try:
        return int(cache.incr(key))
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=limit.window_s + 1)
        return 1


def exceeded(*, scope: str, identity: str, limit: Limit) -> bool:
    return count(scope=scope, identity=identity, limit=limit) >= limit.count


def client_address(request: HttpRequest) -> str:
    # REMOTE_ADDR only: X-Forwarded-For is client-controlled unless a proxy rewrites it.
    return request.META.get("REMOTE_ADDR", "") or "unknown"


def login_limit() -> Limit:
    return Limit(count=settings.LOGIN_MAX_FAILURES, window_s=settings.LOGIN_FAILURE_WINDOW_S)


def token_create_limit() -> Limit:
    return Limit(count=settings.TOKEN_CREATE_MAX, window_s=settings.TOKEN_CREATE_WINDOW_S)


def token_create_allowed(*, user_id: int) -> int | None:
    """Count one token creation for the user; None when allowed, else the seconds to wait."""
    limit = token_create_limit()
    if exceeded(scope="token-create", identity=str(user_id), limit=limit):
        return retry_after_s(limit.window_s)
    hit(scope="token-create", identity=str(user_id), limit=limit)
    return None


class RateLimitedLoginView(LoginView):
    """Django's login view with failed attempts limited per address and per username."""

    def _identities(self) -> list[tuple[str, str]]:
        username = (self.request.POST.get("username") or "").strip().lower()
        identities = [("login-ip", client_address(self.request))]
        if username:
            identities.append(("login-user", username))
        return identities

    def post(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        limit = login_limit()
        if any(exceeded(scope=scope, identity=identity, limit=limit) for scope, identity in self._identities()):
            # An unbound form: the submitted password is never checked while the limit holds.
            form = self.get_form_class()(request=request)
            form.full_clean()
            form.cleaned_data = {}
            wait = retry_after_s(limit.window_s)
            form.add_error(None, f"Too many failed sign-in attempts. Try again in {wait} seconds.")
            response = self.render_to_response(self.get_context_data(form=form), status=429)
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)

    def form_invalid(self, form):
        limit = login_limit()
        for scope, identity in self._identities():
            hit(scope=scope, identity=identity, limit=limit)
        return super().form_invalid(form)


def login_rate_limited(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The same limit around another login view (the admin's): a POST answered 200 is a failed attempt."""

    @wraps(view)
    def limited(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        if request.method != "POST":
            return view(request, *args, **kwargs)
        limit = login_limit()
        username = (request.POST.get("username") or "").strip().lower()
        identities = [("login-ip", client_address(request))] + ([("login-user", username)] if username else [])
        if any(exceeded(scope=scope, identity=identity, limit=limit) for scope, identity in identities):
            wait = retry_after_s(limit.window_s)
            message = escape(f"Too many failed sign-in attempts. Try again in {wait} seconds.")
            response = HttpResponse(f"<!doctype html><title>Too many attempts</title><p>{message}</p>", status=429)
            response["Retry-After"] = str(wait)
            return response
        response = view(request, *args, **kwargs)
        if response.status_code == 200:  # the form again: the credentials were refused
            for scope, identity in identities:
                hit(scope=scope, identity=identity, limit=limit)
        return response

    return limited
