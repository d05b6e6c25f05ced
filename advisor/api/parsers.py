"""Request body parsers that refuse bodies over DATA_UPLOAD_MAX_MEMORY_SIZE (413) before parsing them.

Django checks that limit only when `request.body` or `request.POST` is read; DRF parsers read the raw
stream, so without this a client could make a worker parse an arbitrarily large document."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import IO, Any

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import BaseParser


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


class JSONParser(BaseParser):
    """Strict JSON (no NaN or Infinity), at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes."""

    media_type = "application/json"

    def parse(self, stream: IO[bytes], media_type: str | None = None, parser_context: Mapping | None = None) -> Any:
        try:
            return json.loads(read_limited(stream).decode("utf-8"), parse_constant=_reject_constant)
        except (UnicodeDecodeError, ValueError) as error:
            raise ParseError(f"JSON parse error - {error}") from error


class CSVTextParser(BaseParser):
    """A `text/csv` body as text (UTF-8, optional BOM); the caller validates its rows."""

    media_type = "text/csv"

    def parse(self, stream: IO[bytes], media_type: str | None = None, parser_context: Mapping | None = None) -> Any:
        try:
            return read_limited(stream).decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise ParseError(f"The CSV body must be UTF-8 text: {error}") from error
