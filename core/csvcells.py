"""CSV cells a spreadsheet would run as a formula (OWASP "CSV injection"), written as text: the one rule of every
CSV this project writes for a person to open (the API's CSV renderer and `manage.py estimate`'s output)."""

from __future__ import annotations

import csv
import io
import re
from typing import Final

# Text starting with these, after any leading spaces, is read as a formula, including the fullwidth forms (U+FF1D,
# U+FF0B, U+FF0D, U+FF20) that spreadsheets fold to ASCII.
_FORMULA_STARTS: Final[tuple[str, ...]] = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
# A plain number (-5, +1, -0.25, 1e-3): a spreadsheet reads it as that number, so it is kept as it is.
_PLAIN_NUMBER: Final = re.compile(r" *[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)? *")


def spreadsheet_safe(value: str) -> str:
    """``value``, with a leading ' when a spreadsheet would read it as a formula (it is not a plain number)."""
    if value.lstrip(" ").startswith(_FORMULA_STARTS) and _PLAIN_NUMBER.fullmatch(value) is None:
        return "'" + value
    return value


def spreadsheet_safe_csv(text: str) -> str:
    """CSV text (LF line ends) with each cell made ``spreadsheet_safe``; cells that need nothing are written as
    they were."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for record in csv.reader(io.StringIO(text, newline="")):
        writer.writerow([spreadsheet_safe(cell) for cell in record])
    return out.getvalue()
