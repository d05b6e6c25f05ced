"""GPU specs and workload types: every DESIGN.md GPU id exists, and bad fields are named."""

from __future__ import annotations

import pytest

from estimator.specs import GPU_IDS, UnknownGpuError, UnsupportedPrecisionError, get_gpu
from estimator.workload import Cluster, TrainingJob, WorkloadError, derive_architecture

DESIGN_IDS = [
    "v100-32gb",
    "a10g",
    "l4",
    "l40s",
    "a100-40gb",
    "a100-80gb",
    "h100-pcie",
    "h100-sxm",
    "h200",
    "gh200",
    "b200",
    "gb200",
    "rtx4090",
    "mi300x",
]


def test_every_design_gpu_id_has_a_spec_with_units_that_make_sense() -> None:
    assert set(DESIGN_IDS) <= set(GPU_IDS)
    for gpu_id in DESIGN_IDS:
        spec = get_gpu(gpu_id)
        assert spec.memory_gb >= 16 and spec.memory_bw_gbps > 100
        assert spec.peak_tflops["fp32"] < spec.peak_tflops["fp16"]
        assert spec.gpus_per_node >= 1 and spec.inter_node_gbps > 0 and spec.server_power_kw > 0
        assert spec.source


def test_unknown_gpu_lists_the_valid_ids() -> None:
    with pytest.raises(UnknownGpuError) as info:
        get_gpu("h100-sxm5-typo")
    assert "h100-sxm" in str(info.value) and "mi300x" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_precision_a_gpu_lacks_is_refused_with_what_it_supports() -> None:
    with pytest.raises(UnsupportedPrecisionError, match="supported: fp32, fp16"):
        get_gpu("v100-32gb").peak_flops("bf16")


def test_architecture_rule_is_the_catalogs() -> None:
    # One derivation for estimate and advise (it was a GPT-3 rule of its own: 70.6 -> 71 x 9216, vocab 32000).
    assert derive_architecture(70.6) == {
        "layers": 80,
        "hidden": 8192,
        "heads": 64,
        "ffn_hidden": 28672,
        "vocab": 128256,
    }


def test_job_fills_architecture_and_normalises_checkpointing() -> None:
    job = TrainingJob(params_b=7, seq_len=4096, global_batch=1024, activation_checkpointing=True, strategy="FSDP")
    assert job.layers and job.hidden and job.hidden % job.heads == 0
    assert job.activation_checkpointing == "true" and job.strategy == "fsdp"
    off = TrainingJob(params_b=1, seq_len=1, global_batch=1, activation_checkpointing=False)
    assert off.activation_checkpointing == "false"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"params_b": -1}, "params_b"),
        ({"seq_len": 0}, "seq_len"),
        ({"global_batch": 2.5}, "global_batch"),
        ({"precision": "int4"}, "precision"),
        ({"strategy": "megatron"}, "strategy"),
        ({"tp": 0}, "tp"),
        ({"activation_checkpointing": "sometimes"}, "activation_checkpointing"),
        ({"micro_batch": 4096}, "micro_batch"),
        ({"hidden": 1000, "heads": 7}, "heads"),
    ],
)
def test_invalid_job_fields_are_named(kwargs: dict[str, object], field: str) -> None:
    base: dict[str, object] = {"params_b": 7, "seq_len": 4096, "global_batch": 1024}
    with pytest.raises(WorkloadError) as info:
        TrainingJob(**{**base, **kwargs})  # type: ignore[arg-type]
    assert info.value.field == field and str(info.value).startswith(field)


def test_cluster_defaults_to_the_typical_server_and_validates() -> None:
    cluster = Cluster(get_gpu("a100-80gb"))
    assert (cluster.gpus_per_node, cluster.inter_node_gbps) == (8, 1600)
    with pytest.raises(WorkloadError, match="inter_node_gbps"):
        Cluster(get_gpu("a100-80gb"), inter_node_gbps=0)


def test_gb200_scale_out_is_the_dgx_gb200_compute_trays_four_400g_connectx7_ports() -> None:
    """A GB200 NVL72 compute tray (4 GPUs) has four ConnectX-7 OSFP InfiniBand ports for the compute fabric (NVIDIA
    Mission Control North-South Network GB200 Deployment Guide, 'GB200 compute tray network port types'; NVIDIA
    multi-node tuning guide: CX7 in the compute tray), ConnectX-7 at up to 400 Gb/s: 4 x 400 = 1,600 Gb/s per tray,
    400 Gb/s per GPU (800 Gb/s per GPU is GB300's ConnectX-8)."""
    spec = get_gpu("gb200")
    assert spec.gpus_per_node == 4 and spec.inter_node_gbps == 4 * 400
    assert "ConnectX-7" in spec.source
