"""Row ids written in a query string or a form field: one rule for every page that reads one.

`str.isdigit()` is no test for "int() can read this": it is True for '²' and other non-ASCII digits, which
int() refuses (a 500), and int() reads Arabic-Indic digits, '1_000' and ' 7 ', none of which a page writes.
An id is what Django's `<int:...>` path converter accepts: ASCII digits, here bounded so that every id read
fits a 64-bit primary key (a longer one would overflow the database's integer, not miss a row)."""

from __future__ import annotations

import re
from typing import Final

from django.http import Http404

MAX_ID_DIGITS: Final[int] = 18  # 10**18 - 1 < 2**63 - 1: every such id fits a BigAutoField
_ID: Final[re.Pattern[str]] = re.compile(rf"[0-9]{{1,{MAX_ID_DIGITS}}}")


def parse_id(raw: str) -> int | None:
    """The id `raw` writes (ASCII digits, at most MAX_ID_DIGITS of them), or None if it writes none."""
    return int(raw) if _ID.fullmatch(raw) else None


def id_or_404(raw: str, *, what: str) -> int:
    """The id `raw` writes; a 404 "No such <what>." otherwise (a string that is no id names no row)."""
    number = parse_id(raw)
    if number is None:
        raise Http404(f"No such {what}.")
    return number
