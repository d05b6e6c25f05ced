"""JSON documents given to management commands: read by the same strict reader as the API's bodies."""

from __future__ import annotations

from typing import Any, Final

from django.core.management.base import CommandError

from advisor.scenario import pointer
from core.jsontext import JSONTextError, parse_json_text

INVALID_INPUT: Final[int] = 2


def parse_json_argument(text: str, *, path: str) -> Any:
    """The JSON value of a command's file argument; CommandError (exit 2) naming the file and, per problem, its
    pointer: a repeated name, NaN, a too-long integer or an unpaired surrogate are refused as the API refuses them."""
    try:
        return parse_json_text(text)
    except JSONTextError as exc:
        lines = "\n".join(f"{path}: {p.message} (pointer: '{pointer(*p.path)}')" for p in exc.problems)
        raise CommandError(lines, returncode=INVALID_INPUT) from exc
