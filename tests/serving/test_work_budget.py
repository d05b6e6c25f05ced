"""Small valid requests cannot ask for unbounded work: each is measured before it starts."""

from __future__ import annotations

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
