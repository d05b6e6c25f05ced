"""LLM inference serving model: throughput and latency of one tensor-parallel replica, and replicas for a traffic.

Pure numpy, vectorized over a *case table* (equal-length 1-D arrays, one entry per (model, GPU, precision, TP,
input/output length)) and, for latency-bound sizing, over a grid of batch sizes. No Django, no prices.

Units inside: bytes, seconds, FLOP, FLOP/s, bytes/s; GB = 1e9 bytes only at the edges.

The model (sources: reference/estimator.md sections 1.1, 1.8, 3; TensorRT-LLM perf-overview tables):

* Weights: ``P x bytes/param`` (fp16/bf16 2, fp8 1, NVFP4 0.5 + one fp8 scale per 16 values = 0.5625), split over
  the TP group. KV cache per token: ``2 x layers x max(kv_heads, tp) x head_dim x kv_bytes`` (K and V; KV heads are
  replicated when tp exceeds them; fp8 KV cache for the fp8/fp4 runs, 16-bit otherwise).
* Batch cap: in-flight requests whose KV (input tokens + a fitted fraction of the output tokens: paged KV blocks
  are taken as a request grows) fits in ``KV_FREE_FRACTION`` of what is left of the group's memory after the
  weights and a fitted per-GPU reserve (activations, workspace, CUDA context).
* Decode step (memory-bandwidth bound at small batch, compute bound at large batch; memory and compute time are
  added, not overlapped, as in Calculon's default ``no_overlap`` mode, which fits the tables better than a
  roofline max):
  ``(W + B c kv) / (tp BW mem_eff) + B (2P + 4 L h c) / (tp peak flop_eff) + TP all-reduces + overhead``,
  with ``c = input + output / 2`` the mean context a decoding request attends over and the overhead a fixed cost
  per step plus a cost per in-flight request (sampling, scheduling).
* Prefill (compute bound): ``(2 P s + 2 L h s^2) / (tp peak flop_eff)`` per request of ``s`` input tokens, plus its
  TP all-reduces; in-flight batching interleaves it with decode steps, so each output token also carries
  ``prefill / output_tokens``.
* TP communication: 2 all-reduces per layer of the 16-bit activations (Megatron TP), ring cost
  ``alpha + 2 (tp - 1) / tp x bytes / (link x eff)`` (nccl-tests PERFORMANCE.md) with the link the one-way
  NVLink bandwidth (half the bidirectional datasheet figure), or PCIe for GPUs without NVLink/NVSwitch
  (scale-up at most 128 GB/s bidirectional = PCIe Gen5 x16), each with its own fitted efficiency.
* Throughput at batch ``B``: ``B / (step(B) + B x prefill / output)`` output tokens/s. The TensorRT-LLM tables are
  max-throughput runs, i.e. the largest batch that fits: that is what the calibration fits.
* Latency at batch ``B`` (steady state, no tail data exists in the tables, so the p95 targets are compared with
  these deterministic values): TPOT = ``B / throughput`` (time between a request's tokens, prefills of arriving
  requests included); TTFT = prefill of the request alone (the larger of its compute and one pass over the weights)
  + one decode step it waits for.
* Sizing: the best replica is the largest throughput over a batch grid whose TPOT and TTFT meet the targets;
  replicas = ceil(requests/s x output tokens / replica throughput) for the peak and for the mean traffic.

Calibration (``fit``) is separate from prediction: least squares on log(predicted / measured) output tokens/s over
the TensorRT-LLM rows, leave-one-out error reported next to a naive baseline (a constant fraction of the memory
bandwidth turned into tokens: ``f x tp x BW / weight bytes``): on the 323 shipped rows, 13.5% against 133%
(``bench/inference_accuracy.py`` prints both, by source, model and GPU, and leave-one-GPU-out).
Regenerate the shipped calibration with::

    python -m estimator.inference --fit --out estimator/data/inference/calibration.json
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Final

import numpy as np
import numpy.typing as npt
from scipy.optimize import least_squares

from estimator.specs import get_gpu

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

DATA_DIR: Final[str] = "data/inference"
TABLE_FILE: Final[str] = "trtllm_inference_throughput.csv"
CALIBRATION_FILE: Final[str] = "calibration.json"
REGENERATE_COMMAND: Final[str] = "python -m estimator.inference --fit --out estimator/data/inference/calibration.json"

# Serving precisions: (bytes per weight, bytes per KV-cache element, peak column, efficiency group).
# fp16/bf16: 2-byte weights and KV. fp8: ModelOpt FP8 weights with an FP8 KV cache (TensorRT-LLM perf-overview
# quantized runs). fp4: NVFP4 = 4-bit values + one fp8 scale per 16 values (0.5 + 1/16 byte), FP8 KV cache.
PRECISIONS: Final[dict[str, tuple[float, float, str, int]]] = {
    "fp32": (4.0, 4.0, "fp32", 0),  # fp32/tf32 serving is rare; no table row measures it (16-bit efficiency used)
    "tf32": (4.0, 4.0, "tf32", 0),
    "bf16": (2.0, 2.0, "bf16", 0),
    "fp16": (2.0, 2.0, "fp16", 0),
    "fp8": (1.0, 1.0, "fp8", 1),
    "fp4": (0.5625, 1.0, "fp4", 1),
}
ACTIVATION_BYTES: Final[float] = 2.0  # TP all-reduces move 16-bit activations in every precision above.
ALLREDUCES_PER_LAYER: Final[float] = 2.0  # after attention and after the MLP (Megatron tensor parallelism).
# TensorRT-LLM KvCacheConfig.free_gpu_memory_fraction default: 0.9 of the memory left after weights/activations.
KV_FREE_FRACTION: Final[float] = 0.9
# A scale-up link of at most PCIe Gen5 x16 (128 GB/s bidirectional) means no NVLink/NVSwitch between all GPUs.
PCIE_MAX_GBPS: Final[float] = 128.0
TP_DEGREES: Final[tuple[int, ...]] = (1, 2, 4, 8)
# Llama 2 70B, Llama 3 (all sizes), Mistral 7B and Qwen2 use grouped-query attention with 8 KV heads
# (Llama 3 paper Table 3); the default when a scenario does not give kv_heads.
DEFAULT_KV_HEADS: Final[int] = 8

# Calibrated parameters: name -> (initial value, lower bound, upper bound). log10_* are fitted in log space.
PARAMETER_BOUNDS: Final[dict[str, tuple[float, float, float]]] = {
    "mem_eff": (0.8, 0.05, 1.0),  # achieved / datasheet memory bandwidth in decode
    "flop_eff_16": (0.5, 0.05, 1.0),  # achieved / dense peak, 16-bit GEMMs
    "flop_eff_8": (0.4, 0.05, 1.0),  # achieved / dense peak, fp8 and fp4 GEMMs
    "reserve_gb": (2.0, 0.0, 40.0),  # per-GPU memory held back from the KV cache (activations, workspace, context)
    "nvlink_eff": (0.6, 0.01, 1.0),  # achieved / one-way NVLink bandwidth in TP all-reduces
    "pcie_eff": (0.3, 0.002, 1.0),  # achieved / one-way PCIe bandwidth in TP all-reduces
    "log10_allreduce_latency_s": (-4.7, -6.5, -2.0),  # fixed cost of one TP all-reduce
    "log10_step_overhead_s": (-2.7, -6.5, -1.0),  # scheduling and launch cost of one decode step
    "log10_request_overhead_s": (-5.0, -7.0, -3.0),  # per in-flight request per step (sampling, bookkeeping)
    "kv_output_reserved": (0.75, 0.5, 1.0),  # fraction of the output tokens' KV a request holds on average
}
PARAMETER_NAMES: Final[tuple[str, ...]] = tuple(PARAMETER_BOUNDS)
FIT_STARTS: Final[int] = 8  # extra starting points of the full fit (leave-one-out refits start from the full fit)
FIT_SEED: Final[int] = 0


class InferenceError(ValueError):
    """An invalid serving input; ``field`` names it."""

    def __init__(self, field_name: str, message: str) -> None:
        self.field = field_name
        super().__init__(f"{field_name}: {message}")


# --------------------------------------------------------------------------------------------------------------
# Data: GPUs and models
# --------------------------------------------------------------------------------------------------------------


def _read_data_csv(name: str) -> list[dict[str, str]]:
    text = resources.files("estimator").joinpath(f"{DATA_DIR}/{name}").read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return list(csv.DictReader(io.StringIO(body)))


@dataclass(frozen=True, slots=True)
class ServingGpu:
    """What the serving model needs of a GPU. memory_gb [GB], memory_bw_gbps [GB/s], peak_tflops per serving
    precision [TFLOP/s], link_gbps one-way scale-up bandwidth [GB/s], pcie: True when that link is PCIe."""

    id: str
    memory_gb: float
    memory_bw_gbps: float
    peak_tflops: Mapping[str, float]
    link_gbps: float
    pcie: bool
    gpus_per_node: int

    def peak_flops(self, precision: str) -> float:
        column = PRECISIONS[precision][2]
        if column not in self.peak_tflops:
            supported = ", ".join(p for p in PRECISIONS if PRECISIONS[p][2] in self.peak_tflops)
            raise InferenceError("precision", f"{precision!r} is not supported on {self.id}; supported: {supported}")
        return self.peak_tflops[column] * 1e12


@cache
def _gpu_overrides() -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    rows = _read_data_csv("gpus.csv")
    return {r["spec_id"]: r for r in rows}, {r["trtllm_name"]: r["spec_id"] for r in rows}


def serving_gpu(gpu_id: str) -> ServingGpu:
    """Spec of ``gpu_id`` from estimator.specs, completed by estimator/data/inference/gpus.csv (fp4 peaks, and
    the A100 PCIe 80GB the spec table lacks). Raises estimator.specs.UnknownGpuError for an unknown id."""
    overrides, _ = _gpu_overrides()
    key = gpu_id.strip().lower()
    extra = overrides.get(key, {})
    if extra.get("memory_gb"):
        memory_gb = float(extra["memory_gb"])
        bw = float(extra["memory_bw_gbps"])
        peaks = {p: float(extra[f"{p}_tflops"]) for p in PRECISIONS if extra.get(f"{p}_tflops")}
        nvlink = float(extra["nvlink_gbps"])
        gpn = 8
    else:
        spec = get_gpu(key)
        memory_gb, bw, nvlink, gpn = spec.memory_gb, spec.memory_bw_gbps, spec.nvlink_gbps, spec.gpus_per_node
        peaks = {p: v for p, v in spec.peak_tflops.items() if p in PRECISIONS}
    if extra.get("fp4_tflops"):
        peaks["fp4"] = float(extra["fp4_tflops"])
    return ServingGpu(
        id=key,
        memory_gb=memory_gb,
        memory_bw_gbps=bw,
        peak_tflops=peaks,
        link_gbps=nvlink / 2.0,
        pcie=nvlink <= PCIE_MAX_GBPS,
        gpus_per_node=gpn,
    )


@dataclass(frozen=True, slots=True)
class ServedModel:
    """A dense decoder: params_b [billions], layers, hidden, heads, kv_heads (grouped-query attention)."""

    params_b: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int

    @classmethod
    def from_params(
        cls,
        *,
        params_b: float,
        layers: int | None = None,
        hidden: int | None = None,
        heads: int | None = None,
        kv_heads: int | None = None,
    ) -> ServedModel:
        """Missing architecture fields derived from params_b (estimator.workload.derive_architecture: hidden =
        128 x layers, P = 12 L h^2, head dim 128); kv_heads defaults to min(heads, 8) (GQA, Llama 3 Table 3).
        Heads need not be divisible by the TP degree here: the model treats per-GPU shares as fractions; engines
        need divisibility, which advisor.inference_advice warns about."""
        from estimator.workload import derive_architecture

        if not (isinstance(params_b, int | float) and math.isfinite(params_b) and params_b > 0):
            raise InferenceError("params_b", f"must be a positive number, got {params_b!r}")
        derived = derive_architecture(float(params_b))
        layers = layers or derived["layers"]
        hidden = hidden or derived["hidden"]
        heads = heads or (hidden // 128 if hidden % 128 == 0 else derived["heads"])
        if hidden % heads:
            raise InferenceError("heads", f"must divide hidden ({hidden}); got {heads}")
        if kv_heads is not None and heads % kv_heads:
            raise InferenceError("kv_heads", f"must divide heads ({heads}); got {kv_heads}")
        # Default GQA width: 8 KV heads even when derived heads are not a multiple of 8 (an artifact of deriving
        # the architecture from params_b; only the KV size, 2 x layers x 8 x head_dim, matters here).
        kv_heads = kv_heads or min(heads, DEFAULT_KV_HEADS)
        return cls(params_b=float(params_b), layers=int(layers), hidden=int(hidden), heads=heads, kv_heads=kv_heads)


@cache
def _models() -> dict[str, ServedModel]:
    return {
        r["model"]: ServedModel(
            params_b=float(r["params_b"]),
            layers=int(r["layers"]),
            hidden=int(r["hidden"]),
            heads=int(r["heads"]),
            kv_heads=int(r["kv_heads"]),
        )
        for r in _read_data_csv("models.csv")
    }


# --------------------------------------------------------------------------------------------------------------
# Case tables
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServingCases:
    """Equal-length arrays, one entry per case; see the module docstring for units."""

    params: FloatArray
    layers: FloatArray
    hidden: FloatArray
    kv_width: FloatArray  # kv_heads x head_dim of the whole group (replicated heads counted): elements per layer
    weight_bytes: FloatArray  # bytes per parameter
    kv_bytes: FloatArray  # bytes per KV element
    low_precision: BoolArray  # fp8/fp4 efficiency group
    peak_flops: FloatArray  # per GPU
    mem_bw: FloatArray  # bytes/s per GPU
    mem_bytes: FloatArray  # per GPU
    link_bw: FloatArray  # one-way bytes/s per GPU
    pcie: BoolArray
    tp: FloatArray
    isl: FloatArray
    osl: FloatArray
    labels: tuple[str, ...] = field(default=())

    def __len__(self) -> int:
        return int(self.params.shape[0])


def build_cases(
    *,
    models: Sequence[ServedModel],
    gpus: Sequence[ServingGpu],
    precisions: Sequence[str],
    tps: Sequence[int],
    input_tokens: Sequence[float],
    output_tokens: Sequence[float],
    labels: Sequence[str] = (),
) -> ServingCases:
    """One case per position of the equal-length sequences."""
    n = len(models)
    if not all(len(s) == n for s in (gpus, precisions, tps, input_tokens, output_tokens)):
        raise InferenceError("cases", "all sequences must have the same length")
    for p in set(precisions):
        if p not in PRECISIONS:
            raise InferenceError("precision", f"must be one of {', '.join(PRECISIONS)}; got {p!r}")

    def arr(values: Sequence[float]) -> FloatArray:
        return np.asarray(values, dtype=np.float64)

    tp = arr(tps)
    head_dim = arr([m.hidden / m.heads for m in models])
    kv_heads = np.maximum(arr([m.kv_heads for m in models]), tp)
    return ServingCases(
        params=arr([m.params_b * 1e9 for m in models]),
        layers=arr([m.layers for m in models]),
        hidden=arr([m.hidden for m in models]),
        kv_width=kv_heads * head_dim,
        weight_bytes=arr([PRECISIONS[p][0] for p in precisions]),
        kv_bytes=arr([PRECISIONS[p][1] for p in precisions]),
        low_precision=np.asarray([PRECISIONS[p][3] == 1 for p in precisions]),
        peak_flops=arr([g.peak_flops(p) for g, p in zip(gpus, precisions, strict=True)]),
        mem_bw=arr([g.memory_bw_gbps * 1e9 for g in gpus]),
        mem_bytes=arr([g.memory_gb * 1e9 for g in gpus]),
        link_bw=arr([g.link_gbps * 1e9 for g in gpus]),
        pcie=np.asarray([g.pcie for g in gpus]),
        tp=tp,
        isl=arr(input_tokens),
        osl=arr(output_tokens),
        labels=tuple(labels),
    )


# --------------------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------------------


def _theta(params: Mapping[str, float]) -> dict[str, float]:
    missing = [k for k in PARAMETER_NAMES if k not in params]
    if missing:
        raise InferenceError("calibration", f"missing parameters: {', '.join(missing)}")
    return {k: float(params[k]) for k in PARAMETER_NAMES}


def weight_bytes_total(c: ServingCases) -> FloatArray:
    """Weights of the whole model [bytes]."""
    return c.params * c.weight_bytes


def kv_bytes_per_token(c: ServingCases) -> FloatArray:
    """KV cache of one token summed over the TP group [bytes]: 2 (K, V) x layers x kv width x bytes."""
    return 2.0 * c.layers * c.kv_width * c.kv_bytes


def kv_capacity_requests(c: ServingCases, theta: Mapping[str, float]) -> FloatArray:
    """In-flight requests whose reserved KV (input + output tokens) fits; <= 0 when the weights do not fit."""
    t = _theta(theta)
    free = c.tp * (c.mem_bytes - t["reserve_gb"] * 1e9) - weight_bytes_total(c)
    return KV_FREE_FRACTION * free / (kv_bytes_per_token(c) * (c.isl + t["kv_output_reserved"] * c.osl))


def max_batch(c: ServingCases, theta: Mapping[str, float]) -> FloatArray:
    """Largest usable batch: the KV capacity (continuous, >= 0)."""
    return np.maximum(kv_capacity_requests(c, theta), 0.0)


def _col(x: FloatArray | BoolArray, like: FloatArray) -> np.ndarray:
    return x.reshape(x.shape + (1,) * (like.ndim - 1)) if like.ndim > 1 else x


def _allreduce_s(c: ServingCases, t: Mapping[str, float], tokens: FloatArray) -> FloatArray:
    """All TP all-reduces of one forward pass over ``tokens`` tokens [s] (zero at tp = 1)."""
    tp, pcie, link = _col(c.tp, tokens), _col(c.pcie, tokens), _col(c.link_bw, tokens)
    eff = np.where(pcie, t["pcie_eff"], t["nvlink_eff"])
    bytes_ = tokens * _col(c.hidden, tokens) * ACTIVATION_BYTES
    one = 10.0 ** t["log10_allreduce_latency_s"] + 2.0 * (tp - 1.0) / tp * bytes_ / (link * eff)
    count = ALLREDUCES_PER_LAYER * _col(c.layers, tokens)
    return np.where(tp > 1.0, count * one, 0.0)


def _flop_rate(c: ServingCases, t: Mapping[str, float]) -> FloatArray:
    """Achieved FLOP/s of the whole TP group."""
    return c.tp * c.peak_flops * np.where(c.low_precision, t["flop_eff_8"], t["flop_eff_16"])


def decode_step_s(c: ServingCases, theta: Mapping[str, float], batch: FloatArray) -> FloatArray:
    """One decode step of ``batch`` requests [s]; ``batch`` has shape (n,) or (n, g) for a grid per case."""
    t = _theta(theta)
    b = np.asarray(batch, dtype=np.float64)
    ctx = _col(c.isl + c.osl / 2.0, b)
    kv_read = b * ctx * _col(kv_bytes_per_token(c), b)
    mem_s = (_col(weight_bytes_total(c), b) + kv_read) / _col(c.tp * c.mem_bw * t["mem_eff"], b)
    flops = b * (2.0 * _col(c.params, b) + 4.0 * _col(c.layers * c.hidden, b) * ctx)  # GEMMs + QK^T and AV
    compute_s = flops / _col(_flop_rate(c, t), b)
    overhead = 10.0 ** t["log10_step_overhead_s"] + b * 10.0 ** t["log10_request_overhead_s"]
    return mem_s + compute_s + _allreduce_s(c, t, b) + overhead


def prefill_s(c: ServingCases, theta: Mapping[str, float]) -> FloatArray:
    """Prefill work of one request inside a busy batch [s]: compute of 2 P s + 2 L h s^2 (causal attention) and its
    all-reduces (weights are already being read for the decode step it rides on)."""
    t = _theta(theta)
    flops = 2.0 * c.params * c.isl + 2.0 * c.layers * c.hidden * c.isl**2
    return (
        flops / _flop_rate(c, t)
        + _allreduce_s(c, t, c.isl)
        - np.where(c.tp > 1.0, ALLREDUCES_PER_LAYER * c.layers * 10.0 ** t["log10_allreduce_latency_s"], 0.0)
    )


def solo_prefill_s(c: ServingCases, theta: Mapping[str, float]) -> FloatArray:
    """Prefill of one request on an otherwise idle replica [s]: the larger of its compute and one pass over the
    weights, plus its all-reduces and one step overhead."""
    t = _theta(theta)
    flops = 2.0 * c.params * c.isl + 2.0 * c.layers * c.hidden * c.isl**2
    weights_s = weight_bytes_total(c) / (c.tp * c.mem_bw * t["mem_eff"])
    return (
        np.maximum(flops / _flop_rate(c, t), weights_s) + _allreduce_s(c, t, c.isl) + 10.0 ** t["log10_step_overhead_s"]
    )


def throughput_at_batch(c: ServingCases, theta: Mapping[str, float], batch: FloatArray) -> FloatArray:
    """Output tokens/s of one replica with ``batch`` requests in flight (in-flight batching steady state)."""
    b = np.asarray(batch, dtype=np.float64)
    per_token = decode_step_s(c, theta, b) / np.maximum(b, 1e-9) + _col(prefill_s(c, theta) / c.osl, b)
    return np.where(b > 0, 1.0 / per_token, 0.0)


def max_throughput(c: ServingCases, theta: Mapping[str, float]) -> FloatArray:
    """Output tokens/s of one replica at the largest batch that fits (what the TensorRT-LLM tables measure);
    0 where the weights do not fit. The batch is continuous here (the fit needs a smooth function); sizing
    (``best_under_latency``) uses whole batches and calls a cap below one request "does not fit"."""
    return throughput_at_batch(c, theta, max_batch(c, theta))


@dataclass(frozen=True, slots=True)
class ReplicaPerformance:
    """Best operating point of one replica per case (arrays). Units: tokens/s, requests/s, seconds."""

    fits_memory: BoolArray
    meets_latency: BoolArray
    batch: FloatArray
    max_batch: FloatArray
    output_tokens_per_s: FloatArray
    requests_per_s: FloatArray
    ttft_s: FloatArray
    tpot_s: FloatArray
    weights_gb_per_gpu: FloatArray


def best_under_latency(
    c: ServingCases,
    theta: Mapping[str, float],
    *,
    ttft_s: FloatArray | float,
    tpot_s: FloatArray | float,
    grid_points: int = 256,
) -> ReplicaPerformance:
    """Highest-throughput batch per case whose TPOT and TTFT meet the targets, over a geometric grid of whole
    batches from 1 to the KV-memory cap. Where no batch meets them, the batch with the lowest TPOT is reported
    with meets_latency False."""
    cap = np.floor(max_batch(c, theta))
    fits = cap >= 1.0
    steps = np.linspace(0.0, 1.0, grid_points)
    per_case = np.floor(np.exp(np.log(np.maximum(cap, 1.0))[:, None] * steps[None, :]))
    tput = throughput_at_batch(c, theta, per_case)
    tpot = per_case / np.maximum(tput, 1e-12)
    ttft = solo_prefill_s(c, theta)[:, None] + decode_step_s(c, theta, per_case)
    ok = (tpot <= np.asarray(tpot_s, dtype=np.float64).reshape(-1, 1)) & (
        ttft <= np.asarray(ttft_s, dtype=np.float64).reshape(-1, 1)
    )
    ok &= fits[:, None]
    score = np.where(ok, tput, -np.inf)
    best_ok = np.argmax(score, axis=1)
    best_fallback = np.argmin(tpot, axis=1)
    meets = ok.any(axis=1)
    idx = np.where(meets, best_ok, best_fallback)
    rows = np.arange(len(c))
    out_tput = np.where(fits, tput[rows, idx], 0.0)
    return ReplicaPerformance(
        fits_memory=fits,
        meets_latency=meets & fits,
        batch=np.where(fits, per_case[rows, idx], 0.0),
        max_batch=np.maximum(cap, 0.0),
        output_tokens_per_s=out_tput,
        requests_per_s=out_tput / c.osl,
        ttft_s=np.where(fits, ttft[rows, idx], np.inf),
        tpot_s=np.where(fits, tpot[rows, idx], np.inf),
        weights_gb_per_gpu=weight_bytes_total(c) / c.tp / 1e9,
    )


def replicas_for(*, requests_per_s: FloatArray | float, replica_requests_per_s: FloatArray) -> FloatArray:
    """Replicas needed to serve ``requests_per_s`` (at least 1; infinite where a replica serves nothing)."""
    r = np.asarray(replica_requests_per_s, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.ceil(np.asarray(requests_per_s, dtype=np.float64) / r - 1e-9)
    return np.where(r > 0, np.maximum(need, 1.0), np.inf)


# --------------------------------------------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MeasuredTable:
    """The TensorRT-LLM rows as cases plus the measured output tokens/s and each row's source."""

    cases: ServingCases
    measured: FloatArray
    sources: tuple[str, ...]


def load_table(rows: Sequence[Mapping[str, str]] | None = None) -> MeasuredTable:
    """Rows of trtllm_inference_throughput.csv (the bundled copy when ``rows`` is None) as a MeasuredTable."""
    rows = _read_data_csv(TABLE_FILE) if rows is None else rows
    models, spec_of = _models(), _gpu_overrides()[1]
    try:
        cases = build_cases(
            models=[models[r["model"]] for r in rows],
            gpus=[serving_gpu(spec_of[r["gpu"]]) for r in rows],
            precisions=[r["precision"].strip().lower() for r in rows],
            tps=[int(r["tp"]) for r in rows],
            input_tokens=[float(r["isl"]) for r in rows],
            output_tokens=[float(r["osl"]) for r in rows],
            labels=[f"{r['model']} {r['gpu']} {r['precision']} tp{r['tp']} {r['isl']}/{r['osl']}" for r in rows],
        )
    except KeyError as exc:
        raise InferenceError("table", f"unknown model or GPU {exc}") from None
    return MeasuredTable(
        cases=cases,
        measured=np.asarray([float(r["output_tok_per_s"]) for r in rows], dtype=np.float64),
        sources=tuple(r["source"] for r in rows),
    )


def subset(table: MeasuredTable, mask: npt.NDArray[np.bool_] | npt.NDArray[np.int64]) -> MeasuredTable:
    c = table.cases
    fields = {
        name: getattr(c, name)[mask]
        for name in ServingCases.__slots__  # type: ignore[attr-defined]
        if name != "labels"
    }
    labels = tuple(np.asarray(c.labels, dtype=object)[mask]) if c.labels else ()
    return MeasuredTable(
        cases=ServingCases(**fields, labels=labels),
        measured=table.measured[mask],
        sources=tuple(np.asarray(table.sources, dtype=object)[mask]),
    )


def _to_vector(params: Mapping[str, float]) -> FloatArray:
    return np.asarray([params[k] for k in PARAMETER_NAMES], dtype=np.float64)


def _to_params(x: FloatArray) -> dict[str, float]:
    return {k: float(v) for k, v in zip(PARAMETER_NAMES, x, strict=True)}


def _log_residuals(x: FloatArray, table: MeasuredTable) -> FloatArray:
    pred = max_throughput(table.cases, _to_params(x))
    return np.log(np.maximum(pred, 1e-3)) - np.log(table.measured)


def fit(table: MeasuredTable, *, start: Mapping[str, float] | None = None) -> dict[str, float]:
    """Parameters minimizing the squared log error of output tokens/s on ``table`` (bounded least squares)."""
    lo = np.asarray([b[1] for b in PARAMETER_BOUNDS.values()])
    hi = np.asarray([b[2] for b in PARAMETER_BOUNDS.values()])
    if start is not None:
        starts = [_to_vector(start)]
    else:  # the problem has local minima: a fixed set of starts spread over the box, plus the nominal one
        spread = np.random.default_rng(FIT_SEED).uniform(0.1, 0.9, (FIT_STARTS, lo.size))
        starts = [np.asarray([b[0] for b in PARAMETER_BOUNDS.values()]), *(lo + (hi - lo) * spread)]
    results = [
        least_squares(_log_residuals, np.clip(x0, lo, hi), bounds=(lo, hi), args=(table,), x_scale="jac")
        for x0 in starts
    ]
    return _to_params(min(results, key=lambda r: r.cost).x)


def baseline_fit(table: MeasuredTable) -> float:
    """Naive baseline: output tokens/s = f x tp x memory bandwidth / weight bytes; f is the geometric-mean ratio."""
    return float(np.exp(np.mean(np.log(table.measured / _baseline_unit(table.cases)))))


def _baseline_unit(c: ServingCases) -> FloatArray:
    return c.tp * c.mem_bw / weight_bytes_total(c)


def baseline_predict(c: ServingCases, fraction: float) -> FloatArray:
    return fraction * _baseline_unit(c)


def ape(predicted: FloatArray, measured: FloatArray) -> FloatArray:
    """Absolute percentage error as a fraction."""
    return np.abs(predicted - measured) / measured


@dataclass(frozen=True, slots=True)
class LooReport:
    """Leave-one-out predictions of the model and of the baseline, one per table row."""

    model_pred: FloatArray
    baseline_pred: FloatArray
    measured: FloatArray

    @property
    def model_mape(self) -> float:
        return float(np.mean(ape(self.model_pred, self.measured)))

    @property
    def baseline_mape(self) -> float:
        return float(np.mean(ape(self.baseline_pred, self.measured)))


def leave_one_out(table: MeasuredTable, *, start: Mapping[str, float] | None = None) -> LooReport:
    """Refit without each row in turn and predict it (model warm-started from ``start`` or the full fit)."""
    n = len(table.cases)
    start = start or fit(table)
    model_pred = np.empty(n)
    base_pred = np.empty(n)
    unit = _baseline_unit(table.cases)
    log_ratio = np.log(table.measured / unit)
    # Baseline LOO in closed form: the geometric mean of the other rows' ratios.
    base_pred[:] = np.exp((log_ratio.sum() - log_ratio) / (n - 1)) * unit
    keep = np.ones(n, dtype=bool)
    for i in range(n):  # one refit per held-out row: inherently sequential
        keep[i] = False
        params = fit(subset(table, keep), start=start)
        keep[i] = True
        model_pred[i] = max_throughput(subset(table, np.asarray([i])).cases, params)[0]
    return LooReport(model_pred=model_pred, baseline_pred=base_pred, measured=table.measured)


# --------------------------------------------------------------------------------------------------------------
# Stored calibration
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class InferenceCalibration:
    name: str
    params: Mapping[str, float]
    runs: int
    loo_mape: float
    baseline_loo_mape: float
    baseline_fraction: float
    fitted_at: str
    command: str
    source: str


def calibration_from_json(data: Mapping[str, object]) -> InferenceCalibration:
    params = data["params"]
    if not isinstance(params, Mapping):
        raise InferenceError("calibration", "params must be an object")
    return InferenceCalibration(
        name=str(data["name"]),
        params=_theta(params),
        runs=int(data["runs"]),  # type: ignore[call-overload]
        loo_mape=float(data["loo_mape"]),  # type: ignore[arg-type]
        baseline_loo_mape=float(data["baseline_loo_mape"]),  # type: ignore[arg-type]
        baseline_fraction=float(data["baseline_fraction"]),  # type: ignore[arg-type]
        fitted_at=str(data["fitted_at"]),
        command=str(data["command"]),
        source=str(data["source"]),
    )


@cache
def default_calibration() -> InferenceCalibration:
    """The shipped calibration (estimator/data/inference/calibration.json)."""
    text = resources.files("estimator").joinpath(f"{DATA_DIR}/{CALIBRATION_FILE}").read_text(encoding="utf-8")
    return calibration_from_json(json.loads(text))


def calibrate(*, name: str = "trtllm-default", table: MeasuredTable | None = None) -> InferenceCalibration:
    """Fit on the whole table, then measure leave-one-out error of the model and of the baseline."""
    table = table or load_table()
    params = fit(table)
    loo = leave_one_out(table, start=params)
    return InferenceCalibration(
        name=name,
        params=params,
        runs=len(table.cases),
        loo_mape=loo.model_mape,
        baseline_loo_mape=loo.baseline_mape,
        baseline_fraction=baseline_fit(table),
        fitted_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        command=REGENERATE_COMMAND,
        source=f"estimator/{DATA_DIR}/{TABLE_FILE} (sources: {', '.join(sorted(set(table.sources)))})",
    )


# --------------------------------------------------------------------------------------------------------------
# Sizing a deployment
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Deployment:
    """One tensor-parallel layout for a traffic: per-replica performance and replicas for peak and mean."""

    tp: int
    fits_memory: bool
    meets_latency: bool
    batch: int
    max_batch: int
    replica_output_tokens_per_s: float
    replica_requests_per_s: float
    ttft_s: float
    tpot_s: float
    weights_gb_per_gpu: float
    replicas_peak: float
    replicas_mean: float

    @property
    def gpus_peak(self) -> float:
        return self.tp * self.replicas_peak

    @property
    def gpus_mean(self) -> float:
        return self.tp * self.replicas_mean


def size_deployments(
    *,
    model: ServedModel,
    gpu: str,
    precision: str,
    input_tokens: float,
    output_tokens: float,
    peak_requests_per_s: float,
    mean_requests_per_s: float,
    ttft_p95_s: float,
    tpot_p95_s: float,
    tps: Sequence[int] | None = None,
    calibration: InferenceCalibration | None = None,
) -> list[Deployment]:
    """One Deployment per TP degree (default 1, 2, 4, 8 up to the GPU's server size)."""
    spec = serving_gpu(gpu)
    precision = precision.strip().lower()
    if precision not in PRECISIONS:
        raise InferenceError("precision", f"must be one of {', '.join(PRECISIONS)}; got {precision!r}")
    spec.peak_flops(precision)
    for name, value in (
        ("input_tokens", input_tokens),
        ("output_tokens", output_tokens),
        ("peak_requests_per_s", peak_requests_per_s),
        ("ttft_p95_s", ttft_p95_s),
        ("tpot_p95_s", tpot_p95_s),
    ):
        if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
            raise InferenceError(name, f"must be a positive number, got {value!r}")
    if not (0 <= mean_requests_per_s <= peak_requests_per_s):
        raise InferenceError("mean_requests_per_s", "must be between 0 and peak_requests_per_s")
    degrees = [t for t in (tps or TP_DEGREES) if t <= spec.gpus_per_node] or [1]
    cal = calibration or default_calibration()
    n = len(degrees)
    cases = build_cases(
        models=[model] * n,
        gpus=[spec] * n,
        precisions=[precision] * n,
        tps=degrees,
        input_tokens=[input_tokens] * n,
        output_tokens=[output_tokens] * n,
    )
    perf = best_under_latency(cases, cal.params, ttft_s=ttft_p95_s, tpot_s=tpot_p95_s)
    peak = replicas_for(requests_per_s=peak_requests_per_s, replica_requests_per_s=perf.requests_per_s)
    mean = replicas_for(requests_per_s=mean_requests_per_s, replica_requests_per_s=perf.requests_per_s)
    return [
        Deployment(
            tp=degrees[i],
            fits_memory=bool(perf.fits_memory[i]),
            meets_latency=bool(perf.meets_latency[i]),
            batch=int(perf.batch[i]),
            max_batch=int(perf.max_batch[i]),
            replica_output_tokens_per_s=float(perf.output_tokens_per_s[i]),
            replica_requests_per_s=float(perf.requests_per_s[i]),
            ttft_s=float(perf.ttft_s[i]),
            tpot_s=float(perf.tpot_s[i]),
            weights_gb_per_gpu=float(perf.weights_gb_per_gpu[i]),
            replicas_peak=float(peak[i]),
            replicas_mean=float(mean[i]),
        )
        for i in range(n)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fit the inference calibration on the bundled TensorRT-LLM table.")
    parser.add_argument("--fit", action="store_true", help="fit and report leave-one-out error")
    parser.add_argument("--out", help="write the calibration JSON here")
    parser.add_argument("--name", default="trtllm-default")
    args = parser.parse_args(argv)
    if not args.fit:
        parser.print_help()
        return 2
    started = time.perf_counter()
    cal = calibrate(name=args.name)
    doc = {
        "name": cal.name,
        "params": dict(cal.params),
        "runs": cal.runs,
        "loo_mape": round(cal.loo_mape, 4),
        "baseline_loo_mape": round(cal.baseline_loo_mape, 4),
        "baseline_fraction": cal.baseline_fraction,
        "fitted_at": cal.fitted_at,
        "command": cal.command,
        "source": cal.source,
    }
    text = json.dumps(doc, indent=2) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    sys.stdout.write(text)
    sys.stderr.write(f"fitted in {time.perf_counter() - started:.1f} s\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
