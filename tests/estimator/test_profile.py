"""The profiler (`python -m estimator.profile`) on a CPU: gloo backend, two processes.

The end-to-end tests run the real command in a subprocess, exactly as a user would (spawned
workers, a TCP rendezvous on 127.0.0.1), with a tiny model so the whole module takes seconds.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from estimator.profile import MODEL_PRESETS, default_model, main, summarize, validate_rows, world_sizes
from estimator.profiling.gpu_ids import gpu_id_for_device_name, resolve_gpu_id
from estimator.profiling.results import (
    CSV_COLUMNS,
    SCHEMA_COLUMNS,
    AllReduceResult,
    MatmulResult,
    ProfileReport,
    TrainResult,
    bus_bandwidth_GBps,
    rows_from_report,
    write_csv,
)
from estimator.specs import GPU_IDS
from tests.conftest import torch_module

ROOT = Path(__file__).resolve().parents[2]

# Under `pytest -n 2 --dist loadgroup` keep the module on one worker: the profiler run in the
# module fixture then happens once, and two multi-process runs never compete for the cores.
pytestmark = pytest.mark.xdist_group(name="profiler")

# The header of DESIGN.md's profiled-run CSV, spelled out here so a change on either side fails.
DESIGN_HEADER = [
    "gpu", "num_gpus", "gpus_per_node", "inter_node_gbps", "params_b", "layers", "hidden", "heads", "ffn_hidden",
    "vocab", "seq_len", "global_batch", "micro_batch", "precision", "strategy", "tp", "pp", "cp",
    "activation_checkpointing", "tokens_per_s", "step_time_s", "source",
]  # fmt: skip


def _run_profiler(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "estimator.profile", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def cpu_profile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One real profiler run over two gloo processes: fp32 and bf16 training with gradient
    accumulation, fp8 requested (a CPU cannot: it must be reported as skipped, not crash)."""
    tmp = tmp_path_factory.mktemp("profile")
    out, report = tmp / "runs.csv", tmp / "report.json"
    proc = _run_profiler(
        "--device", "cpu", "--num-gpus", "2", "--gpu", "h100-sxm", "--quick",
        "--precisions", "fp32,bf16,fp8", "--grad-accum", "2", "--steps", "2",
        "--allreduce-mib", "0.0625,0.25,1", "--allreduce-iters", "3",
        "--note", "ci test run", "--out", str(out), "--json", str(report), "--timeout", "60",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    with out.open(newline="") as stream:
        reader = csv.DictReader(stream)
        header = list(reader.fieldnames or [])
        rows = list(reader)
    return {"header": header, "rows": rows, "report": json.loads(report.read_text()), "stderr": proc.stderr}


def test_allreduce_over_two_gloo_processes_has_positive_bus_bandwidth_for_each_size(cpu_profile: dict) -> None:
    allreduce = cpu_profile["report"]["allreduce"]
    assert [a["bytes"] for a in allreduce] == [65536, 262144, 1048576]
    for result in allreduce:
        assert result["world_size"] == 2
        assert result["seconds"] > 0
        assert result["busbw_GBps"] > 0
        # nccl-tests: busbw = algbw * 2(n-1)/n, which is algbw itself for two ranks.
        assert result["busbw_GBps"] == pytest.approx(result["algbw_GBps"])
        assert result["algbw_GBps"] == pytest.approx(result["bytes"] / result["seconds"] / 1e9)


def test_training_step_over_two_processes_yields_positive_tokens_per_s(cpu_profile: dict) -> None:
    train = cpu_profile["report"]["train"]
    assert [t["precision"] for t in train] == ["fp32", "bf16"]  # fp8 training is refused, not faked
    shape, micro_batch = MODEL_PRESETS["tiny"]
    for run in train:
        assert run["world_size"] == 2
        assert run["global_batch"] == micro_batch * 2 * 2  # micro x accumulation x processes
        assert run["step_time_s"] > 0
        assert run["tokens_per_s"] == pytest.approx(run["global_batch"] * shape.seq_len / run["step_time_s"])
        # A randomly initialised model predicts roughly uniformly: loss near ln(vocab).
        assert math.isfinite(run["final_loss"])
        assert abs(run["final_loss"] - math.log(shape.vocab)) < 1.0


def test_matmul_measured_per_precision_and_unsupported_ones_explained(cpu_profile: dict) -> None:
    report = cpu_profile["report"]
    assert {m["precision"] for m in report["matmul"]} == {"fp32", "bf16"}
    assert all(m["tflops"] > 0 and m["n"] == 256 for m in report["matmul"])
    (fp8,) = report["matmul_skipped"]
    assert fp8["precision"] == "fp8"
    assert "GPU" in fp8["reason"]


def test_csv_has_the_design_header_in_order_then_extras(cpu_profile: dict) -> None:
    header = cpu_profile["header"]
    assert header[: len(DESIGN_HEADER)] == DESIGN_HEADER
    assert list(SCHEMA_COLUMNS) == DESIGN_HEADER
    assert header == list(CSV_COLUMNS)


def test_csv_rows_carry_sensible_values(cpu_profile: dict) -> None:
    rows = cpu_profile["rows"]
    assert [r["precision"] for r in rows] == ["fp32", "bf16"]
    shape, micro_batch = MODEL_PRESETS["tiny"]
    for row in rows:
        assert row["gpu"] == "h100-sxm"
        assert (row["num_gpus"], row["gpus_per_node"], row["inter_node_gbps"]) == ("2", "2", "")
        assert float(row["params_b"]) == pytest.approx(shape.params / 1e9)
        assert (int(row["layers"]), int(row["hidden"]), int(row["heads"])) == (shape.layers, shape.hidden, shape.heads)
        assert (int(row["ffn_hidden"]), int(row["vocab"]), int(row["seq_len"])) == (
            shape.ffn_hidden,
            shape.vocab,
            shape.seq_len,
        )
        assert int(row["micro_batch"]) == micro_batch
        assert int(row["global_batch"]) == micro_batch * 2 * int(row["grad_accum"])
        assert (row["strategy"], row["tp"], row["pp"], row["cp"]) == ("ddp", "1", "1", "1")
        assert row["activation_checkpointing"] == "false"
        tokens_per_s, step_time_s = float(row["tokens_per_s"]), float(row["step_time_s"])
        assert tokens_per_s > 0 and step_time_s > 0
        assert tokens_per_s * step_time_s == pytest.approx(int(row["global_batch"]) * shape.seq_len, rel=1e-4)
        # The row says where it came from, and that it was a CPU, whatever --gpu claimed.
        assert row["source"].startswith("gpu-advisor profiler ")
        assert "gloo" in row["source"] and "ci test run" in row["source"]
        assert row["device"] == "cpu"
        assert float(row["matmul_tflops"]) > 0
        assert float(row["allreduce_busbw_GBps"]) > 0
        assert row["allreduce_bytes"] == "1048576"


def test_csv_is_accepted_by_the_profiled_run_import(cpu_profile: dict, tmp_path: Path) -> None:
    """What the profiler writes, `calibrate --runs` and `estimate --runs` can read."""
    from estimator.runs import COLUMNS, read_runs_csv

    assert COLUMNS == SCHEMA_COLUMNS
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=cpu_profile["header"])
    writer.writeheader()
    writer.writerows(cpu_profile["rows"])
    runs = read_runs_csv(text.getvalue())
    assert [(r.gpu, r.num_gpus, r.precision, r.strategy) for r in runs] == [
        ("h100-sxm", 2, "fp32", "ddp"),
        ("h100-sxm", 2, "bf16", "ddp"),
    ]
    assert all(r.measured_tokens_per_s and r.measured_tokens_per_s > 0 for r in runs)
    assert runs[0].cells["device"] == "cpu"  # extra columns survive the import


def test_rows_the_import_would_refuse_are_reported_not_written() -> None:
    rows = rows_from_report(_report(2, 2), "v100-32gb")  # a V100 has no bf16 peak
    kept, problems = validate_rows(rows)
    assert kept == []
    assert len(problems) == 1 and "bf16" in problems[0] and "precision" in problems[0]
    assert validate_rows(rows_from_report(_report(2, 2), "a100-80gb")) == (
        rows_from_report(_report(2, 2), "a100-80gb"),
        [],
    )


def test_cpu_run_warns_that_its_rows_are_not_calibration_data(cpu_profile: dict) -> None:
    assert "do not calibrate on them" in cpu_profile["stderr"]


def test_torchrun_style_launch_writes_rows_from_rank_zero_only(tmp_path: Path) -> None:
    """The env:// path (what torchrun and multi-node jobs use), driven by torch's own launcher."""
    out = tmp_path / "runs.csv"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [
            sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
            "-m", "estimator.profile", "--device", "cpu", "--gpu", "a100-80gb", "--quick",
            "--steps", "1", "--allreduce-mib", "0.0625", "--allreduce-iters", "2", "--inter-node-gbps", "400",
            "--activation-checkpointing", "--out", str(out), "--timeout", "60",
        ],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (row,) = list(csv.DictReader(out.open(newline="")))
    assert (row["gpu"], row["num_gpus"], row["gpus_per_node"]) == ("a100-80gb", "2", "2")
    # One node: no scale-out traffic, so the inter-node bandwidth is not claimed for this row.
    assert row["inter_node_gbps"] == ""
    assert row["activation_checkpointing"] == "true"
    assert float(row["tokens_per_s"]) > 0 and float(row["allreduce_busbw_GBps"]) > 0
    assert proc.stderr.count("do not calibrate on them") == 1  # rank 0 speaks, rank 1 does not


def test_import_does_not_need_torch() -> None:
    code = "import sys, estimator, estimator.profile, estimator.profiling.launch; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"


def test_missing_torch_is_a_clear_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    stderr = io.StringIO()
    assert main(["--quick"], stderr=stderr) == 2
    assert "needs PyTorch" in stderr.getvalue()
    assert "gpu-advisor[profiler]" in stderr.getvalue()


def test_cpu_without_gpu_id_refuses_before_measuring() -> None:
    stderr = io.StringIO()
    assert main(["--device", "cpu", "--quick"], stderr=stderr) == 2
    message = stderr.getvalue()
    assert "no GPU is visible" in message and "--gpu" in message and "h100-sxm" in message
    assert "profiling with" not in message  # nothing was measured


def test_invalid_gpu_override_is_refused() -> None:
    stderr = io.StringIO()
    assert main(["--device", "cpu", "--gpu", "h100"], stderr=stderr) == 2
    assert "'h100' is not a GPU id" in stderr.getvalue()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 NVL", None),
        ("NVIDIA H200", "h200"),
        ("NVIDIA H200 NVL", None),
        ("NVIDIA GH200 480GB", "gh200"),
        ("NVIDIA B200", "b200"),
        ("NVIDIA GB200", "gb200"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
        ("NVIDIA A100 80GB PCIe", None),
        ("Tesla V100-SXM2-32GB", "v100-32gb"),
        ("Tesla V100-SXM2-16GB", None),
        ("NVIDIA A10G", "a10g"),
        ("NVIDIA A10", None),
        ("NVIDIA L4", "l4"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA L40", None),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        ("AMD Instinct MI300X", "mi300x"),
        ("NVIDIA GeForce RTX 3090", None),
    ],
)
def test_device_names_map_to_gpu_ids_strictly(name: str, expected: str | None) -> None:
    assert gpu_id_for_device_name(name) == expected
    if expected is not None:
        assert expected in GPU_IDS


def test_resolve_gpu_id_needs_one_known_gpu_type() -> None:
    assert resolve_gpu_id(["NVIDIA H100 80GB HBM3"] * 8, None, on_gpu=True) == "h100-sxm"
    assert resolve_gpu_id(["NVIDIA H100 NVL"], "h100-pcie", on_gpu=True) == "h100-pcie"
    with pytest.raises(ValueError, match="pass --gpu"):
        resolve_gpu_id(["NVIDIA H100 NVL"], None, on_gpu=True)
    with pytest.raises(ValueError, match="different GPUs"):
        resolve_gpu_id(["NVIDIA L4", "NVIDIA A10G"], None, on_gpu=True)


def test_world_sizes() -> None:
    assert world_sizes(None, False, 8, True) == [8]
    assert world_sizes(None, True, 8, True) == [1, 2, 4, 8]
    assert world_sizes(None, True, 6, True) == [1, 2, 4, 6]
    assert world_sizes([4, 1], False, 8, True) == [1, 4]
    assert world_sizes(None, False, 0, False) == [2]
    with pytest.raises(ValueError, match="16 GPUs but 8 are visible"):
        world_sizes([16], False, 8, True)
    with pytest.raises(ValueError, match="16 GPUs but 8 are visible"):
        world_sizes([16], True, 8, True)


def test_param_count_is_megatron_formula_and_the_built_model() -> None:
    torch = torch_module()
    from estimator.profiling._gpt import GPT

    for shape in (MODEL_PRESETS["tiny"][0], MODEL_PRESETS["125m"][0]):
        layers, h, vocab, seq = shape.layers, shape.hidden, shape.vocab, shape.seq_len
        megatron = 12 * layers * h * h * (1 + 13 / (12 * h) + (vocab + seq) / (12 * layers * h))
        assert shape.params - 2 * h == pytest.approx(megatron)  # + the final LayerNorm
    # GPT-2 small has 124M parameters (with a 50257 vocab; 50304 here, padded to a multiple of 64).
    assert MODEL_PRESETS["125m"][0].params == pytest.approx(124.48e6, rel=1e-3)
    model = GPT(MODEL_PRESETS["tiny"][0])
    assert sum(p.numel() for p in model.parameters()) == MODEL_PRESETS["tiny"][0].params
    assert isinstance(model, torch.nn.Module)


def test_bus_bandwidth_follows_nccl_tests() -> None:
    assert bus_bandwidth_GBps(10**9, 1.0, 2) == pytest.approx((1.0, 1.0))
    assert bus_bandwidth_GBps(10**9, 0.5, 8) == pytest.approx((2.0, 3.5))
    with pytest.raises(ValueError):
        bus_bandwidth_GBps(10**9, 0.0, 8)


def _report(world: int, gpus_per_node: int, tokens_per_s: float = 1000.0) -> ProfileReport:
    shape = MODEL_PRESETS["tiny"][0]  # 1.15M parameters: a profiled run gives at least 1M (estimator.bounds)
    report = ProfileReport("0.1.0", "cuda", ["NVIDIA H100 80GB HBM3"] * world, "h", "2026-01-01T00:00:00Z", "2", "nccl")
    report.matmul = [MatmulResult("bf16", 8192, i, 0.002, 600.0 + i) for i in range(2)]
    report.allreduce = [AllReduceResult(world, b, 0.001, 1.0, 1.5) for b in (1 << 20, 1 << 26)]
    step_time_s = 4 * world * 64 / tokens_per_s
    report.train = [
        TrainResult("bf16", world, gpus_per_node, shape, 4, 1, False, 3, step_time_s, tokens_per_s, 6.0, 12.5)
    ]
    return report


def test_rows_from_report_multi_node_fills_inter_node_and_extras() -> None:
    (row,) = rows_from_report(_report(16, 8), "h100-sxm", inter_node_gbps=3200)
    assert list(row) == list(CSV_COLUMNS)
    assert row["inter_node_gbps"] == "3200"
    assert row["global_batch"] == "64"
    assert row["matmul_tflops"] == "600.5"  # mean over devices
    assert row["allreduce_bytes"] == str(1 << 26)  # the largest size: closest to link bandwidth
    assert row["peak_memory_gb"] == "12.5"
    assert "NVIDIA H100 80GB HBM3 x16" in row["source"]


def test_rows_refuse_non_finite_measurements() -> None:
    with pytest.raises(ValueError, match="non-finite"):
        rows_from_report(_report(2, 2, tokens_per_s=math.inf), "h100-sxm")


def test_append_requires_the_same_header(tmp_path: Path) -> None:
    rows = rows_from_report(_report(2, 2), "h100-sxm")
    path = tmp_path / "runs.csv"
    write_csv(rows, path)
    write_csv(rows, path, append=True)
    assert len(list(csv.DictReader(path.open(newline="")))) == 2
    other = tmp_path / "other.csv"
    other.write_text("gpu,num_gpus\nh100-sxm,8\n")
    with pytest.raises(ValueError, match="different header"):
        write_csv(rows, other, append=True)


def test_summary_gives_the_fraction_of_the_datasheet_peak() -> None:
    stream = io.StringIO()
    summarize(_report(8, 8), stream, {"bf16": 1000.0})
    text = stream.getvalue()
    assert "matmul bf16: 600.50 TFLOPS" in text and "60% of the 1000 TFLOPS datasheet peak" in text
    assert "train 1.2M params bf16 on 8" in text and "1,000 tokens/s" in text


def test_default_model_fits_the_device() -> None:
    assert default_model(on_gpu=False, quick=False, memory_gb=None) == "tiny"
    assert default_model(on_gpu=True, quick=False, memory_gb=80.0) == "350m"
    assert default_model(on_gpu=True, quick=False, memory_gb=24.0) == "125m"  # L4, A10G, RTX 4090
    assert default_model(on_gpu=True, quick=True, memory_gb=80.0) == "125m"
