"""An inference job in a fleet follows its advice's day: the base replicas' GPUs all year and the GPUs above the
base only during the hours of the day the traffic needs them (advisor.advice.inference bills them so), not the
peak's GPUs all year (an outsider's probe: the fleet charged a serving job 3-4x its own advice's rent)."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.advice import advise
from advisor.advice.fleet.demand import HOURS
from advisor.advice.fleet.document import parse_fleet
from advisor.advice.fleet.service import fleet_plan
from tests.advisor.fleet.figures import fleet

pytestmark = pytest.mark.django_db


def serving(peak: float, mean: float, **extra: Any) -> dict[str, Any]:
    """A fleet of one 8B chat API (manual quotes: $2.50 a GPU-hour, a $438,000 node), owning none or the peak."""
    job = {
        "name": "chat API",
        "workload": {
            "kind": "inference",
            "model": {"params_b": 8},
            "traffic": {
                "peak_requests_per_s": peak,
                "mean_requests_per_s": mean,
                "input_tokens": 1000,
                "output_tokens": 200,
            },
        },
        **extra,
    }
    return fleet(job, owned_gpus=[0])


def advised(document: dict[str, Any]) -> dict[str, Any]:
    """The job's own advice: its recommended size's document."""
    scenario = parse_fleet(document).jobs[0].scenario
    assert scenario is not None
    doc = advise(scenario).to_dict()
    tp = doc["recommendation"]["tp"]
    return next(s for s in doc["sizes"] if s["tp"] == tp and s["gpus"] == doc["recommendation"]["gpus"])


def fleet_gpu_hours(plan: dict[str, Any]) -> float:
    return sum(j["gpus"] * j["run_hours"] * j["runs_per_year"] for j in plan["jobs"])


def test_a_peaky_service_rents_its_base_all_year_and_its_burst_with_the_traffic() -> None:
    document = serving(400, 100)  # peak 4x mean
    size = advised(document)
    rent = size["rent"]
    advice_gpu_hours = (rent["base_replicas"] + rent["burst_replicas_mean"]) * size["tp"] * HOURS
    peak_gpu_hours = size["gpus"] * HOURS
    assert advice_gpu_hours < 0.6 * peak_gpu_hours  # the case matters: the burst is a small share of the day
    plan = fleet_plan(document=document)
    assert fleet_gpu_hours(plan) == pytest.approx(advice_gpu_hours, rel=0.02)
    assert plan["demand"]["gpu_hours_per_year"] == pytest.approx(advice_gpu_hours, rel=0.02)
    assert plan["demand"]["peak_gpus"] == size["gpus"]  # the peak is still held at the peak hour
    # The cheapest plan rents its GPU-hours at the quote, as its advice does (before: own 24 GPUs, $262,800 a year).
    assert plan["recommendation"]["usd_per_year"] == pytest.approx(2.50 * advice_gpu_hours, rel=0.02)
    # It reads as one job: every line carries the job's name.
    assert plan["jobs"][0]["name"] == "chat API"
    assert len(plan["jobs"]) > 1 and all(j["name"].startswith("chat API (") for j in plan["jobs"][1:])
    assert all(j["runs_per_year"] == 365 and j["run_hours"] < 24 for j in plan["jobs"][1:])
    assert not any("give no months" in w for w in plan["warnings"])


def test_a_flat_service_holds_its_gpus_all_year() -> None:
    document = serving(100, 100)
    size = advised(document)
    plan = fleet_plan(document=document)
    assert [(j["name"], j["gpus"], j["run_hours"], j["runs_per_year"]) for j in plan["jobs"]] == [
        ("chat API", size["gpus"], HOURS, 1)
    ]


def test_gpus_given_hold_that_many_all_year() -> None:
    # Whole nodes at or above the advice's peak deployment (fewer are refused: test_inference_given_gpus).
    gpus = -(-advised(serving(400, 100))["gpus"] // 8) * 8 + 8
    plan = fleet_plan(document=serving(400, 100, gpus=gpus))
    assert [(j["gpus"], j["run_hours"], j["runs_per_year"]) for j in plan["jobs"]] == [(gpus, HOURS, 1)]


@pytest.mark.parametrize(("peak", "mean"), [(4000, 1000), (4000, 2500)], ids=["spike", "sinusoid"])
def test_a_large_service_is_at_most_a_line_per_hour_of_the_day(peak: float, mean: float) -> None:
    """However many replicas the peak needs, its day is at most 24 daily lines (8,760 runs), inside the plan's work
    budgets (FLEET_MAX_PLACEMENT_HOURS, FLEET_MAX_PLAN_STEPS), with the advice's GPU-hours."""
    document = serving(peak, mean)
    size = advised(document)
    rent = size["rent"]
    assert size["replicas"] > 48  # more levels than the day has hours
    plan = fleet_plan(document=document)
    assert 1 < len(plan["jobs"]) <= 25
    assert len({j["run_hours"] for j in plan["jobs"]}) == len(plan["jobs"])
    advice_gpu_hours = (rent["base_replicas"] + rent["burst_replicas_mean"]) * size["tp"] * HOURS
    assert fleet_gpu_hours(plan) == pytest.approx(advice_gpu_hours, rel=1e-9)
    assert plan["demand"]["peak_gpus"] == size["gpus"]
