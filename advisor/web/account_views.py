"""Account pages beside Django's own: a log-out link followed by hand (GET) gets a page, not a bare 405; password
reset only where the server can send e-mail."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.views import LogoutView, PasswordResetView
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import render


class LogoutPage(LogoutView):
    """POST logs out (Django's view, CSRF checked); GET explains and offers the button, and signs nobody out."""

    http_method_names = ["get", "post", "options"]

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return render(request, "registration/logout.html")


class PasswordResetPage(PasswordResetView):
    """Django's reset-by-e-mail where EMAIL_HOST is set; otherwise a page that says no e-mail is sent and whom to ask,
    for GET and POST alike (Django's view would say "We've emailed you instructions" whatever the SMTP answer)."""

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not settings.EMAIL_HOST:
            return render(request, "registration/password_reset_unavailable.html")
        return super().dispatch(request, *args, **kwargs)
