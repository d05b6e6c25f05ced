"""Characters no stored text may hold: NUL (PostgreSQL text and jsonb refuse it) and unpaired UTF-16
surrogates (not encodable as UTF-8, so neither the database nor a response can carry them).

Checked at every boundary (API bodies and queries, CSV cells, web forms, commands) before anything
reaches the database, so SQLite and PostgreSQL answer the same 400."""

from __future__ import annotations

import re
import unicodedata
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
# cover. One character class, which the JSON Schema patterns are built from; the bidirectional controls are refused
# in uploaded CSV cells too (``bidi_problem``), which are echoed back.
_BIDI_MARKS: Final[str] = r"\u061c\u200e\u200f"
_BIDI_EMBEDDINGS: Final[str] = r"\u202a-\u202e\u2066-\u2069"
_CONTROLS: Final[str] = rf"\x00-\x1f\x7f\x85{_BIDI_MARKS}\u2028\u2029{_BIDI_EMBEDDINGS}"
_CONTROL = re.compile(f"[{_CONTROLS}]")
_BIDI_CONTROL = re.compile(f"[{_BIDI_MARKS}{_BIDI_EMBEDDINGS}]")
_BIDI_NAMES: Final[str] = "U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C"
BIDI_CONTROL_DETAIL = (
    f"must not contain bidirectional text controls ({_BIDI_NAMES}): they reorder the text shown after them wherever "
    "the cell is echoed"
)
CONTROL_CHARACTER_DETAIL = (
    "must not contain control characters, line breaks or bidirectional text controls (U+0001-U+001F, U+007F, U+0085, "
    f"U+2028, U+2029; {_BIDI_NAMES}): a name is one line of plain text"
)
# Characters that show nothing, or nothing agreed (an outsider's probe stored "\u200b", "\u3164", tags and
# private-use characters as names, and "mi\u200bne" beside "mine", which every picker shows alike): every format
# character (Unicode category Cf: zero-width space and joiners, BOM, soft hyphen, the bidi controls; a name needs no
# emoji joiner), private use (Co), the noncharacters (U+FDD0-U+FDEF and the last two of every plane), the whole tag
# block U+E0000-U+E007F, and the Hangul fillers, letters (Lo) drawn as blank. Other unassigned code points are
# kept: an emoji newer than this server's Unicode tables is one.
HANGUL_FILLERS: Final[str] = "\u115f\u1160\u3164\uffa0"
INVISIBLE_CHARACTER_DETAIL = (
    "must not contain invisible or undefined characters: format characters (Unicode category Cf, e.g. zero-width "
    "space U+200B, joiners U+200C/U+200D, byte order mark U+FEFF, soft hyphen U+00AD), tags U+E0000-U+E007F, "
    "private-use characters (Co), noncharacters (e.g. U+FFFF) or Hangul fillers (U+115F, U+1160, U+3164, U+FFA0)"
)
# A name must show something: one letter, digit, punctuation mark or symbol (combining marks or spaces alone draw
# a blank name; "at least one non-space character" let "\u0301\u0301" through). A JSON Schema pattern cannot say
# Unicode categories portably, so this part is the server's alone.
_VISIBLE_CATEGORIES: Final[tuple[str, ...]] = ("L", "N", "P", "S")
NO_VISIBLE_CHARACTER_DETAIL = (
    "must hold at least one visible character (a letter, digit, punctuation mark or symbol): marks, spaces and "
    "fillers alone show a blank name"
)


def _invisible(cp: int) -> bool:
    return (
        unicodedata.category(chr(cp)) in ("Cf", "Co")
        or 0xFDD0 <= cp <= 0xFDEF
        or cp & 0xFFFE == 0xFFFE
        or 0xE0000 <= cp <= 0xE007F
        or chr(cp) in HANGUL_FILLERS
    )


def _invisible_class() -> str:
    """The invisible characters as a regex class body: BMP ones as \\uXXXX escapes, astral ones as the characters
    themselves (Python, Rust and ECMA-262 with the u flag read both alike; an astral \\U escape is Python's alone).
    Planes 4-14 (past its tag block) hold no assigned format or private-use character, only their noncharacters."""
    scanned = [*range(0x80, 0x40000), *range(0xE0000, 0xE1000)]
    spans: list[tuple[int, int]] = []
    for cp in scanned:
        if _invisible(cp):
            if spans and spans[-1][1] == cp - 1:
                spans[-1] = (spans[-1][0], cp)
            else:
                spans.append((cp, cp))
    spans += [(plane * 0x10000 + 0xFFFE, plane * 0x10000 + 0xFFFF) for plane in range(4, 15)]
    spans += [(0xF0000, 0xFFFFF), (0x100000, 0x10FFFF)]  # private use planes and their noncharacters

    def text(cp: int) -> str:
        return f"\\u{cp:04x}" if cp < 0x10000 else chr(cp)

    return "".join(text(a) if a == b else f"{text(a)}-{text(b)}" for a, b in spans)


# One character class for names, which the JSON Schema patterns are built from: the controls and line breaks, and
# the invisible characters.
NAME_FORBIDDEN: Final[str] = _CONTROLS + _invisible_class()
_FORBIDDEN_IN_NAME = re.compile(f"[{NAME_FORBIDDEN}]")
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


def nfc(name: str) -> str:
    """A name in the one form it is stored and compared in, Unicode NFC: every name, saved items' (``clean_name``)
    and those inside documents (a Scenario's, a Fleet Plan's and its jobs'; a hostile review, F8)."""
    return unicodedata.normalize("NFC", name)


def clean_name(name: str | None, *, max_length: int) -> str:
    """A stored name, stripped and in Unicode NFC (so "cafe\\u0301" and "café" are one name, also to a uniqueness
    check): not empty, at most ``max_length`` characters, no bad, control or invisible character and at least one
    visible one (``name_problem``; else ValueError)."""
    cleaned = (name or "").strip()
    if not cleaned:
        raise ValueError("must not be empty")
    if has_bad_characters(cleaned):
        raise ValueError(BAD_CHARACTER_DETAIL)
    cleaned = nfc(cleaned)
    if len(cleaned) > max_length:
        raise ValueError(f"at most {max_length} characters (got {len(cleaned)})")
    problem = name_problem(cleaned)
    if problem is not None:
        raise ValueError(problem)
    return cleaned


def name_problem(value: str) -> str | None:
    """What is wrong with ``value`` as a name (the one rule for every name: saved items, calibrations, tokens, fleet
    jobs, a Scenario's own name), naming the first refused character; None when it is a name. Call with the NFC
    form where it will be stored (``clean_name``)."""
    if has_control_characters(value):
        return CONTROL_CHARACTER_DETAIL
    found = _FORBIDDEN_IN_NAME.search(value)
    if found is not None:
        where = f"U+{ord(found.group()):04X} at character {found.start() + 1}"
        return f"{INVISIBLE_CHARACTER_DETAIL}; got {where}: remove it"
    if not any(unicodedata.category(c).startswith(_VISIBLE_CATEGORIES) and c not in HANGUL_FILLERS for c in value):
        shown_points = " ".join(f"U+{ord(c):04X}" for c in value[:SHOWN_CHARACTERS])
        return f"{NO_VISIBLE_CHARACTER_DETAIL}; got {shown_points}"
    return None


def bidi_problem(value: str) -> str | None:
    """What is wrong with ``value`` as an uploaded cell that is echoed back (a profiled run's source, an extra
    column): a bidirectional text control, named with where it is, refused as in a name; None when it holds none."""
    found = _BIDI_CONTROL.search(value)
    if found is None:
        return None
    return f"{BIDI_CONTROL_DETAIL}; got U+{ord(found.group()):04X} at character {found.start() + 1}: remove it"


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
