"""Request body parsers that refuse bodies over DATA_UPLOAD_MAX_MEMORY_SIZE (413) before parsing them.

Django checks that limit only when `request.body` or `request.POST` is read; DRF parsers read the raw
stream, so without this a client could make a worker parse an arbitrarily large document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import BaseParser

from core.jsontext import PARSE_ERROR, JSONTextError, parse_json_text
from core.textcheck import not_utf8_detail


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


def json_value(data: bytes) -> Any:
    """`data` as JSON (core.jsontext's rules); a refusal as the API's 400: ParseError (`#`) for text that
    cannot be read, else one entry per located problem (`#/name`, `#/cluster_sizes/0`)."""
    try:
        return parse_json_text(data)
    except JSONTextError as error:
        unreadable = [problem for problem in error.problems if problem.code == PARSE_ERROR]
        if unreadable:
            raise ParseError(f"JSON parse error - {unreadable[0].message}") from error
        # Imported here: advisor.api.errors imports DRF's views, which import this module (DEFAULT_PARSER_CLASSES).
        from advisor.api.errors import FieldErrors, pointer

        raise FieldErrors(
            [{"pointer": pointer(*p.path), "detail": p.message, "code": p.code} for p in error.problems]
        ) from error


class JSONParser(BaseParser):
    """Strict JSON, bounded in size, depth and integer length, whose strings hold no NUL or unpaired surrogate."""

    media_type = "application/json"

    def parse(self, stream: IO[bytes], media_type: str | None = None, parser_context: Mapping | None = None) -> Any:
        return json_value(read_limited(stream))


class CSVTextParser(BaseParser):
    """A `text/csv` body as text (UTF-8, optional BOM); the caller validates its rows."""

    media_type = "text/csv"

    def parse(self, stream: IO[bytes], media_type: str | None = None, parser_context: Mapping | None = None) -> Any:
        data = read_limited(stream)
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise ParseError(f"The CSV body must be UTF-8 text: {not_utf8_detail(data, error)}") from error
