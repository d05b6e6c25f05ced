"""Small valid requests cannot ask for unbounded work: each is measured before it starts."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.api.conftest import assert_problem

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
OPEN_HEADER = (
    "gpu,num_gpus,gpus_per_node,params_b,layers,hidden,heads,seq_len,global_batch,precision,tokens_per_s,source"
)
OPEN_ROW = "h100-sxm,4096,8,70,80,8192,64,8192,4096,bf16,1000,bench"


def _csv(header: str, row: str, count: int) -> str:
    return header + "\n" + "\n".join([row] * count) + "\n"


def test_every_layout_open_on_many_rows_is_refused_before_any_work(alice, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # 2,000 rows, far inside MAX_UPLOAD_ROWS, with every layout field open: 15,360 candidates each (5 strategies x
    # 4 tp x 4 cp x 16 (pp, virtual stages) pairs x 6 micro-batches x 2 checkpointing; 31 million in all).
    from advisor.api import calibration_access

    def no_search(*args: object, **kwargs: object) -> None:
        raise AssertionError("the search started although the request is over budget")

    monkeypatch.setattr(calibration_access, "estimate_runs_csv", no_search)
    started = time.perf_counter()
    response = alice.post("/api/v1/estimate", _csv(OPEN_HEADER, OPEN_ROW, 2000), content_type="text/csv")
    elapsed = time.perf_counter() - started
    body = assert_problem(response, 413)
    assert "ESTIMATE_MAX_LAYOUTS" in body["detail"] and "30,720,000" in body["detail"]
    assert elapsed < 10, elapsed


def test_the_bundled_runs_fit_the_budget(alice) -> None:  # type: ignore[no-untyped-def]
    text = (ROOT / "estimator" / "data" / "public_runs.csv").read_text()
    response = alice.post("/api/v1/estimate", text, content_type="text/csv")
    assert response.status_code == 200, response.content[:500]
    assert response.json()["count"] == text.count("\n") - 1


def test_a_few_open_rows_are_still_estimated(alice, settings) -> None:  # type: ignore[no-untyped-def]
    response = alice.post("/api/v1/estimate", _csv(OPEN_HEADER, OPEN_ROW, 3), content_type="text/csv")
    assert response.status_code == 200, response.content[:500]
    assert response.json()["results"][0]["predicted_tokens_per_s"] > 0


def test_the_budget_is_a_setting(alice, settings) -> None:  # type: ignore[no-untyped-def]
    settings.ESTIMATE_MAX_LAYOUTS = 10_000
    response = alice.post("/api/v1/estimate", _csv(OPEN_HEADER, OPEN_ROW, 2), content_type="text/csv")
    assert_problem(response, 413)


def test_extra_columns_are_not_echoed_without_limit(alice, settings) -> None:  # type: ignore[no-untyped-def]
    extra = settings.MAX_EXTRA_COLUMNS + 1
    header = OPEN_HEADER + "," + ",".join(f"x{i}" for i in range(extra))
    row = "h100-sxm,64,8,7,32,4096,32,2048,512,bf16,1000,bench" + ",v" * extra
    response = alice.post("/api/v1/estimate", _csv(header, row, 2), content_type="text/csv")
    body = assert_problem(response, 400, "#/csv")
    assert "MAX_EXTRA_COLUMNS" in str(body["errors"])


def test_a_repeated_csv_header_is_refused(alice) -> None:  # type: ignore[no-untyped-def]
    header = OPEN_HEADER + ",params_b"
    row = "h100-sxm,64,8,7,32,4096,32,2048,512,bf16,1000,bench,700"
    response = alice.post("/api/v1/estimate", _csv(header, row, 1), content_type="text/csv")
    body = assert_problem(response, 400)
    assert any("params_b" in e["pointer"] and "more than once" in e["detail"] for e in body["errors"]), body


def test_a_fleet_plan_with_too_many_workload_jobs_is_refused_before_any_advice(alice, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from advisor.advice.fleet import pricing
    from tests.advisor.fleet.figures import fleet

    def no_advice(*args: object, **kwargs: object) -> None:
        raise AssertionError("advice ran although the plan is over budget")

    monkeypatch.setattr(pricing, "advise", no_advice)
    workload = {"kind": "training", "model": {"params_b": 1}, "tokens": 2e10}
    jobs = [{"name": f"j{i}", "gpus": 16, "workload": workload} for i in range(500)]  # well inside MAX_JOBS
    response = alice.post("/api/v1/fleet-plans", fleet(*jobs), format="json")
    body = assert_problem(response, 400, "#/jobs")
    assert "FLEET_MAX_WORKLOAD_JOBS" in str(body["errors"])


def _waiting_jobs(count: int, runs: int, wait_days: float) -> list[dict[str, object]]:
    job = {"gpus": 8, "hours": 10, "runs_per_year": runs, "max_wait_days": wait_days}
    return [{"name": f"j{i}", **job} for i in range(count)]


@pytest.fixture
def no_placement(monkeypatch):  # type: ignore[no-untyped-def]
    from advisor.advice.fleet import plan

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("placement ran although the plan is over budget")

    monkeypatch.setattr(plan, "place", refuse)


@pytest.mark.usefixtures("no_placement")
def test_a_fleet_plan_whose_runs_may_wait_a_year_is_refused_before_placing(alice) -> None:  # type: ignore[no-untyped-def]
    from tests.advisor.fleet.figures import fleet

    # 100 jobs x 1,000 runs is the documented cap of 100,000 runs; each may wait 365 days: minutes of placement.
    document = fleet(*_waiting_jobs(100, 1000, 365))
    saved = ("/api/v1/fleets", {"name": "big", "fleet": document}, "#/fleet/jobs")  # what may be saved, too
    for path, body, where in [("/api/v1/fleet-plans", document, "#/jobs"), saved]:
        answer = assert_problem(alice.post(path, body, format="json"), 400, where)
        detail = answer["errors"][0]["detail"]
        assert "FLEET_MAX_PLACEMENT_HOURS" in detail and "at most 2,000,000 hours" in detail, detail
        assert "got 876,000,000, the most /jobs/0 (1,000 runs, 8,760,000 hours)" in detail


def test_the_placement_budget_counts_hours_plus_wait_and_admits_a_plan_at_the_limit(alice, settings) -> None:  # type: ignore[no-untyped-def]
    from tests.advisor.fleet.figures import fleet

    document = fleet(*_waiting_jobs(2, 3, 1.5))  # 2 jobs x 3 runs x (10 h + 36 h) = 276 hours
    settings.FLEET_MAX_PLACEMENT_HOURS = 276
    assert alice.post("/api/v1/fleet-plans", document, format="json").status_code == 200
    settings.FLEET_MAX_PLACEMENT_HOURS = 275
    assert_problem(alice.post("/api/v1/fleet-plans", document, format="json"), 400, "#/jobs")


# Two rows: far inside MAX_USAGE_ROWS, but resampled hourly over 87 million hours (26 s and ~9 GB before).
MILLENNIA_USAGE = "timestamp,gpus_busy\n0001-01-01T00:00:00Z,8\n9999-12-31T23:59:59Z,16\n"


@pytest.mark.usefixtures("no_placement")
def test_usage_spanning_millennia_is_refused_before_resampling(alice, client, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from advisor.advice.fleet import document as fleet_document
    from tests.advisor.fleet.figures import fleet

    def no_resampling(*args: object, **kwargs: object) -> None:
        raise AssertionError("usage was resampled although it spans more than the limit")

    monkeypatch.setattr(fleet_document, "hourly_usage", no_resampling)
    expected = "the samples may span at most 600,000 hours (usage is resampled to hourly means over its span)"
    answer = assert_problem(
        alice.post("/api/v1/fleet-plans", fleet(usage={"csv": MILLENNIA_USAGE}), format="json"), 400, "#/usage/csv"
    )
    assert expected in answer["errors"][0]["detail"]
    # The /fleet/ page runs the same parser, for anonymous visitors too.
    page = client.post("/fleet/", {"fleet": json.dumps(fleet(usage={"csv": MILLENNIA_USAGE})), "action": "plan"})
    assert page.status_code == 400 and expected in page.content.decode()


def test_usage_at_the_span_limit_is_planned(alice) -> None:  # type: ignore[no-untyped-def]
    from advisor.advice.fleet.document import MAX_USAGE_SPAN_HOURS
    from tests.advisor.fleet.figures import fleet

    csv_text = f"timestamp,gpus_busy\n0,8\n{MAX_USAGE_SPAN_HOURS * 3600},16\n"
    response = alice.post("/api/v1/fleet-plans", fleet(usage={"csv": csv_text}), format="json")
    assert response.status_code == 200, response.content[:500]


def _reviewer_jobs(count: int) -> list[dict[str, object]]:
    """A hostile probe's mix: every job inside the per-job limits and 1,880 placement hours each (376,000 in all at
    200 jobs, far inside FLEET_MAX_PLACEMENT_HOURS), but sizes up to 63,936 GPUs at once: a 5.9M-GPU peak."""
    return [
        {
            "name": f"j{i}",
            "gpus": 8 * (1 + i * 37 % 8000),
            "hours": 20,
            "runs_per_year": 10,
            "interruptible": i % 2 == 0,
            "max_wait_days": 7,
        }
        for i in range(count)
    ]


@pytest.mark.usefixtures("no_placement")
def test_a_fleet_plan_whose_peak_needs_many_candidate_sizes_is_refused_before_placing(alice, client) -> None:  # type: ignore[no-untyped-def]
    # The probe's 200 jobs took 98 s: the search simulated 7,768 owned sizes (its node-by-node window grew with the
    # peak), each over every placement hour. The plan's steps count sizes x hours before any are simulated.
    from tests.advisor.fleet.figures import fleet

    document = fleet(*_reviewer_jobs(200))
    saved = ("/api/v1/fleets", {"name": "big", "fleet": document}, "#/fleet/jobs")
    for path, body, where in [("/api/v1/fleet-plans", document, "#/jobs"), saved]:
        answer = assert_problem(alice.post(path, body, format="json"), 400, where)
        detail = answer["errors"][0]["detail"]
        assert "at most 300,000,000 simulation steps in one plan (FLEET_MAX_PLAN_STEPS)" in detail, detail
        assert "candidate owned sizes (more for a higher peak: 5,892,000 GPUs at once)" in detail, detail
    # The /fleet/ page plans for anonymous visitors: the same check, before the same work.
    page = client.post("/fleet/", {"fleet": json.dumps(document), "action": "plan"})
    assert page.status_code == 400 and "FLEET_MAX_PLAN_STEPS" in page.content.decode()


def test_the_plan_steps_count_sizes_times_hours_and_admit_a_plan_at_the_limit(alice, settings) -> None:  # type: ignore[no-untyped-def]
    from tests.advisor.fleet.figures import fleet

    # 2 jobs x 3 runs of 8 GPUs at the same hours: a peak of 16 GPUs, 5 sizes at most (0, 8, 16, the peak and the
    # load-duration answer); each simulates the 60 hours the runs hold, 8 x the 216 they may wait, 100 x the 6 runs,
    # the year and 2 nodes: 5 x (60 + 1,728 + 600 + 8,760 + 2) = 55,750.
    document = fleet(*_waiting_jobs(2, 3, 1.5))
    settings.FLEET_MAX_PLAN_STEPS = 55_750
    assert alice.post("/api/v1/fleet-plans", document, format="json").status_code == 200
    settings.FLEET_MAX_PLAN_STEPS = 55_749
    answer = assert_problem(alice.post("/api/v1/fleet-plans", document, format="json"), 400, "#/jobs")
    assert "got 55,750: 5 candidate owned sizes" in answer["errors"][0]["detail"]
