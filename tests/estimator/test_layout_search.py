"""Issue 10: the layout is searched per cluster size where the job leaves it open, and kept where given."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from estimator import predict, predict_runs
from estimator.calibrate import Calibration, load_default
from estimator.prediction import LAYOUT_TOLERANCE
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
    assert searched.memory_per_gpu_gb[0] * 1e9 <= cluster.gpu.memory_bytes  # the driver-visible 183,359 MiB
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
    # Relative to the best per-GPU throughput of the sizes that fit: 1 there, at most 1 everywhere.
    per_gpu = together.tokens_per_s[together.fits_memory] / sizes[together.fits_memory]
    assert fitted.max() == pytest.approx(1.0) and np.all(fitted <= 1.0)
    np.testing.assert_allclose(fitted, per_gpu / per_gpu.max())


def test_a_size_no_layout_divides_is_not_feasible(calibration: Calibration) -> None:
    # A given geometry whose 16 heads tp 8 divides (a derived 1B shape has 14 heads).
    job = TrainingJob(params_b=1.3, layers=24, hidden=2048, heads=16, seq_len=2048, global_batch=512, tp=8)
    result = predict(job, Cluster(get_gpu("a100-80gb")), [4, 8], calibration)
    assert result.fits_memory.tolist() == [False, True]
    assert np.isnan(result.tokens_per_s[0])


# Team N's 8.86B (Llama 3.1 8B geometry with as many KV heads as heads) at seq 4096 and a global batch of 256: an
# outside tester's scenario (probe "ownruns").
NANOTRON_8B = TrainingJob(
    params_b=8.86,
    layers=32,
    hidden=4096,
    heads=32,
    ffn_hidden=14336,
    vocab=128256,
    seq_len=4096,
    global_batch=256,
    stack="other",
)
H100_NODES = Cluster(get_gpu("h100-sxm"), gpus_per_node=8, inter_node_gbps=3200)


def test_the_search_tries_pipeline_depths_that_are_not_powers_of_two(calibration: Calibration) -> None:
    # 24 and 48 GPUs (3 and 6 nodes): 256 sequences split over 8 or 16 replicas only with a 3-stage pipeline (32
    # layers: 11, 11, 10). Powers of two alone ran them as 16 and 32 GPUs, 28% below the pp=3 layout given by hand.
    searched = predict(NANOTRON_8B, H100_NODES, [24, 48], calibration)
    given = replace(NANOTRON_8B, strategy="zero1", tp=1, pp=3, micro_batch=1, activation_checkpointing=False)
    by_hand = predict(given, H100_NODES, [24, 48], calibration)
    assert by_hand.fits_memory.all()
    assert searched.gpus_used.tolist() == [24, 48]
    assert np.all(searched.tokens_per_s >= by_hand.tokens_per_s * (1.0 - LAYOUT_TOLERANCE))
    assert (searched.pp % 3 == 0).all()
    assert not any("fewer GPUs" in note for note in searched.warnings)


def test_a_size_only_a_pipeline_deeper_than_the_layers_splits_names_the_layers(calibration: Calibration) -> None:
    # 232 GPUs = 8 x 29: a batch of 256 splits over 8 replicas only with 29 pipeline stages, more than the 24 layers;
    # 192 GPUs run 3 stages.
    job = TrainingJob(params_b=1.3, layers=24, hidden=2048, heads=16, seq_len=2048, global_batch=256)
    result = predict(job, Cluster(get_gpu("h100-sxm")), [192, 232], calibration)
    assert result.gpus_used.tolist() == [192, 192]
    (note,) = [note for note in result.warnings if "232 GPUs -> 192" in note]
    assert "29 pipeline stages" in note and "24 layers" in note
    assert "does not divide well" not in note


def test_a_size_the_given_layout_does_not_divide_says_so(calibration: Calibration) -> None:
    # An explicit pp=3 on 16 GPUs: no layout of its own (16 is not a multiple of 3); the size used to read as 'does
    # not fit in memory' with no word of why. 12 of its GPUs run the layout (3 stages x 4 replicas), so it falls back
    # on them (the reference grid alone had no smaller size for it) and says why.
    given = replace(NANOTRON_8B, strategy="zero1", tp=1, pp=3, micro_batch=1, activation_checkpointing=False)
    result = predict(given, H100_NODES, [16, 24], calibration)
    assert result.gpus_used.tolist() == [12, 24]
    (note,) = [note for note in result.warnings if "16 GPUs -> 12" in note]
    assert "not a multiple of" in note and "3" in note and "memory" not in note


def test_tensor_parallelism_must_divide_the_kv_heads_where_they_are_known(calibration: Calibration) -> None:
    # Megatron-Core splits the KV groups over the TP ranks (attention.py: divide(num_query_groups, world_size) asserts
    # divisibility): a 34B with 2 KV heads at tp 8 does not start. An outside probe got it recommended at 64 GPUs.
    from estimator.workload import WorkloadError

    shape = {"layers": 48, "hidden": 8192, "heads": 64, "ffn_hidden": 22016, "vocab": 32000}
    with pytest.raises(WorkloadError) as info:
        TrainingJob(params_b=34, seq_len=4096, global_batch=1024, tp=8, kv_heads=2, **shape)
    assert info.value.field == "tp" and "kv_heads" in str(info.value)
    with pytest.raises(WorkloadError) as info:
        TrainingJob(params_b=34, seq_len=4096, global_batch=1024, kv_heads=3, **shape)
    assert info.value.field == "kv_heads"
    cluster = Cluster(get_gpu("h100-sxm"))
    long = TrainingJob(params_b=34, seq_len=131072, global_batch=64, kv_heads=2, **shape)
    result = predict(long, cluster, [64, 256], calibration)
    assert result.fits_memory.any()
    assert np.all(2 % result.tp[result.fits_memory] == 0), result.tp
    # Unknown KV heads (a profiled run's CSV has no column): heads alone, as before.
    free = predict(replace(long, kv_heads=None), cluster, [64, 256], calibration)
    assert np.any(free.tp[free.fits_memory] > 2)


def test_a_size_the_batch_does_not_split_over_falls_back_to_the_largest_size_that_splits_it(
    calibration: Calibration,
) -> None:
    # An outside probe: a batch of 1000 in micro-batches of 2 under FSDP does not split over 24 or 48 GPUs, and both
    # fell back to 4 GPUs (16,956 h per run), though 20 GPUs take 25 micro-batches each (and 25 GPUs 20).
    shape = {"layers": 40, "hidden": 5120, "heads": 40, "ffn_hidden": 13824, "vocab": 32000}
    job = TrainingJob(
        params_b=13, seq_len=4096, global_batch=1000, strategy="fsdp", tp=1, pp=1, micro_batch=2, kv_heads=8, **shape
    )
    cluster = Cluster(get_gpu("h100-sxm"))
    result = predict(job, cluster, [24, 48], calibration)
    assert result.gpus_used.tolist() == [20, 25]
    assert result.fits_memory.all()
    # With the micro-batch searched, 40 GPUs take 25 sequences each.
    open_micro = predict(replace(job, micro_batch=None), cluster, [24, 48], calibration)
    assert open_micro.gpus_used.tolist() == [20, 40]
    # One size's answer does not depend on the other sizes asked.
    alone = predict(replace(job, micro_batch=None), cluster, [48], calibration)
    assert alone.tokens_per_s[0] == pytest.approx(open_micro.tokens_per_s[1])


def test_tensor_parallelism_is_searched_across_the_nvlink_domain_not_the_server(calibration: Calibration) -> None:
    # An outside probe: GB200's server is a 4-GPU compute tray, but its NVLink domain is the 72-GPU NVL72 rack, and
    # the step time runs tensor-parallel collectives anywhere in it over NVLink. The search capped tp at the tray (4),
    # so a 70B at 32k context on 16 GB200 came out at tp1 pp8 cp2 (21,526 tokens/s) although the model times the given
    # tp8 pp2 at 25,356, and B200 (8-GPU servers, tp8) beat GB200 for the same job.
    job = TrainingJob(params_b=70, seq_len=32768, global_batch=128, precision="bf16")
    gb200 = Cluster(get_gpu("gb200"))
    searched = predict(job, gb200, [16], calibration)
    given = predict(replace(job, strategy="ddp", tp=8, pp=2, cp=1, micro_batch=1), gb200, [16], calibration)
    assert given.fits_memory[0] and searched.fits_memory[0]
    assert searched.tokens_per_s[0] >= given.tokens_per_s[0] * (1 - LAYOUT_TOLERANCE)
    b200 = predict(job, Cluster(get_gpu("b200")), [16], calibration)
    assert searched.tokens_per_s[0] >= b200.tokens_per_s[0]


def test_a_server_smaller_than_its_gpus_default_bounds_tensor_parallelism_at_the_server(
    calibration: Calibration,
) -> None:
    # The NVLink domain spans servers only where gpus.csv says so (GB200 NVL72); elsewhere it is the server the
    # cluster gives, so 4-GPU H100 servers never get tp 8 from the search.
    job = TrainingJob(params_b=70, seq_len=32768, global_batch=128, precision="bf16")
    result = predict(job, Cluster(get_gpu("h100-sxm"), gpus_per_node=4), [16, 64], calibration)
    assert result.fits_memory.any() and (result.tp[result.fits_memory] <= 4).all(), result.tp
    # And the step time runs a given tp 8 there across two servers, not over one 8-GPU NVLink domain (it timed both
    # alike): slower than on 8-GPU servers with the same fabric bandwidth per GPU.
    given = TrainingJob(params_b=13, seq_len=4096, global_batch=256, strategy="ddp", tp=8, pp=1, cp=1, micro_batch=1)
    split = predict(given, Cluster(get_gpu("h100-sxm"), gpus_per_node=4, inter_node_gbps=1600), [64], calibration)
    whole = predict(given, Cluster(get_gpu("h100-sxm"), gpus_per_node=8, inter_node_gbps=3200), [64], calibration)
    assert split.tokens_per_s[0] < whole.tokens_per_s[0]
