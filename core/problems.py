"""RFC 9457 problem details (`application/problem+json`): the one body builder that the API's
exception handler (advisor.api.errors) and the project middleware (core.middleware) both use, so
that an error answers the same document whichever layer caught it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

PROBLEM_CONTENT_TYPE = "application/problem+json"
PROBLEM_BASE = "/problems/"

# status -> (type slug, title). Types are stable relative URI references (RFC 9457 section 3.1.1).
TITLES: dict[int, tuple[str, str]] = {
    400: ("validation-error", "Invalid request"),
    401: ("not-authenticated", "Authentication required"),
    403: ("permission-denied", "Permission denied"),
    404: ("not-found", "Not found"),
    405: ("method-not-allowed", "Method not allowed"),
    406: ("not-acceptable", "Not acceptable"),
    409: ("conflict", "Conflict"),
    412: ("precondition-failed", "Precondition failed"),
    413: ("payload-too-large", "Payload too large"),
    415: ("unsupported-media-type", "Unsupported media type"),
    422: ("unprocessable-content", "Unprocessable content"),
    429: ("throttled", "Too many requests"),
    500: ("server-error", "Internal server error"),
    503: ("service-unavailable", "Service unavailable"),
}


def problem(
    *, status_code: int, detail: str, instance: str, errors: Iterable[Mapping[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    slug, title = TITLES.get(status_code, ("error" if status_code < 500 else "server-error", "Error"))
    body: dict[str, Any] = {
        "type": PROBLEM_BASE + slug,
        "title": title,
        "status": status_code,
        "detail": detail,
        "instance": instance,
    }
    if errors is not None:
        body["errors"] = list(errors)
    body.update(extra)
    return body
