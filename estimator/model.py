"""Memory and step-time model of dense transformer training, vectorized over candidate configurations.

Everything here works on a *case table*: a dict of equal-length 1-D numpy arrays, one entry per
(configuration, cluster size, layout) to evaluate. No Python loop runs over cases.

Units: bytes, seconds, FLOP, FLOP/s, bytes/s inside; GB (1e9 bytes) only at the edges.

Model summary (sources in reference/estimator.md):

* Memory per GPU: weights, gradients and Adam states (mixed precision 2 + 2 + 12 bytes/param, fp32 4 + 4 + 8),
  divided by tp x pp and sharded over the data-parallel group per strategy (ZeRO paper, Rajbhandari et al. 2020);
  activations per layer 34·s·b·h/t bytes (Korthikanti et al. 2022, tensor + sequence parallel, FlashAttention so the
  5·a·s/h score term is not stored), 2·s·b·h/t with full recomputation plus one layer's working set; the first
  pipeline stage holds min(pp, microbatches) microbatches in flight; fp32 logits of the micro-batch; a fixed reserve.
* Compute: 6·P FLOP per token plus causal attention 6·L·s·h (Megatron-Core counting), plus one extra forward
  (2·P + 2·L·s·h) with full recomputation or the attention core (2·L·s·h) with selective, at
  peak x efficiency: matmuls at base x family multiplier x h/(h + hidden_knee) (x fp8_gain x h/(h + fp8_knee)) of the
  precision's peak, the attention core at base x family multiplier x attention_eff of the 16-bit peak.
* Communication: hierarchical collectives (NVLink inside a node, the node's share of the fabric between nodes),
  alpha-beta costs with ring factors (nccl-tests PERFORMANCE.md); volume per strategy (DDP/ZeRO-1 all-reduce once per
  optimizer step, ZeRO-2 reduce-scatter per micro-batch, ZeRO-3/FSDP all-gather x2 + reduce-scatter per micro-batch =
  1.5x DDP, HSDP ZeRO-3 inside the node plus an all-reduce of the shard across nodes); tensor-parallel all-reduces
  (4 per layer per micro-batch, 6 with full recomputation); context-parallel K/V ring; pipeline point-to-point.
* Step: (m + pp - 1) micro-batch slots (1F1B bubble, Narayanan et al. 2021) + communication not hidden behind
  compute (overlap fraction of the backward pass) + the optimizer update (memory bound).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import numpy as np
import numpy.typing as npt

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
# without the attention-score term (FlashAttention, used by every run in the calibration set).
ACTIVATION_BYTES_PER_SBH: Final[float] = 34.0
# Full recomputation keeps only each layer's 16-bit input (2 bytes per element).
CHECKPOINT_BYTES_PER_SBH: Final[float] = 2.0
# Cross-entropy materialises the micro-batch's logits in fp32 (llm-analysis counts the same buffer).
LOGIT_BYTES: Final[float] = 4.0
# CUDA context, NCCL buffers and allocator fragmentation not available to the job (assumption: ~2 GB on 80 GB parts).
MEMORY_RESERVE_BYTES: Final[float] = 2.0e9
# FSDP/ZeRO-3 prefetches the next layer while using the current one: two unsharded layers of 16-bit weights.
ZERO3_PREFETCH_LAYERS: Final[float] = 2.0
# Adam update traffic per parameter of the local optimizer shard: read+write fp32 master, m and v (24 B), read the fp32
# gradient (4 B), write the 16-bit weight (2 B) ~= 30 B; rounded up for the gradient clipping pass.
OPTIMIZER_BYTES_PER_PARAM: Final[float] = 32.0
# Backward is 2/3 of a micro-batch's compute (fwd : bwd = 1 : 2), the window a once-per-step sync can hide behind.
BACKWARD_FRACTION: Final[float] = 2.0 / 3.0

# Calibrated parameters: name -> (initial value, lower bound, upper bound). Family efficiency multipliers are added as
# "family_eff.<family>" for each family in the fit data. Units in the name (_us = microseconds).
PARAMETER_BOUNDS: Final[dict[str, tuple[float, float, float]]] = {
    "eff_base": (0.5, 0.05, 1.0),  # achieved fraction of dense peak on large matmuls
    "hidden_knee": (256.0, 0.0, 8192.0),  # hidden size at which matmul efficiency halves
    "attention_eff": (0.6, 0.1, 2.0),  # attention-core efficiency relative to matmul efficiency
    "fp8_gain": (0.7, 0.3, 1.0),  # fp8 efficiency relative to bf16 efficiency (against the 2x fp8 peak)
    "fp8_knee": (1024.0, 0.0, 32768.0),  # hidden size at which the fp8 gain halves (cast/scaling overhead)
    "overlap": (0.7, 0.0, 1.0),  # fraction of the overlap window that hides communication
    "tp_overlap": (0.3, 0.0, 1.0),  # fraction of tensor-parallel communication hidden behind GEMMs
    "exposed_floor": (0.1, 0.0, 1.0),  # fraction of data-parallel communication never hidden
    "recompute_fraction": (1.0, 0.3, 1.0),  # share of an extra forward paid by full activation recomputation
    "nvlink_eff": (0.7, 0.2, 1.0),  # achieved / one-way scale-up bandwidth (vidur: 0.58 A100, 0.81 H100 at 64 MB)
    "fabric_eff": (0.8, 0.2, 1.0),  # achieved / nominal scale-out bandwidth
    "collective_latency_us": (20.0, 1.0, 500.0),  # per ring step (Calculon: 10 us NVLink, 20 us IB)
    "layer_overhead_us": (30.0, 0.0, 2000.0),  # memory-bound work and launches per layer per micro-batch
}
FAMILY_PREFIX: Final[str] = "family_eff."
# Per-family attention-kernel efficiency relative to the family's matmul efficiency (FlashAttention reaches a smaller
# share of peak on newer GPUs than GEMMs do).
ATTENTION_PREFIX: Final[str] = "family_attention."


def _f(x: np.ndarray) -> FloatArray:
    return np.asarray(x, dtype=np.float64)


def memory_per_gpu(c: Cases) -> FloatArray:
    """Bytes per GPU (the most loaded one: first pipeline stage) for every case."""
    n, tp, pp, cp, mb = (_f(c[k]) for k in ("n", "tp", "pp", "cp", "mb"))
    strat, ac = c["strategy"], c["ac"]
    dp = n / (tp * pp * cp)
    layers_stage = np.ceil(_f(c["layers"]) / pp)
    params_shard = _f(c["params"]) / (tp * pp)
    fp32 = c["fp32"].astype(bool)
    w_b = np.where(fp32, FP32_STATE_BYTES[0], MIXED_STATE_BYTES[0])
    g_b = np.where(fp32, FP32_STATE_BYTES[1], MIXED_STATE_BYTES[1])
    k_b = np.where(fp32, FP32_STATE_BYTES[2], MIXED_STATE_BYTES[2])
    shard = _shard_degree(c, dp)
    states = np.select(
        [strat == DDP, strat == ZERO1, strat == ZERO2],
        [
            (w_b + g_b + k_b) * params_shard,
            (w_b + g_b) * params_shard + k_b * params_shard / shard,
            w_b * params_shard + (g_b + k_b) * params_shard / shard,
        ],
        default=(w_b + g_b + k_b) * params_shard / shard
        + ZERO3_PREFETCH_LAYERS * w_b * params_shard / np.maximum(layers_stage, 1.0),
    )
    act_scale = np.where(fp32, 2.0, 1.0)  # fp32 activations take twice the bytes
    sbh = mb * _f(c["seq"]) / cp * _f(c["hidden"])
    full_layer = ACTIVATION_BYTES_PER_SBH * sbh / tp
    stored = np.where(ac == AC_FULL, CHECKPOINT_BYTES_PER_SBH * sbh / tp, full_layer)
    micro = _f(c["global_batch"]) / (dp * mb)
    in_flight = np.where(pp > 1, np.minimum(pp, micro), 1.0)
    activations = act_scale * (layers_stage * in_flight * stored + np.where(ac == AC_FULL, full_layer, 0.0))
    logits = LOGIT_BYTES * mb * _f(c["seq"]) / cp * _f(c["vocab"]) / tp
    return states + activations + logits + MEMORY_RESERVE_BYTES


def _shard_degree(c: Cases, dp: FloatArray) -> FloatArray:
    """Over how many GPUs ZeRO shards states: the DP group, or (HSDP) the DP ranks inside one node."""
    in_node = np.maximum(1.0, np.floor(_f(c["gpn"]) / (_f(c["tp"]) * _f(c["cp"]))))
    return np.where(c["strategy"] == HSDP, np.minimum(dp, in_node), dp)


def layout_valid(c: Cases) -> npt.NDArray[np.bool_]:
    """Whether the layout divides the GPUs, the batch, the heads and the sequence (fits is separate)."""
    n, tp, pp, cp, mb = (c[k].astype(np.int64) for k in ("n", "tp", "pp", "cp", "mb"))
    gb = c["global_batch"].astype(np.int64)
    mp = tp * pp * cp
    dp = np.maximum(n // np.maximum(mp, 1), 1)
    ok = (n % mp == 0) & (n >= mp)
    ok &= gb % (dp * mb) == 0
    ok &= c["heads"].astype(np.int64) % tp == 0
    ok &= c["seq"].astype(np.int64) % cp == 0
    ok &= pp <= c["layers"].astype(np.int64)
    return ok


def model_flops_per_token(c: Cases) -> FloatArray:
    """Training FLOP per token without recomputation: 6·P + causal attention 6·L·s·h."""
    return 6.0 * _f(c["params"]) + 6.0 * _f(c["layers"]) * _f(c["seq"]) * _f(c["hidden"])


def step_time(c: Cases, theta: Mapping[str, object]) -> FloatArray:
    """Seconds per optimizer step for every case. ``theta`` from :func:`unpack_parameters`.

    Two rank placements are timed and the faster is kept, as a user would configure it: Megatron's default
    order (tensor, context, data parallel inside the node; pipeline stages outermost, across nodes once the
    job spans nodes) and the pipeline packed inside a node (tensor x context x pipeline <= GPUs per node) with
    data parallelism across nodes. Each placement charges every collective to the links it really crosses."""
    return np.minimum(_step_time(c, theta, pipeline_in_node=False), _step_time(c, theta, pipeline_in_node=True))


def _step_time(c: Cases, theta: Mapping[str, object], *, pipeline_in_node: bool) -> FloatArray:
    n, tp, pp, cp, mb = (_f(c[k]) for k in ("n", "tp", "pp", "cp", "mb"))
    seq, hidden, layers = _f(c["seq"]), _f(c["hidden"]), _f(c["layers"])
    strat, ac = c["strategy"], c["ac"]
    gpn = _f(c["gpn"])
    dp = n / (tp * pp * cp)
    micro = _f(c["global_batch"]) / (dp * mb)
    layers_stage = np.ceil(layers / pp)
    stage_share = layers_stage / layers
    fp32 = c["fp32"].astype(bool)
    act_bytes = np.where(fp32, 4.0, 2.0)

    # Compute per micro-batch on one GPU: matmuls at the precision's peak, attention core at the 16-bit peak
    # (FlashAttention runs in bf16/fp16 even in fp8 recipes), each at its own calibrated efficiency.
    params = _f(c["params"])
    attn = 2.0 * layers * seq * hidden  # forward causal attention core per token
    # Full recomputation repeats the forward pass (2 FLOP/param/token); recompute_fraction is how much of that
    # extra forward a framework actually pays (some keep the cheapest-to-store outputs).
    recompute = float(theta["recompute_fraction"])  # type: ignore[arg-type]
    linear_tok = 6.0 * params + np.where(ac == AC_FULL, 2.0 * recompute * params, 0.0)
    attn_tok = 3.0 * attn + np.select([ac == AC_FULL, ac == AC_SELECTIVE], [recompute * attn, attn], default=0.0)
    share = mb * seq / (tp * cp) * stage_share
    family_eff = np.asarray(theta["family_eff"], dtype=np.float64)[c["family"]]
    base = float(theta["eff_base"]) * family_eff  # type: ignore[arg-type]
    # Small GEMMs run below peak; fp8 adds per-element scaling/cast work that only large hidden sizes amortise.
    fp8_knee = float(theta["fp8_knee"])  # type: ignore[arg-type]
    fp8_factor = float(theta["fp8_gain"]) * hidden / (hidden + fp8_knee)  # type: ignore[arg-type]
    eff_linear = (
        base
        * hidden
        / (hidden + float(theta["hidden_knee"]))  # type: ignore[arg-type]
        * np.where(c["fp8"].astype(bool), fp8_factor, 1.0)
    )
    family_attention = np.asarray(theta["family_attention"], dtype=np.float64)[c["family"]]
    eff_attention = base * float(theta["attention_eff"]) * family_attention  # type: ignore[arg-type]
    t_compute = share * (linear_tok / (_f(c["peak"]) * eff_linear) + attn_tok / (_f(c["peak_attn"]) * eff_attention))

    nvl = _f(c["nvl"]) * float(theta["nvlink_eff"])  # type: ignore[arg-type]
    nic = _f(c["node_bw"]) / gpn * float(theta["fabric_eff"])  # type: ignore[arg-type]  # per-GPU share
    alpha = float(theta["collective_latency_us"]) * 1e-6  # type: ignore[arg-type]
    overlap = float(theta["overlap"])  # type: ignore[arg-type]

    # Tensor parallel: all-reduces of the micro-batch activations, inside the node when tp x cp fits in one.
    tp_bw = np.where(tp <= gpn, nvl, nic)
    n_tp = np.where(ac == AC_FULL, 6.0, 4.0) * layers_stage
    tp_msg = mb * seq / cp * hidden * act_bytes
    t_tp = np.where(tp > 1, n_tp * (2 * (tp - 1) / tp * tp_msg / tp_bw + 2 * (tp - 1) * alpha), 0.0)
    # Context parallel: K and V chunks travel the ring (cp - 1) times forward, twice that backward.
    cp_bw = np.where(tp * cp <= gpn, nvl, nic)
    cp_msg = 2.0 * mb * seq / cp * hidden * act_bytes / tp
    t_cp = np.where(cp > 1, 3.0 * layers_stage * (cp - 1) * (cp_msg / cp_bw + alpha), 0.0)
    # Pipeline: activations forward and gradients backward between stages (sequence-parallel scattered).
    packed = (tp * cp * pp <= gpn) if pipeline_in_node else np.zeros_like(tp, dtype=bool)
    # Outermost pipeline stages are neighbours inside a node only when the whole job fits in one node.
    pp_bw = np.where(packed | (n <= gpn), nvl, nic)
    pp_msg = mb * seq / cp * hidden * act_bytes / tp
    t_pp = np.where(pp > 1, 2.0 * (pp_msg / pp_bw + alpha), 0.0)
    layer_overhead = float(theta["layer_overhead_us"]) * 1e-6 * layers_stage  # type: ignore[arg-type]
    tp_overlap = float(theta["tp_overlap"])  # type: ignore[arg-type]
    floor = float(theta["exposed_floor"])  # type: ignore[arg-type]
    # Point-to-point traffic hides behind this micro-batch's compute at most: what exceeds it is exposed,
    # so a slow fabric between pipeline stages always shows (overlap alone would make it free).
    t_p2p = t_cp + t_pp
    t_p2p_exposed = np.maximum(floor * t_p2p, t_p2p - overlap * t_compute)
    t_micro = t_compute + layer_overhead + (1.0 - tp_overlap) * t_tp + t_p2p_exposed
    t_pipeline = (micro + pp - 1.0) * t_micro

    # Data parallel: hierarchical collectives over the DP group (tp, cp innermost; then dp; then pp).
    grad_bytes = np.where(fp32, 4.0, 2.0) * _f(c["params"]) / (tp * pp)
    # Data-parallel ranks that share a node: the node's GPUs not taken by tensor/context (and a packed pipeline).
    in_node = np.clip(np.floor(gpn / (tp * cp * np.where(packed, pp, 1.0))), 1.0, dp)
    nodes = np.maximum(dp / in_node, 1.0)

    def collective(volume: FloatArray | float, size: FloatArray, group_in_node: FloatArray, group_nodes: FloatArray):
        """Ring-collective time for ``volume`` passes of ``size`` bytes (1 pass = reduce-scatter or all-gather)."""
        intra = (group_in_node - 1.0) / group_in_node * size / nvl
        inter = (group_nodes - 1.0) / group_nodes * size / group_in_node / nic
        return volume * (intra + inter + alpha * (group_in_node - 1.0 + group_nodes - 1.0))

    hsdp_in_node = _shard_degree(c, dp)
    hsdp_nodes = np.maximum(dp / hsdp_in_node, 1.0)
    one = np.ones_like(dp)
    per_step = np.select(
        [strat <= ZERO1, strat == ZERO2, strat == HSDP],
        [
            collective(2.0, grad_bytes, in_node, nodes),
            collective(1.0, grad_bytes, in_node, nodes),  # final all-gather of the updated weights
            collective(2.0, grad_bytes / hsdp_in_node, one, hsdp_nodes),  # shard all-reduce across nodes
        ],
        default=0.0,
    )
    per_micro = np.select(
        [strat == ZERO2, strat == ZERO3, strat == HSDP],
        [
            collective(1.0, grad_bytes, in_node, nodes),
            collective(3.0, grad_bytes, in_node, nodes),
            collective(3.0, grad_bytes, hsdp_in_node, one),
        ],
        default=0.0,
    )
    # Some communication is always exposed (the first all-gather before compute starts, the last reduce after it).
    per_step_exposed = np.maximum(floor * per_step, per_step - overlap * BACKWARD_FRACTION * t_compute)
    per_micro_exposed = micro * np.maximum(floor * per_micro, per_micro - overlap * t_compute)
    dp_off = dp <= 1.0
    per_step_exposed = np.where(dp_off, 0.0, per_step_exposed)
    per_micro_exposed = np.where(dp_off, 0.0, per_micro_exposed)

    optimizer_shard = _f(c["params"]) / (tp * pp) / np.where(strat == DDP, 1.0, _shard_degree(c, dp))
    t_optimizer = OPTIMIZER_BYTES_PER_PARAM * optimizer_shard / _f(c["hbm"])
    return t_pipeline + per_step_exposed + per_micro_exposed + t_optimizer


def unpack_parameters(params: Mapping[str, float], families: tuple[str, ...]) -> dict[str, object]:
    """Calibration parameters -> the ``theta`` step_time uses (family multipliers as an array by family index).

    Families with no fitted multiplier use 1.0 (the base efficiency): they had no runs in the calibration data."""
    theta: dict[str, object] = {name: float(params.get(name, init)) for name, (init, _, _) in PARAMETER_BOUNDS.items()}
    theta["family_eff"] = np.array([float(params.get(FAMILY_PREFIX + f, 1.0)) for f in families], dtype=np.float64)
    theta["family_attention"] = np.array(
        [float(params.get(ATTENTION_PREFIX + f, 1.0)) for f in families], dtype=np.float64
    )
    return theta
