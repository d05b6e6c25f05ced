"""RFC 9457 problem details for every API error: `application/problem+json` with `type`, `title`,
`status`, `detail`, `instance` and, for bad input, `errors`: one `{pointer, detail, code}` per bad
field, where `pointer` is a JSON pointer (RFC 6901, in URI fragment form `#/a/0/b`) into the
request body, or names the query parameter (then `parameter` is set too).

Views raise; they never build error responses themselves (the handler only sees raised errors)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.defaults import page_not_found
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from advisor.proposal import PdfUnavailable
from advisor.versioned import DocumentNameError
from core.api.query import QueryParameterProblem
from core.api.renderers import ProblemJSONRenderer
from core.middleware import DATABASE_DOWN_DETAIL, RETRY_AFTER_S, database_unavailable
from core.problems import PROBLEM_CONTENT_TYPE, problem

logger = logging.getLogger(__name__)


def escape_pointer_token(token: object) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(*tokens: object) -> str:
    """`pointer("workload", "tokens")` -> `#/workload/tokens`; no tokens -> `#` (the whole body)."""
    return "#" + "".join("/" + escape_pointer_token(token) for token in tokens)


def pointer_from_path(path: str) -> str:
    """Accept `/a/b`, `#/a/b`, `a.b` or `` and return the fragment form `#/a/b`."""
    if path.startswith("#"):
        return path
    if path.startswith("/") or path == "":
        return "#" + path
    return pointer(*path.split("."))


class FieldErrors(exceptions.APIException):
    """Bad input, already located: a list of {"pointer", "detail"} (plus optional "code", "parameter")."""

    status_code: int = status.HTTP_400_BAD_REQUEST
    default_detail = "The request has invalid fields; see errors."
    default_code = "invalid"

    def __init__(self, errors: Sequence[Mapping[str, Any]], *, detail: str | None = None, status_code: int = 400):
        super().__init__(detail or self.default_detail)
        self.status_code = status_code
        self.errors = [dict(error) for error in errors]


def name_field_errors(error: DocumentNameError) -> FieldErrors:
    """A saved item's bad `name` (scenario or fleet) as the 400 naming the field."""
    return FieldErrors([{"pointer": pointer("name"), "detail": str(error).removeprefix("name: "), "code": "invalid"}])


# The detail of every 400 for bad query parameters (QueryParameterErrors, core's QueryParameterProblem).
QUERY_ERRORS_DETAIL = "The query has invalid parameters; see errors."


class QueryParameterErrors(FieldErrors):
    """Bad query parameters: each entry names its parameter."""

    def __init__(self, errors: Mapping[str, Any]):
        super().__init__(
            [
                {"pointer": pointer(name), "parameter": name, "detail": detail, "code": code}
                for name, detail, code in _flatten_named(errors)
            ],
            detail=QUERY_ERRORS_DETAIL,
        )


def _flatten_named(errors: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    for name, value in errors.items():
        for path, detail, code in _flatten(value, ()):
            yield ".".join([name, *map(str, path)]), detail, code


def _flatten(detail: Any, path: tuple[object, ...]) -> Iterator[tuple[tuple[object, ...], str, str]]:
    """DRF's nested error structure -> (path, message, code) leaves."""
    if isinstance(detail, Mapping):
        for key, value in detail.items():
            # DRF puts object-level errors under non_field_errors: they belong to the object itself.
            yield from _flatten(value, path if key in ("non_field_errors", "__all__") else (*path, key))
    elif isinstance(detail, list | tuple):
        if all(isinstance(item, str) for item in detail):
            for item in detail:
                yield path, str(item), getattr(item, "code", "invalid") or "invalid"
        else:
            for index, item in enumerate(detail):
                if item:  # DRF pads list errors with {} for the valid items
                    yield from _flatten(item, (*path, index))
    else:
        yield path, str(detail), getattr(detail, "code", "invalid") or "invalid"


def validation_errors(detail: Any) -> list[dict[str, Any]]:
    return [
        {"pointer": pointer(*path), "detail": message, "code": code} for path, message, code in _flatten(detail, ())
    ]


def _detail_text(exc: exceptions.APIException) -> str:
    detail = exc.detail
    if isinstance(detail, str):
        return str(detail)
    if isinstance(exc, QueryParameterProblem):
        return QUERY_ERRORS_DETAIL
    return "The request has invalid fields; see errors."


class DatabaseUnavailable(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = DATABASE_DOWN_DETAIL
    wait = RETRY_AFTER_S  # Retry-After


class Conflict(exceptions.APIException):
    """The request is well formed but the object's state does not allow it now (a scenario deleted while it was being
    shared, a calibration still being fitted): the detail says which."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


class RendererUnavailable(exceptions.APIException):
    """A system library a renderer needs is missing on this server (the PDF's Pango)."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    request = context.get("request")
    instance = request.get_full_path() if request is not None else ""
    if isinstance(exc, ObjectDoesNotExist):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied | Http404):
        exc = exceptions.PermissionDenied() if isinstance(exc, DjangoPermissionDenied) else exceptions.NotFound()

    if isinstance(exc, PdfUnavailable):
        exc = RendererUnavailable(detail=str(exc))
    elif database_unavailable(exc):
        # The connection dropped mid-request: the atomic write rolled back; say so, and when to retry.
        logger.error("database unavailable in %s: %s", instance, exc)
        exc = DatabaseUnavailable()

    response = drf_exception_handler(exc, context)
    if response is None:
        # Not an API error: a bug. Log it with the traceback, answer a problem without internals.
        logger.exception("unhandled error in %s", instance, exc_info=exc)
        set_rollback()
        body = problem(status_code=500, detail="An unexpected error occurred; it has been logged.", instance=instance)
        response = Response(body, status=500)
    else:
        assert isinstance(exc, exceptions.APIException)
        extra: dict[str, Any] = {}
        errors: list[dict[str, Any]] | None = None
        if isinstance(exc, FieldErrors | QueryParameterProblem):
            errors = exc.errors
        elif isinstance(exc, exceptions.ValidationError):
            errors = validation_errors(exc.detail)
        elif isinstance(exc, exceptions.ParseError):
            errors = [{"pointer": pointer(), "detail": str(exc.detail), "code": "parse_error"}]
        if errors is not None and len(errors) > settings.MAX_ERRORS_PER_RESPONSE:
            # A body with 200,000 bad items must not produce a 100 MB answer: the first ones, and a count.
            extra["errors_omitted"] = len(errors) - settings.MAX_ERRORS_PER_RESPONSE
            errors = errors[: settings.MAX_ERRORS_PER_RESPONSE]
        # Throttled sets .wait in __init__; the DRF stubs do not declare it.
        if isinstance(exc, exceptions.Throttled) and exc.wait is not None:  # type: ignore[attr-defined]
            extra["retry_after_s"] = int(exc.wait + 0.999)  # type: ignore[attr-defined]
        response.data = problem(
            status_code=response.status_code, detail=_detail_text(exc), instance=instance, errors=errors, **extra
        )
    response.content_type = PROBLEM_CONTENT_TYPE
    if request is not None:
        # Errors are JSON whatever the client asked for (CSV, PDF...): force the problem renderer.
        request.accepted_renderer = ProblemJSONRenderer()
        request.accepted_media_type = PROBLEM_CONTENT_TYPE
    return response


@csrf_exempt  # as handler404, which runs before any view middleware: a POST to no route is a 404, not a 403
def api_route_not_found(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
    """The last route under /api/: with DEBUG on (``make run``) Django skips handler404 and answered its HTML debug
    page where the schema documents problem+json."""
    return not_found_view(request, Http404())


def not_found_view(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: paths under /api/ that match no route answer problem+json; pages keep Django's 404."""
    if not request.path.startswith("/api/"):
        return page_not_found(request, exception)
    body = problem(status_code=404, detail="No such API endpoint.", instance=request.get_full_path())
    return JsonResponse(body, status=404, content_type=PROBLEM_CONTENT_TYPE)
