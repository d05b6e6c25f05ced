"""Characters no stored text may hold: NUL (PostgreSQL text and jsonb refuse it) and unpaired UTF-16
surrogates (not encodable as UTF-8, so neither the database nor a response can carry them).

Checked at every boundary (API bodies and queries, CSV cells, web forms, commands) before anything
reaches the database, so SQLite and PostgreSQL answer the same 400."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

_BAD = re.compile("[\x00\ud800-\udfff]")

BAD_CHARACTER_DETAIL = "must not contain NUL characters or unpaired surrogates (U+D800-U+DFFF)"
# A name is one line of plain text: C0 controls and DEL are refused too, and the line boundaries beyond them (NEL
# U+0085, LINE and PARAGRAPH SEPARATOR U+2028/U+2029: a reviewer stored "Q3 plan\u2028" as a document's name, which
# the advice and PDF printed). XML 1.0 (so an XLSX cell) cannot hold most of them, and a name with ESC or BEL would
# also reach terminals and logs. The bidirectional controls are refused as well: embeddings and overrides
# U+202A-U+202E, isolates U+2066-U+2069 and the marks U+200E/U+200F/U+061C reorder what follows them, so an outsider's
# "budget cap \u202e000,05$\u202c per year" rendered as "budget cap $50,000 per year" on a proposal and its PDF
# cover. One character class, which the JSON Schema patterns are built from.
NAME_FORBIDDEN: Final[str] = r"\x00-\x1f\x7f\x85\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[{NAME_FORBIDDEN}]")
CONTROL_CHARACTER_DETAIL = (
    "must not contain control characters, line breaks or bidirectional text controls (U+0001-U+001F, U+007F, U+0085, "
    "U+2028, U+2029; U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C): a name is one line of plain text"
)
# A name as a JSON Schema pattern (the Scenario's and Fleet's names, job names), and one that is not blank either.
NAME_PATTERN: Final[str] = rf"^[^{NAME_FORBIDDEN}]*$"
NOT_BLANK_NAME_PATTERN: Final[str] = rf"^[^{NAME_FORBIDDEN}]*[^\s{NAME_FORBIDDEN}][^{NAME_FORBIDDEN}]*$"


def has_bad_characters(value: str) -> bool:
    return _BAD.search(value) is not None


def visible(value: str) -> str:
    """``value`` with each bad character written as a backslash escape (safe to echo in an error)."""
    if not has_bad_characters(value):
        return value
    return _BAD.sub(lambda match: f"\\u{ord(match.group()):04x}", value)


def bad_strings(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    """Paths (JSON pointer tokens) of every string, key included, in a parsed JSON value that holds a bad character."""
    if isinstance(value, str):
        if has_bad_characters(value):
            yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            # A bad key is reported too, with its bad characters escaped so the error body stays valid UTF-8.
            token = visible(key)
            if token != key:
                yield (*path, token)
            yield from bad_strings(item, (*path, token))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from bad_strings(item, (*path, index))


def clean_name(name: str | None, *, max_length: int) -> str:
    """A stored name, stripped: not empty, at most ``max_length`` characters, no bad or control character (else
    ValueError)."""
    cleaned = (name or "").strip()
    if not cleaned:
        raise ValueError("must not be empty")
    if len(cleaned) > max_length:
        raise ValueError(f"at most {max_length} characters (got {len(cleaned)})")
    if has_bad_characters(cleaned):
        raise ValueError(BAD_CHARACTER_DETAIL)
    if has_control_characters(cleaned):
        raise ValueError(CONTROL_CHARACTER_DETAIL)
    return cleaned


def has_control_characters(value: str) -> bool:
    return _CONTROL.search(value) is not None


# How much of a hostile cell an error message repeats: enough to recognise it.
SHOWN_CHARACTERS: Final[int] = 40


def shown(text: str, *, limit: int = SHOWN_CHARACTERS) -> str:
    """``text`` as an error message may repeat it: quoted with every control character escaped (repr), and cut
    to ``limit`` characters with the full length stated (a message echoed 5,000 digits, or NUL bytes to a
    terminal)."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def label(name: str) -> str:
    """A name from the input (a CSV header cell) as a message names it: as given when it is short plain text,
    else ``shown``."""
    plain = len(name) <= SHOWN_CHARACTERS * 2 and name.isprintable()
    return name if plain else shown(name)


_UTF16_BYTE_ORDER_MARKS = (b"\xff\xfe", b"\xfe\xff")


def not_utf8_detail(data: bytes, error: UnicodeDecodeError) -> str:
    """Where ``data`` stops being UTF-8, as a person finds it: the line and the byte, or UTF-16 named when the data
    starts with its byte order mark (Excel's "Unicode text"), never a byte offset alone."""
    if data.startswith(_UTF16_BYTE_ORDER_MARKS):
        return "it is UTF-16 (it starts with a UTF-16 byte order mark), not UTF-8: export the CSV as UTF-8"
    line = data[: error.start].count(b"\n") + 1
    return f"line {line} holds the byte 0x{data[error.start]:02x}, which is not UTF-8 text: export the CSV as UTF-8"
