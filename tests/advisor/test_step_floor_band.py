"""A hostile review (F6): the 1 ms step floor (estimator.bounds.MIN_STEP_TIME_S) bounds the P10-P90 band and the
sensitivity bars too, not only the point prediction: no throughput draw runs a step faster than the floor."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from advisor.advice import advise
from estimator.bounds import MIN_STEP_TIME_S

NOW = dt.datetime(2026, 12, 6, 9, 0, tzinfo=dt.UTC)
TOKENS, BATCH, SEQ = 1.0e9, 8, 512
TINY = {
    "name": "tiny",
    "workload": {
        "kind": "training",
        "model": {"params_b": 0.01, "seq_len": SEQ},
        "tokens": TOKENS,
        "global_batch": BATCH,
        "precision": "bf16",
        "runs_per_year": 4,
    },
    "gpu": "h100-sxm",
    "cluster_sizes": [8],
}


@pytest.fixture
def tiny_advice(db: Any) -> dict[str, Any]:
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data

    load_bundled_data()
    ensure_default_calibration()
    return advise(TINY, now=NOW).to_dict()


def test_no_band_or_sensitivity_run_is_faster_than_the_step_floor(tiny_advice: dict[str, Any]) -> None:
    size = tiny_advice["sizes"][0]
    floor_hours = TOKENS / (BATCH * SEQ) * MIN_STEP_TIME_S / 3600  # 0.0678 h: every step at the floor
    assert size["step_time_s"] == pytest.approx(MIN_STEP_TIME_S)  # the point prediction is floored
    assert size["run_hours"] == pytest.approx(floor_hours, rel=1e-3)
    for key in ("run_hours_p10", "run_hours_p50", "run_hours_p90"):
        assert size[key] >= floor_hours * (1 - 1e-9), key
    # The rent cost per run at P10 cannot be below the point's: the point already runs at the floor.
    rent = size["rent"]
    if rent["usd_per_run"] is not None:
        assert rent["usd_per_run_p10"] == pytest.approx(rent["usd_per_run"], rel=1e-6)
    # The throughput bar: a faster draw than the floor runs at the floor, so its cost is the base's (before: $25,843
    # against $31,012, owned minus rented per run); a slower one still moves it.
    (bar,) = [b for b in tiny_advice["sensitivity"] if b["input"] == "throughput"]
    assert bar["high"] == pytest.approx(bar["base"], rel=1e-9)
    assert bar["low"] != pytest.approx(bar["base"], rel=1e-3)
