"""An inference job's gpus are replicas of its deployment's TP GPUs, which need not fill whole servers: the fleet
takes the deployment its advice recommends (a finance probe: "TP 4 x 7 replicas = 28 GPUs" was refused, "more GPUs
than one node must be whole nodes"), says owning buys whole servers, and refuses a count no TP divides clearly."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.advice import advise
from advisor.advice.fleet.document import parse_fleet
from advisor.advice.fleet.service import fleet_plan
from advisor.scenario import ScenarioError
from tests.advisor.fleet.figures import fleet

pytestmark = pytest.mark.django_db

WORKLOAD = {
    "kind": "inference",
    "model": {"name": "llama-3.1-70b"},
    "precision": "bf16",
    "traffic": {"peak_requests_per_s": 14, "mean_requests_per_s": 5.6, "input_tokens": 2000, "output_tokens": 300},
    "latency": {"ttft_p95_s": 0.5, "tpot_p95_s": 0.05},
}


def serving(**extra: Any) -> dict[str, Any]:
    """A 70B service like the probe's, at the manual quotes (its advice: TP 4 x 5 replicas = 20 GPUs)."""
    return fleet({"name": "70B serving", "workload": WORKLOAD, **extra}, owned_gpus=[0, 24])


def recommended() -> tuple[int, int]:
    scenario = parse_fleet(serving()).jobs[0].scenario
    assert scenario is not None
    rec = advise(scenario).to_dict()["recommendation"]
    return int(rec["tp"]), int(rec["gpus"])


def test_the_advice_deployment_is_accepted_in_the_fleet() -> None:
    tp, gpus = recommended()
    assert gpus > 8 and gpus % 8 and gpus % tp == 0  # the case: replicas that do not fill whole servers
    plan = fleet_plan(document=serving(gpus=gpus))
    assert [(j["gpus"], j["run_hours"]) for j in plan["jobs"]] == [(gpus, 8760)]
    assert plan["jobs"][0]["calibration"] is not None
    said = [w for w in plan["warnings"] if "70B serving" in w and "whole servers" in w]
    assert said and f"{gpus} GPUs" in said[0] and f"{-(-gpus // 8) * 8}" in said[0]


def test_a_count_its_tp_does_not_divide_is_refused_with_the_tp() -> None:
    tp, gpus = recommended()
    wrong = gpus + tp // 2 if tp > 1 else gpus + 1
    assert wrong > 8 and wrong % 8 and wrong % tp
    with pytest.raises(ScenarioError) as caught:
        fleet_plan(document=serving(gpus=wrong))
    [error] = caught.value.errors
    assert error["pointer"] == "/jobs/0/gpus"
    assert f"TP {tp}" in error["message"] and str(wrong) in error["message"]


def test_a_training_job_still_takes_whole_nodes() -> None:
    document = fleet({"gpus": 28, "workload": {"kind": "training", "model": {"params_b": 1}, "tokens": 1e9}})
    with pytest.raises(ScenarioError, match="whole nodes"):
        parse_fleet(document)
