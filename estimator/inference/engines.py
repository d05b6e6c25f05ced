"""Which serving engines run on which GPUs, and the engine a deployment is sized for when none is given: one rule for
estimate_inference (estimator.inference.points, estimate_points, size_deployments) and the advice (advisor.scenario
checks /workload/serving_engine with it). Before, estimate_inference took TensorRT-LLM on an MI300X and sized an
MI300X without an engine for it, while the advice refused it and sized vLLM: two capacities for one deployment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from estimator.inference.data import DEFAULT_STACK, gpu_overrides
from estimator.specs import UnknownGpuError, get_gpu

# The GPU makers (estimator.specs GpuSpec.vendor) each serving engine runs on. TensorRT-LLM builds CUDA engines for
# NVIDIA GPUs only (NVIDIA/TensorRT-LLM README: "optimize inference on NVIDIA GPUs"); NIM for LLMs ships TensorRT-LLM
# or vLLM engines in containers for NVIDIA GPUs (NIM docs, support matrix). vLLM and SGLang also run on AMD Instinct
# GPUs through ROCm (vllm-project/vllm docs/getting_started/installation/gpu.rocm.inc.md: "vLLM supports AMD GPUs with
# ROCm 6.3 or above ... MI300 (gfx942)", read 2026-12-05; SGLang docs "AMD GPUs": MI300X, not re-read).
ENGINE_VENDORS: Final[Mapping[str, tuple[str, ...]]] = {
    "trtllm": ("NVIDIA",),
    "nim": ("NVIDIA",),
    "vllm": ("NVIDIA", "AMD"),
    "sglang": ("NVIDIA", "AMD"),
}
# The serving table's benchmark-only rows (serving_stacks.csv): the TensorRT-LLM builds of published tables.
BENCHMARK_STACK_ENGINES: Final[Mapping[str, str]] = {"trtllm_v0.9": "trtllm", "trtllm_bench": "trtllm"}
# No engine given: TensorRT-LLM, the engine of the tables the serving model is calibrated on (DEFAULT_STACK); on a
# GPU it does not run on, vLLM (the engine of AMD's MI300X inference guides).
DEFAULT_SERVING_ENGINE: Final[str] = DEFAULT_STACK
OTHER_VENDOR_SERVING_ENGINE: Final[str] = "vllm"


def _vendor_and_name(gpu: str) -> tuple[str, str]:
    """The maker and name of ``gpu``; a GPU of the inference table only (gpus.csv, the A100 PCIe 80GB) is NVIDIA's:
    the table has it for its TensorRT-LLM measurements (trtllm_name). UnknownGpuError for an unknown id."""
    key = gpu.strip().lower()
    try:
        spec = get_gpu(key)
    except UnknownGpuError:
        if key in gpu_overrides()[0]:
            return "NVIDIA", key
        raise
    return spec.vendor, spec.name


def default_serving_engine(gpu: str) -> str:
    """The engine a deployment on ``gpu`` is sized for when none is given."""
    vendor, _ = _vendor_and_name(gpu)
    return DEFAULT_SERVING_ENGINE if vendor in ENGINE_VENDORS[DEFAULT_SERVING_ENGINE] else OTHER_VENDOR_SERVING_ENGINE


def serving_engine_problem(engine: str, gpu: str) -> str | None:
    """Why ``engine`` (a serving engine or a serving-table stack) cannot serve on ``gpu`` (it does not run on that
    maker's GPUs), else None."""
    vendor, name = _vendor_and_name(gpu)
    key = engine.strip().lower()
    vendors = ENGINE_VENDORS[BENCHMARK_STACK_ENGINES.get(key, key)]
    if vendor in vendors:
        return None
    runs = [e for e in ENGINE_VENDORS if vendor in ENGINE_VENDORS[e]]
    only = " and ".join(vendors)
    return f"{engine} runs on {only} GPUs only, not on {name}; engines that run on it: {', '.join(runs)}"
