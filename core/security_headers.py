"""Headers every response carries: a Content-Security-Policy (CONTENT_SECURITY_POLICY: scripts, styles
and everything else from this site only, no inline script or style, no framing), and
`Cache-Control: no-store` on pages that show a user's scenarios or a shared link (NO_STORE_PATH_PREFIXES),
so neither a shared computer's browser cache nor a proxy keeps them."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.cache import add_never_cache_headers


class SecurityHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if settings.CONTENT_SECURITY_POLICY and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = settings.CONTENT_SECURITY_POLICY
        if request.path.startswith(tuple(settings.NO_STORE_PATH_PREFIXES)):
            add_never_cache_headers(response)  # no-cache, no-store, must-revalidate, private, max-age=0
        return response
