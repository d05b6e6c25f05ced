from __future__ import annotations

from collections.abc import Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser


class CSVTextParser(BaseParser):
    """A `text/csv` body as text (UTF-8, optional BOM); the caller validates its rows."""

    media_type = "text/csv"

    def parse(self, stream: IO[bytes], media_type: str | None = None, parser_context: Mapping | None = None) -> Any:
        try:
            return stream.read().decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise ParseError(f"The CSV body must be UTF-8 text: {error}") from error
