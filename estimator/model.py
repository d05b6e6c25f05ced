"""Memory and step-time model of dense transformer training, vectorized over candidate configurations.

Everything here works on a *case table*: a dict of equal-length 1-D numpy arrays, one entry per
(configuration, cluster size, layout) to evaluate. No Python loop runs over cases.

Units: bytes, seconds, FLOP, FLOP/s, bytes/s inside; GB (1e9 bytes) only at the edges.

Model summary (sources in reference/estimator.md):

* Memory per GPU: weights, gradients and Adam states (mixed precision 2 + 2 + 12 bytes/param, fp32 4 + 4 + 8),
  divided by tp x pp and sharded over the data- x context-parallel group per strategy (ZeRO paper, Rajbhandari et al.
  2020; torchtitan FSDP over dp_shard_cp, Megatron-LM's distributed optimizer over dp x cp);
  activations per layer 32·s·b·h/t bytes (Korthikanti et al. 2022's 34 for tensor + sequence parallel without dropout
  masks, FlashAttention so the 5·a·s/h score term is not stored; + 4 bytes per s·b per ffn unit beyond 4h;
  K and V only kv_heads/heads as wide under grouped-query attention),
  2·s·b·h/t with full recomputation plus one layer's working set; the first
  pipeline stage holds min(pp, microbatches) microbatches in flight; fp32 logits of the micro-batch; a fixed reserve.
* Compute: 6·P FLOP per token plus causal attention 6·L·s·a (Megatron-Core counting; a the attention width, h
  but for latent attention), plus one extra forward
  (2·P + 2·L·s·a) with full recomputation or the attention core (2·L·s·a) with selective, at
  peak x efficiency: matmuls at eff_base x family x stack x cluster multipliers x h/(h + hidden_knee)
  (x fp8_gain x h/(h + fp8_knee)) of the precision's peak, the attention core at attention_eff x family_attention x
  stack_attention (the stack's attention kernel relative to FlashAttention-2, estimator/data/stacks.csv) x cluster of
  the 16-bit peak; memory-bound elementwise traffic per layer at the HBM bandwidth plus a fixed
  per-layer launch overhead.
* Communication: hierarchical collectives (NVLink inside a node, the node's share of the fabric between nodes),
  alpha-beta costs with ring factors (nccl-tests PERFORMANCE.md); volume per strategy (DDP/ZeRO-1 all-reduce once per
  optimizer step, ZeRO-2 reduce-scatter per micro-batch, ZeRO-3/FSDP all-gather x2 + reduce-scatter per micro-batch =
  1.5x DDP issued per layer, so its latency grows with layers x group size; HSDP ZeRO-3 inside the fewest whole
  nodes that hold the states plus an all-reduce of the shard across the replicas); tensor-parallel all-reduces (4 per
  layer per micro-batch, 6 with full recomputation; hidden behind GEMMs only in stacks that overlap them,
  estimator/data/stacks.csv); context-parallel K/V ring; pipeline point-to-point (v times with v virtual stages).
* Step: (m + (p - 1) / v) micro-batch slots (1F1B bubble, interleaved with v virtual stages: Narayanan et al. 2021)
  + communication not hidden behind compute (overlap fraction of the backward pass; a fitted fraction never hidden,
  except in stacks that prefetch ZeRO-3/FSDP collectives per layer, where only the first all-gather and the last
  reduce-scatter wait: stacks.csv fsdp_prefetch) + the optimizer update (memory bound).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from estimator.workload import STACKS, UNKNOWN_STACK_ROW, stack_properties

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Cases = dict[str, np.ndarray]

# Strategy and checkpointing codes used in case tables.
STRATEGY_CODES: Final[dict[str, int]] = {"ddp": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3, "hsdp": 4}
STRATEGY_LABELS: Final[tuple[str, ...]] = ("ddp", "zero1", "zero2", "fsdp", "hsdp")
CHECKPOINT_CODES: Final[dict[str, int]] = {"false": 0, "selective": 1, "true": 2}
CHECKPOINT_LABELS: Final[tuple[str, ...]] = ("false", "selective", "true")
DDP, ZERO1, ZERO2, ZERO3, HSDP = range(5)
AC_NONE, AC_SELECTIVE, AC_FULL = range(3)

# Bytes per parameter (ZeRO paper §3 / Transformer Math 101): mixed precision keeps 16-bit weights and gradients and
# fp32 master weights + Adam m + v (K = 12); pure fp32/tf32 keeps fp32 weights and gradients and Adam m + v (K = 8).
MIXED_STATE_BYTES: Final[tuple[float, float, float]] = (2.0, 2.0, 12.0)
FP32_STATE_BYTES: Final[tuple[float, float, float]] = (4.0, 4.0, 8.0)
# Korthikanti et al. 2022 Table 2: activations per layer with tensor + sequence parallelism, 16-bit activations,
# without the attention-score term (FlashAttention, used by every run in the calibration set): 34 s·b·h, of which
# 2 s·b·h are the 1-byte masks of the attention-output and MLP-output dropouts. Current LLM pretraining recipes (MPT,
# Llama, NeMo/Megatron-Core GPT recipes) train with dropout 0 and store no masks: 32.
ACTIVATION_BYTES_PER_SBH: Final[float] = 32.0
# Full recomputation keeps only each layer's 16-bit input (2 bytes per element).
CHECKPOINT_BYTES_PER_SBH: Final[float] = 2.0
# Bytes per element of the s x s attention scores an unfused kernel keeps for the backward: the 16-bit pre-softmax
# scores and softmax output and the 1-byte dropout mask (Korthikanti et al. 2022, arXiv 2205.05198, Eq. 1: 5as^2b).
ATTENTION_SCORE_BYTES: Final[float] = 5.0
# Bytes per s.b.h of a layer that only sequence parallelism splits over the tensor-parallel ranks: the two layer norms'
# inputs and the two dropout masks (Korthikanti et al. 2022 Table 2: sbh(10 + 24/t) without it, 34/t with it).
REPLICATED_BYTES_PER_SBH: Final[float] = 10.0
# Cross-entropy materialises the micro-batch's logits in fp32 (llm-analysis counts the same buffer).
LOGIT_BYTES: Final[float] = 4.0
# Memory the driver reports (gpus.csv memory_bytes, the capacity a job is held against) that a training job's tensors
# cannot use: the CUDA context and loaded kernels, NCCL's communication buffers (NCCL_BUFFSIZE, 4 MiB per channel and
# peer by default: NCCL environment-variable docs) and the caching allocator's fragmentation. An assumption [unc:
# ~2 GB per GPU, not measured here], the same on every GPU; counted in each case's need (``_working_bytes``).
MEMORY_RESERVE_BYTES: Final[float] = 2.0e9
# FSDP/ZeRO-3 prefetches the next layer while using the current one: two unsharded layers of 16-bit weights.
ZERO3_PREFETCH_LAYERS: Final[float] = 2.0
# Adam update traffic per parameter of the local optimizer shard: read+write fp32 master, m and v (24 B), read the fp32
# gradient (4 B), write the 16-bit weight (2 B) ~= 30 B; rounded up for the gradient clipping pass.
OPTIMIZER_BYTES_PER_PARAM: Final[float] = 32.0
# Backward is 2/3 of a micro-batch's compute (fwd : bwd = 1 : 2), the window a once-per-step sync can hide behind.
BACKWARD_FRACTION: Final[float] = 2.0 / 3.0
# ZeRO-3/FSDP per layer and micro-batch: an all-gather of the weights forward, another backward, and a reduce-scatter
# of the gradients: two of the three passes are gathers a layer waits for (Rajbhandari et al. 2020, ZeRO §5.2).
ZERO3_GATHERED_SHARE: Final[float] = 2.0 / 3.0

# Calibrated parameters: name -> (prior value, lower bound, upper bound). Family efficiency multipliers are added as
# "family_eff.<family>" / "family_attention.<family>" for each family in the fit data and stack multipliers as
# "stack_eff.<stack>" for each stack. Units in the name (_us = microseconds). Prior widths and their sources are in
# estimator.calibrate (PRIOR_WIDTHS); a parameter the data cannot identify stays at its prior value.
PARAMETER_BOUNDS: Final[dict[str, tuple[float, float, float]]] = {
    "eff_base": (0.5, 0.05, 1.0),  # achieved fraction of dense peak on large matmuls
    "hidden_knee": (256.0, 0.0, 8192.0),  # hidden size at which matmul efficiency halves
    # Attention core (FlashAttention fwd+bwd) as a fraction of the 16-bit dense peak, before family/stack multipliers:
    # FlashAttention-2 fwd+bwd reaches ~50-70% of A100 peak at head dim 128 (Dao 2023, arXiv 2307.08691 Fig. 4-7).
    "attention_eff": (0.55, 0.1, 1.0),
    # fp8 matmul efficiency relative to bf16 (against the 2x fp8 peak): published fp8/bf16 speed-ups of 1.3-1.5x at
    # equal configuration (reference/estimator.md) with attention and other work left in bf16 -> ~0.7 on matmuls.
    "fp8_gain": (0.7, 0.3, 1.0),
    # Hidden size at which the fp8 gain halves: the casts to FP8 are memory-bound work per element, the GEMMs grow
    # with hidden (prior derivation beside its width in estimator.fitting.PRIOR_WIDTHS).
    "fp8_knee": (450.0, 0.0, 32768.0),
    "overlap": (0.7, 0.0, 1.0),  # fraction of the overlap window that hides communication
    # Fraction of tensor-parallel communication hidden behind GEMMs, in stacks that overlap it (stacks.csv).
    "tp_overlap": (0.75, 0.0, 1.0),
    "exposed_floor": (0.1, 0.0, 1.0),  # fraction of data-parallel communication never hidden
    # Share of an extra forward paid by full activation recomputation (above 1: the recomputed forward also repeats
    # its memory-bound work and tensor-parallel collectives).
    "recompute_fraction": (1.0, 0.5, 1.3),
    "nvlink_eff": (0.7, 0.2, 1.0),  # achieved / one-way scale-up bandwidth (vidur: 0.58 A100, 0.81 H100 at 64 MB)
    "fabric_eff": (0.8, 0.05, 1.0),  # achieved / nominal scale-out bandwidth (Calculon IB tier: 0.9)
    "collective_latency_us": (20.0, 1.0, 500.0),  # per ring step (Calculon: 10 us NVLink, 20 us IB)
    "layer_overhead_us": (30.0, 0.0, 2000.0),  # kernel launches and host sync per layer per micro-batch
    # Memory-bound traffic of one layer (norms, residuals, activation function, rotary, dropout; forward + backward)
    # per token x hidden element, at the GPU's memory bandwidth: each of ~10 elementwise kernels reads and writes
    # 16-bit tensors of s·b·h (assumption; the fit moves it where long sequences and small hidden sizes show it).
    "elementwise_bytes": (60.0, 0.0, 400.0),
    # Efficiency of one user's cluster and stack relative to the public fit; fixed at 1 in the default calibration,
    # freed by estimator.calibrate.refine when a user's runs identify it.
    "cluster_eff": (1.0, 0.3, 3.0),
}
FAMILY_PREFIX: Final[str] = "family_eff."
# Per-family attention-kernel efficiency relative to attention_eff (FlashAttention reaches a different share of peak
# on each GPU generation than GEMMs do).
ATTENTION_PREFIX: Final[str] = "family_attention."
# Per-stack efficiency multiplier of matmuls and memory-bound work (a random effect around 1.0: unknown stacks predict
# with the prior mean).
STACK_PREFIX: Final[str] = "stack_eff."
# Per-stack attention-kernel throughput relative to FlashAttention-2 on the same GPU (prior centred on the stack's
# published kernel, estimator/data/stacks.csv; unseen stacks keep that centre).
STACK_ATTENTION_PREFIX: Final[str] = "stack_attention."
PARAMETER_PREFIXES: Final[tuple[str, ...]] = (FAMILY_PREFIX, ATTENTION_PREFIX, STACK_PREFIX, STACK_ATTENTION_PREFIX)
# Per stack code (STACKS, then unknown): whether its attention kernel keeps the s x s scores (stacks.csv), a physical
# property used by the memory model (not fitted).
_SCORES_STORED = np.array(
    [stack_properties()[s].attention_scores_stored for s in (*STACKS, UNKNOWN_STACK_ROW)], dtype=np.bool_
)
_SEQUENCE_PARALLEL = np.array(
    [stack_properties()[s].sequence_parallel for s in (*STACKS, UNKNOWN_STACK_ROW)], dtype=np.bool_
)
# theta entries that are tables by group (family or stack index); per case they become (cases, groups).
# tp_overlap_share is a constant (stacks.csv tp_comm_overlap): whether a stack overlaps tensor-parallel collectives.
GROUP_TABLES: Final[tuple[str, ...]] = (
    "family_eff",
    "family_attention",
    "stack_eff",
    "stack_attention",
    "tp_overlap_share",
    "fsdp_prefetch_share",
)


def _p(theta: Mapping[str, object], name: str) -> FloatArray:
    """A parameter: a scalar, or (K, 1) for K parameter sets evaluated at once."""
    return np.asarray(theta[name], dtype=np.float64)


def _by(theta: Mapping[str, object], name: str, index: np.ndarray) -> FloatArray:
    """A per-group parameter (family, stack) for each case: table[group], or table[:, group] for K parameter sets."""
    table = np.asarray(theta[name], dtype=np.float64)
    return table[..., index]


def _f(x: np.ndarray) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def memory_per_gpu(c: Cases) -> FloatArray:
    """Bytes per GPU (the most loaded one: first pipeline stage) for every case."""
    n, tp, pp, cp = (_f(c[k]) for k in ("n", "tp", "pp", "cp"))
    dp = n / (tp * pp * cp)
    return _state_bytes(c, _state_group(c, dp)) + _working_bytes(c)


def _state_group(c: Cases, dp: FloatArray) -> FloatArray:
    """Over how many GPUs ZeRO/FSDP shards the states: the shard degree's data-parallel ranks times the context-
    parallel ranks, which hold the same weights (torchtitan shards FSDP over the flattened dp_shard_cp mesh; Megatron-LM
    shards its distributed optimizer over dp x cp: theoretical_memory_usage.py, 6 + 12 / (dp cp) bytes per parameter).
    An outsider: left at dp, torchtitan's Llama 3.1 8B FSDP1 CP8 run (84.5 GiB on 96 GB) was called 149.5 GiB."""
    return _shard_degree(c, dp) * _f(c["cp"])


def _state_bytes(c: Cases, shard: FloatArray) -> FloatArray:
    """Weights, gradients and optimizer states per GPU, ZeRO-sharded over ``shard`` GPUs per the strategy."""
    tp, pp = _f(c["tp"]), _f(c["pp"])
    strat = c["strategy"]
    params_shard = _f(c["params"]) / (tp * pp)
    fp32 = c["fp32"].astype(bool)
    w_b = np.where(fp32, FP32_STATE_BYTES[0], MIXED_STATE_BYTES[0])
    g_b = np.where(fp32, FP32_STATE_BYTES[1], MIXED_STATE_BYTES[1])
    k_b = np.where(fp32, FP32_STATE_BYTES[2], MIXED_STATE_BYTES[2])
    return np.select(
        [strat == DDP, strat == ZERO1, strat == ZERO2],
        [
            (w_b + g_b + k_b) * params_shard,
            (w_b + g_b) * params_shard + k_b * params_shard / shard,
            w_b * params_shard + (g_b + k_b) * params_shard / shard,
        ],
        default=(w_b + g_b + k_b) * params_shard / shard,
    )


def _working_bytes(c: Cases) -> FloatArray:
    """Everything per GPU besides the (sharded) states: activations in flight, logits, the reserve and, for
    ZeRO-3/FSDP/HSDP, the prefetched unsharded layers."""
    n, tp, pp, cp, mb = (_f(c[k]) for k in ("n", "tp", "pp", "cp", "mb"))
    strat, ac = c["strategy"], c["ac"]
    dp = n / (tp * pp * cp)
    # The first stage, which holds the most micro-batches in flight, takes the short share when the layers do not
    # divide the stages: frameworks give the first (and last) stage fewer layers, e.g. Llama 3 405B's 126 layers on
    # 16 stages of 8 with one fewer on the first and the last (Dubey et al. 2024, arXiv 2407.21783 §3.3.2; Megatron-Core
    # --decoder-first-pipeline-num-layers). Its weights are still counted as an even 1/pp share.
    layers_stage = np.maximum(np.floor(_f(c["layers"]) / pp), 1.0)
    params_shard = _f(c["params"]) / (tp * pp)
    fp32 = c["fp32"].astype(bool)
    w_b = np.where(fp32, FP32_STATE_BYTES[0], MIXED_STATE_BYTES[0])
    prefetch = np.where(strat >= ZERO3, ZERO3_PREFETCH_LAYERS * w_b * params_shard / np.maximum(layers_stage, 1.0), 0.0)
    act_scale = np.where(fp32, 2.0, 1.0)  # fp32 activations take twice the bytes
    sbh = mb * _f(c["seq"]) / cp * _f(c["hidden"])
    # Without sequence parallelism the layer norms' inputs and the dropout masks stay whole on every tensor-parallel
    # rank (Korthikanti 2022 Table 2: 10 + 24/t bytes per s.b.h of the 34). Selective recomputation came to
    # Megatron-LM with sequence parallelism (Korthikanti 2022 §5: the two together), so a selective run is
    # sequence-parallel whatever its stack's 2021 default (an outsider: the paper's 175B/530B/1T runs at TP 8 with both
    # were called "does not fit in 80 GB", 85-119 GB, under the megatron-lm label they ran on).
    split = _SEQUENCE_PARALLEL[c["stack"]] | (ac == AC_SELECTIVE)
    replicated = np.where(split, 0.0, REPLICATED_BYTES_PER_SBH * (1.0 - 1.0 / tp))
    full_layer = (activation_bytes_per_sbh(c) / tp + replicated) * sbh
    # The layer input full recomputation keeps is whole on every rank too without it (Korthikanti Table 2: 2sbh).
    checkpoint = CHECKPOINT_BYTES_PER_SBH * sbh / np.where(split, tp, 1.0)
    # An unfused attention kernel keeps the s x s scores, softmax output and dropout mask: 5 a s / h bytes per s.b.h
    # (Korthikanti 2022 Eq. 1), split over the tensor-parallel heads; selective recomputation drops them. An outsider:
    # counting 32 bytes per s.b.h for every stack chose layouts without recomputation that Megatron-LM 2021 could
    # not hold (GPT-3 175B at TP4 PP8: ~100 GB of activations where 22 GB were counted), 1.46x too fast.
    scores = np.where(
        _SCORES_STORED[c["stack"]], ATTENTION_SCORE_BYTES * _f(c["heads"]) * _f(c["seq"]) / _f(c["hidden"]), 0.0
    )
    live_layer = full_layer + scores * sbh / tp
    kept = np.where(ac == AC_NONE, live_layer, full_layer)
    stored = np.where(ac == AC_FULL, checkpoint, kept)
    micro = _f(c["global_batch"]) / (dp * mb)
    # Interleaved schedules (v > 1) keep (1 + (p - 1) / (p v)) times the 1F1B activations in flight (Korthikanti
    # 2022 §4.2.3).
    vp = _f(c["vp"])
    interleave = np.where(vp > 1, 1.0 + (pp - 1.0) / (pp * vp), 1.0)
    in_flight = np.where(pp > 1, np.minimum(pp, micro) * interleave, 1.0)
    # The layer being recomputed is counted without its scores: a transient the 530B ZeRO-3 run of Narayanan et al.
    # 2021 (Table 2, full recomputation, 80 GB) held, which counting them in would call impossible.
    activations = act_scale * (layers_stage * in_flight * stored + np.where(ac == AC_FULL, full_layer, 0.0))
    logits = LOGIT_BYTES * mb * _f(c["seq"]) / cp * _f(c["vocab"]) / tp
    return prefetch + activations + logits + MEMORY_RESERVE_BYTES


def activation_bytes_per_sbh(c: Cases) -> FloatArray:
    """Stored activation bytes per s·b·h of one layer: ACTIVATION_BYTES_PER_SBH for ffn = 4h, plus 4 bytes (fc1
    output and activation output, 2 bytes each) per s·b for every ffn unit beyond 4h (or fewer below), plus 8 bytes
    (Q, K, V and the attention output, 2 bytes each: Korthikanti 2022's 8 s·b·h of the 34) per s·b for every unit of
    attention width beyond h (``attn``: DeepSeek-V3's latent attention is 2.86 h wide), less 4 bytes per s·b per unit
    of K and V width grouped-query attention does not have (``attn_kv_heads`` of ``heads``)."""
    hidden = _f(c["hidden"])
    width = _f(c["attn"]) / hidden
    # K and V (2 bytes each of the 8) are kv_heads x head_dim wide: grouped-query attention stores 1/group of them.
    kv_share = _f(c["attn_kv_heads"]) / _f(c["heads"])
    return (
        ACTIVATION_BYTES_PER_SBH
        + 4.0 * (_f(c["ffn"]) / hidden - 4.0)
        + 8.0 * (width - 1.0)
        - 4.0 * width * (1.0 - kv_share)
    )


def with_shard_degree(c: Cases) -> Cases:
    """The case table with each case's ZeRO shard degree as column ``shard`` (see ``_shard_degree``): memory and step
    time read it instead of solving the HSDP group again (it depends on the working memory, the costliest part)."""
    dp = _f(c["n"]) / (_f(c["tp"]) * _f(c["pp"]) * _f(c["cp"]))
    return {**c, "shard": _shard_degree(c, dp)}


def _shard_degree(c: Cases, dp: FloatArray) -> FloatArray:
    """Over how many GPUs ZeRO shards states: the DP group, or (HSDP) the fewest GPUs that hold the sharded states
    next to the working memory, in whole nodes doubling from one (the data-parallel ranks inside a node first), at
    most the DP group. That is how hybrid sharding is configured at scale: PyTorch HSDP's (replicate, shard) device
    mesh, MaxText's ici_fsdp x dcn_fsdp with dcn_data_parallelism across the rest (e.g. AI-Hypercomputer/maxtext
    configs/a3/llama_2_70b: FSDP over 16 nodes, 8 replicas). Without the GPU's memory in the table: one node."""
    if "shard" in c:
        return _f(c["shard"])
    in_node = np.minimum(dp, np.maximum(1.0, np.floor(_f(c["gpn"]) / (_f(c["tp"]) * _f(c["cp"])))))
    hsdp = c["strategy"] == HSDP
    if "memory" not in c or not np.any(hsdp):
        return np.where(hsdp, in_node, dp)
    room = _f(c["memory"]) - _working_bytes(c)  # bytes
    unsharded = _state_bytes(c, np.ones_like(dp))
    # A node's shard ranks are its data-parallel ranks times the context-parallel ranks (``_state_group``).
    nodes = np.where(room > 0, np.ceil(unsharded / np.maximum(room, 1.0) / (in_node * _f(c["cp"]))), np.inf)
    doubled = in_node * 2.0 ** np.ceil(np.log2(np.maximum(nodes, 1.0)))
    # A group that does not divide the data-parallel ranks cannot tile them: shard over all of them instead.
    group = np.where(np.isfinite(doubled) & (doubled < dp) & (np.mod(dp, doubled) == 0), doubled, dp)
    return np.where(hsdp, group, dp)


def layout_valid(c: Cases) -> npt.NDArray[np.bool_]:
    """Whether the layout divides the GPUs, the batch, the heads (and the KV heads, where the table has them:
    Megatron-Core splits the KV groups over the tensor-parallel ranks) and the sequence (fits is separate)."""
    n, tp, pp, cp, mb = (c[k].astype(np.int64) for k in ("n", "tp", "pp", "cp", "mb"))
    gb = c["global_batch"].astype(np.int64)
    mp = tp * pp * cp
    dp = np.maximum(n // np.maximum(mp, 1), 1)
    ok = (n % mp == 0) & (n >= mp)
    ok &= gb % (dp * mb) == 0
    ok &= c["heads"].astype(np.int64) % tp == 0
    ok &= c.get("kv_heads", c["heads"]).astype(np.int64) % tp == 0
    ok &= c["seq"].astype(np.int64) % cp == 0
    ok &= pp <= c["layers"].astype(np.int64)
    return ok


def model_flops_per_token(c: Mapping[str, np.ndarray]) -> FloatArray:
    """Training FLOP per token without recomputation: 6·P (P the parameters a token runs through: a mixture of
    experts' active ones, as Megatron-Core and NeMo count its model FLOPs) + causal attention 6·L·s·a, a the
    attention width (``attn``: h for multi-head attention, heads x (d_qk + d_v) / 2 for DeepSeek's latent one)."""
    return 6.0 * _f(c["active_params"]) + 6.0 * _f(c["layers"]) * _f(c["seq"]) * _f(c["attn"])


def step_time(c: Cases, theta: Mapping[str, object]) -> FloatArray:
    """Seconds per optimizer step for every case. ``theta`` from :func:`unpack_parameters`; it may also hold K
    parameter sets at once (scalars of shape (K, 1), group tables (K, groups)), as the vectorised Jacobian passes it:
    the answer is then (K, cases).

    Two rank placements are timed and the faster is kept, as a user would configure it: Megatron's default
    order (tensor, context, data parallel inside the node; pipeline stages outermost, across nodes once the
    job spans nodes) and the pipeline packed inside a node (tensor x context x pipeline <= GPUs per node) with
    data parallelism across nodes. Each placement charges every collective to the links it really crosses; they
    differ only for pipelined cases that can be packed, so only those are timed twice."""
    time = _step_time(c, theta, pipeline_in_node=False)
    pp = c["pp"]
    packable = (pp > 1) & (c["tp"] * c["cp"] * pp <= c["gpn"])
    if np.any(packable):
        sub = {k: v[packable] for k, v in c.items()}
        time[..., packable] = np.minimum(time[..., packable], _step_time(sub, theta, pipeline_in_node=True))
    return time


# What step_time_terms splits a step into (seconds per optimizer step each; they add up to step_time).
STEP_TERMS: Final[tuple[str, ...]] = (
    "compute",  # matmuls and attention of the micro-batch slots (1F1B bubble included)
    "overhead",  # per-layer launches and memory-bound elementwise work, same slots
    "tensor_parallel",  # tensor-parallel collectives not hidden behind GEMMs
    "pipeline_p2p",  # context-parallel ring and pipeline point-to-point not hidden
    "data_parallel",  # data-parallel / ZeRO / FSDP collectives not hidden behind compute
    "optimizer",  # the optimizer update (memory bound)
)


def step_time_terms(c: Cases, theta: Mapping[str, object]) -> dict[str, FloatArray]:
    """Where step_time's seconds go, per case (STEP_TERMS), for the rank placement step_time keeps: to diagnose a
    prediction by term (bench/estimator_accuracy.py prints them for the runs the fit never saw)."""
    total, terms = _step_time_and_terms(c, theta, pipeline_in_node=False, with_terms=True)
    pp = c["pp"]
    packable = (pp > 1) & (c["tp"] * c["cp"] * pp <= c["gpn"])
    if np.any(packable):
        sub = {k: v[packable] for k, v in c.items()}
        packed_total, packed = _step_time_and_terms(sub, theta, pipeline_in_node=True, with_terms=True)
        better = packed_total < total[..., packable]
        for name in STEP_TERMS:
            terms[name][..., packable] = np.where(better, packed[name], terms[name][..., packable])
    return terms


def _step_time(c: Cases, theta: Mapping[str, object], *, pipeline_in_node: bool) -> FloatArray:
    return _step_time_and_terms(c, theta, pipeline_in_node=pipeline_in_node, with_terms=False)[0]


def _step_time_and_terms(
    c: Cases, theta: Mapping[str, object], *, pipeline_in_node: bool, with_terms: bool
) -> tuple[FloatArray, dict[str, FloatArray]]:
    """Seconds per step and, ``with_terms``, the STEP_TERMS adding up to it (skipped in the fit's hot loop)."""
    n, tp, pp, cp, mb = (_f(c[k]) for k in ("n", "tp", "pp", "cp", "mb"))
    layers = _f(c["layers"])
    gpn = _f(c["gpn"])
    dp = n / (tp * pp * cp)
    micro = _f(c["global_batch"]) / (dp * mb)
    layers_stage = np.ceil(layers / pp)
    t_compute = _compute_time(c, theta, layers_stage / layers)
    links = _Links(
        nvl=_f(c["nvl"]) * _p(theta, "nvlink_eff"),
        nic=_f(c["node_bw"]) / gpn * _p(theta, "fabric_eff"),  # per-GPU share of the node's fabric
        alpha=_p(theta, "collective_latency_us") * 1e-6,
    )
    overlap, floor = _p(theta, "overlap"), _p(theta, "exposed_floor")
    t_tp, t_p2p = _model_parallel_comm(c, links, layers_stage, pipeline_in_node=pipeline_in_node)
    # Point-to-point traffic hides behind this micro-batch's compute at most: what exceeds it is exposed,
    # so a slow fabric between pipeline stages always shows (overlap alone would make it free).
    t_p2p_exposed = np.maximum(floor * t_p2p, t_p2p - overlap * t_compute)
    elementwise = _p(theta, "elementwise_bytes") * mb * _f(c["seq"]) / (cp * tp) * _f(c["hidden"]) / _f(c["hbm"])
    layer_overhead = (_p(theta, "layer_overhead_us") * 1e-6 + elementwise) * layers_stage
    # Only stacks that overlap tensor-parallel collectives with GEMMs hide any of them (stacks.csv tp_comm_overlap).
    tp_hidden = _p(theta, "tp_overlap") * _by(theta, "tp_overlap_share", c["stack"])
    t_micro = t_compute + layer_overhead + (1.0 - tp_hidden) * t_tp + t_p2p_exposed
    # 1F1B bubble (p - 1) micro-batch slots; interleaved with v virtual stages (p - 1) / v (Narayanan 2021 §2.2.2).
    t_pipeline = (micro + (pp - 1.0) / _f(c["vp"])) * t_micro

    per_step, per_micro = _data_parallel_comm(c, links, dp, layers_stage, pipeline_in_node=pipeline_in_node)
    # Some communication is always exposed (the first all-gather before compute starts, the last reduce after it).
    strat = c["strategy"]
    layers_issued = np.maximum(layers_stage, 1.0)
    # ZeRO-3/FSDP: all-gather forward, all-gather and reduce-scatter backward, per layer and micro-batch (the first
    # and last of the 3 x layers wait); HSDP's all-reduce of each layer's gradient shard across the replicas follows
    # that layer's reduce-scatter in the last backward (the last layer's waits).
    per_step_exposed = _exposed(
        c, theta, per_step, BACKWARD_FRACTION * t_compute, edge_fraction=1.0 / layers_issued, per_layer=strat == HSDP
    )
    per_micro_exposed = micro * _exposed(
        c,
        theta,
        per_micro,
        t_compute,
        edge_fraction=2.0 / (3.0 * layers_issued),
        per_layer=strat >= ZERO3,
        gathered=ZERO3_GATHERED_SHARE,
    )
    dp_off = dp * cp <= 1.0  # no other rank holds these weights: nothing to reduce
    per_step_exposed = np.where(dp_off, 0.0, per_step_exposed)
    per_micro_exposed = np.where(dp_off, 0.0, per_micro_exposed)

    optimizer_shard = _f(c["params"]) / (tp * pp) / np.where(strat == DDP, 1.0, _state_group(c, dp))
    t_optimizer = OPTIMIZER_BYTES_PER_PARAM * optimizer_shard / _f(c["hbm"])
    total = t_pipeline + per_step_exposed + per_micro_exposed + t_optimizer
    if not with_terms:
        return total, {}
    slots = micro + (pp - 1.0) / _f(c["vp"])
    terms = {
        "compute": slots * t_compute,
        "overhead": slots * layer_overhead,
        "tensor_parallel": slots * (1.0 - tp_hidden) * t_tp,
        "pipeline_p2p": slots * t_p2p_exposed,
        "data_parallel": per_step_exposed + per_micro_exposed,
        "optimizer": t_optimizer,
    }
    return total, {name: np.broadcast_to(value, np.shape(total)).copy() for name, value in terms.items()}


def _exposed(
    c: Cases,
    theta: Mapping[str, object],
    traffic: FloatArray,
    window: FloatArray,
    *,
    edge_fraction: FloatArray,
    per_layer: npt.NDArray[np.bool_],
    gathered: float = 0.0,
) -> FloatArray:
    """Seconds of data-parallel ``traffic`` not hidden behind ``window`` seconds of compute.

    Without per-layer prefetch a fitted fraction (exposed_floor) of reductions is never hidden, and the ``gathered``
    share of per-layer traffic (ZeRO-3/FSDP's weight all-gathers) is all exposed: a layer cannot start before its
    weights arrive unless they were fetched ahead (an outsider's probe: with that wait left to the fitted floor,
    Narayanan et al. 2021's ZeRO-3 runs at 384-2,240 A100 pinned exposed_floor at 1.0, every other collective
    included). A stack that issues ZeRO-3/FSDP collectives per layer ahead of use (stacks.csv fsdp_prefetch: PyTorch
    FSDP/FSDP2, XLA's pipelined all-gather and reduce-scatter) gathers the next layer while this one computes: only
    the first and last collectives (``edge_fraction`` of the traffic) wait, the rest hides behind compute up to the
    overlap fraction. ``per_layer``: the cases whose traffic is issued per layer; an undocumented stack takes the two
    structures halfway."""
    overlap, floor = _p(theta, "overlap"), _p(theta, "exposed_floor")
    waited = np.where(per_layer, gathered, 0.0) * traffic
    rest = traffic - waited
    unprefetched = waited + np.maximum(floor * rest, rest - overlap * window)
    edge = traffic * edge_fraction
    prefetched = edge + np.maximum(0.0, traffic - edge - overlap * window)
    share = np.where(per_layer, _by(theta, "fsdp_prefetch_share", c["stack"]), 0.0)
    return share * prefetched + (1.0 - share) * unprefetched


def _compute_time(c: Cases, theta: Mapping[str, object], stage_share: FloatArray) -> FloatArray:
    """Seconds of compute per micro-batch on one GPU: matmuls at the precision's peak, the attention core at the
    16-bit peak (FlashAttention runs in bf16/fp16 even in fp8 recipes), each at its own efficiency."""
    seq, hidden, layers = _f(c["seq"]), _f(c["hidden"]), _f(c["layers"])
    ac = c["ac"]
    params = _f(c["active_params"])  # a token's matmuls: the active experts only (memory counts them all)
    attn = 2.0 * layers * seq * _f(c["attn"])  # forward causal attention core per token (attention width)
    # Full recomputation repeats the forward pass (2 FLOP/param/token); recompute_fraction is how much of that
    # extra forward a framework actually pays (some keep the cheapest-to-store outputs).
    recompute = _p(theta, "recompute_fraction")
    linear_tok = 6.0 * params + np.where(ac == AC_FULL, 2.0 * recompute * params, 0.0)
    attn_tok = 3.0 * attn + np.select([ac == AC_FULL, ac == AC_SELECTIVE], [recompute * attn, attn], default=0.0)
    share = _f(c["mb"]) * seq / (_f(c["tp"]) * _f(c["cp"])) * stage_share
    cluster = _p(theta, "cluster_eff")
    base = _p(theta, "eff_base") * _by(theta, "family_eff", c["family"]) * _by(theta, "stack_eff", c["stack"]) * cluster
    # Small GEMMs run below peak; fp8 adds per-element scaling/cast work that only large hidden sizes amortise.
    fp8_factor = _p(theta, "fp8_gain") * hidden / (hidden + _p(theta, "fp8_knee"))
    eff_linear = base * hidden / (hidden + _p(theta, "hidden_knee")) * np.where(c["fp8"].astype(bool), fp8_factor, 1.0)
    kernel = _by(theta, "stack_attention", c["stack"])
    eff_attention = _p(theta, "attention_eff") * _by(theta, "family_attention", c["family"]) * kernel * cluster
    return share * (linear_tok / (_f(c["peak"]) * eff_linear) + attn_tok / (_f(c["peak_attn"]) * eff_attention))


@dataclass(frozen=True)
class _Links:
    nvl: FloatArray  # achieved scale-up bandwidth per GPU, one way [bytes/s]
    nic: FloatArray  # achieved scale-out bandwidth per GPU [bytes/s]
    alpha: FloatArray  # latency per ring step [s]

    def collective(
        self,
        volume: float,
        size: FloatArray,
        in_node: FloatArray,
        nodes: FloatArray,
        calls: FloatArray | float,
        *,
        ring_only: bool = False,
    ) -> FloatArray:
        """Ring collective over ``in_node`` x ``nodes`` GPUs: ``volume`` passes (1 = reduce-scatter or all-gather) of
        ``size`` bytes, issued as ``calls`` separate collectives. Bandwidth: NVLink inside the node, the node's fabric
        share between nodes (NCCL runs one ring per NIC, so a node's NICs carry the inter-node part in parallel).
        Latency: all-reduce pays one step per ring hop inside and between nodes (NCCL's tree/hierarchical algorithms);
        all-gather and reduce-scatter (``ring_only``) exist in NCCL only as a flat ring over every rank, so each call
        pays (GPUs - 1) steps: what makes ZeRO-3/FSDP over thousands of GPUs latency-bound (NCCL docs, "Algorithms":
        Tree is implemented for AllReduce only)."""
        intra = (in_node - 1.0) / in_node * size / self.nvl
        inter = (nodes - 1.0) / nodes * size / in_node / self.nic
        steps = in_node * nodes - 1.0 if ring_only else in_node - 1.0 + nodes - 1.0
        return volume * (intra + inter) + calls * self.alpha * steps


def _model_parallel_comm(
    c: Cases, links: _Links, layers_stage: FloatArray, *, pipeline_in_node: bool
) -> tuple[FloatArray, FloatArray]:
    """(tensor-parallel seconds, context + pipeline point-to-point seconds) per micro-batch."""
    n, tp, pp, cp, mb = (_f(c[k]) for k in ("n", "tp", "pp", "cp", "mb"))
    gpn = _f(c["gpn"])
    act_bytes = np.where(c["fp32"].astype(bool), 4.0, 2.0)
    tokens_bytes = mb * _f(c["seq"]) / cp * _f(c["hidden"]) * act_bytes
    # Tensor parallel: all-reduces of the micro-batch activations, inside the node when tp fits in one.
    tp_bw = np.where(tp <= gpn, links.nvl, links.nic)
    n_tp = np.where(c["ac"] == AC_FULL, 6.0, 4.0) * layers_stage
    t_tp = np.where(tp > 1, n_tp * (2 * (tp - 1) / tp * tokens_bytes / tp_bw + 2 * (tp - 1) * links.alpha), 0.0)
    # Context parallel: K and V chunks travel the ring (cp - 1) times forward, twice that backward. They are the key /
    # value heads' width, kv_heads x head_dim, at least one head per tensor rank (an outsider's probe: charged at the
    # hidden width, grouped-query Llama 3.1 405B at TP8 CP2 paid its ring 16x over and came out 12-14% slow).
    kv_heads_per_rank = np.maximum(_f(c["attn_kv_heads"]) / tp, 1.0)
    kv_bytes = mb * _f(c["seq"]) / cp * _f(c["attn"]) / _f(c["heads"]) * kv_heads_per_rank * act_bytes
    cp_bw = np.where(tp * cp <= gpn, links.nvl, links.nic)
    t_cp = np.where(cp > 1, 3.0 * layers_stage * (cp - 1) * (2.0 * kv_bytes / cp_bw + links.alpha), 0.0)
    # Pipeline: activations forward and gradients backward between stages (sequence-parallel scattered); interleaved
    # schedules cross every stage boundary v times.
    packed = (tp * cp * pp <= gpn) if pipeline_in_node else np.zeros_like(tp, dtype=bool)
    # Outermost pipeline stages are neighbours inside a node only when the whole job fits in one node.
    pp_bw = np.where(packed | (n <= gpn), links.nvl, links.nic)
    t_pp = np.where(pp > 1, 2.0 * _f(c["vp"]) * (tokens_bytes / tp / pp_bw + links.alpha), 0.0)
    return t_tp, t_cp + t_pp


def _data_parallel_comm(
    c: Cases, links: _Links, dp: FloatArray, layers_stage: FloatArray, *, pipeline_in_node: bool
) -> tuple[FloatArray, FloatArray]:
    """(seconds per optimizer step, seconds per micro-batch) of data-parallel collectives before any overlap.

    Hierarchical over the dp x cp group (tp innermost; then cp and dp; then pp). ZeRO-3/FSDP gather each layer's weights
    forward and backward and reduce-scatter its gradients: 3 collectives per layer per micro-batch, each paying the
    ring latency of the whole group, so latency grows with the group size (what makes ZeRO-3 at thousands of GPUs
    communication-bound, Narayanan 2021 Table 2)."""
    tp, pp, cp = _f(c["tp"]), _f(c["pp"]), _f(c["cp"])
    strat = c["strategy"]
    packed = (tp * cp * pp <= _f(c["gpn"])) if pipeline_in_node else np.zeros_like(tp, dtype=bool)
    grad_bytes = np.where(c["fp32"].astype(bool), 4.0, 2.0) * _f(c["params"]) / (tp * pp)
    # The context-parallel ranks hold the same weights as the data-parallel ones, so gradients are reduced (and
    # ZeRO/FSDP states sharded and gathered) over dp x cp ranks (Megatron-LM's data-parallel group with context
    # parallelism; torchtitan's dp_shard_cp mesh): the group ``_state_group`` shards the states over.
    group = dp * cp
    # The group's ranks that share a node: the node's GPUs not taken by tensor parallelism (and a packed pipeline).
    in_node = np.clip(np.floor(_f(c["gpn"]) / (tp * np.where(packed, pp, 1.0))), 1.0, group)
    nodes = np.maximum(group / in_node, 1.0)
    # HSDP: ZeRO-3 inside a shard group (its node part over NVLink, the rest over the fabric), then an all-reduce of
    # each GPU's shard across the group's replicas.
    shard = _state_group(c, dp)
    replicas = np.maximum(group / shard, 1.0)
    shard_in_node = np.minimum(shard, in_node)
    shard_nodes = np.maximum(shard / shard_in_node, 1.0)
    one = np.ones_like(dp)
    per_layer = 3.0 * layers_stage
    per_step = np.select(
        [strat <= ZERO1, strat == ZERO2, strat == HSDP],
        [
            links.collective(2.0, grad_bytes, in_node, nodes, 2.0),
            # final all-gather of the updated weights
            links.collective(1.0, grad_bytes, in_node, nodes, 1.0, ring_only=True),
            links.collective(2.0, grad_bytes / shard, one, replicas, 2.0),  # shard all-reduce across the replicas
        ],
        default=0.0,
    )
    per_micro = np.select(
        [strat == ZERO2, strat == ZERO3, strat == HSDP],
        [
            links.collective(1.0, grad_bytes, in_node, nodes, 1.0, ring_only=True),
            links.collective(3.0, grad_bytes, in_node, nodes, per_layer, ring_only=True),
            links.collective(3.0, grad_bytes, shard_in_node, shard_nodes, per_layer, ring_only=True),
        ],
        default=0.0,
    )
    return per_step, per_micro


def unpack_parameters(
    params: Mapping[str, float],
    families: tuple[str, ...],
    stacks: tuple[str, ...] = STACKS,
    *,
    borrowed: Mapping[str, str] | None = None,
) -> dict[str, object]:
    """Calibration parameters -> the ``theta`` step_time uses (family and stack multipliers as arrays by index).

    Families with no fitted multiplier take the multipliers of ``borrowed[family]`` (the nearest calibrated family)
    or 1.0; stacks with no fitted multiplier, and the unknown stack (index len(stacks)), take 1.0, the prior mean, for
    stack_eff and their published kernel's prior centre (stacks.csv) for stack_attention."""
    theta: dict[str, object] = {name: float(params.get(name, init)) for name, (init, _, _) in PARAMETER_BOUNDS.items()}
    borrowed = borrowed or {}

    def family_value(prefix: str, family: str) -> float:
        key = prefix + family
        if key not in params and family in borrowed:
            key = prefix + borrowed[family]
        return float(params.get(key, 1.0))

    theta["family_eff"] = np.array([family_value(FAMILY_PREFIX, f) for f in families], dtype=np.float64)
    theta["family_attention"] = np.array([family_value(ATTENTION_PREFIX, f) for f in families], dtype=np.float64)
    theta["stack_eff"] = np.array([float(params.get(STACK_PREFIX + s, 1.0)) for s in (*stacks, "")], dtype=np.float64)
    properties = stack_properties()
    rows = [properties[s] for s in (*stacks, UNKNOWN_STACK_ROW)]
    theta["stack_attention"] = np.array(
        [float(params.get(STACK_ATTENTION_PREFIX + row.stack, row.attention_vs_fa2)) for row in rows], dtype=np.float64
    )
    theta["tp_overlap_share"] = np.array([row.tp_comm_overlap for row in rows], dtype=np.float64)
    theta["fsdp_prefetch_share"] = np.array([row.fsdp_prefetch for row in rows], dtype=np.float64)
    return theta
