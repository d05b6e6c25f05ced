"""Each fleet job whose run hours come from a scenario names the calibration behind them and its held-out error,
the same block its own advice carries (a finance probe: the fleet's 1M GPU-hours named no calibration, while the
single-scenario advice names it)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from advisor.advice import advise
from advisor.advice.fleet.document import job_scenario, parse_fleet
from advisor.advice.fleet.service import fleet_plan
from tests.advisor.fleet.figures import fleet

pytestmark = pytest.mark.django_db

TRAINING = {
    "name": "pretrain",
    "gpus": 8,
    "runs_per_year": 2,
    "workload": {"kind": "training", "model": {"params_b": 1}, "tokens": 2e10},
}
SERVING = {
    "name": "chat API",
    "workload": {
        "kind": "inference",
        "model": {"params_b": 8},
        "traffic": {"peak_requests_per_s": 400, "mean_requests_per_s": 100, "input_tokens": 1000, "output_tokens": 200},
    },
}
GIVEN = {"name": "evals", "gpus": 8, "hours": 100}


def own_advice_calibration(document: dict[str, Any], index: int) -> dict[str, Any]:
    job = parse_fleet(document).jobs[index]
    assert job.scenario is not None
    scenario = job.scenario if job.gpus is None else job_scenario(job, job.gpus)
    calibration: dict[str, Any] = advise(scenario).to_dict()["calibration"]
    return calibration


def test_every_line_of_a_scenario_job_carries_its_advice_calibration() -> None:
    document = fleet(TRAINING, SERVING, GIVEN, owned_gpus=[0])
    plan = fleet_plan(document=document)
    by_name: dict[str, list[dict[str, Any]]] = {}
    for line in plan["jobs"]:
        by_name.setdefault(line["name"].split(" (")[0], []).append(line)
    training = own_advice_calibration(document, 0)
    assert training["runs"] > 0 and training["held_out_median_ape"] is not None
    assert [line["calibration"] for line in by_name["pretrain"]] == [training]
    serving = own_advice_calibration(document, 1)
    assert len(by_name["chat API"]) > 1  # its base and its peak hours: each line says the same
    assert all(line["calibration"] == serving for line in by_name["chat API"])
    assert [line["calibration"] for line in by_name["evals"]] == [None]


def test_the_page_and_the_pdf_name_each_job_calibration(client) -> None:  # type: ignore[no-untyped-def]
    from advisor.fleet.proposal import render_fleet_html

    document = fleet(TRAINING, SERVING, GIVEN, owned_gpus=[0])
    training = own_advice_calibration(document, 0)
    page = client.post("/fleet/", {"fleet": json.dumps(document), "action": "plan"})
    assert page.status_code == 200
    plan = fleet_plan(document=document)
    for html in (page.content.decode(), render_fleet_html(plan=plan, fleet_name="mix")):
        listed = html.split('data-testid="fleet-calibrations"')[1].split("</ul>")[0]
        assert f"pretrain: Throughput calibrated on {training['runs']:,} profiled runs" in listed
        assert f"&#x27;{training['name']}&#x27;" in listed and "median error" in listed
        assert listed.count("chat API:") == 1 and "evals" not in listed
