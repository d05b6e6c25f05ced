"""GPU counts in the advice's reasons and warnings and on the decision line are grouped as every other figure is
(advisor.formatting: "65,536"), never "65536" beside "65,536" (an outsider's probe, F12)."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.advice import advise
from advisor.web.presenters import gpus_bought_text

pytestmark = pytest.mark.django_db


def _advice(**workload: Any) -> dict[str, Any]:
    return advise(
        {
            "name": "big",
            "workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1e12, **workload},
            "gpu": "h100-sxm",
            "cluster_sizes": [65536, 8, 1],
            "rent": {"usd_per_gpu_hour": 2.5},
        }
    ).to_dict()


def _said(doc: dict[str, Any]) -> str:
    return "\n".join([*doc["recommendation"]["reasons"], *doc["warnings"]])


def test_a_scaling_step_and_the_calibration_range_group_their_gpu_counts() -> None:
    doc = _advice()
    said = _said(doc)
    assert "8 -> 65,536 GPUs runs" in said
    assert "Sizes of 1, 65,536 GPUs are outside" in said
    assert "65536" not in said
    assert gpus_bought_text(advice=doc) == "65,536 NVIDIA H100 SXM5 80GB GPUs"


def test_sizes_that_run_on_fewer_gpus_group_both_counts() -> None:
    said = _said(_advice(model={"params_b": 1000}, tokens=1e16, runs_per_year=100000))
    assert "65,536 GPUs run on 61,440" in said
    assert "65,536 GPUs -> 61,440" in said and "over all 65,536 GPUs" in said
    assert "65536" not in said and "61440" not in said


def test_no_page_or_pdf_prints_a_gpu_count_without_the_grouping_filter() -> None:
    """The PDF cover read "Own 65536 h100-sxm GPUs": a template printed the raw count. Every GPU count a template
    prints as text goes through the ``plain`` filter (advisor.formatting.plain); attribute values stay raw."""
    import re
    from pathlib import Path

    from django.template import Context, Template

    assert Template("{% load numbers %}{{ n|plain }} GPUs").render(Context({"n": 65536})) == "65,536 GPUs"
    printed = re.compile(r"(?<!=\")\{\{\s*[\w.]*gpus\s*\}\}")
    templates = Path(__file__).resolve().parents[2] / "templates"
    raw = [
        f"{path.name}: {match.group()}"
        for path in templates.rglob("*.html")
        for match in printed.finditer(path.read_text())
    ]
    assert raw == []
