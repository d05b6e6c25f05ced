"""The KV-cache share of GPU memory beside each held-out-by-model error of the serving calibration
(estimator.inference.held_out_at_kv_share): a deployment whose weights leave little memory for the KV cache is
judged on the calibration rows as tight (70B fp8 at TP 1 on H100 was over-predicted a median +17% there)."""

from __future__ import annotations

import numpy as np
import pytest

from estimator import inference as inf
from estimator.calibrate import MIN_RUNS_OWN_BAND


def test_the_shipped_calibration_keeps_each_held_out_rows_kv_share():
    cal = inf.default_calibration()
    shares = inf.kv_share(inf.load_table().cases)
    assert len(cal.held_out_kv_shares) == len(cal.held_out_log_errors) == len(shares)
    assert np.asarray(cal.held_out_kv_shares) == pytest.approx(shares, abs=1e-5)
    document = inf.calibration_document(cal)["held_out_by_model"]
    assert isinstance(document, dict)
    assert document["kv_shares"] == [round(float(x), 5) for x in cal.held_out_kv_shares]


def test_rows_at_the_share_or_tighter_and_never_fewer_than_a_band_needs():
    cal = inf.default_calibration()
    shares = np.asarray(cal.held_out_kv_shares)
    errors = np.asarray(cal.held_out_log_errors)
    tightest = inf.held_out_at_kv_share(cal, 0.0)
    assert tightest is not None
    ninth = np.sort(shares)[MIN_RUNS_OWN_BAND - 1]
    assert len(tightest) == int((shares <= ninth).sum()) >= MIN_RUNS_OWN_BAND
    assert sorted(tightest) == sorted(errors[shares <= ninth])
    everything = inf.held_out_at_kv_share(cal, 1.0)
    assert everything is not None
    assert len(everything) == len(errors)


def test_a_calibration_without_shares_has_no_rows_to_compare():
    cal = inf.default_calibration()
    document = inf.calibration_document(cal)
    held = dict(document["held_out_by_model"])
    del held["kv_shares"]
    older = inf.calibration_from_json({**document, "held_out_by_model": held})
    assert older.held_out_kv_shares == ()
    assert inf.held_out_at_kv_share(older, 0.1) is None


def test_each_deployment_states_its_kv_share():
    model = inf.ServedModel.from_catalog("llama-3.1-70b")
    deployments = inf.size_deployments(
        model=model,
        gpu="h100-sxm",
        precision="fp8",
        input_tokens=1000,
        output_tokens=200,
        peak_requests_per_s=2,
        mean_requests_per_s=1,
        ttft_p95_s=1.0,
        tpot_p95_s=0.05,
    )
    shares = [d.kv_share for d in deployments]
    assert shares == sorted(shares)  # more GPUs, more room beside the weights
    assert 0 < shares[0] < 0.2
