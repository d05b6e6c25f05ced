"""Renderers: problem+json for errors, CSV for tabular resources (`?format=csv` or `Accept: text/csv`)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Mapping
from typing import Any

from rest_framework import serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer

from core.csvcells import spreadsheet_safe


class _EscapingJSONRenderer(JSONRenderer):
    ensure_ascii = True


class StoredTextJSONRenderer(JSONRenderer):
    """DRF's JSON renderer, except that a string UTF-8 cannot carry (an unpaired surrogate in a document saved before
    input refused them) is written as its JSON escape instead of failing the response with a 500."""

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping | None = None
    ) -> bytes:
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            return _EscapingJSONRenderer().render(data, accepted_media_type, renderer_context)


class ProblemJSONRenderer(StoredTextJSONRenderer):
    media_type = "application/problem+json"
    format = "problem+json"


def flatten_row(row: Mapping[str, Any], *, prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}, "c": [1, 2]} -> {"a.b": 1, "c": "[1, 2]"}: one flat row per object."""
    flat: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_row(value, prefix=f"{name}."))
        elif isinstance(value, list | tuple):
            flat[name] = json.dumps(value, separators=(",", ":"), default=str)
        else:
            flat[name] = value
    return flat


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return spreadsheet_safe(value) if isinstance(value, str) else value


def serializer_columns(serializer: serializers.Serializer, *, prefix: str = "") -> list[str]:
    """The columns flatten_row gives a row of ``serializer``: nested objects as dotted names, read fields only."""
    columns: list[str] = []
    for name, field in serializer.fields.items():
        if field.write_only:
            continue
        if isinstance(field, serializers.Serializer):
            columns.extend(serializer_columns(field, prefix=f"{prefix}{name}."))
        else:
            columns.append(f"{prefix}{name}")
    return columns


def _view_columns(renderer_context: Mapping | None) -> list[str]:
    """The header of an empty list: the view's serializer's columns (a file with no rows still names them)."""
    view = (renderer_context or {}).get("view")
    serializer_class = getattr(view, "serializer_class", None)
    if not (isinstance(serializer_class, type) and issubclass(serializer_class, serializers.Serializer)):
        return []
    return serializer_columns(serializer_class())


def rows_to_csv(rows: Iterable[Mapping[str, Any]], *, header: Iterable[str] = ()) -> str:
    flat = [flatten_row(row) for row in rows]
    columns: dict[str, None] = {} if flat else dict.fromkeys(header)
    for row in flat:
        columns.update(dict.fromkeys(row))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\r\n")
    # Column names come from data too (extra CSV columns a user uploaded): escaped like any cell.
    writer.writerow({key: _cell(key) for key in columns})
    for row in flat:
        writer.writerow({key: _cell(value) for key, value in row.items()})
    return buffer.getvalue()


class CSVRenderer(BaseRenderer):
    """A list of objects (or a page of them: its `results`) as CSV with a header row.

    Nested objects become dotted columns (`rent.offer.provider`), lists a JSON cell, null an empty cell."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping | None = None
    ) -> bytes:
        if data is None:
            return b""
        rows = data.get("results", [data]) if isinstance(data, Mapping) else data
        # backslashreplace: an unpaired surrogate saved before input refused them is written as \udc80, not a 500.
        text = rows_to_csv(rows, header=[] if rows else _view_columns(renderer_context))
        return text.encode(self.charset, "backslashreplace")


class PDFRenderer(BaseRenderer):
    media_type = "application/pdf"
    format = "pdf"
    charset = None
    render_style = "binary"

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping | None = None
    ) -> bytes:
        return data


# Tabular resources also render as CSV (`?format=csv` or `Accept: text/csv`).
JSON_AND_CSV = [StoredTextJSONRenderer, CSVRenderer]
