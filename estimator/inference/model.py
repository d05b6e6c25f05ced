"""The serving model of one replica (a tensor/expert-parallel group): memory, decode step, prefill, throughput.

All functions take a ServingCases table and the calibrated parameters ``theta`` and return arrays with one entry per
case (or per case x grid point when ``batch`` is 2-D). Sources: reference/estimator.md sections 1.1, 1.8, 3;
TensorRT-LLM perf-overview tables; nccl-tests PERFORMANCE.md; vidur all-reduce measurements (fabrics.csv).

* Weights: all parameters (every expert of a mixture of experts) x bytes/param, split over the group.
* Memory besides the KV cache, per GPU, from the serving stack (serving_stacks.csv): runtime (CUDA context,
  workspaces, CUDA graphs) and activation buffers for ``max_num_tokens`` tokens; the KV cache takes the stack's
  fraction of what is left (TensorRT-LLM) or of the whole memory (vLLM, SGLang).
* Decode step (memory and compute time added, as Calculon's ``no_overlap`` mode, which fits the tables better than
  a roofline max): weights read + KV read over the group's bandwidth, FLOPs of the active parameters and attention
  over the group's compute, TP all-reduces from the fabric, and a fixed + per-request overhead (calibrated around
  physical priors, PARAMETER_PRIORS). A MoE step reads only the experts its tokens route to: with ``b`` tokens routed
  to ``k`` of ``E`` experts uniformly, a
  fraction ``1 - (1 - k/E)^b`` of the experts is touched (identical requests, as a static-batch benchmark sends,
  route alike: one routing per step). Routed experts run at their own width and rate: 16-bit on an engine without
  FP8 MoE GEMMs (serving_stacks.csv moe_fp8_experts). A token's routed rows beyond the one a dense MLP moves (read
  by the first grouped GEMM, written full-width by the second, read by the weighted sum) cost every GPU its own
  bandwidth: tensor parallelism splits the experts' intermediate width, not these rows (ServedModel.routed_row_bytes).
* Decode attention over an 8-bit KV cache: the larger of reading it and converting it on CUDA cores (16 conversions
  per clock per SM, CUDA C++ Programming Guide); the masked MHA kernel converts every element once per query head,
  which binds on Hopper for grouped-query models an engine has no XQA kernel for (serving_stacks.csv
  gqa_kernel_groups).
* Prefill (compute bound): ``2 P_active s + attention(s^2 / 2)`` FLOPs plus its all-reduces.
* All-reduce of S bytes over n GPUs: ``latency + 2 (n - 1) / n x S / (link x busbw_efficiency)`` (fabrics.csv): the
  engine's custom NVLink kernel's line for messages up to the engine's limit where the fabric has one (TensorRT-LLM
  16 MB on 2 GPUs, 8 MB on more; vLLM 8 MiB: serving_stacks.csv), NCCL's line otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import numpy as np

from estimator.inference.data import (
    ACTIVATION_BYTES,
    ACTIVATION_FFN_WIDTHS,
    ACTIVATION_HIDDEN_WIDTHS,
    ALLREDUCES_PER_LAYER,
    EMBEDDING_MIN_BYTES,
    BoolArray,
    FloatArray,
    InferenceError,
    ServingCases,
)

# Calibrated parameters: name -> (initial value = the prior's centre, lower bound, upper bound). log10_* are fitted in
# log space. The bounds are sanity limits only: each parameter also has a physical prior (PARAMETER_PRIORS) that the fit
# pays for leaving, so what the table cannot identify stays at its published value instead of drifting to a bound.
# The KV a request holds for its output is not fitted: it is the serving stack's scheduler policy
# (serving_stacks.csv kv_output_reserved; calibration documents of format 1 carried a fitted value, now ignored).
PARAMETER_BOUNDS: Final[dict[str, tuple[float, float, float]]] = {
    "mem_eff": (0.75, 0.05, 1.0),  # achieved / datasheet memory bandwidth in decode
    "flop_eff_16": (0.72, 0.05, 1.0),  # achieved / dense peak, 16-bit GEMMs
    "flop_eff_8": (0.5, 0.05, 1.0),  # achieved / dense peak, fp8 and fp4 GEMMs
    "log10_step_overhead_s": (-4.0, -6.5, -1.0),  # scheduling and launch cost of one decode step
    "log10_request_overhead_s": (-5.5, -7.0, -3.0),  # per in-flight request per step (sampling, bookkeeping)
}
# Physical priors: name -> (centre, width, source). The fit adds one residual (value - centre) / width x
# fit.FIT_LOG_SIGMA per parameter, so moving a parameter one width costs as much as one table row off by FIT_LOG_SIGMA.
PARAMETER_PRIORS: Final[dict[str, tuple[float, float, str]]] = {
    # Decode kernels' share of datasheet HBM bandwidth. gpt-fast (pytorch-labs/gpt-fast README, A100-80GB power-limited
    # to 330 W, batch 1, CUDA graphs via torch.compile): Llama-2-7B 1397 GB/s of 2039 = 0.69 end to end (its per-step
    # overheads included), and "empirically ... peak bandwidth is about 1700 GB/s" = 0.83 on that power limit: the
    # weight and KV reads run between the two. 0.75 +- 0.1.
    "mem_eff": (0.75, 0.1, "gpt-fast README: A100 batch-1 decode 1397 GB/s end to end (0.69), ~1700 GB/s peak (0.83)"),
    # 16-bit GEMM efficiency: microsoft/vidur measured GEMMs (data/profiling/compute/{a100,h100}/<model>/mlp.csv, 4096
    # tokens, tp 1; the same profiles the training prior uses, estimator/fitting.py FAMILY_PRIORS): Llama-2-70B and
    # Qwen-72B projections 0.71-0.77 of A100's 312 TFLOP/s (mean 0.74) and 0.65-0.75 of H100's 989 (mean 0.71).
    # Decode GEMMs run at fewer rows and attention runs below GEMM rates: 0.72 +- 0.1.
    "flop_eff_16": (0.72, 0.1, "microsoft/vidur GEMM profiles at 4096 tokens: 0.74 of A100 peak, 0.71 of H100 peak"),
    # FP8 GEMMs reach a smaller share of their doubled peak: the fp8/bf16 matmul gain is 0.7 +- 0.05 of the peak ratio
    # (paired runs at equal configuration 1.3-1.5x; estimator/fitting.py PRIOR_WIDTHS fp8_gain): 0.7 x 0.72 = 0.5,
    # width 0.1 (the two widths combined).
    "flop_eff_8": (0.5, 0.1, "fp8/bf16 matmul gain 0.7 of the peak ratio (training prior fp8_gain) x flop_eff_16 0.72"),
    # Fixed GPU time of a decode step outside the weight, KV and GEMM work: CUDA-graph launch, logits processing and
    # sampling kernels, the gap between steps that an overlap scheduler leaves (TensorRT-LLM's executor overlaps the
    # next step's preparation with the GPU: docs "Overlap Scheduler"; the C++ batch manager ran two batches for the same
    # reason, NVIDIA/TensorRT-LLM issue #566 enable_trt_overlap; SGLang v0.4's zero-overhead scheduler shows no idle gap
    # in Nsight, lmsys blog 2024-12-04). What stays is tens to hundreds of microseconds: a bare step turnaround of 34 us
    # and 34-47 us to enqueue a captured graph at 32 streams (kekzl/imp PR #1791 step timing), CUDA-graph replay launch
    # 2.2-3.2% of an H100 decode step (sgl-project/sglang-omni issue #1039); vLLM V1 blog (2025-01-24): a Llama-8B H100
    # step's GPU time is "as low as ~5ms", where CPU overhead that is not overlapped becomes visible. 1e-4 s, log10
    # width 0.5 (30-300 us) [unc: other engines' measurements; no TensorRT-LLM C++ runtime per-step figure found].
    "log10_step_overhead_s": (
        -4.0,
        0.5,
        "30-300 us: graph launch + sampling + inter-step gap of overlapped engines (imp PR #1791, sglang-omni #1039)",
    ),
    # Per in-flight request per step: sampling/stop checks and request bookkeeping that grow with the batch: 63-82 us
    # to build a 32-stream step (2-2.6 us per request, kekzl/imp PR #1791 step timing) [unc: another engine; part of it
    # is host work an overlap scheduler hides]. 3e-6 s, log10 width 0.5.
    "log10_request_overhead_s": (
        -5.5,
        0.5,
        "2-2.6 us per request per step (imp PR #1791: 63-82 us at 32 streams) [unc]",
    ),
}
PARAMETER_NAMES: Final[tuple[str, ...]] = tuple(PARAMETER_BOUNDS)


def theta_of(params: Mapping[str, float]) -> dict[str, float]:
    """The calibrated parameters as floats; InferenceError naming ``calibration`` when one is missing."""
    missing = [k for k in PARAMETER_NAMES if k not in params]
    if missing:
        raise InferenceError("calibration", f"missing parameters: {', '.join(missing)}")
    return {k: float(params[k]) for k in PARAMETER_NAMES}


def col(x: FloatArray | BoolArray, like: FloatArray) -> np.ndarray:
    """``x`` (one value per case) shaped to broadcast against ``like`` ((n,) or (n, g))."""
    return x.reshape(x.shape + (1,) * (like.ndim - 1)) if like.ndim > 1 else x


def weight_bytes_total(c: ServingCases) -> FloatArray:
    """Weights of the whole model, every expert included [bytes]; the embedding and LM head stay 16-bit in fp8/fp4
    checkpoints; routed experts at their own width (16-bit where the engine has no FP8 expert GEMMs)."""
    emb = c.embedding_params * np.maximum(c.weight_bytes, EMBEDDING_MIN_BYTES)
    experts = c.expert_params * c.expert_weight_bytes
    return (c.params - c.embedding_params - c.expert_params) * c.weight_bytes + experts + emb


def kv_bytes_per_token(c: ServingCases) -> FloatArray:
    """KV cache of one token summed over the group [bytes]."""
    return c.kv_elements * c.kv_bytes


def step_token_budget(c: ServingCases) -> FloatArray:
    """Tokens one engine step of the whole group runs: ``max_num_tokens`` per scheduler, and under attention data
    parallelism each of the tp attention ranks schedules its own (a hostile probe: one budget for the group stalled
    decoding near 4,096 requests whatever the tp, so tp 16 served less than tp 8)."""
    return c.max_num_tokens * np.where(c.attention_dp, c.tp, 1.0)


def activation_bytes_per_gpu(c: ServingCases) -> FloatArray:
    """Activation buffers of one engine step of ``max_num_tokens`` tokens, per GPU [bytes]."""
    width = ACTIVATION_HIDDEN_WIDTHS * c.hidden + ACTIVATION_FFN_WIDTHS * c.ffn_hidden / c.tp
    return c.max_num_tokens * width * ACTIVATION_BYTES


def expert_weight_bytes(c: ServingCases) -> FloatArray:
    """Weights of the routed experts [bytes] (0 for a dense model)."""
    return c.expert_params * c.expert_weight_bytes


def weight_bytes_per_gpu(c: ServingCases) -> FloatArray:
    """Weights one GPU of the group holds [bytes]: a 1/tp share under tensor parallelism; under attention data
    parallelism the non-expert weights whole (every GPU runs attention for its own requests) and 1/tp of the routed
    experts (expert parallelism)."""
    total, experts = weight_bytes_total(c), expert_weight_bytes(c)
    return np.where(c.attention_dp, total - experts + experts / c.tp, total / c.tp)


def kv_memory_bytes(c: ServingCases) -> FloatArray:
    """KV-cache memory of the whole group [bytes]; <= 0 when the weights do not fit."""
    held = weight_bytes_per_gpu(c) + activation_bytes_per_gpu(c) + c.runtime_bytes
    per_gpu = np.where(c.kv_of_total, c.kv_fraction * c.mem_bytes - held, c.kv_fraction * (c.mem_bytes - held))
    return c.tp * per_gpu


def kv_share(c: ServingCases) -> FloatArray:
    """The share of the group's GPU memory its KV cache gets (kv_memory_bytes over tp x memory); <= 0 when the
    weights do not fit."""
    return kv_memory_bytes(c) / (c.tp * c.mem_bytes)


def kv_capacity_requests(c: ServingCases, theta: Mapping[str, float]) -> FloatArray:
    """In-flight requests whose reserved KV (input + the stack's kv_output_reserved fraction of the output tokens)
    fits; <= 0 when the weights do not fit. ``theta`` is unused (kept for the callers' uniform signature)."""
    return kv_memory_bytes(c) / (kv_bytes_per_token(c) * (c.isl + c.kv_output_reserved * c.osl))


def max_batch(c: ServingCases, theta: Mapping[str, float]) -> FloatArray:
    """Largest usable batch: the KV capacity capped by the engine's batch limit (continuous, >= 0); under attention
    data parallelism the limit holds per attention rank [unc: TensorRT-LLM's max_batch_size per rank]."""
    cap = c.engine_max_batch * np.where(c.attention_dp, c.tp, 1.0)
    return np.clip(kv_capacity_requests(c, theta), 0.0, cap)


def allreduce_s(c: ServingCases, tokens: FloatArray, *, latency: bool = True) -> FloatArray:
    """All TP all-reduces of one forward pass over ``tokens`` tokens [s] (zero for one GPU). Where the fabric has the
    engine's custom NVLink kernel, every message up to the engine's limit (serving_stacks.csv custom_ar_max_mb) takes
    it, NCCL above: the engine chooses by message size, not by speed, so mid-sized decode messages (a few MB) pay the
    custom kernel's lower bandwidth although NCCL would be faster there. ``latency=False``: only the bandwidth part,
    on the line the message size picks (what tokens added to a step whose latency is paid anyway cost)."""
    tp = col(c.tp, tokens)
    message = tokens * col(c.hidden, tokens) * ACTIVATION_BYTES
    moved = 2.0 * (tp - 1.0) / tp * message
    paid = 1.0 if latency else 0.0
    nccl = paid * col(c.ar_latency, tokens) + moved / col(c.link_bw * c.busbw_eff, tokens)
    custom_bw = col(c.link_bw * np.where(c.custom_busbw_eff > 0.0, c.custom_busbw_eff, 1.0), tokens)
    custom = paid * col(c.custom_ar_latency, tokens) + moved / custom_bw
    takes_custom = (col(c.custom_busbw_eff, tokens) > 0.0) & (message <= col(c.custom_ar_max_bytes, tokens))
    one = np.where(takes_custom, custom, nccl)
    tensor_parallel = (tp > 1.0) & ~col(c.attention_dp, tokens)
    return np.where(tensor_parallel, ALLREDUCES_PER_LAYER * col(c.layers, tokens) * one, 0.0)


def expert_exchange_s(c: ServingCases, tokens: FloatArray, *, latency: bool = True) -> FloatArray:
    """Expert-parallel all-to-all of one forward pass over ``tokens`` tokens under attention data parallelism [s]
    (zero otherwise): each GPU sends its 1/tp of the tokens' rows to their experts' GPUs and back over the group's
    collective path, and every dispatch and combine pays the path's collective latency [unc: NCCL's latency for
    the engines' own all-to-all kernels]. ``latency=False``: only the rows' part, as allreduce_s."""
    tp = col(c.tp, tokens)
    rows = tokens / tp * col(c.ep_bytes_per_token, tokens) / col(c.link_bw * c.busbw_eff, tokens)
    paid = col(c.ep_collectives * c.ar_latency, tokens) if latency else 0.0
    return np.where(col(c.attention_dp, tokens), rows + paid, 0.0)


def flop_rate(c: ServingCases, theta: Mapping[str, float], *, experts: bool = False) -> FloatArray:
    """Achieved FLOP/s of the whole group: of its dense GEMMs and attention, or (``experts``) of its routed experts'
    GEMMs."""
    t = theta_of(theta)
    low, peak = (c.expert_low_precision, c.expert_peak_flops) if experts else (c.low_precision, c.peak_flops)
    return c.tp * peak * np.where(low, t["flop_eff_8"], t["flop_eff_16"])


def gemm_s(c: ServingCases, theta: Mapping[str, float], tokens: FloatArray) -> FloatArray:
    """Time of the parameter GEMMs for ``tokens`` tokens [s]: the dense part of the active parameters and the
    routed experts' part, each at its own precision's rate, plus the routed rows' extra activation traffic."""
    expert_active = c.expert_params * c.route_fraction
    dense = 2.0 * col(c.active_params - expert_active, tokens) * tokens / col(flop_rate(c, theta), tokens)
    routed = 2.0 * col(expert_active, tokens) * tokens / col(flop_rate(c, theta, experts=True), tokens)
    # The routed rows' extra activation traffic, at every GPU's own bandwidth (not split by tensor parallelism).
    rows = tokens * col(c.routed_row_bytes / (c.mem_bw * theta_of(theta)["mem_eff"]), tokens)
    return dense + routed + rows


def weights_read_bytes(c: ServingCases, tokens: FloatArray) -> FloatArray:
    """Weight bytes one step over ``tokens`` tokens reads: everything but the routed experts, plus the experts
    those tokens route to (uniform routing)."""
    touched = 1.0 - (1.0 - col(c.route_fraction, tokens)) ** np.maximum(tokens, 1.0)
    experts = expert_weight_bytes(c)
    # Attention data parallelism: every GPU reads the non-expert weights for its own requests.
    readers = np.where(c.attention_dp, c.tp, 1.0)
    return col((weight_bytes_total(c) - experts) * readers, tokens) + col(experts, tokens) * touched


def decode_attention_s(c: ServingCases, context: FloatArray, bandwidth: FloatArray) -> FloatArray:
    """Decode attention over ``context`` cached tokens [s]: reading their KV cache at ``bandwidth``, or, for an
    8-bit KV cache, converting its elements on CUDA cores when that takes longer (the kernel overlaps the two)."""
    read_s = context * col(kv_bytes_per_token(c), context) / bandwidth
    rate = col(c.tp * np.where(c.convert_rate > 0.0, c.convert_rate, np.inf), context)
    return np.maximum(read_s, context * col(c.kv_converted, context) / rate)


def engine_step_s(
    c: ServingCases,
    theta: Mapping[str, float],
    *,
    decode: FloatArray,
    context: FloatArray,
    prefill: FloatArray | float = 0.0,
    prefill_attention: FloatArray | float = 0.0,
    routed: FloatArray | float | None = None,
) -> FloatArray:
    """One engine step [s] that generates one token for each of ``decode`` requests holding ``context`` context
    tokens in total (the KV cache they read), and runs ``prefill`` prompt tokens whose causal attention spans
    ``prefill_attention`` (token, earlier token) pairs. Memory, compute, all-reduces and overheads add up (Calculon's
    ``no_overlap``); the weights are read once for all the step's tokens. ``routed``: tokens whose mixture-of-experts
    routing is independent (None: all of them; identical requests route identically). Shapes (n,) or (n, g)."""
    t = theta_of(theta)
    d = np.asarray(decode, dtype=np.float64)
    tokens = d + prefill
    bandwidth = col(c.tp * c.mem_bw * t["mem_eff"], d)
    weights = weights_read_bytes(c, tokens if routed is None else np.minimum(tokens, routed))
    mem_s = weights / bandwidth + decode_attention_s(c, context, bandwidth)
    attention = col(c.decode_attn_flops_per_ctx, d) * context + col(c.attn_flops_per_ctx, d) * prefill_attention
    compute_s = gemm_s(c, t, tokens) + attention / col(flop_rate(c, t), d)
    # Per-request work runs on each attention rank for its own requests under attention data parallelism.
    per_rank = d / col(np.where(c.attention_dp, c.tp, 1.0), d)
    overhead = 10.0 ** t["log10_step_overhead_s"] + per_rank * 10.0 ** t["log10_request_overhead_s"]
    return mem_s + compute_s + allreduce_s(c, tokens) + expert_exchange_s(c, tokens) + overhead


def decode_step_s(
    c: ServingCases, theta: Mapping[str, float], batch: FloatArray, *, routed: FloatArray | float | None = None
) -> FloatArray:
    """One decode step of ``batch`` requests at the mean context (input + half the output) [s]; ``batch`` has shape
    (n,) or (n, g) for a grid per case; ``routed`` as engine_step_s."""
    b = np.asarray(batch, dtype=np.float64)
    return engine_step_s(c, theta, decode=b, context=b * col(c.isl + c.osl / 2.0, b), routed=routed)


def prefill_compute_s(c: ServingCases, theta: Mapping[str, float]) -> FloatArray:
    """Compute time of one request's prefill [s]: parameter GEMMs plus causal attention over its input."""
    return gemm_s(c, theta, c.isl) + c.attn_flops_per_ctx * c.isl**2 / 2.0 / flop_rate(c, theta)


def prefill_step_tokens(c: ServingCases) -> FloatArray:
    """Tokens of the engine step a prompt runs in inside a busy batch: the step's token budget, which the scheduler
    fills with decode tokens and the prompts waiting (estimator.inference.simulate); a prompt longer than the budget
    runs in chunks of it, or whole where the stack does not chunk prefill."""
    budget = step_token_budget(c)
    return np.where(c.chunked_prefill, budget, np.maximum(budget, c.isl))


def prefill_s(c: ServingCases, theta: Mapping[str, float]) -> FloatArray:
    """Prefill work of one request inside a busy batch [s]: its compute and its share of the bandwidth part of the
    all-reduces or expert exchanges of the step it runs in (weights are read anyway for the decode step it rides on;
    collective latency is paid by that step). The collectives carry the whole step's tokens in one message, so a
    prompt's tokens cost what a token costs at that message size (prefill_step_tokens), not at the prompt's own: a
    short prompt alone would take the custom kernel's small-message line, several times NCCL's per token at the
    step's size, which engine_step_s (and so the simulated benchmark) charges."""
    step = prefill_step_tokens(c)
    collectives = allreduce_s(c, step, latency=False) + expert_exchange_s(c, step, latency=False)
    return prefill_compute_s(c, theta) + c.isl / step * collectives


def rank_prefill_compute_s(c: ServingCases, theta: Mapping[str, float]) -> FloatArray:
    """Compute time of one request's prefill when nothing else runs [s]: under attention data parallelism its
    attention and non-expert GEMMs run on its own GPU alone (tp times the group's share), its routed experts on the
    group; otherwise prefill_compute_s."""
    dense_gemm = 2.0 * (c.active_params - c.expert_params * c.route_fraction) * c.isl / flop_rate(c, theta)
    attention = c.attn_flops_per_ctx * c.isl**2 / 2.0 / flop_rate(c, theta)
    extra = (c.tp - 1.0) * (dense_gemm + attention)
    return prefill_compute_s(c, theta) + np.where(c.attention_dp, extra, 0.0)


def prefill_chunks(c: ServingCases) -> FloatArray:
    """Engine steps a prompt's prefill is split into (chunks of max_num_tokens)."""
    return np.ceil(c.isl / c.max_num_tokens)


def solo_prefill_s(c: ServingCases, theta: Mapping[str, float]) -> FloatArray:
    """Prefill of one request on an otherwise idle replica [s]: per chunk the larger of its compute and one pass
    over the weights, plus its all-reduces and one step overhead per chunk."""
    t = theta_of(theta)
    chunks = prefill_chunks(c)
    weights_s = weights_read_bytes(c, np.minimum(c.isl, c.max_num_tokens)) / (c.tp * c.mem_bw * t["mem_eff"])
    compute_s = rank_prefill_compute_s(c, t)
    none = np.zeros_like(c.isl)
    ar_latency = (allreduce_s(c, none) + expert_exchange_s(c, none)) * (chunks - 1.0)
    return (
        np.maximum(compute_s, chunks * weights_s)
        + allreduce_s(c, c.isl)
        + expert_exchange_s(c, c.isl)
        + ar_latency
        + chunks * 10.0 ** t["log10_step_overhead_s"]
    )


def throughput_at_batch(c: ServingCases, theta: Mapping[str, float], batch: FloatArray) -> FloatArray:
    """Output tokens/s of one replica with ``batch`` requests in flight (in-flight batching steady state)."""
    b = np.asarray(batch, dtype=np.float64)
    per_token = decode_step_s(c, theta, b) / np.maximum(b, 1e-9) + col(prefill_s(c, theta) / c.osl, b)
    return np.where(b > 0, 1.0 / per_token, 0.0)


def max_throughput(c: ServingCases, theta: Mapping[str, float]) -> FloatArray:
    """Output tokens/s of one replica at the largest batch that fits (what the max-throughput tables measure);
    0 where the weights do not fit. The batch is continuous here (the fit needs a smooth function); sizing uses
    whole batches and calls a cap below one request "does not fit"."""
    return throughput_at_batch(c, theta, max_batch(c, theta))


def static_batch_throughput(
    c: ServingCases, theta: Mapping[str, float], batch: FloatArray, *, identical_requests: bool = False
) -> FloatArray:
    """Output tokens/s of one replica running ``batch`` requests together from prefill to their last token (the
    static-batch benchmark: all prompts prefilled, then output_tokens decode steps at the full batch).
    ``identical_requests``: every request has the same prompt and greedy sampling, so all decode tokens of a step
    route to the same experts (TensorRT-LLM's gptSessionBenchmark fills every prompt with padId and samples top-1)."""
    b = np.asarray(batch, dtype=np.float64)
    prefill = (
        b * prefill_s(c, theta) + allreduce_s(c, np.zeros_like(b)) + 10.0 ** theta_of(theta)["log10_step_overhead_s"]
    )
    total = prefill + c.osl * decode_step_s(c, theta, b, routed=1.0 if identical_requests else None)
    return b * c.osl / total
