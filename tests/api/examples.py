"""Scenario documents the API tests send."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

# The Scenario example of DESIGN.md, shared with the scenario tests.
DESIGN_SCENARIO: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "design_scenario.json").read_text()
)

MINIMAL_SCENARIO: dict[str, Any] = {
    "workload": {"kind": "training", "model": {"params_b": 1}, "tokens": 1e9},
    "gpu": "h100-sxm",
    "cluster_sizes": [8, 16],
}


def scenario(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(MINIMAL_SCENARIO)
    doc.update(changes)
    return doc
