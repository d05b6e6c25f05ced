"""Caps on every list a Scenario (or a Fleet Plan) may hold: one place for the validators to read.

A list without a cap lets a small valid request store or compute something arbitrarily large
(issue 25). The scenario parser (advisor/scenario.py) reads these (the fleet document caps its jobs itself); the
values are generous next to any real plan: there are a few dozen providers and four markets.
"""

from __future__ import annotations

from typing import Final

MAX_CLUSTER_SIZES: Final[int] = 32  # candidate sizes compared in one Advice
MAX_PROVIDERS: Final[int] = 64  # rent.providers: slugs to restrict offers to ([] = all)
MAX_MARKETS: Final[int] = 16  # rent.markets: every Market value fits, duplicates are dropped
MAX_COMPARE_GPUS: Final[int] = 16  # GPUs compared side by side in one request
