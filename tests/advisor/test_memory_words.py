"""Sentences that set a job's memory need against a GPU's memory give the capacity the job is held against (the
driver's figure, estimator.specs GpuSpec.memory_bytes), not the datasheet's: after the training check moved to the
driver's bytes, "83 GB per GPU of 80 GB" would have been printed for a job that fits."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest

from advisor.advice import advise
from estimator.specs import get_gpu

NOW = dt.datetime(2026, 12, 6, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def catalog(db: Any) -> None:
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data

    load_bundled_data()
    ensure_default_calibration()


def _training(params_b: float, sizes: list[int]) -> dict[str, Any]:
    return {
        "workload": {"kind": "training", "model": {"params_b": params_b, "seq_len": 4096}, "tokens": 1e11},
        "gpu": "h100-sxm",
        "cluster_sizes": sizes,
    }


def test_the_fits_on_one_gpu_warning_gives_the_capacity_the_job_is_held_against(catalog: None) -> None:
    advice = advise(_training(1, [8, 16]), now=NOW).to_dict()
    warning = next(w for w in advice["warnings"] if "you may not need a cluster" in w)
    assert get_gpu("h100-sxm").capacity_text() in warning
    assert "85.5 GB per GPU (the driver's figure for the 80 GB part)" in warning


def test_the_bigger_cluster_that_holds_a_model_is_measured_against_the_driver_figure(catalog: None) -> None:
    advice = advise(_training(405, [8]), now=NOW).to_dict()
    texts = [r["text"] for r in advice["recommendation"].get("relax") or [] if r.get("change") == "cluster_sizes"]
    assert texts, advice["recommendation"]
    need = re.search(r"\((\d+) GB of (.*)\)$", texts[0])
    assert need is not None, texts[0]
    assert need.group(2) == get_gpu("h100-sxm").capacity_text()
    assert float(need.group(1)) <= get_gpu("h100-sxm").memory_bytes / 1e9
