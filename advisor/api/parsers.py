"""Request body parsers that refuse bodies over DATA_UPLOAD_MAX_MEMORY_SIZE (413) before parsing them.

Django checks that limit only when `request.body` or `request.POST` is read; DRF parsers read the raw
stream, so without this a client could make a worker parse an arbitrarily large document."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import IO, Any

import numpy as np
from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import BaseParser

from advisor.textcheck import BAD_CHARACTER_DETAIL, bad_strings


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


def read_limited(stream: IO[bytes] | None) -> bytes:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    data = stream.read(limit + 1) if stream is not None else b""
    if len(data) > limit:
        raise PayloadTooLarge(f"The request body is larger than {limit} bytes.")
    return data


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON; numbers must be finite")


_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text, counted without parsing (strings skipped)."""
    brackets = np.frombuffer(_JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKET), dtype=np.uint8)
    if brackets.size == 0:
        return 0
    steps = np.where((brackets == ord("[")) | (brackets == ord("{")), 1, -1)
    return int(np.cumsum(steps).max())


def loads_bounded(data: bytes) -> Any:
    """Strict JSON (no NaN or Infinity) nested at most MAX_JSON_DEPTH deep; ParseError otherwise.

    Depth is checked before parsing: a body of 50,000 `[` would otherwise exhaust the parser's recursion."""
    limit = settings.MAX_JSON_DEPTH
    if json_depth(data) > limit:
        raise ParseError(f"JSON parse error - nested deeper than {limit} arrays/objects")
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ParseError(f"JSON parse error - {error}") from error


def refuse_bad_characters(value: Any) -> None:
    """400 naming every string (or key) holding NUL or an unpaired surrogate, before any of it is stored."""
    paths = list(bad_strings(value))
    if paths:
        # Imported here: advisor.api.errors imports DRF's views, which import this module (DEFAULT_PARSER_CLASSES).
        from advisor.api.errors import FieldErrors, pointer

        code = "invalid_character"
        raise FieldErrors([{"pointer": pointer(*path), "detail": BAD_CHARACTER_DETAIL, "code": code} for path in paths])


class JSONParser(BaseParser):
    """Strict JSON, bounded in size and depth, whose strings hold no NUL or unpaired surrogate."""

    media_type = "application/json"

    def parse(self, stream: IO[bytes], media_type: str | None = None, parser_context: Mapping | None = None) -> Any:
        value = loads_bounded(read_limited(stream))
        refuse_bad_characters(value)
        return value


class CSVTextParser(BaseParser):
    """A `text/csv` body as text (UTF-8, optional BOM); the caller validates its rows."""

    media_type = "text/csv"

    def parse(self, stream: IO[bytes], media_type: str | None = None, parser_context: Mapping | None = None) -> Any:
        try:
            return read_limited(stream).decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise ParseError(f"The CSV body must be UTF-8 text: {error}") from error
