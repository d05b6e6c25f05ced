"""Inputs of the serving model: precisions, GPUs (with their collective fabric), serving stacks (memory reserve),
served models (from the catalog) and the case table every model function takes.

Units inside: bytes, seconds, FLOP, FLOP/s, bytes/s; GB = 1e9 bytes only at the edges.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cache
from importlib import resources
from typing import Final

import numpy as np
import numpy.typing as npt

from estimator.catalog import CatalogError, ModelGeometry, derive_geometry, get_model
from estimator.specs import get_gpu

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]

DATA_DIR: Final[str] = "data/inference"

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
ACTIVATION_BYTES: Final[float] = 2.0  # TP all-reduces and activation buffers hold 16-bit activations.
# Quantized checkpoints (TensorRT Model Optimizer FP8/NVFP4 defaults) leave the embedding and LM head in 16 bits.
EMBEDDING_MIN_BYTES: Final[float] = 2.0
ALLREDUCES_PER_LAYER: Final[float] = 2.0  # after attention and after the MLP (Megatron tensor parallelism).
# A scale-up link of at most PCIe Gen5 x16 (128 GB/s bidirectional) means no NVLink/NVSwitch between all GPUs.
PCIE_MAX_GBPS: Final[float] = 128.0
# NVLink 3 (A100) is 600 GB/s bidirectional; faster scale-up links use the Hopper-generation fabric row.
AMPERE_NVLINK_GBPS: Final[float] = 600.0
# Tensor-parallel degrees tried, up to the GPUs that share the scale-up link (the server, or GB200's 72-GPU NVLink
# domain), and never past 8 even there: the collective costs of fabrics.csv were measured on at most 8 ranks (vidur
# h100_dgx, sglang custom all-reduce TP 2/4/8); past 8, a grouped-query model's 8 KV heads are replicated rather
# than split, so a GPU's KV cache stops growing with the group while every layer's all-reduces keep getting dearer;
# and the published dense serving configurations (TensorRT-LLM perf-overview, GB200 and B200 included) stop at 8.
TP_DEGREES: Final[tuple[int, ...]] = (1, 2, 4, 8)
# Expert-parallel groups beyond one node (of 8 GPUs; scaled to the largest TP group: 2 and 4 such groups), tried for
# mixture-of-experts models that do not fit one node.
MOE_MULTI_NODE_DEGREES: Final[tuple[int, ...]] = (16, 32)
DEFAULT_STACK: Final[str] = "trtllm"
EXPERT_FALLBACK_PRECISION: Final[str] = "fp16"  # routed experts of an engine without FP8 expert GEMMs
# Activation buffer width per token in units of hidden (residual, QKV, attention output) and of ffn/tp (gated up
# projection): see serving_stacks.csv.
ACTIVATION_HIDDEN_WIDTHS: Final[float] = 4.0
ACTIVATION_FFN_WIDTHS: Final[float] = 2.0
# CUDA C++ Programming Guide, "Arithmetic Instructions" throughput table (results per clock per SM): 32-bit FP
# fused multiply-add 128 on compute capability 8.6/8.9/9.0 (64 on 8.0, gpus.csv fp32_lanes_per_sm), "all other type
# conversions" 16 on 8.x and 9.0. A decode-attention kernel on CUDA cores converts each 8-bit KV element it reads to
# 16/32-bit before its dot product: 16 conversions per clock per SM = fp32 peak x 16 / (2 x lanes) per second.
CONVERSIONS_PER_CLOCK_PER_SM: Final[float] = 16.0
DEFAULT_FP32_LANES_PER_SM: Final[float] = 128.0


class InferenceError(ValueError):
    """An invalid serving input; ``field`` names it."""

    def __init__(self, field_name: str, message: str) -> None:
        self.field = field_name
        super().__init__(f"{field_name}: {message}")


def read_data_csv(name: str) -> list[dict[str, str]]:
    """Rows of estimator/data/inference/<name> ('#' lines are comments)."""
    text = resources.files("estimator").joinpath(f"{DATA_DIR}/{name}").read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return list(csv.DictReader(io.StringIO(body)))


# --------------------------------------------------------------------------------------------------------------
# Fabrics and GPUs
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fabric:
    """Collective cost of one fabric: NCCL latency [s] and achieved bus bandwidth / one-way link bandwidth, and the
    same for the serving engine's custom all-reduce kernel where the fabric has one (0 = none). ``max_ranks``: the
    largest group the row was measured on (0 = any); a larger group uses the ``wide_fabric`` row."""

    name: str
    latency_s: float
    busbw_efficiency: float
    source: str
    custom_latency_s: float = 0.0
    custom_busbw_efficiency: float = 0.0
    max_ranks: int = 0
    wide_fabric: str = ""


@cache
def fabrics() -> dict[str, Fabric]:
    return {
        r["fabric"]: Fabric(
            r["fabric"],
            float(r["latency_s"]),
            float(r["busbw_efficiency"]),
            r["source"],
            custom_latency_s=float(r["custom_latency_s"] or 0.0),
            custom_busbw_efficiency=float(r["custom_busbw_efficiency"] or 0.0),
            max_ranks=int(r["max_ranks"] or 0),
            wide_fabric=r["wide_fabric"],
        )
        for r in read_data_csv("fabrics.csv")
    }


@dataclass(frozen=True, slots=True)
class ServingGpu:
    """What the serving model needs of a GPU. memory_bytes [bytes] (the driver's figure, estimator.specs, as training
    holds it), memory_bw_gbps [GB/s], peak_tflops per serving precision [TFLOP/s], link_gbps one-way scale-up
    bandwidth [GB/s], pcie: True when that link is PCIe, scale_out_gbps one-way scale-out bandwidth per GPU [GB/s],
    fabric: its collective-cost row, nvlink_domain: GPUs whose collectives stay on that scale-up link (the server, or
    more where NVLink spans servers: GB200 NVL72 joins 18 four-GPU trays into one 72-GPU domain,
    estimator/data/gpus.csv)."""

    id: str
    memory_bytes: float
    memory_bw_gbps: float
    peak_tflops: Mapping[str, float]
    link_gbps: float
    pcie: bool
    gpus_per_node: int
    scale_out_gbps: float
    fabric: str = "nvlink-hopper"
    convert_per_s: float = 0.0  # CUDA-core type conversions per second (8-bit KV dequantization); 0 = unknown
    nvlink_domain: int = 0  # 0 = gpus_per_node

    @property
    def scale_up_name(self) -> str:
        """What the scale-up link joins, in words: a PCIe card's group is its server, an AMD GPU's its xGMI (Infinity
        Fabric) domain, not an NVLink domain."""
        if self.pcie:
            return "PCIe server"
        return "xGMI domain" if get_gpu(self.id).vendor == "AMD" else "NVLink domain"

    @property
    def scale_up_gpus(self) -> int:
        """GPUs one tensor-parallel group can span on the scale-up link: the NVLink domain, at least the server."""
        return max(self.nvlink_domain, self.gpus_per_node)

    def peak_flops(self, precision: str) -> float:
        column = PRECISIONS[precision][2]
        if column not in self.peak_tflops:
            supported = ", ".join(p for p in PRECISIONS if PRECISIONS[p][2] in self.peak_tflops)
            raise InferenceError("precision", f"{precision!r} is not supported on {self.id}; supported: {supported}")
        return self.peak_tflops[column] * 1e12


@cache
def gpu_overrides() -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """(rows of inference/gpus.csv by GPU id, GPU id by TensorRT-LLM table name)."""
    rows = read_data_csv("gpus.csv")
    return {r["spec_id"]: r for r in rows}, {r["trtllm_name"]: r["spec_id"] for r in rows}


def _fabric_for(nvlink_gbps: float) -> str:
    if nvlink_gbps <= PCIE_MAX_GBPS:
        return "pcie"
    return "nvlink-ampere" if nvlink_gbps <= AMPERE_NVLINK_GBPS else "nvlink-hopper"


def serving_gpu(gpu_id: str) -> ServingGpu:
    """Spec of ``gpu_id`` from estimator.specs, completed by estimator/data/inference/gpus.csv (fp4 peaks, and
    the A100 PCIe 80GB the spec table lacks, its server included: gpus_per_node, inter_node_gbps [Gb/s per node]).
    Raises estimator.specs.UnknownGpuError for an unknown id."""
    overrides, _ = gpu_overrides()
    key = gpu_id.strip().lower()
    extra = overrides.get(key, {})
    if extra.get("memory_gb"):
        memory_bytes = float(extra["memory_bytes"])
        bw = float(extra["memory_bw_gbps"])
        peaks = {p: float(extra[f"{p}_tflops"]) for p in PRECISIONS if extra.get(f"{p}_tflops")}
        nvlink = float(extra["nvlink_gbps"])
        gpn, scale_out = int(extra["gpus_per_node"]), float(extra["inter_node_gbps"]) / 8.0  # the row's server
        domain = gpn
    else:
        spec = get_gpu(key)
        memory_bytes, bw, nvlink, gpn = spec.memory_bytes, spec.memory_bw_gbps, spec.nvlink_gbps, spec.gpus_per_node
        domain = spec.nvlink_domain
        peaks = {p: v for p, v in spec.peak_tflops.items() if p in PRECISIONS}
        scale_out = spec.inter_node_gbps / 8.0
    if extra.get("fp4_tflops"):
        peaks["fp4"] = float(extra["fp4_tflops"])
    lanes = float(extra.get("fp32_lanes_per_sm") or DEFAULT_FP32_LANES_PER_SM)
    sm_clocks_per_s = peaks.get("fp32", 0.0) * 1e12 / (2.0 * lanes)  # SMs x clock, from the FP32 peak
    return ServingGpu(
        id=key,
        memory_bytes=memory_bytes,
        memory_bw_gbps=bw,
        peak_tflops=peaks,
        link_gbps=nvlink / 2.0,
        pcie=nvlink <= PCIE_MAX_GBPS,
        gpus_per_node=gpn,
        scale_out_gbps=scale_out / max(gpn, 1),
        fabric=_fabric_for(nvlink),
        convert_per_s=sm_clocks_per_s * CONVERSIONS_PER_CLOCK_PER_SM,
        nvlink_domain=domain,
    )


# --------------------------------------------------------------------------------------------------------------
# Serving stacks
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServingStack:
    """How an engine sizes its KV cache and what it holds besides (serving_stacks.csv)."""

    name: str
    kv_fraction: float
    kv_of_total: bool
    runtime_gb: float  # per GPU on one GPU [GB] (serving_stacks.csv runtime_gb)
    max_num_tokens: int
    max_batch: int
    source: str
    chunked_prefill: bool = True
    gqa_kernel_groups: tuple[int, ...] | None = None  # query heads per KV head read once per KV head; None = all
    fp8_experts: bool = True  # routed experts run in FP8 when the deployment is FP8 (else 16-bit experts)
    # Largest all-reduce message [bytes] the engine sends through its custom NVLink kernel: (groups of <= 2, larger).
    custom_ar_max_bytes: tuple[float, float] = (16e6, 8e6)
    kv_cache_8bit: bool = True  # a fp8/fp4 deployment's KV cache is 8-bit by default (else the 16-bit model dtype)
    # Fraction of a request's output tokens whose KV the engine holds per in-flight request, averaged over its life:
    # 1.0 when the scheduler reserves the whole output on admission (TensorRT-LLM GUARANTEED_NO_EVICT), 0.5 when KV
    # pages are allocated as tokens are generated (vLLM): serving_stacks.csv kv_output_reserved.
    kv_output_reserved: float = 1.0
    # Added per GPU in a tensor-parallel group of 2 or more [GB] (NCCL / custom all-reduce buffers): runtime_tp_gb.
    runtime_tp_gb: float = 0.0
    # Bytes per request slot and vocabulary entry of the sampler run the engine profiles before it sizes its KV cache
    # (vLLM: max_num_seqs x vocab fp32 logits and the sort's buffers): serving_stacks.csv sampler_bytes_per_logit.
    sampler_bytes_per_logit: float = 0.0
    # GPU-dependent defaults (serving_stacks.csv large_gpu_*): on a GPU of at least large_gpu_min_gib GiB whose id
    # names none of large_gpu_excludes the engine uses large_gpu_max_batch / large_gpu_max_num_tokens instead of
    # max_batch / max_num_tokens (vLLM V1 EngineArgs.get_batch_defaults). 0 = the same on every GPU.
    large_gpu_min_gib: float = 0.0
    large_gpu_excludes: tuple[str, ...] = ()
    large_gpu_max_num_tokens: int = 0
    large_gpu_max_batch: int = 0

    def batch_limits(self, gpu: ServingGpu) -> tuple[int, int]:
        """(max requests in flight, max tokens per engine step) of this engine's defaults on ``gpu``."""
        gib = gpu.memory_bytes / 2**30
        large = (
            self.large_gpu_min_gib > 0
            and gib >= self.large_gpu_min_gib
            and not any(name in gpu.id for name in self.large_gpu_excludes)
        )
        if large:
            return self.large_gpu_max_batch, self.large_gpu_max_num_tokens
        return self.max_batch, self.max_num_tokens

    def runtime_bytes(self, *, ranks: int, request_slots: int, vocab: int) -> float:
        """Memory [bytes] each GPU of a group of ``ranks`` GPUs holds outside the weights, activation buffers and KV
        cache: serving_stacks.csv runtime_gb, plus runtime_tp_gb once the group has more than one GPU, plus the
        profiled sampler run over ``request_slots`` x ``vocab`` logits (sampler_bytes_per_logit; the same on every
        rank: vLLM's TP 2 peak matched its TP 1 peak)."""
        fixed = (self.runtime_gb + (self.runtime_tp_gb if ranks > 1 else 0.0)) * 1e9
        return fixed + request_slots * vocab * self.sampler_bytes_per_logit

    def kv_bytes(self, precision: str) -> float:
        """Bytes per KV-cache element of a ``precision`` deployment on this engine at its default KV-cache dtype."""
        kv = PRECISIONS[precision][1]
        return kv if self.kv_cache_8bit else max(kv, ACTIVATION_BYTES)

    def custom_allreduce_limit(self, ranks: int) -> float:
        """Largest message [bytes] a group of ``ranks`` GPUs sends through the custom kernel (NCCL above)."""
        return self.custom_ar_max_bytes[0] if ranks <= 2 else self.custom_ar_max_bytes[1]

    def shares_kv_reads(self, group: float) -> bool:
        """Whether the engine has a grouped-query decode kernel (XQA-style: each KV head read once for its ``group``
        query heads) for this group size."""
        return self.gqa_kernel_groups is None or int(group) in self.gqa_kernel_groups


def _limits_mb(text: str) -> tuple[float, float]:
    small, large = (float(v) * 1e6 for v in text.strip().split("/"))
    return small, large


def _groups(text: str) -> tuple[int, ...] | None:
    text = text.strip().lower()
    return None if text in ("", "all") else tuple(int(g) for g in text.split("/"))


@cache
def serving_stacks() -> dict[str, ServingStack]:
    return {
        r["stack"]: ServingStack(
            name=r["stack"],
            kv_fraction=float(r["kv_fraction"]),
            kv_of_total=r["kv_of"] == "total",
            runtime_gb=float(r["runtime_gb"]),
            runtime_tp_gb=float(r["runtime_tp_gb"] or 0.0),
            sampler_bytes_per_logit=float(r["sampler_bytes_per_logit"] or 0.0),
            max_num_tokens=int(r["max_num_tokens"]),
            max_batch=int(r["max_batch"]),
            source=r["source"],
            chunked_prefill=r["chunked_prefill"].strip() == "1",
            gqa_kernel_groups=_groups(r["gqa_kernel_groups"]),
            fp8_experts=r["moe_fp8_experts"].strip() == "1",
            custom_ar_max_bytes=_limits_mb(r["custom_ar_max_mb"]),
            kv_cache_8bit=r["kv_cache_8bit"].strip() == "1",
            kv_output_reserved=float(r["kv_output_reserved"]),
            large_gpu_min_gib=float(r["large_gpu_min_gib"] or 0.0),
            large_gpu_excludes=tuple(n.strip().lower() for n in r["large_gpu_excludes"].split("/") if n.strip()),
            large_gpu_max_num_tokens=int(r["large_gpu_max_num_tokens"] or 0),
            large_gpu_max_batch=int(r["large_gpu_max_batch"] or 0),
        )
        for r in read_data_csv("serving_stacks.csv")
    }


def serving_stack(name: str | None) -> ServingStack:
    """The stack ``name`` (default trtllm); InferenceError naming ``stack`` with the known ones otherwise."""
    key = (name or DEFAULT_STACK).strip().lower()
    stacks = serving_stacks()
    if key not in stacks:
        raise InferenceError("stack", f"unknown serving stack {name!r}; known: {', '.join(stacks)}")
    return stacks[key]


# --------------------------------------------------------------------------------------------------------------
# Served models
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServedModel:
    """A decoder as the serving model sees it: params_b (all weights in memory) and active_params_b (weights a token
    runs through) [billions], layers, hidden, heads, kv_heads; expert_params_b [billions] of routed experts,
    experts / active_experts per MoE layer; kv_elements per token over all layers; attention FLOPs per generated
    token per context token; ffn_hidden; name (catalog id or empty); assumed (what was derived, not given).
    Zero in the optional fields means "dense GQA defaults" (computed from the first five)."""

    params_b: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    active_params_b: float = 0.0
    expert_params_b: float = 0.0
    experts: int = 0
    active_experts: int = 0
    kv_elements: float = 0.0
    attn_flops_per_ctx: float = 0.0
    decode_attn_flops_per_ctx: float = 0.0  # 0: as attn_flops_per_ctx (MLA decodes over the latent: more)
    ffn_hidden: int = 0
    embedding_params_b: float = 0.0  # input embedding + LM head (kept 16-bit by fp8/fp4 quantization)
    vocab: int = 0  # vocabulary entries (the logits a sampler holds per request); 0 = not known
    latent_kv: bool = False  # multi-head latent attention: kv_elements is one compressed latent per token
    moe_layers: int = 0  # layers with routed experts (0: all layers of a model with experts)
    # Width of one attention head where the model sets it (Qwen3-32B: 64 heads of 128 beside hidden 5120, its
    # config.json head_dim); 0 = hidden / heads. Taken from estimator.catalog.ModelGeometry.head_dim, the one
    # definition the training estimate reads too (attention_width): an outsider's probe served Qwen3-32B with
    # 80-wide heads, a KV cache 1.6x too small and about twice the measured throughput.
    head_width: float = 0.0
    name: str = ""
    assumed: tuple[str, ...] = ()

    @property
    def active_b(self) -> float:
        return self.active_params_b or self.params_b

    @property
    def head_dim(self) -> float:
        return self.head_width or self.hidden / self.heads

    def kv_elements_per_token(self, tp: float = 1.0) -> float:
        """KV elements one token keeps summed over a TP group of ``tp`` GPUs: KV heads are replicated when tp
        exceeds them; an MLA latent is replicated on every GPU."""
        if self.latent_kv:
            return self.kv_elements * tp
        return 2.0 * self.layers * max(self.kv_heads, tp) * self.head_dim

    def routed_row_bytes(self, input_bytes: float) -> float:
        """Activation bytes per token and GPU that a mixture-of-experts layer moves beyond a dense MLP, summed over
        its MoE layers: each of a token's ``active_experts`` rows is read by the first grouped GEMM (``input_bytes``
        per element: FP8 activations on FP8 experts) and written full-width (hidden, 16-bit) by the second, then read
        again by the weighted sum over the token's experts (vLLM fused_moe: intermediate_cache3 (tokens, top_k, hidden)
        then moe_sum; TensorRT-LLM: expanded rows, then finalizeMoeRouting). A dense MLP moves one such row per token
        (absorbed in the calibrated efficiencies); the other ``active_experts - 1`` are counted here. Tensor
        parallelism splits the experts' intermediate width, not these hidden-width rows: every GPU moves them all."""
        if not self.experts:
            return 0.0
        layers = self.moe_layers or self.layers
        return layers * max(self.active_experts - 1, 0) * self.hidden * (input_bytes + 2.0 * ACTIVATION_BYTES)

    def expert_exchange_bytes(self, group: float) -> float:
        """Bytes one token's hidden rows travel under expert parallelism over ``group`` GPUs, summed over the MoE
        layers: dispatched to the GPUs holding its active experts and combined back (16-bit rows both ways), one row
        per destination GPU however many of its experts that GPU holds [unc: the engines' all-to-all kernels were not
        re-read for this], the share (group - 1) / group of destinations being remote."""
        if not self.experts or group <= 1:
            return 0.0
        layers = self.moe_layers or self.layers
        destinations = min(float(self.active_experts), group) * (group - 1.0) / group
        return 2.0 * layers * destinations * self.hidden * ACTIVATION_BYTES

    def kv_converted_per_token(self, stack: ServingStack) -> float:
        """8-bit KV elements decode attention converts on CUDA cores per context token, summed over the group. The
        masked MHA kernel (multi-head attention, and grouped-query attention the engine has no XQA kernel for) runs
        one query head per thread block and converts every KV element for every query head: 2 x layers x heads x
        head_dim. XQA feeds the KV cache to tensor cores once per KV head (on Hopper as FP8 directly: TensorRT-LLM
        supportConfigQGMMA), and MLA's latent is shared by all heads the same way: no CUDA-core conversion counted."""
        group = self.heads / max(self.kv_heads, 1)
        if self.latent_kv or (group > 1 and stack.shares_kv_reads(group)):
            return 0.0
        return 2.0 * self.layers * self.heads * self.head_dim

    @classmethod
    def from_geometry(cls, g: ModelGeometry) -> ServedModel:
        mla = g.attention == "mla"
        return cls(
            params_b=g.params_b,
            layers=g.layers,
            hidden=g.hidden,
            heads=g.heads,
            kv_heads=g.heads if mla else g.kv_heads,
            active_params_b=g.active_params_b,
            expert_params_b=g.expert_params() / 1e9 * g.params_b / max(g.params() / 1e9, 1e-9),
            experts=g.experts,
            active_experts=g.active_experts,
            moe_layers=g.layers - g.dense_layers if g.experts else 0,
            kv_elements=g.kv_elements_per_token() if mla else 0.0,
            latent_kv=mla,
            attn_flops_per_ctx=g.attention_flops_per_token_per_context(),
            decode_attn_flops_per_ctx=g.decode_attention_flops_per_context(),
            ffn_hidden=g.moe_ffn_hidden or g.ffn_hidden,
            head_width=float(g.head_dim),
            embedding_params_b=g.vocab * g.hidden * (1 if g.tied else 2) / 1e9,
            vocab=g.vocab,
            name=g.id,
            assumed=g.assumed,
        )

    @classmethod
    def from_catalog(cls, name: str) -> ServedModel:
        try:
            return cls.from_geometry(get_model(name))
        except CatalogError as exc:
            raise InferenceError("model", str(exc).split(": ", 1)[1]) from None

    @classmethod
    def from_params(
        cls,
        *,
        params_b: float,
        layers: int | None = None,
        hidden: int | None = None,
        heads: int | None = None,
        kv_heads: int | None = None,
        ffn_hidden: int | None = None,
        vocab: int | None = None,
        experts: int = 0,
        active_experts: int = 0,
        head_dim: int | None = None,
    ) -> ServedModel:
        """Missing geometry derived by estimator.catalog.derive_geometry (the catalog's shapes; grouped-query
        attention with 8 KV heads assumed and listed in ``assumed``). Heads need not be divisible by the TP degree
        here: the model treats per-GPU shares as fractions; engines need divisibility, which the advice warns about.
        The geometry is not checked against params_b here (estimator.catalog.resolve_model does that)."""
        try:
            g = derive_geometry(
                params_b=params_b,
                layers=layers,
                hidden=hidden,
                heads=heads,
                kv_heads=kv_heads,
                ffn_hidden=ffn_hidden,
                vocab=vocab,
                experts=experts,
                active_experts=active_experts,
                head_dim=head_dim,
            )
        except CatalogError as exc:
            raise InferenceError(exc.field, str(exc).split(": ", 1)[1]) from None
        return cls.from_geometry(g)


# --------------------------------------------------------------------------------------------------------------
# Case tables
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServingCases:
    """Equal-length arrays, one entry per case. Sizes per whole TP group unless named per GPU."""

    params: FloatArray  # all weights [parameters]
    active_params: FloatArray  # weights one token runs through
    expert_params: FloatArray  # routed experts' weights (0 for dense)
    embedding_params: FloatArray  # input embedding + LM head
    route_fraction: FloatArray  # active_experts / experts (1 for dense)
    routed_row_bytes: FloatArray  # per token and GPU: activation bytes of its routed rows beyond one (0 for dense)
    layers: FloatArray
    hidden: FloatArray
    ffn_hidden: FloatArray
    kv_elements: FloatArray  # KV elements per token over the group (replicated heads counted)
    attn_flops_per_ctx: FloatArray  # attention FLOPs per token per context token (prefill)
    decode_attn_flops_per_ctx: FloatArray  # the same in decode (MLA: over the absorbed latent)
    weight_bytes: FloatArray  # bytes per parameter
    kv_bytes: FloatArray  # bytes per KV element
    kv_converted: FloatArray  # 8-bit KV elements decode attention converts per context token (0: 16-bit KV)
    convert_rate: FloatArray  # type conversions/s per GPU on CUDA cores
    low_precision: BoolArray  # fp8/fp4 efficiency group
    peak_flops: FloatArray  # per GPU
    expert_weight_bytes: FloatArray  # bytes per routed-expert parameter
    expert_low_precision: BoolArray  # the routed experts' GEMMs in the fp8/fp4 efficiency group
    expert_peak_flops: FloatArray  # per GPU, the routed experts' GEMMs
    mem_bw: FloatArray  # bytes/s per GPU
    mem_bytes: FloatArray  # per GPU
    link_bw: FloatArray  # one-way bytes/s per GPU of the group's collective path
    ar_latency: FloatArray  # s per collective (NCCL)
    busbw_eff: FloatArray
    custom_ar_latency: FloatArray  # s per collective, the engine's custom all-reduce (0: none on this path)
    custom_busbw_eff: FloatArray
    custom_ar_max_bytes: FloatArray  # largest message the engine sends through its custom kernel (NCCL above)
    runtime_bytes: FloatArray  # per GPU, serving stack
    kv_fraction: FloatArray
    kv_of_total: BoolArray
    kv_output_reserved: FloatArray  # fraction of the output tokens' KV a request holds on average (serving stack)
    max_num_tokens: FloatArray
    engine_max_batch: FloatArray
    chunked_prefill: BoolArray  # prompts split over steps at the token budget
    tp: FloatArray  # GPUs in the group (tensor x expert parallel)
    # Attention data parallelism with expert-parallel MoE (TensorRT-LLM enable_attention_dp, SGLang
    # --enable-dp-attention): each GPU runs attention and the other non-expert layers for its own requests with those
    # weights whole, holds only its requests' KV cache, and exchanges tokens with the experts' GPUs (all-to-all).
    attention_dp: BoolArray
    ep_bytes_per_token: FloatArray  # bytes a token's hidden rows travel to and from its experts' GPUs, all MoE layers
    ep_collectives: FloatArray  # all-to-all calls per step (dispatch and combine per MoE layer); 0 without
    isl: FloatArray
    osl: FloatArray
    labels: tuple[str, ...] = field(default=())

    def __len__(self) -> int:
        return int(self.params.shape[0])

    def take(self, index: npt.NDArray[np.bool_] | npt.NDArray[np.int64]) -> ServingCases:
        """The cases at ``index`` (boolean mask or positions)."""
        values = {f.name: getattr(self, f.name)[index] for f in fields(self) if f.name != "labels"}
        labels = tuple(np.asarray(self.labels, dtype=object)[index]) if self.labels else ()
        return ServingCases(**values, labels=labels)


def _collective_path(gpu: ServingGpu, tp: int) -> tuple[float, Fabric]:
    """One-way bandwidth per GPU [GB/s] and fabric of a group of ``tp`` GPUs: scale-up inside the NVLink domain (the
    node, or the whole NVL72 rack for GB200, whose trays are joined by NVLink switches), the scale-out network once
    the group leaves it (expert parallelism over nodes); a group larger than the fabric row was measured on takes its
    wide row (8 PCIe GPUs span both CPU sockets)."""
    table = fabrics()
    if tp > gpu.scale_up_gpus:
        return min(gpu.link_gbps, gpu.scale_out_gbps), table["scale-out"]
    row = table[gpu.fabric]
    if row.max_ranks and tp > row.max_ranks:
        row = table[row.wide_fabric]
    return gpu.link_gbps, row


def build_cases(
    *,
    models: Sequence[ServedModel],
    gpus: Sequence[ServingGpu],
    precisions: Sequence[str],
    tps: Sequence[int],
    input_tokens: Sequence[float],
    output_tokens: Sequence[float],
    stacks: Sequence[str] = (),
    labels: Sequence[str] = (),
    attention_dp: Sequence[bool] = (),
) -> ServingCases:
    """One case per position of the equal-length sequences (``stacks`` empty: trtllm for all; ``attention_dp``
    empty: tensor-parallel attention for all; it applies only to mixture-of-experts models on several GPUs)."""
    n = len(models)
    stacks = list(stacks) or [DEFAULT_STACK] * n
    adp = [
        bool(flag) and m.experts > 0 and t > 1
        for flag, m, t in zip(list(attention_dp) or [False] * n, models, tps, strict=True)
    ]
    if not all(len(s) == n for s in (gpus, precisions, tps, input_tokens, output_tokens, stacks, adp)):
        raise InferenceError("cases", "all sequences must have the same length")
    for p in set(precisions):
        if p not in PRECISIONS:
            raise InferenceError("precision", f"must be one of {', '.join(PRECISIONS)}; got {p!r}")
    stack_rows = [serving_stack(s) for s in stacks]
    # An engine without FP8 expert kernels keeps a FP8 deployment's routed experts in 16 bits (serving_stacks.csv).
    expert_precisions = [
        EXPERT_FALLBACK_PRECISION if p == "fp8" and not s.fp8_experts else p
        for p, s in zip(precisions, stack_rows, strict=True)
    ]
    paths = [_collective_path(g, int(t)) for g, t in zip(gpus, tps, strict=True)]

    def arr(values: Sequence[float]) -> FloatArray:
        return np.asarray(values, dtype=np.float64)

    return ServingCases(
        params=arr([m.params_b * 1e9 for m in models]),
        active_params=arr([m.active_b * 1e9 for m in models]),
        expert_params=arr([m.expert_params_b * 1e9 for m in models]),
        embedding_params=arr([m.embedding_params_b * 1e9 for m in models]),
        route_fraction=arr([m.active_experts / m.experts if m.experts else 1.0 for m in models]),
        routed_row_bytes=arr(
            [m.routed_row_bytes(PRECISIONS[p][1]) for m, p in zip(models, expert_precisions, strict=True)]
        ),
        layers=arr([m.layers for m in models]),
        hidden=arr([m.hidden for m in models]),
        ffn_hidden=arr([m.ffn_hidden or 3.5 * m.hidden for m in models]),
        # Under attention data parallelism a request's KV lives on its own GPU only (no replicated heads or latent).
        kv_elements=arr(
            [m.kv_elements_per_token(1.0 if a else float(t)) for m, t, a in zip(models, tps, adp, strict=True)]
        ),
        attn_flops_per_ctx=arr([m.attn_flops_per_ctx or 4.0 * m.layers * m.hidden for m in models]),
        decode_attn_flops_per_ctx=arr(
            [m.decode_attn_flops_per_ctx or m.attn_flops_per_ctx or 4.0 * m.layers * m.hidden for m in models]
        ),
        weight_bytes=arr([PRECISIONS[p][0] for p in precisions]),
        kv_bytes=arr([s.kv_bytes(p) for s, p in zip(stack_rows, precisions, strict=True)]),
        kv_converted=arr(
            [
                m.kv_converted_per_token(s) if s.kv_bytes(p) < ACTIVATION_BYTES else 0.0
                for m, s, p in zip(models, stack_rows, precisions, strict=True)
            ]
        ),
        convert_rate=arr([g.convert_per_s for g in gpus]),
        low_precision=np.asarray([PRECISIONS[p][3] == 1 for p in precisions]),
        peak_flops=arr([g.peak_flops(p) for g, p in zip(gpus, precisions, strict=True)]),
        expert_weight_bytes=arr([PRECISIONS[p][0] for p in expert_precisions]),
        expert_low_precision=np.asarray([PRECISIONS[p][3] == 1 for p in expert_precisions]),
        expert_peak_flops=arr([g.peak_flops(p) for g, p in zip(gpus, expert_precisions, strict=True)]),
        mem_bw=arr([g.memory_bw_gbps * 1e9 for g in gpus]),
        mem_bytes=arr([g.memory_bytes for g in gpus]),
        link_bw=arr([bw * 1e9 for bw, _ in paths]),
        ar_latency=arr([f.latency_s for _, f in paths]),
        busbw_eff=arr([f.busbw_efficiency for _, f in paths]),
        custom_ar_latency=arr([f.custom_latency_s for _, f in paths]),
        custom_busbw_eff=arr([f.custom_busbw_efficiency for _, f in paths]),
        custom_ar_max_bytes=arr([s.custom_allreduce_limit(int(t)) for s, t in zip(stack_rows, tps, strict=True)]),
        runtime_bytes=arr(
            [
                s.runtime_bytes(ranks=int(t), request_slots=s.batch_limits(g)[0], vocab=m.vocab)
                for s, t, g, m in zip(stack_rows, tps, gpus, models, strict=True)
            ]
        ),
        kv_fraction=arr([s.kv_fraction for s in stack_rows]),
        kv_of_total=np.asarray([s.kv_of_total for s in stack_rows]),
        kv_output_reserved=arr([s.kv_output_reserved for s in stack_rows]),
        max_num_tokens=arr([s.batch_limits(g)[1] for s, g in zip(stack_rows, gpus, strict=True)]),
        engine_max_batch=arr([s.batch_limits(g)[0] for s, g in zip(stack_rows, gpus, strict=True)]),
        chunked_prefill=np.asarray([s.chunked_prefill for s in stack_rows]),
        tp=arr(tps),
        attention_dp=np.asarray(adp, dtype=bool),
        ep_bytes_per_token=arr(
            [m.expert_exchange_bytes(float(t)) if a else 0.0 for m, t, a in zip(models, tps, adp, strict=True)]
        ),
        ep_collectives=arr([2.0 * (m.moe_layers or m.layers) if a else 0.0 for m, a in zip(models, adp, strict=True)]),
        isl=arr(input_tokens),
        osl=arr(output_tokens),
        labels=tuple(labels),
    )


def positive(name: str, value: object) -> float:
    """``value`` as a finite positive float, or InferenceError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise InferenceError(name, f"must be a positive number, got {value!r}")
    return float(value)
