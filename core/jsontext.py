"""JSON text from a client, read strictly and within bounds: the one reading of untrusted JSON text.

The API's JSON parser (advisor/api/parsers.py) and the fleet page's textarea (advisor/web/fleet_views.py)
both read through `parse_json_text`, so a body refused by one is refused by the other with the same words.
What it refuses, and why each is checked here rather than left to the validators:

- nesting deeper than MAX_JSON_DEPTH, counted before parsing: 50,000 `[` would exhaust the parser's recursion;
- NaN and Infinity literals: Python's json accepts them, JSON does not, and no field means them;
- an integer of more than MAX_JSON_INTEGER_DIGITS digits: int() refuses over 4,300 (a ValueError raised
  mid-parse, with no location), and no quantity needs a tenth of that;
- NUL and unpaired surrogates in any string or key (core.textcheck): neither the database nor a
  response can carry them, so one stored would break every later view of it;
- a name given twice in one object: RFC 8259 §4 leaves such text's meaning to the reader and I-JSON (RFC 7493
  §2.3) forbids it. Python keeps the last, other readers the first, so `"gpu": "h100-sxm", "gpu": "l4"` would be
  advice for a GPU the sender may not believe it asked about.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from django.conf import settings

from core.textcheck import BAD_CHARACTER_DETAIL, bad_strings, visible

# Far above any count or quantity a document holds (tokens are at most 1e16: 17 digits), far below
# int()'s own limit, and small enough that converting one costs nothing.
MAX_JSON_INTEGER_DIGITS: Final[int] = 1000
PARSE_ERROR: Final[str] = "parse_error"  # the code of a problem with the text itself (it was not read)

_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
# The only way valid JSON text decoded from UTF-8 can hold NUL or a surrogate: an escape (raw ones fail to parse).
# Text without one skips the walk over every string (about 4 s for a 4.6 MB body of 60,000 runs).
_BAD_CHARACTER_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


@dataclass(frozen=True)
class JSONTextProblem:
    """One reason the text is refused. `path` holds the JSON pointer's tokens (() is the top-level value);
    `code` is PARSE_ERROR when the text could not be read at all, else what is wrong with the value at `path`."""

    path: tuple[str | int, ...]
    message: str
    code: str


class JSONTextError(ValueError):
    """The text is refused before any of it is used; `problems` says where and why."""

    def __init__(self, problems: list[JSONTextProblem]) -> None:
        self.problems = problems
        super().__init__("; ".join(problem.message for problem in problems))


class _RepeatedNames(dict[str, Any]):
    """An object whose text gave some names more than once (`repeated`, in order), so that the walk after
    parsing can name where it is; never returned to a caller."""

    repeated: tuple[str, ...] = ()


@dataclass(frozen=True)
class _TooManyDigits:
    """Stands in for an integer literal too long to convert, so that the walk after parsing can name where it is."""

    digits: int


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text, counted without parsing (strings skipped)."""
    brackets = np.frombuffer(_JSON_STRING.sub(b"", data).translate(None, _NOT_BRACKET), dtype=np.uint8)
    if brackets.size == 0:
        return 0
    steps = np.where((brackets == ord("[")) | (brackets == ord("{")), 1, -1)
    return int(np.cumsum(steps).max())


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON; numbers must be finite")


def _bounded_int(literal: str) -> int | _TooManyDigits:
    digits = len(literal.lstrip("-"))
    return _TooManyDigits(digits) if digits > MAX_JSON_INTEGER_DIGITS else int(literal)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    seen: set[str] = set()
    repeated: dict[str, None] = {}  # ordered, each name once
    for name, _ in pairs:
        if name in seen:
            repeated[name] = None
        seen.add(name)
    marked = _RepeatedNames(value)
    marked.repeated = tuple(repeated)
    return marked


class _Hooks:
    """json.loads hooks that note whether any value needs the located-problems walk after parsing."""

    def __init__(self) -> None:
        self.suspect = False

    def bounded_int(self, literal: str) -> int | _TooManyDigits:
        value = _bounded_int(literal)
        self.suspect = self.suspect or isinstance(value, _TooManyDigits)
        return value

    def object(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        value = _object(pairs)
        self.suspect = self.suspect or isinstance(value, _RepeatedNames)
        return value


def _located_problems(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[JSONTextProblem]:
    for bad in bad_strings(value, path):
        yield JSONTextProblem(bad, BAD_CHARACTER_DETAIL, "invalid_character")
    yield from _value_problems(value, path)


def _value_problems(value: Any, path: tuple[str | int, ...]) -> Iterator[JSONTextProblem]:
    """Integers too long to convert and names given twice, each at its pointer."""
    if isinstance(value, _TooManyDigits):
        message = f"a number with more than {MAX_JSON_INTEGER_DIGITS:,} digits is not accepted; got {value.digits:,}"
        yield JSONTextProblem(path, message, "invalid")
    elif isinstance(value, dict):
        for name in getattr(value, "repeated", ()):
            message = (
                f"the name {json.dumps(visible(name), ensure_ascii=False)} is given more than once in this object; "
                "names in a JSON object must be unique (RFC 7493 §2.3), give it once"
            )
            yield JSONTextProblem((*path, visible(name)), message, "duplicate_key")
        for key, item in value.items():
            yield from _value_problems(item, (*path, visible(key)))  # a bad key is escaped, as bad_strings does
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _value_problems(item, (*path, index))


def parse_json_text(text: bytes | str) -> Any:
    """The value of strict JSON text within the bounds above; JSONTextError naming every problem otherwise."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    limit = settings.MAX_JSON_DEPTH
    if json_depth(data) > limit:
        raise JSONTextError([JSONTextProblem((), f"nested deeper than {limit} arrays/objects", PARSE_ERROR)])
    hooks = _Hooks()
    try:
        decoded = data.decode("utf-8")
        value = json.loads(
            decoded, parse_constant=_reject_constant, parse_int=hooks.bounded_int, object_pairs_hook=hooks.object
        )
    except json.JSONDecodeError as error:
        message = f"not valid JSON at line {error.lineno} column {error.colno}: {error.msg}"
        raise JSONTextError([JSONTextProblem((), message, PARSE_ERROR)]) from error
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise JSONTextError([JSONTextProblem((), str(error), PARSE_ERROR)]) from error
    if not hooks.suspect and _BAD_CHARACTER_ESCAPE.search(decoded) is None:
        return value
    problems = list(_located_problems(value))
    if problems:
        raise JSONTextError(problems)
    return value
