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


# The Fleet Plan example of the README (examples/fleet-2027.json): a base, an 8B assistant, fine-tunes, evaluations
# and two 70B runs, priced from the catalog.
FLEET_2027_PATH = Path(__file__).resolve().parents[2] / "examples" / "fleet-2027.json"


def issue_fleet_2027(client: Any) -> dict[str, Any]:
    """A fleet proposal of examples/fleet-2027.json issued through the API by ``client`` (bundled prices loaded):
    the proposal document POST /api/v1/fleets/{id}/proposals answers."""
    from tests.web.conftest import load_bundled_data

    load_bundled_data()
    document = json.loads(FLEET_2027_PATH.read_text())
    fleet = client.post("/api/v1/fleets", {"name": "2027 program", "fleet": document}, format="json")
    assert fleet.status_code == 201, fleet.content[:2000]
    response = client.post(f"/api/v1/fleets/{fleet.json()['id']}/proposals")
    assert response.status_code == 201, response.content[:2000]
    body: dict[str, Any] = response.json()
    return body
