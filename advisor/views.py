from __future__ import annotations

import logging

from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from core.middleware import RETRY_AFTER_S

logger = logging.getLogger(__name__)


@require_GET
def landing(request: HttpRequest) -> HttpResponse:
    return render(request, "landing.html")


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError as error:
        # The error names the host and port: it goes to the log, never to an anonymous caller.
        logger.error("healthz: database unavailable: %s", error)
        response = JsonResponse({"status": "error", "database": "unavailable"}, status=503)
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response
    return JsonResponse({"status": "ok"})
