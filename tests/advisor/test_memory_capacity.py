"""A size's memory is shown against the capacity it was checked against (a first-time user: "yes · 86 GB/GPU" beside
an "H100 SXM5 80GB": the check holds the need against the 85.52e9 bytes the driver reports, while the page printed
the need alone, rounded up past the 80 on the GPU's name), and the gpu block says what its memory_gb is: the
datasheet's figure, which counts binary units (the H100's 80 is 80 GiB), not 1e9 bytes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from advisor.advice import advise
from advisor.web.presenters import memory_meaning, size_rows
from estimator.specs import get_gpu

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "70b-training.json"


@pytest.fixture
def advice(db: Any) -> dict[str, Any]:
    from pricing.services import load_bundled_data

    load_bundled_data()
    return advise(json.loads(EXAMPLE.read_text(encoding="utf-8"))).to_dict()


def test_each_size_shows_its_need_against_the_capacity_it_was_checked_against(advice: dict[str, Any]) -> None:
    rows = {row["gpus"]: row for row in size_rows(advice=advice)}
    need = next(s["memory_per_gpu_gb"] for s in advice["sizes"] if s["gpus"] == 128)
    assert need > 80  # over the name's figure, under the driver's
    assert rows[128]["fits_memory"]
    assert rows[128]["memory"] == f"{need:.1f} of {get_gpu('h100-sxm').memory_bytes / 1e9:.1f} GB/GPU"
    assert rows[128]["memory"] == "85.5 of 85.5 GB/GPU"
    # What the capacity is, the caption says once (a sentence per cell pushed the table past its box at 1280 px).
    assert memory_meaning(advice=advice) == (
        f"Fits memory: each size's need per GPU against {get_gpu('h100-sxm').capacity_text()}."
    )
    assert "the driver's figure for the 80 GB part" in memory_meaning(advice=advice)


def test_the_gpu_block_states_what_memory_gb_is_and_the_capacity_checked(advice: dict[str, Any]) -> None:
    gpu = advice["gpu"]
    assert gpu["memory_gb"] == 80
    assert "1e9 bytes" not in gpu["units"]["memory_gb"] and "GiB" in gpu["units"]["memory_gb"]
    assert gpu["memory_capacity_gb"] == pytest.approx(get_gpu("h100-sxm").memory_bytes / 1e9)
    assert "memory_per_gpu_gb" in gpu["units"]["memory_capacity_gb"]


def test_a_document_issued_before_the_capacity_shows_the_need_alone(advice: dict[str, Any]) -> None:
    older = {**advice, "gpu": {k: v for k, v in advice["gpu"].items() if k != "memory_capacity_gb"}}
    need = next(s["memory_per_gpu_gb"] for s in advice["sizes"] if s["gpus"] == 128)
    assert {r["gpus"]: r for r in size_rows(advice=older)}[128]["memory"] == f"{need:.1f} GB/GPU"
