"""Unknown query parameters are a 400 naming them, not silently ignored: `?gpus=h100-sxm` (for `?gpu=`)
would otherwise list every offer, and the caller would never know its filter did nothing. A parameter given more
than once is a 400 too (the last one would win, silently).

What a request may carry is exactly what the OpenAPI document declares for its operation (plus `format`,
the renderer override), so the contract and the behaviour cannot drift apart."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

from rest_framework import exceptions
from rest_framework.permissions import BasePermission

if TYPE_CHECKING:  # rest_framework.views imports the permission settings: importing it here would be a cycle
    from rest_framework.request import Request
    from rest_framework.views import APIView

ALWAYS_ALLOWED = frozenset({"format"})
_CONVERTER = re.compile(r"<(?:\w+:)?(\w+)>")


class QueryParameterProblem(exceptions.ValidationError):
    """400: `errors` has one entry per bad parameter, naming it (the API's exception handler lists them)."""

    def __init__(self, details: dict[str, str], *, code: str):
        super().__init__({name: [detail] for name, detail in details.items()})
        self.errors = [
            {
                "pointer": "#/" + name.replace("~", "~0").replace("/", "~1"),
                "parameter": name,
                "detail": detail,
                "code": code,
            }
            for name, detail in details.items()
        ]


class UnknownQueryParameters(QueryParameterProblem):
    """One entry per unknown parameter, naming it and listing the allowed ones."""

    def __init__(self, unknown: list[str], allowed: frozenset[str]):
        listed = ", ".join(sorted(allowed)) or "none"
        detail = f"unknown query parameter; allowed here: {listed}"
        super().__init__(dict.fromkeys(unknown, detail), code="unknown_parameter")


class RepeatedQueryParameters(QueryParameterProblem):
    """One entry per parameter given more than once: no parameter here takes several values that way, and the
    query parser keeps only the last (?gpu=h100-sxm&gpu=l4 listed the l4 offers alone, and said nothing)."""

    def __init__(self, repeated: dict[str, int], lists: frozenset[str] = frozenset()):
        # The list hint only where the parameter takes a list: on /offers none does, and ?gpu=h100-sxm,l4 is
        # another 400 (an outsider's check).
        details = {
            name: f"given {times} times; give it once"
            + (" (several values as one comma-separated list)" if name in lists else "")
            for name, times in repeated.items()
        }
        super().__init__(details, code="repeated_parameter")


@functools.cache
def documented_query_parameters() -> dict[tuple[str, str], frozenset[str]]:
    """(path as in the document, method) -> the query parameter names the OpenAPI document declares."""
    return {key: frozenset(p["name"] for p in params) for key, params in _documented_query_parameter_docs().items()}


@functools.cache
def documented_list_parameters() -> dict[tuple[str, str], frozenset[str]]:
    """(path, method) -> the query parameters that take a comma-separated list (so documented)."""
    return {
        key: frozenset(p["name"] for p in params if "comma-separated" in str(p.get("description", "")).lower())
        for key, params in _documented_query_parameter_docs().items()
    }


@functools.cache
def _documented_query_parameter_docs() -> dict[tuple[str, str], list[dict[str, Any]]]:
    from drf_spectacular.generators import SchemaGenerator

    document = SchemaGenerator(api_version="v1").get_schema(request=None, public=True)
    declared: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            if isinstance(operation, dict) and "responses" in operation:
                params = [p for p in operation.get("parameters", []) if p.get("in") == "query"]
                declared[(path, method.upper())] = params
    return declared


def _operation(request: Request) -> tuple[str, str] | None:
    match = getattr(request, "resolver_match", None)
    if match is None or match.route is None:
        return None
    return "/" + _CONVERTER.sub(r"{\1}", match.route).lstrip("^").rstrip("$"), request.method or "GET"


def allowed_query_parameters(request: Request) -> frozenset[str] | None:
    """The documented parameters of the request's operation; None when the operation is not documented."""
    key = _operation(request)
    declared = None if key is None else documented_query_parameters().get(key)
    return None if declared is None else declared | ALWAYS_ALLOWED


class KnownQueryParameters(BasePermission):
    """Not a permission in the authorization sense: DRF's permission step is the one every API view runs
    after authentication, so an anonymous caller still gets its 401 first."""

    def has_permission(self, request: Request, view: APIView) -> Any:
        allowed = allowed_query_parameters(request)
        if allowed is not None:
            unknown = sorted(set(request.query_params) - allowed)
            if unknown:
                raise UnknownQueryParameters(unknown, allowed)
        repeated = {name: len(values) for name, values in sorted(request.query_params.lists()) if len(values) > 1}
        if repeated:
            key = _operation(request)
            raise RepeatedQueryParameters(
                repeated, documented_list_parameters().get(key, frozenset()) if key else frozenset()
            )
        return True
