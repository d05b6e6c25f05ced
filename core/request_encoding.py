"""Query strings and urlencoded form bodies must be UTF-8: 400 naming the parameter or field otherwise.

Django decodes both with errors="replace", so an invalid byte sequence (`%ED%A0%80`, an encoded lone surrogate)
reached the views as U+FFFD and was stored as if it had been sent. JSON bodies already answer 400 for the same
thing (core.jsontext); this checks the raw bytes before anything decodes them. Multipart forms are left to the
form that reads them (their fields are files or short choices here)."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.html import escape

from core.problems import PROBLEM_CONTENT_TYPE, problem

FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"


def _decoded(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def invalid_utf8_names(encoded: bytes) -> list[str]:
    """The names of the `name=value` pairs in urlencoded bytes whose name or value is not UTF-8 once
    percent-decoded (a name that is itself invalid is given with its bad bytes as \\xNN escapes)."""
    names: list[str] = []
    for pair in encoded.split(b"&"):
        if not pair:
            continue
        raw_name, _, raw_value = pair.partition(b"=")
        name_bytes = unquote_to_bytes(raw_name.replace(b"+", b" "))
        name = _decoded(name_bytes)
        if name is None or _decoded(unquote_to_bytes(raw_value.replace(b"+", b" "))) is None:
            names.append(name if name is not None else name_bytes.decode("utf-8", "backslashreplace"))
    return names


def _refusal(request: HttpRequest, *, names: list[str], where: str) -> HttpResponse:
    details = {name: f"must be valid UTF-8 (the {where} holds bytes that are not UTF-8 text)" for name in names}
    if request.path.startswith("/api/"):
        errors = [
            {
                "pointer": "#/" + name.replace("~", "~0").replace("/", "~1"),
                "parameter": name,
                "detail": detail,
                "code": "invalid",
            }
            for name, detail in details.items()
        ]
        body = problem(
            status_code=400,
            detail=f"The {where} has invalid {'parameters' if where == 'query' else 'fields'}; see errors.",
            instance=request.path,
            errors=errors,
        )
        return JsonResponse(body, status=400, content_type=PROBLEM_CONTENT_TYPE)
    lines = "".join(f"<li>{escape(name)}: {escape(detail)}</li>" for name, detail in details.items())
    page = f'<!doctype html><title>Bad request</title><h1>Bad request</h1><ul class="errors">{lines}</ul>'
    return HttpResponse(page, status=400)


class Utf8RequestMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.META.get("QUERY_STRING", "")
        if names := invalid_utf8_names(query.encode("latin-1", "replace")):
            return _refusal(request, names=names, where="query")
        # request.body is bounded by DATA_UPLOAD_MAX_MEMORY_SIZE and kept for request.POST to parse.
        form = request.method == "POST" and request.content_type == FORM_CONTENT_TYPE
        if form and (names := invalid_utf8_names(request.body)):
            return _refusal(request, names=names, where="form")
        return self.get_response(request)
