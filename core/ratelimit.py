"""A small fixed-window limiter counted in Django's cache, and the login view that uses it.

Failed logins are counted per client address and per username; once either reaches
LOGIN_MAX_FAILURES within LOGIN_FAILURE_WINDOW_S, further attempts answer 429 with the login page
and a message saying when to retry (a correct password does not bypass it). Counts live in the
cache (Redis in production, so every gunicorn worker shares them); when the cache is down the
limiter reads 0 and lets attempts through rather than lock everyone out.

Each attempt first takes a slot with one atomic increment and gives it back when the sign-in
succeeds (or when another counter refused it), so concurrent failures cannot all pass a check
made before any of them was counted.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps

from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
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


def _hit(key: str, *, limit: Limit) -> int:
    """Record one hit on `key` atomically and return the window's count (0 when the cache is unavailable)."""
    if cache.add(key, 1, timeout=limit.window_s + 1):
        return 1
    try:
        return int(cache.incr(key))
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=limit.window_s + 1)
        return 1


def release(keys: list[str]) -> None:
    """Give back the slots `reserve` took (an attempt that turned out not to count)."""
    for key in keys:
        with contextlib.suppress(ValueError):  # the window expired meanwhile: nothing left to give back
            cache.decr(key)


def reserve(*, identities: list[tuple[str, str]], limit: Limit) -> list[str] | None:
    """Take one slot on every counter with one atomic increment each; the keys taken, or None (and nothing
    kept) when any counter was already full."""
    keys = [_key(scope, identity, limit.window_s) for scope, identity in identities]
    counts = [_hit(key, limit=limit) for key in keys]
    if all(taken <= limit.count for taken in counts):
        return keys
    release(keys)
    return None


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
    if reserve(identities=[("token-create", str(user_id))], limit=limit) is None:
        return retry_after_s(limit.window_s)
    return None


def login_identities(request: HttpRequest) -> list[tuple[str, str]]:
    """The counters a sign-in attempt takes a slot on: its address and, when given, the username."""
    username = (request.POST.get("username") or "").strip().lower()
    return [("login-ip", client_address(request))] + ([("login-user", username)] if username else [])


# The request attribute that carries the slots a sign-in attempt took, for the success path to give back.
SLOTS_ATTRIBUTE = "login_limit_slots"


def reserve_login(request: HttpRequest) -> bool:
    slots = reserve(identities=login_identities(request), limit=login_limit())
    setattr(request, SLOTS_ATTRIBUTE, slots or [])
    return slots is not None


def release_login(request: HttpRequest) -> None:
    release(getattr(request, SLOTS_ATTRIBUTE, []))


class RateLimitedLoginView(LoginView):
    """Django's login view with failed attempts limited per address and per username."""

    def post(self, request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        limit = login_limit()
        if not reserve_login(request):
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

    def form_valid(self, form: AuthenticationForm) -> HttpResponse:
        # Only failures count: a successful sign-in gives its slot back.
        release_login(self.request)
        return super().form_valid(form)


def login_rate_limited(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The same limit around another login view (the admin's): a POST answered 200 is a failed attempt."""

    @wraps(view)
    def limited(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        if request.method != "POST":
            return view(request, *args, **kwargs)
        limit = login_limit()
        if not reserve_login(request):
            wait = retry_after_s(limit.window_s)
            message = escape(f"Too many failed sign-in attempts. Try again in {wait} seconds.")
            response = HttpResponse(f"<!doctype html><title>Too many attempts</title><p>{message}</p>", status=429)
            response["Retry-After"] = str(wait)
            return response
        response = view(request, *args, **kwargs)
        if response.status_code != 200:  # not the form again: the credentials were accepted
            release_login(request)
        return response

    return limited
