"""Properties that must hold for any job: predictions are physical, and more GPUs never need more memory."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator import predict
from estimator.calibrate import load_default
from estimator.specs import GPU_IDS, get_gpu
from estimator.workload import Cluster, TrainingJob, WorkloadError

CALIBRATION = load_default()
SIZES = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256])


@settings(max_examples=25, deadline=None)
@given(
    gpu=st.sampled_from([g for g in GPU_IDS if "bf16" in get_gpu(g).peak_tflops]),
    params_b=st.floats(min_value=0.1, max_value=200),
    seq_len=st.sampled_from([512, 2048, 8192]),
    batch_per_gpu=st.sampled_from([1, 2, 4, 8]),
)
def test_predictions_are_physical(gpu: str, params_b: float, seq_len: int, batch_per_gpu: int) -> None:
    job = TrainingJob(params_b=params_b, seq_len=seq_len, global_batch=batch_per_gpu * 256)
    result = predict(job, Cluster(get_gpu(gpu)), SIZES, CALIBRATION)
    fits = result.fits_memory
    assert np.all(result.tokens_per_s[fits] > 0) and np.all(np.isfinite(result.step_time_s[fits]))
    assert np.all((result.mfu[fits] > 0) & (result.mfu[fits] < 1))
    assert np.all(np.isnan(result.tokens_per_s[~fits]))
    assert np.all(result.memory_per_gpu_gb[fits] * 1e9 <= get_gpu(gpu).memory_bytes)  # the driver-visible bytes
    # Once a size fits, every larger size does too (more GPUs to shard over); the batch divides every size here.
    if fits.any():
        assert fits[np.argmax(fits) :].all()
    np.testing.assert_allclose(result.step_time_s[fits], job.global_batch * seq_len / result.tokens_per_s[fits])


@pytest.mark.parametrize("sizes", [[], [[8, 16]], [0, 8], [8.5], ["8"]])
def test_bad_sizes_are_named(sizes: object) -> None:
    with pytest.raises(WorkloadError) as info:
        predict(TrainingJob(params_b=1, seq_len=2048, global_batch=64), Cluster(get_gpu("l4")), sizes, CALIBRATION)  # type: ignore[arg-type]
    assert info.value.field == "sizes"
