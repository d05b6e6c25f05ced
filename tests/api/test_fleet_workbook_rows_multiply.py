"""A fleet workbook's priced rows multiply true: GPU-hours x price per GPU-hour = the amount, to the cent. A finance
auditor found, for examples/fleet-2027.json, the Tiers sheet's on-demand row 1,113,027.03 GPU-h x $2.95 (nebius) =
$3,283,430 where it printed $3,270,314: the $13,116 is the 8B assistant's 11,953.75 GPU-h rented at cudo's $1.8528,
which no row showed; and the Options sheet's all-rent option the same gap."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from advisor.fleet.store import fleet_create
from tests.api.test_fleet_workbook import _book, _items, _records
from tests.web.conftest import load_bundled_data

pytestmark = pytest.mark.django_db

FLEET_2027 = Path(__file__).resolve().parents[2] / "examples" / "fleet-2027.json"
CENT = 0.005  # half a cent: two amounts that round to the same cent


def _numbers(*values: Any) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def test_every_priced_row_of_a_fleet_workbook_multiplies_true(alice, user) -> None:  # type: ignore[no-untyped-def]
    load_bundled_data()
    document = json.loads(FLEET_2027.read_text())
    fleet = fleet_create(owner=user, name=document["name"], document=document)
    response = alice.post(f"/api/v1/fleets/{fleet.pk}/proposals")
    assert response.status_code == 201, response.content[:2000]
    body = response.json()
    plan = body["advice"]
    book = _book(alice.get(f"/api/v1/proposals/{body['id']}?format=xlsx"))

    tiers = _records(book["Tiers"])
    priced = [r for r in tiers if _numbers(r["gpu_hours"], r["usd_per_gpu_hour"], r["usd_per_year"])]
    assert len(priced) >= len(plan["recommendation"]["tiers"])
    for row in priced:
        assert abs(row["gpu_hours"] * row["usd_per_gpu_hour"] - row["usd_per_year"]) < CENT, row

    # Each tier's offer rows (and the owned tier's fixed cost and energy) add up to the tier row, GPU-hours and dollars.
    totals = {r["tier"]: r for r in tiers if r["row"] == "tier"}
    assert list(totals) == [t["tier"] for t in plan["recommendation"]["tiers"]]
    parts: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in tiers:
        if row["row"] != "tier":
            parts[row["tier"]].append(row)
    for tier, rows in parts.items():
        assert abs(sum(r["usd_per_year"] for r in rows) - totals[tier]["usd_per_year"]) < CENT, tier
        assert sum(r["gpu_hours"] or 0 for r in rows) == pytest.approx(totals[tier]["gpu_hours"], rel=1e-12), tier
    # The auditor's case: the 8B assistant's hours at cudo's 1-GPU offer, the rest at nebius's node.
    assert {"owned", "on_demand"} <= set(parts)
    cudo = next(r for r in parts["on_demand"] if r["provider"] == "cudo")
    assert cudo["gpu_hours"] == pytest.approx(11953.75) and cudo["usd_per_gpu_hour"] == pytest.approx(1.8528)
    assert "8B assistant serving" in cudo["job_lines"]
    assert {r["provider"] for r in parts["on_demand"]} == {"cudo", "nebius"}

    # Every option's every tier: its GPU-hours x what a GPU-hour of it cost = its yearly cost.
    options = _records(book["Options"])
    for row, option in zip(options, plan["options"], strict=True):
        for tier, use in option["by_tier"].items():
            if use["gpu_hours"]:
                price = row[f"{tier}.usd_per_gpu_hour"]
                assert abs(row[f"{tier}.gpu_hours"] * price - row[f"{tier}.usd_per_year"]) < CENT, (tier, row)

    # The break-even utilization names the price it is against.
    summary = _items(book["Summary"])
    assert "$2.95" in summary["Break-even is against"] and "nebius" in summary["Break-even is against"]
