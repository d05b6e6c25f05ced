"""A rented line is priced at the cheapest offer that fits its GPUs (probe "pages" F7): a service's replicas of one
GPU may rent one-GPU instances, as its own advice rents them, not only the 8-GPU node's price per GPU-hour (the same
serving job cost 59% more in a fleet than in the planner: $65,054 against its advice's $40,858 a year)."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.advice import advise
from advisor.advice.fleet.document import parse_fleet
from advisor.advice.fleet.service import fleet_plan
from tests.web.conftest import load_bundled_data

pytestmark = pytest.mark.django_db

# The finding's job, on the bundled catalog's on-demand H100 offers, owning nothing.
PEAKY_CHAT: dict[str, Any] = {
    "name": "peaky chat",
    "workload": {
        "kind": "inference",
        "model": {"name": "llama-3.1-8b"},
        "traffic": {"peak_requests_per_s": 120, "mean_requests_per_s": 15, "input_tokens": 2000, "output_tokens": 300},
    },
}
DOCUMENT: dict[str, Any] = {
    "name": "F7",
    "gpu": "h100-sxm",
    "rent": {"markets": ["on_demand"]},
    "jobs": [PEAKY_CHAT],
    "owned_gpus": [0],
}


def test_a_rented_service_costs_its_advices_rent_a_year() -> None:
    load_bundled_data()
    scenario = parse_fleet(DOCUMENT).jobs[0].scenario
    assert scenario is not None
    advice = advise(scenario).to_dict()
    rec = advice["recommendation"]
    rent = next(s for s in advice["sizes"] if s["tp"] == rec["tp"] and s["gpus"] == rec["gpus"])["rent"]
    # The case matters: the advice rents a one-GPU instance cheaper per GPU-hour than the fleet's node offer.
    assert rec["tp"] == 1 and rent["base_offer"]["gpu_count"] == 1
    plan = fleet_plan(document=DOCUMENT)
    assert plan["tier_prices"]["on_demand_usd_per_gpu_hour"] > 1.2 * rent["base_offer"]["usd_per_used_gpu_hour"]
    assert plan["recommendation"]["owned_gpus"] == 0
    assert plan["recommendation"]["usd_per_year"] == pytest.approx(rent["usd_per_month"] * 12, rel=0.03)
    # Each line names the offer it rents at: the advice's.
    for line in plan["jobs"]:
        offer = line["rent_offers"]["on_demand"]
        advised = rent["base_offer"]
        assert (offer["provider"], offer["instance"]) == (advised["provider"], advised["instance"])
