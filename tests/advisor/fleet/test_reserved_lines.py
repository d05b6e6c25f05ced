"""A finance probe (F1): offering a reserved market made renting everything dearer. The all-rent option of an a10g
fleet of three 4-GPU jobs cost $95,562 with all markets (8 GPUs reserved at the 8-GPU node's $1.28268, sized against
the node's on-demand $2.036 while the uncommitted hours were billed at the 4-GPU line's $1.418) against $83,719 with
on demand only; the 4-GPU reserved instance ($0.89334, which the scenario path rents) was never weighed."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.advice.fleet.demand import Job
from advisor.advice.fleet.plan import TierPrices, plan_fleet
from advisor.advice.fleet.service import fleet_plan
from tests.web.conftest import load_bundled_data

# The probe's fleet (fres.json): three 4-GPU jobs on a10g, a manual $120,000 node.
FRES: dict[str, Any] = {
    "name": "reserved test",
    "gpu": "a10g",
    "buy": {"capex_usd": 120000},
    "jobs": [
        {"name": "base", "gpus": 4, "hours": 8760},
        {"name": "half", "gpus": 4, "hours": 5000, "months": [1]},
        {"name": "burst", "gpus": 4, "hours": 1000, "months": [3]},
    ],
}
FRES_JOBS = [Job("base", 4, 8760), Job("half", 4, 5000, months=(1,)), Job("burst", 4, 1000, months=(3,))]
# The probe's figures: node offers, and the 4-GPU line's on demand (no 4-GPU reservation).
NODE_ONLY = TierPrices(
    gpus_per_node=8,
    owned_one_node_usd_per_year=120_000 / 4,
    owned_per_node_usd_per_year=120_000 / 4,
    owned_base_usd_per_year=0.0,
    on_demand_usd_per_gpu_hour=2.036,
    reserved_usd_per_gpu_hour={"reserved_1y": 1.28268},
    line_usd_per_gpu_hour={4: {"on_demand": 1.418}},
)


def _costs(doc: dict[str, Any]) -> dict[int, float]:
    return {o["owned_gpus"]: o["usd_per_year"] for o in doc["options"]}


def test_a_commitment_is_weighed_against_the_price_its_uncommitted_hours_are_billed_at() -> None:
    on_demand_only = TierPrices(**{**NODE_ONLY.__dict__, "reserved_usd_per_gpu_hour": {}})
    with_term = plan_fleet(jobs=FRES_JOBS, prices=NODE_ONLY, owned_gpus=[0, 8]).to_dict()
    without = plan_fleet(jobs=FRES_JOBS, prices=on_demand_only, owned_gpus=[0, 8]).to_dict()
    # 59,040 GPU-hours at $1.418 = $83,719; 8 GPUs reserved all year at $1.28268 would be $89,890 and more.
    assert _costs(without)[0] == pytest.approx(59_040 * 1.418)
    for owned, cost in _costs(with_term).items():
        assert cost <= _costs(without)[owned] + 1e-6


def test_a_line_commits_at_its_own_reserved_offer() -> None:
    prices = TierPrices(
        **{**NODE_ONLY.__dict__, "line_usd_per_gpu_hour": {4: {"on_demand": 1.418, "reserved_1y": 0.89334}}}
    )
    doc = plan_fleet(jobs=FRES_JOBS, prices=prices, owned_gpus=[0]).to_dict()
    tiers = doc["options"][0]["by_tier"]
    # The all-year 4-GPU base at the 4-GPU reservation: 4 x 8,760 x $0.89334 = $31,303; the rest 6,000 h x 4 at $1.418.
    assert tiers["reserved_1y"]["gpus"] == 4
    assert tiers["reserved_1y"]["usd_per_year"] == pytest.approx(4 * 8760 * 0.89334)
    assert tiers["on_demand"]["usd_per_year"] == pytest.approx(6000 * 4 * 1.418)


@pytest.mark.django_db
def test_one_more_market_never_raises_a_fleets_cost_and_each_line_names_its_reservation() -> None:
    load_bundled_data()
    every = fleet_plan(document=FRES)
    on_demand = fleet_plan(document={**FRES, "rent": {"markets": ["on_demand"]}})
    assert on_demand["recommendation"]["all_rent_usd_per_year"] == pytest.approx(83_719, abs=1)
    od = _costs(on_demand)
    for owned, cost in _costs(every).items():
        if owned in od:
            assert cost <= od[owned] + 1e-6
    # Renting everything reserves the 4-GPU base at the 4-GPU instance: about $65k, not $95,562.
    assert every["recommendation"]["all_rent_usd_per_year"] == pytest.approx(65_335, abs=100)
    for line in every["jobs"]:
        assert line["rent_offers"]["reserved_1y"]["gpu_count"] == 4
    saving = every["recommendation"]["saving_vs_all_rent_usd"]
    assert saving == pytest.approx(
        every["recommendation"]["all_rent_usd_per_year"] - every["recommendation"]["usd_per_year"]
    )
    assert saving < 10_000
