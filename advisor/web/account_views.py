"""Account pages beside Django's own: a log-out link followed by hand (GET) gets a page, not a bare 405."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.views import LogoutView
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


class LogoutPage(LogoutView):
    """POST logs out (Django's view, CSRF checked); GET explains and offers the button, and signs nobody out."""

    http_method_names = ["get", "post", "options"]

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return render(request, "registration/logout.html")
