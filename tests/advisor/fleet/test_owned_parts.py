"""The fleet PDF breaks the owned tier into its parts, as the scenario PDF does (a finance probe rebuilt the fleet's
$651,128 owned tier by hand: capex annuity less residual, colocation, support and energy)."""

from __future__ import annotations

import re

import pytest

from advisor.advice.fleet.service import fleet_plan
from advisor.fleet.proposal import owned_parts, render_fleet_html

DOCUMENT = {
    "name": "parts",
    "gpu": "h100-sxm",
    "buy": {"staff_usd_per_year": 50_000},
    "jobs": [{"name": "base", "gpus": 16, "hours": 8760}, {"name": "week", "gpus": 64, "hours": 168}],
    "owned_gpus": [0, 16],
}


@pytest.fixture(autouse=True)
def _catalog(db: None) -> None:
    from pricing.services import load_bundled_data

    load_bundled_data()


def test_the_fleet_pdf_prints_the_owned_tier_in_parts_that_re_add_to_it() -> None:
    plan = fleet_plan(document=DOCUMENT)
    assert plan["recommendation"]["owned_gpus"] == 16
    owned = next(t for t in plan["recommendation"]["tiers"] if t["tier"] == "owned")["usd_per_year"]
    parts = dict(owned_parts(plan=plan) or [])
    assert {"capital", "colocation", "support", "staff", "energy"} <= set(parts)
    assert sum(parts.values()) == pytest.approx(owned, abs=1.0)
    assert parts["staff"] == pytest.approx(50_000)
    # Energy of the busy owned hours: 16 GPUs all year at the quote's energy per busy GPU-hour.
    v = plan["tier_prices"]["owned_variable_usd_per_gpu_hour"]
    assert parts["energy"] == pytest.approx(16 * 8760 * v)
    html = render_fleet_html(plan=plan, fleet_name="parts")
    line = re.search(r'data-testid="fleet-owned-parts">([^<]*)<', html)
    assert line is not None
    assert "Owning, a year: capital" in line.group(1) and f"${owned:,.0f}" in line.group(1)
