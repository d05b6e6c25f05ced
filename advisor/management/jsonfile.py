"""JSON documents given to management commands: read by the same strict reader as the API's bodies."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError

from advisor.scenario import ScenarioError, pointer
from core.exitcodes import INVALID_INPUT
from core.inputfile import read_input_text
from core.jsontext import JSONTextError, parse_json_text


def read_file_argument(path: str, *, what: str) -> str:
    """The text of a command's file argument ("-": standard input; a byte order mark dropped, as Windows editors
    save UTF-8); CommandError (exit 2) naming the file and ``what`` it is when it cannot be read."""
    try:
        return read_input_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"{path}: cannot read the {what} ({exc})", returncode=INVALID_INPUT) from exc


def read_json_file_argument(path: str, *, what: str) -> Any:
    """The JSON value of a command's file argument: :func:`read_file_argument`, then :func:`parse_json_argument`."""
    return parse_json_argument(read_file_argument(path, what=what), path=path)


def invalid_document(error: ScenarioError, *, path: str, what: str) -> CommandError:
    """The exit-2 error listing each problem of the document in ``path`` by its JSON pointer."""
    lines = "\n".join(f"  {e['pointer'] or '/'}: {e['message']}" for e in error.errors)
    return CommandError(f"{path}: invalid {what}\n{lines}", returncode=INVALID_INPUT)


def parse_json_argument(text: str, *, path: str) -> Any:
    """The JSON value of a command's file argument; CommandError (exit 2) naming the file and, per problem, its
    pointer: a repeated name, NaN, a too-long integer or an unpaired surrogate are refused as the API refuses them."""
    try:
        return parse_json_text(text)
    except JSONTextError as exc:
        lines = "\n".join(f"{path}: {p.message} (pointer: '{pointer(*p.path)}')" for p in exc.problems)
        raise CommandError(lines, returncode=INVALID_INPUT) from exc
