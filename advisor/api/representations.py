"""Each non-JSON rendering of a resource at a path of its own: `offers.csv` beside `offers`,
`proposals/{id}/proposal.xlsx` beside `proposals/{id}` (as `proposal.pdf` already was).

An OpenAPI operation has one 200 response, and a generated client reads it in the first media type listed there:
with JSON and CSV (or a workbook) in one response, openapi-python-client parsed the CSV and the workbook as JSON and
raised on every `?format=csv` / `?format=xlsx` call. So the document gives each rendering its own operation, whose
only media type is the one it answers (advisor.api.schema.ProblemAutoSchema leaves the alternatives off the JSON
operation). `?format=csv`, `?format=xlsx` and `Accept: text/csv` keep working on the JSON paths (DESIGN.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.urls import URLPattern, URLResolver, path
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from advisor.api.negotiation import ContentNegotiation
from core.api.renderers import CSVRenderer


class OnlyRenderer(ContentNegotiation):
    """A path with one rendering answers it whatever Accept or `?format=` says (errors stay problem+json); request
    bodies are negotiated as everywhere else (a `.csv` path still takes a JSON or a CSV body)."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type


def renders_only(view_class: type[APIView], renderer: type[BaseRenderer], name: str) -> type[APIView]:
    """``view_class`` answering only ``renderer`` (a subclass named ``name``: the schema and the logs name it)."""
    attributes: dict[str, Any] = {
        "renderer_classes": [renderer],
        "content_negotiation_class": OnlyRenderer,
        "__doc__": view_class.__doc__,
        "__module__": view_class.__module__,
    }
    return type(name, (view_class,), attributes)


def _renders_csv(pattern: URLPattern) -> bool:
    view_class = getattr(pattern.callback, "cls", None)
    renderers = getattr(view_class, "renderer_classes", ()) if view_class is not None else ()
    return any(issubclass(renderer, CSVRenderer) for renderer in renderers)


def with_csv_paths(patterns: Iterable[URLPattern | URLResolver]) -> list[URLPattern | URLResolver]:
    """``patterns`` and, after each view that also renders CSV, the same view at ``<route>.csv`` answering CSV only
    (named ``<name>-csv``)."""
    out: list[URLPattern | URLResolver] = []
    for pattern in patterns:
        out.append(pattern)
        if isinstance(pattern, URLPattern) and _renders_csv(pattern):
            view_class = pattern.callback.cls  # type: ignore[attr-defined]
            csv_view = renders_only(view_class, CSVRenderer, f"{view_class.__name__}CSV")
            initkwargs = getattr(pattern.callback, "initkwargs", {})
            out.append(path(f"{pattern.pattern}.csv", csv_view.as_view(**initkwargs), name=f"{pattern.name}-csv"))
    return out
