"""The plan's explanations: break-even of what is recommended, and why the answers differ (a capacity planner's
probe)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from advisor.advice.fleet.demand import Job
from advisor.advice.fleet.plan import TierPrices, owned_idle_words, plan_fleet

# Catalog H100 SXM at $2.00 on demand: one node $124,051.23 a year, a node of a cluster $148,843 (19% fabric).
CATALOG_NODE = TierPrices(
    gpus_per_node=8,
    owned_one_node_usd_per_year=124_051.23,
    owned_per_node_usd_per_year=148_843.0,
    owned_base_usd_per_year=0.0,
    owned_variable_usd_per_gpu_hour=0.1989,
    on_demand_usd_per_gpu_hour=2.0,
)


def test_break_even_is_that_of_the_recommended_fleets_last_node() -> None:
    doc = plan_fleet(jobs=[Job("one node", 8, 8760)], prices=CATALOG_NODE).to_dict()
    rec = doc["recommendation"]
    assert rec["owned_gpus"] == 8
    # One node, no fabric: (124,051.23 / 8) / (8,760 x (2.00 - 0.1989)) = 0.983, not 1.179 of a third node.
    assert rec["break_even_utilization"] == pytest.approx(124_051.23 / 8 / (8760 * (2.0 - 0.1989)))
    assert not any("more than renting it all year" in r for r in rec["reasons"])
    assert "u* = 98%" in rec["reasons"][0]


SPOT = TierPrices(
    gpus_per_node=8,
    owned_one_node_usd_per_year=124_051.23,
    owned_per_node_usd_per_year=148_843.0,
    owned_base_usd_per_year=0.0,
    owned_variable_usd_per_gpu_hour=0.1989,
    on_demand_usd_per_gpu_hour=2.95,
    spot_usd_per_gpu_hour=1.25,
)
ALL_INTERRUPTIBLE = [
    Job("a", 8, 10, runs_per_year=500, interruptible=True),
    Job("b", 16, 8760, interruptible=True),
]


def test_the_load_duration_answer_prices_interruptible_demand_at_spot() -> None:
    # Spot at $1.25 is cheaper than an owned GPU (about $2.32 per busy GPU-hour): the load-duration answer owned 16
    # (priced everything not owned at on demand) and blamed "found the 16 owned GPUs busy and may not wait".
    doc = plan_fleet(jobs=ALL_INTERRUPTIBLE, prices=SPOT).to_dict()
    rec = doc["recommendation"]
    assert rec["owned_gpus"] == 0
    assert rec["load_duration_answer"]["owned_gpus"] == 0
    assert not any("may not wait" in r for r in rec["reasons"])


def test_a_node_busy_997_of_the_year_does_not_read_100_percent() -> None:
    # 8,734 of 8,760 hours is 99.7%: the reasons printed "busy 100% of the year" (their own 0-decimal percent, not
    # advisor.formatting.percent, which never rounds a share that is not 1 to 100%).
    doc = plan_fleet(jobs=[Job("nearly always", 8, 8734)], prices=CATALOG_NODE).to_dict()
    reasons = doc["recommendation"]["reasons"]
    assert doc["recommendation"]["owned_gpus"] == 8
    assert any("own 8 GPUs, busy 99.7% of the year" in r for r in reasons), reasons
    assert any("the last busy 99.7% of the year" in r for r in reasons), reasons
    assert not any("100%" in r for r in reasons), reasons


def _rented_runs_of(plan, job_index: int, owned: int):  # type: ignore[no-untyped-def]
    i = int(np.flatnonzero(plan.options.owned_gpus == owned)[0])
    return i, (plan.runs.job == job_index) & ~plan.placement.on_owned[i]


def test_a_rented_big_run_says_the_owned_gpus_idle_only_where_the_placement_has_them_idle() -> None:
    # A finance review: "the 32-GPU runs of 'pretrain' cannot use 24 owned GPUs ..., so 24 owned GPUs idle while it
    # runs" where other jobs kept all 24 busy all year (owned utilization 1.0).
    kept_busy = plan_fleet(jobs=[Job("base", 8, 8760), Job("big", 32, 2000)], prices=CATALOG_NODE, owned_gpus=[8])
    i, big = _rented_runs_of(kept_busy, 1, 8)
    assert big.any() and owned_idle_words(kept_busy, i, big) == "while other jobs keep the owned GPUs busy"
    alone = plan_fleet(jobs=[Job("big", 32, 2000)], prices=CATALOG_NODE, owned_gpus=[8])
    i, big = _rented_runs_of(alone, 0, 8)
    assert owned_idle_words(alone, i, big) == "so all 8 of the 8 owned GPUs idle while it runs"
    half = plan_fleet(jobs=[Job("base", 8, 1000), Job("big", 32, 2000)], prices=CATALOG_NODE, owned_gpus=[8])
    i, big = _rented_runs_of(half, 1, 8)
    assert owned_idle_words(half, i, big).startswith("so on average ")


def test_the_answers_differ_reason_uses_those_words() -> None:
    doc = plan_fleet(jobs=[Job("base", 16, 8760), Job("big", 32, 300, runs_per_year=4)], prices=CATALOG_NODE).to_dict()
    differ = next(r for r in doc["recommendation"]["reasons"] if r.startswith("The answers differ"))
    assert "so all 8 of the 8 owned GPUs idle while it runs" in differ


def test_the_break_even_names_the_last_node_in_words() -> None:
    # A new user read "a GPU of node 4 of the 32 owned GPUs".
    doc = plan_fleet(
        jobs=[Job("base", 32, 8760)], prices=replace(CATALOG_NODE, on_demand_usd_per_gpu_hour=2.95)
    ).to_dict()
    rec = doc["recommendation"]
    assert rec["owned_gpus"] == 32
    assert "a GPU of the last of 4 owned nodes (32 GPUs; what it adds, fabric included)" in rec["reasons"][0]
