"""The inference Advice warns when the recommended deployment's weights leave so little GPU memory for the KV cache
that the serving calibration's held-out rows as tight were predicted worse than its rows overall (an outsider's
finding: 70B fp8 at TP 1 on H100 was over-predicted a median +17%, P90 94%, while the advice quoted only the
generic held-out error)."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.advice.inference import advise_inference
from estimator import inference as inf
from tests.advisor.test_inference_advice import NOW, catalog, scenario  # noqa: F401 (catalog: a fixture)

pytestmark = pytest.mark.usefixtures("catalog")

TIGHT = {
    "model": {"name": "llama-3.1-70b"},
    "precision": "fp8",
    "traffic": {"peak_requests_per_s": 2, "mean_requests_per_s": 1, "input_tokens": 1000, "output_tokens": 200},
}


def _tight_warnings(doc: dict) -> list[str]:
    return [w for w in doc["warnings"] if "of GPU memory for the KV cache" in w]


def test_70b_fp8_at_tp_1_warns_of_the_over_prediction_on_rows_as_tight():
    doc = advise_inference(scenario(**TIGHT), now=NOW)
    assert doc["recommendation"]["tp"] == 1
    cal = inf.default_calibration()
    tp1 = next(
        d
        for d in inf.size_deployments(
            model=inf.ServedModel.from_catalog("llama-3.1-70b"),
            gpu="h100-sxm",
            precision="fp8",
            input_tokens=1000,
            output_tokens=200,
            peak_requests_per_s=2,
            mean_requests_per_s=1,
            ttft_p95_s=1.0,
            tpot_p95_s=0.05,
        )
        if d.tp == 1
    )
    errors = inf.held_out_at_kv_share(cal, tp1.kv_share)
    assert errors is not None
    ratio = np.expm1(errors)
    assert np.median(np.abs(ratio)) > np.median(np.abs(np.expm1(cal.held_out_log_errors)))
    assert _tight_warnings(doc) == [
        f"TP 1 leaves {tp1.kv_share:.0%} of GPU memory for the KV cache; on the calibration's held-out rows with as "
        f"little (n {len(errors)}) throughput was over-predicted by a median {np.median(ratio):.0%} "
        f"(P90 {np.quantile(np.abs(ratio), 0.9):.0%}): expect fewer requests per GPU than stated."
    ]


def test_a_deployment_with_room_for_the_kv_cache_has_no_such_warning():
    doc = advise_inference(scenario(), now=NOW)  # 8B bf16: most of the memory is KV cache
    assert _tight_warnings(doc) == []


def test_a_calibration_without_kv_shares_gives_no_such_warning():
    cal = inf.default_calibration()
    document = inf.calibration_document(cal)
    held = dict(document["held_out_by_model"])
    del held["kv_shares"]
    older = inf.calibration_from_json({**document, "held_out_by_model": held})
    doc = advise_inference(scenario(**TIGHT), now=NOW, calibration=older)
    assert _tight_warnings(doc) == []
