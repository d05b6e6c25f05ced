"""One rule decides whether an owned cluster buys the scale-out fabric (advisor.cash_flow.carries_fabric): the work
on it crosses servers. A finance probe: the same 32 owned H100s cost $1,268,000 in the 70B service's advice (no
fabric: each replica fits in one server) and $1,565,432 in a fleet serving the same traffic (fabric per node)."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.advice import advise
from advisor.advice.fleet.document import parse_fleet
from advisor.advice.fleet.service import fleet_plan
from advisor.cash_flow import fleet_purchase

WORKLOAD = {
    "kind": "inference",
    "model": {"name": "llama-3.1-70b"},
    "precision": "bf16",
    "traffic": {"peak_requests_per_s": 20, "mean_requests_per_s": 8, "input_tokens": 2000, "output_tokens": 300},
    "latency": {"ttft_p95_s": 0.5, "tpot_p95_s": 0.05},
}
TRAINING = {"name": "pretrain", "gpus": 16, "hours": 500}


@pytest.fixture(autouse=True)
def _catalog(db: None) -> None:
    from pricing.services import load_bundled_data

    load_bundled_data()


def document(*jobs: dict[str, Any], owned: int) -> dict[str, Any]:
    return {"name": "fabric", "gpu": "h100-sxm", "jobs": list(jobs), "owned_gpus": [0, owned]}


def advice_buy() -> dict[str, Any]:
    scenario = parse_fleet(document({"workload": WORKLOAD}, owned=8)).jobs[0].scenario
    assert scenario is not None
    doc = advise(scenario).to_dict()
    rec = doc["recommendation"]
    size = next(s for s in doc["sizes"] if s["tp"] == rec["tp"] and s["gpus"] == rec["gpus"])
    buy: dict[str, Any] = size["buy"]
    return buy


def bought(plan: dict[str, Any], owned: int) -> dict[str, Any]:
    purchase = fleet_purchase(plan={**plan, "recommendation": {**plan["recommendation"], "owned_gpus": owned}})
    assert purchase is not None
    return purchase


def test_a_service_owned_in_the_fleet_costs_what_its_advice_says() -> None:
    buy = advice_buy()
    owned, nodes = buy["gpus_owned"], buy["nodes"]
    assert nodes > 1 and buy["capex_usd"] > 0
    assert "no scale-out fabric" in buy["fabric"] and "one server" in buy["fabric"]
    plan = fleet_plan(document=document({"name": "70B serving", "workload": WORKLOAD}, owned=owned))
    prices = plan["tier_prices"]
    assert prices["owned_scale_out_fabric"] is False and "no scale-out fabric" in prices["owned_fabric"]
    assert bought(plan, owned)["usd"] == pytest.approx(buy["capex_usd"], rel=1e-9)
    fixed = prices["owned_usd_per_year_base"] + nodes * prices["owned_usd_per_year_per_node"]
    assert fixed == pytest.approx(buy["fixed_usd_per_year"], rel=1e-9)


def test_a_fleet_with_multi_node_training_buys_the_fabric_and_says_so() -> None:
    buy = advice_buy()
    owned = buy["gpus_owned"]
    plan = fleet_plan(document=document({"name": "70B serving", "workload": WORKLOAD}, TRAINING, owned=owned))
    prices = plan["tier_prices"]
    assert prices["owned_scale_out_fabric"] is True and "multi-node" in prices["owned_fabric"]
    fabric = prices["hardware_quote"]["networking_usd_per_node"]
    assert fabric > 0
    assert bought(plan, owned)["usd"] == pytest.approx(buy["capex_usd"] + buy["nodes"] * fabric, rel=1e-9)


def test_the_fleet_pdf_says_whether_its_capex_includes_the_fabric() -> None:
    from advisor.fleet.proposal import render_fleet_html

    # The line is printed where the answer owns GPUs (left out when nothing is owned); renting each line at its own
    # offer (ae0ea5e) made owning none this fleet's cheaper answer, so the rendering is checked on the plan as it
    # would read had it owned 16.
    plan = fleet_plan(document=document({"name": "70B serving", "workload": WORKLOAD}, owned=16))
    plan = {**plan, "recommendation": {**plan["recommendation"], "owned_gpus": 16}}
    html = render_fleet_html(plan=plan, fleet_name="fabric")
    assert "no scale-out fabric: every run and replica of the fleet fits in one server" in html
