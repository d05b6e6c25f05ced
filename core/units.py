"""Units shared by every app: one definition (the pricing feeds and the advice's economics both read them)."""

from __future__ import annotations

from typing import Final

# 365 days x 24 h: the year of DESIGN.md's break-even definition, and the one a reserved term's upfront price is
# spread over.
HOURS_PER_YEAR: Final[int] = 8760
