"""Each inference size states the memory it holds per GPU and its budget (a serving lead's probe: sizes said
fits_memory true with weights_gb_per_gpu 83.875 beside an "A100 SXM4 80GB" and 145.4 beside an "H200 SXM 141GB",
memory_per_gpu_gb null on every inference size, so the lead's own check weights + KV + reserve <= the name's GB
failed on sizes the app called fitting: the model holds them against the driver's figure, which nothing showed)."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.advice.inference import advise_inference
from tests.advisor.test_inference_advice import NOW, by_tp, catalog, scenario  # noqa: F401 (catalog: a fixture)

pytestmark = pytest.mark.usefixtures("catalog")

BUDGET_PARTS = ("weights_gb", "activations_gb", "runtime_gb", "kv_cache_gb")
# The document's figures are floats of GB; the parts add up to the whole to float rounding.
ROUNDING_GB = 1e-6


def _check(doc: dict[str, Any], tp: int, weights_gb: float) -> None:
    size = by_tp(doc, tp)
    assert size["fits_memory"]
    assert size["weights_gb_per_gpu"] == pytest.approx(weights_gb, abs=0.05)
    budget = size["memory_budget_per_gpu"]
    capacity = doc["gpu"]["memory_capacity_gb"]
    assert budget["capacity_gb"] == capacity
    assert budget["weights_gb"] == size["weights_gb_per_gpu"]
    assert all(budget[k] >= 0 for k in BUDGET_PARTS)
    assert sum(budget[k] for k in BUDGET_PARTS) == pytest.approx(size["memory_per_gpu_gb"], abs=ROUNDING_GB)
    assert size["memory_per_gpu_gb"] <= capacity
    assert budget["kv_cache_gb"] > 0


def test_deepseek_v3_on_a100_at_tp_16_states_a_budget_within_the_drivers_capacity():
    doc = advise_inference(scenario(model={"name": "deepseek-v3"}, gpu="a100-80gb", precision="bf16"), now=NOW)
    _check(doc, 16, 83.875)


def test_qwen_72b_on_h200_at_tp_1_states_a_budget_within_the_drivers_capacity():
    doc = advise_inference(scenario(model={"name": "qwen2.5-72b"}, gpu="h200", precision="bf16"), now=NOW)
    _check(doc, 1, 145.4)


def test_a_size_that_does_not_fit_holds_more_than_the_capacity_or_no_kv_cache():
    doc = advise_inference(scenario(model={"name": "qwen2.5-72b"}, precision="bf16"), now=NOW)
    size = by_tp(doc, 1)  # 145 GB of weights on one H100
    assert not size["fits_memory"]
    budget = size["memory_budget_per_gpu"]
    assert budget["kv_cache_gb"] == 0
    assert size["memory_per_gpu_gb"] > budget["capacity_gb"]


def test_the_sizes_table_shows_each_deployments_memory_against_the_capacity_and_its_parts():
    # The web page and the PDF share the inference sizes table (partials/sizes_table_inference.html).
    from django.template.loader import render_to_string
    from django.utils.html import escape

    from advisor.web.presenters import inference_rows, memory_meaning, results_context

    doc = advise_inference(scenario(model={"name": "qwen2.5-72b"}, gpu="h200", precision="bf16"), now=NOW)
    row = next(r for r, s in zip(inference_rows(advice=doc), doc["sizes"], strict=True) if s["tp"] == 1)
    assert row["memory"] == "150.5 of 150.8 GB/GPU"
    assert row["memory_budget"] == "weights 145.4 + activations 1.5 + runtime 1.0 + KV cache 2.6 GB"
    html = render_to_string("partials/sizes_table_inference.html", results_context(advice=doc))
    assert "150.5 of 150.8 GB/GPU" in html and "KV cache 2.6 GB" in html
    assert escape(memory_meaning(advice=doc)) in html
    assert "the driver's figure for the 141 GB part" in memory_meaning(advice=doc)
