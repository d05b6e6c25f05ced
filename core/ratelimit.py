"""A small fixed-window limiter counted in Django's cache, and the login view that uses it.

Failed logins are counted per (username, client address) and per client address; once a username reaches
LOGIN_MAX_FAILURES from one address, or the address LOGIN_MAX_FAILURES_PER_ADDRESS over all usernames, within
LOGIN_FAILURE_WINDOW_S, further attempts from that address answer 429 with the login page and a message saying
when to retry (a correct password does not bypass it). The same username from another address is not locked:
wrong passwords sent for a named account lock out only their sender. The client address is REMOTE_ADDR, or behind
a proxy listed in TRUSTED_PROXIES the address that proxy saw (client_address). Counts live in the
cache (Redis in production, so every gunicorn worker shares them); when the cache is down the
limiter reads 0 and lets attempts through rather than lock everyone out.

Each attempt first takes a slot with one atomic increment and gives it back when the sign-in
succeeds (or when another counter refused it), so concurrent failures cannot all pass a check
made before any of them was counted.
"""

from __future__ import annotations

import contextlib
import hashlib
import ipaddress
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


def reserve_counters(*, counters: list[tuple[str, str, Limit]]) -> list[str] | None:
    """Take one slot on every (scope, identity, limit) counter with one atomic increment each; the keys taken, or
    None (and nothing kept) when any counter was already full. The counters share one window length."""
    keys = [_key(scope, identity, limit.window_s) for scope, identity, limit in counters]
    counts = [_hit(key, limit=limit) for key, (_, _, limit) in zip(keys, counters, strict=True)]
    if all(taken <= limit.count for taken, (_, _, limit) in zip(counts, counters, strict=True)):
        return keys
    release(keys)
    return None


def reserve(*, identities: list[tuple[str, str]], limit: Limit) -> list[str] | None:
    """`reserve_counters` with one limit for every counter."""
    return reserve_counters(counters=[(scope, identity, limit) for scope, identity in identities])


def _trusted(address: str, *, proxies: list[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> bool:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(parsed in network for network in proxies)


def client_address(request: HttpRequest) -> str:
    """REMOTE_ADDR; when that is a proxy listed in TRUSTED_PROXIES, the address it saw: X-Forwarded-For read from
    the right, past the hops that are trusted proxies themselves. The entries left of that are whatever the client
    sent and are never read (X-Forwarded-For is client-controlled unless a trusted proxy appended the entry)."""
    address = request.META.get("REMOTE_ADDR", "") or "unknown"
    proxies = [ipaddress.ip_network(entry, strict=False) for entry in settings.TRUSTED_PROXIES]
    if not proxies or not _trusted(address, proxies=proxies):
        return address
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    for hop in reversed(hops):
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            return address  # not an address a proxy writes: stop at the last trusted hop
        if not _trusted(hop, proxies=proxies):
            return hop
        address = hop
    return address


def login_limit() -> Limit:
    """Failed sign-ins for one username from one address."""
    return Limit(count=settings.LOGIN_MAX_FAILURES, window_s=settings.LOGIN_FAILURE_WINDOW_S)


def address_login_limit() -> Limit:
    """Failed sign-ins from one address over all usernames (password spraying)."""
    return Limit(count=settings.LOGIN_MAX_FAILURES_PER_ADDRESS, window_s=settings.LOGIN_FAILURE_WINDOW_S)


def token_create_limit() -> Limit:
    return Limit(count=settings.TOKEN_CREATE_MAX, window_s=settings.TOKEN_CREATE_WINDOW_S)


def token_create_allowed(*, user_id: int) -> int | None:
    """Count one token creation for the user; None when allowed, else the seconds to wait."""
    limit = token_create_limit()
    if reserve(identities=[("token-create", str(user_id))], limit=limit) is None:
        return retry_after_s(limit.window_s)
    return None


def login_counters(request: HttpRequest) -> list[tuple[str, str, Limit]]:
    """The counters a sign-in attempt takes a slot on: its address and, when a username is given, that username
    from that address."""
    address = client_address(request)
    username = (request.POST.get("username") or "").strip().lower()
    counters = [("login-ip", address, address_login_limit())]
    return counters + ([("login-user-ip", f"{username}\n{address}", login_limit())] if username else [])


# The request attribute that carries the slots a sign-in attempt took, for the success path to give back.
SLOTS_ATTRIBUTE = "login_limit_slots"


def reserve_login(request: HttpRequest) -> bool:
    slots = reserve_counters(counters=login_counters(request))
    setattr(request, SLOTS_ATTRIBUTE, slots or [])
    return slots is not None


def release_login(request: HttpRequest) -> None:
    release(getattr(request, SLOTS_ATTRIBUTE, []))


class RateLimitedLoginView(LoginView):
    """Django's login view with failed attempts limited per address and per username from an address."""

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
