"""An inference job that gives ``gpus`` is still checked at that size against its own advice (a hostile probe, F2:
Llama 3.1 405B at 1,000 requests/s was planned on 1 GPU at $18,692 a year, while the same job without ``gpus`` was
refused). The fleet reads the advice's sizes, no second sizing rule: the model must fit in the given GPUs, and they
must reach the fewest GPUs of a deployment that meets the targets at the peak. A job left unsized is refused with the
advice's own reason, not always "latency targets"."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.advice import advise
from advisor.advice.fleet.document import parse_fleet
from advisor.advice.fleet.service import fleet_plan
from advisor.scenario import ScenarioError
from tests.advisor.fleet.figures import fleet
from tests.advisor.fleet.test_inference_gpus import serving

pytestmark = pytest.mark.django_db

BIG = {
    "kind": "inference",
    "model": {"name": "llama-3.1-405b"},
    "traffic": {"peak_requests_per_s": 1000, "mean_requests_per_s": 500, "input_tokens": 2000, "output_tokens": 500},
    "latency": {"ttft_p95_s": 1, "tpot_p95_s": 0.05},
}


def refused(document: dict[str, Any]) -> dict[str, Any]:
    with pytest.raises(ScenarioError) as caught:
        fleet_plan(document=document)
    [error] = caught.value.errors
    return error


def advice_of(document: dict[str, Any]) -> dict[str, Any]:
    scenario = parse_fleet(document).jobs[0].scenario
    assert scenario is not None
    return advise(scenario).to_dict()


def test_a_model_that_fits_no_deployment_is_refused_at_any_given_size() -> None:
    for gpus in (1, 8, 64):
        error = refused(fleet({"name": "chat", "gpus": gpus, "workload": BIG}))
        assert error["pointer"] == "/jobs/0/gpus"
        assert "does not fit 8 x 80 GB" in error["message"] and f"in {gpus} GPU" in error["message"]


def test_gpus_short_of_the_advice_deployment_are_refused_with_its_figure() -> None:
    rec = advice_of(serving())["recommendation"]
    assert (rec["tp"], rec["gpus"]) == (4, 20)  # the advice: TP 4 x 5 replicas = 20 GPUs at the peak
    error = refused(serving(gpus=8))
    assert error["pointer"] == "/jobs/0/gpus"
    assert "TP 4 x 5 replicas = 20 GPUs" in error["message"] and "8 GPUs" in error["message"]


def test_gpus_below_the_smallest_tp_that_holds_the_model_are_refused_as_memory() -> None:
    sizes = advice_of(serving())["sizes"]
    assert [s["fits_memory"] for s in sizes if s["tp"] == 1] == [False]
    error = refused(serving(gpus=1))
    assert error["pointer"] == "/jobs/0/gpus"
    assert "does not fit in the memory of 1 GPU" in error["message"] and "TP 2" in error["message"]


def test_gpus_at_or_above_the_advice_deployment_are_planned() -> None:
    for gpus in (20, 24):
        plan = fleet_plan(document=serving(gpus=gpus))
        assert [j["gpus"] for j in plan["jobs"]] == [gpus]


def test_an_unsized_job_is_refused_with_its_advice_reason() -> None:
    error = refused(fleet({"name": "chat", "workload": BIG}))
    assert error["pointer"] == "/jobs/0/workload"
    assert "does not fit 8 x 80 GB" in error["message"]
    assert "latency targets" not in error["message"]
