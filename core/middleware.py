"""A database that stops answering mid-request gives a clean 503, not a 500 with a traceback.

Every write service is one transaction, so a dropped connection leaves a change either wholly
saved (it committed before the cut) or wholly rolled back, never half-written. This middleware
only turns the error into an answer: problem+json under /api/ (the API's own handler does the
same for errors raised inside DRF views), a plain 503 page elsewhere. Neither touches the
database again (no session, no user, no context processors).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

from core.problems import PROBLEM_CONTENT_TYPE, problem

logger = logging.getLogger(__name__)

RETRY_AFTER_S = 30
DATABASE_DOWN_DETAIL = (
    "The database stopped answering. Changes are saved all or nothing, never half: "
    "check whether yours was saved before trying again in a minute."
)


def database_unavailable(exception: BaseException) -> bool:
    return isinstance(exception, OperationalError | InterfaceError)


class DatabaseUnavailableMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not database_unavailable(exception):
            return None
        logger.error("database unavailable during %s %s: %s", request.method, request.path, exception)
        if request.path.startswith("/api/"):
            body = problem(status_code=503, detail=DATABASE_DOWN_DETAIL, instance=request.get_full_path())
            response: HttpResponse = JsonResponse(body, status=503, content_type=PROBLEM_CONTENT_TYPE)
        else:
            response = HttpResponse(render_to_string("503.html", {"detail": DATABASE_DOWN_DETAIL}), status=503)
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response
