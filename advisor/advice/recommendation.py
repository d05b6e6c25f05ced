"""Which size to take: the knee of the scaling curve, and the cheapest size per run."""

from __future__ import annotations

import itertools
from typing import Any, Final

import numpy as np

# A step up in cluster size is worth taking while it delivers at least 80% of the ideal speed-up
# (product rule, stated in every recommendation; Amdahl-style "parallel efficiency >= 0.8" is the
# usual HPC strong-scaling acceptance threshold).
KNEE_MARGINAL_EFFICIENCY: Final[float] = 0.8


def knee_index(gpus: np.ndarray, tps: np.ndarray, feasible: np.ndarray) -> tuple[int | None, int | None, float | None]:
    """(index of the knee size, index of the next fitting size, that step's marginal efficiency)."""
    idx = np.flatnonzero(feasible)
    if not idx.size:
        return None, None, None
    knee = int(idx[0])
    for prev, nxt in itertools.pairwise(idx):
        marginal = (tps[nxt] / tps[prev]) / (gpus[nxt] / gpus[prev])
        if not marginal >= KNEE_MARGINAL_EFFICIENCY:
            return knee, int(nxt), float(marginal)
        knee = int(nxt)
    return knee, None, None


def cheapest_size(size_docs: list[dict[str, Any]]) -> tuple[int, float, str] | None:
    """(GPUs, USD, "rented"/"owned") of the lowest cost per run over every size and both options."""
    options = [
        (d[side]["usd_per_run"], d["gpus"], word)
        for d in size_docs
        for side, word in (("rent", "rented"), ("buy", "owned"))
        if d[side]["usd_per_run"] is not None
    ]
    if not options:
        return None
    usd, n, word = min(options)
    return n, usd, word
