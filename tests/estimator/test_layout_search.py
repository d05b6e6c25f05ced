"""Issue 10: the layout is searched per cluster size where the job leaves it open, and kept where given."""

from __future__ import annotations

import numpy as np
import pytest

from estimator import predict, predict_runs
from estimator.calibrate import Calibration, load_default
from estimator.runs import read_runs_csv
from estimator.specs import get_gpu
from estimator.workload import Cluster, TrainingJob

PLAIN_DDP = {"strategy": "ddp", "tp": 1, "pp": 1, "cp": 1}


@pytest.fixture(scope="module")
def calibration() -> Calibration:
    return load_default()


def _uses_sharding_or_model_parallelism(result: object, i: int) -> bool:
    return result.strategy[i] in {"zero3", "fsdp", "hsdp"} or result.tp[i] * result.pp[i] > 1  # type: ignore[attr-defined]


def test_70b_fits_on_8_large_gpus_only_with_sharding_and_the_search_finds_it(calibration: Calibration) -> None:
    job = TrainingJob(params_b=70, seq_len=4096, global_batch=512)
    cluster = Cluster(get_gpu("b200"))  # 8 x 180 GB
    searched = predict(job, cluster, [8], calibration)
    assert searched.fits_memory[0] and _uses_sharding_or_model_parallelism(searched, 0)
    assert searched.memory_per_gpu_gb[0] <= 180
    plain = predict(TrainingJob(params_b=70, seq_len=4096, global_batch=512, **PLAIN_DDP), cluster, [8], calibration)
    assert not plain.fits_memory[0]


def test_70b_on_80gb_gpus_needs_two_nodes_with_adam_states(calibration: Calibration) -> None:
    # 70B x 16 bytes (bf16 weights + grads, fp32 master + Adam m, v; ZeRO paper) = 1.12 TB > 8 x 80 GB, so no layout
    # fits one 8 x 80 GB node; 16 GPUs hold it only when sharded or split by tensor/pipeline parallelism.
    job = TrainingJob(params_b=70, seq_len=4096, global_batch=512)
    cluster = Cluster(get_gpu("h100-sxm"))
    result = predict(job, cluster, [8, 16, 32], calibration)
    assert result.fits_memory.tolist() == [False, True, True]
    assert _uses_sharding_or_model_parallelism(result, 1) and _uses_sharding_or_model_parallelism(result, 2)
    plain_job = TrainingJob(params_b=70, seq_len=4096, global_batch=512, **PLAIN_DDP)
    plain = predict(plain_job, cluster, [16, 32], calibration)
    assert not plain.fits_memory.any()


def test_a_1b_model_picks_plain_data_parallelism(calibration: Calibration) -> None:
    job = TrainingJob(params_b=1, seq_len=2048, global_batch=512)
    result = predict(job, Cluster(get_gpu("a100-80gb")), [8, 16, 32], calibration)
    assert result.fits_memory.all()
    assert result.strategy.tolist() == ["ddp"] * 3
    assert (result.tp == 1).all() and (result.pp == 1).all()


def test_given_tensor_parallelism_is_kept_and_other_fields_searched(calibration: Calibration) -> None:
    job = TrainingJob(params_b=13, seq_len=4096, global_batch=256, tp=2)
    result = predict(job, Cluster(get_gpu("h100-sxm")), [8, 16, 64], calibration)
    assert (result.tp == 2).all()
    assert result.fits_memory.all()
    runs = read_runs_csv("gpu,num_gpus,params_b,seq_len,global_batch,tp\nh100-sxm,16,13,4096,256,2\n")
    solution = predict_runs(runs, calibration)
    assert solution.tp[0] == 2 and solution.micro_batch[0] >= 1 and solution.fits_memory[0]


def test_vectorized_prediction_equals_one_size_at_a_time(calibration: Calibration) -> None:
    job = TrainingJob(params_b=30, seq_len=2048, global_batch=1024)
    cluster = Cluster(get_gpu("a100-80gb"))
    sizes = np.array([8, 16, 24, 32, 64, 128, 256])
    together = predict(job, cluster, sizes, calibration)
    for i, n in enumerate(sizes):
        alone = predict(job, cluster, [n], calibration)
        assert alone.fits_memory[0] == together.fits_memory[i]
        np.testing.assert_allclose(alone.tokens_per_s[0], together.tokens_per_s[i], equal_nan=True)
        assert (alone.strategy[0], alone.tp[0], alone.pp[0]) == (together.strategy[i], together.tp[i], together.pp[i])
    fitted = together.scaling_efficiency[together.fits_memory]
    assert fitted[0] == pytest.approx(1.0) and np.all(fitted <= 1.05)


def test_a_size_no_layout_divides_is_not_feasible(calibration: Calibration) -> None:
    job = TrainingJob(params_b=1, seq_len=2048, global_batch=512, tp=8)
    result = predict(job, Cluster(get_gpu("a100-80gb")), [4, 8], calibration)
    assert result.fits_memory.tolist() == [False, True]
    assert np.isnan(result.tokens_per_s[0])
