"""Hostile probe F11: a run is whole optimizer steps (tokens 1, global_batch 1 took 24 us against a 0.099 s step),
and a predicted step is no shorter than the product's own physical floor (estimator.bounds.MIN_STEP_TIME_S: params_b
0.001 predicted 0.53 ms where a measured step under 1 ms is refused)."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import pytest

from advisor.advice import advise
from estimator.bounds import MIN_STEP_TIME_S

NOW = dt.datetime(2026, 12, 6, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def catalog(db: Any) -> None:
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data

    load_bundled_data()
    ensure_default_calibration()


def _training(model: dict[str, Any], **workload: Any) -> dict[str, Any]:
    return {
        "workload": {"kind": "training", "model": model, **workload},
        "gpu": "h100-sxm",
        "cluster_sizes": [8, 64],
    }


def test_a_run_shorter_than_one_step_takes_one_step(catalog: None) -> None:
    advice = advise(_training({"params_b": 7, "seq_len": 4096}, tokens=1, global_batch=1), now=NOW).to_dict()
    timed = [d for d in advice["sizes"] if d["step_time_s"] is not None]
    assert timed
    for size in timed:
        assert size["run_hours"] * 3600 == pytest.approx(size["step_time_s"])
        assert size["run_hours_p10"] <= size["run_hours"] <= size["run_hours_p90"]


def test_a_run_is_whole_steps(catalog: None) -> None:
    doc = _training({"params_b": 7, "seq_len": 4096}, tokens=1.0e9 + 1, global_batch=64)
    advice = advise(doc, now=NOW).to_dict()
    steps = math.ceil((1.0e9 + 1) / (64 * 4096))
    for size in (d for d in advice["sizes"] if d["step_time_s"] is not None):
        assert size["run_hours"] * 3600 / size["step_time_s"] == pytest.approx(steps, rel=1e-9)


def test_a_predicted_step_is_no_shorter_than_the_physical_floor(catalog: None) -> None:
    # 1M parameters, 8 sequences of 512 tokens a step: the model predicts 0.26-0.40 ms a step unfloored.
    advice = advise(_training({"params_b": 0.001, "seq_len": 512}, tokens=1e9, global_batch=8), now=NOW).to_dict()
    timed = [d for d in advice["sizes"] if d["step_time_s"] is not None]
    assert timed
    for size in timed:
        assert size["step_time_s"] >= MIN_STEP_TIME_S * (1 - 1e-9)
        # The throughput and the run time follow the floored step.
        assert size["tokens_per_s"] * size["step_time_s"] == pytest.approx(8 * 512)
        assert size["run_hours"] * 3600 >= math.ceil(1e9 / (8 * 512)) * MIN_STEP_TIME_S * (1 - 1e-9)


@pytest.mark.parametrize("steps", [1_000, 100_000, 1_000_000, 10_000_000, 1_000_000_000])
def test_a_part_filled_last_step_counts_at_any_run_length(steps: int) -> None:
    # A reviewer: the relative tolerance dropped the last part-filled step from about a million steps on, and at a
    # billion steps answered 999,999,999.9999999 steps.
    from advisor import economics as ec

    per_step = 1024 * 4096
    hours = ec.run_hours(tokens=steps * per_step + 1, tokens_per_s=per_step, tokens_per_step=per_step)
    assert float(hours) * 3600 == pytest.approx(steps + 1, abs=1e-3)
    exact = ec.run_hours(tokens=steps * per_step, tokens_per_s=per_step, tokens_per_step=per_step)
    assert float(exact) * 3600 == pytest.approx(steps, abs=1e-3)
