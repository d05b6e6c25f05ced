"""The served model of an inference Advice given by its geometry: weights and FLOPs from the parameters that
geometry holds (estimator.catalog.work_params_b), as the training advice counts them and as model.assumed says."""

from __future__ import annotations

import pytest

from advisor.advice.inference import advise_inference
from tests.advisor.test_inference_advice import NOW, catalog, scenario  # noqa: F401 (catalog: a fixture)

pytestmark = pytest.mark.usefixtures("catalog")

LLAMA_2_7B_SHAPE = {"layers": 32, "hidden": 4096, "heads": 32, "ffn_hidden": 11008, "vocab": 32000}


def test_a_geometry_labelled_off_its_count_is_sized_on_the_count_the_note_states():
    """A serving lead's probe: Llama-2 7B's geometry labelled 7.7B said "FLOPs and weights from the geometry's 6.74B
    parameters, not params_b 7.7B" and was sized on 7.7B (TP 1 10,350 tokens/s where 6.74 gives 11,002; TP 4 12
    GPUs where it gives 8)."""
    traffic = {"peak_requests_per_s": 20, "mean_requests_per_s": 10, "input_tokens": 2048, "output_tokens": 512}
    latency = {"ttft_p95_s": 2.0, "tpot_p95_s": 0.05}
    docs = [
        advise_inference(
            scenario(model={"params_b": label, **LLAMA_2_7B_SHAPE}, traffic=traffic, latency=latency), now=NOW
        )
        for label in (7.7, 6.74)
    ]
    labelled, held = docs
    note = " ".join(labelled["model"]["assumed"])
    assert "FLOPs and weights from the geometry's 6.74B parameters, not params_b 7.7B" in note
    for a, b in zip(labelled["sizes"], held["sizes"], strict=True):
        assert (a["tp"], a["gpus"]) == (b["tp"], b["gpus"])
        assert a["replica_requests_per_s"] == pytest.approx(b["replica_requests_per_s"], rel=1e-6)
    assert labelled["recommendation"]["gpus"] == held["recommendation"]["gpus"]
