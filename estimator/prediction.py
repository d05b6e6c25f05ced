"""Predictions: a training job over many cluster sizes, or many profiled-run rows, with the layout searched.

Both go through :func:`solve`, which takes a *query table* (dict of 1-D arrays, one entry per question "this job on n
GPUs of this cluster") and answers every query at once:

1. expand each query into candidate layouts: fields the query gives are kept, open ones (strategy, tp, pp, cp,
   virtual pipeline stages, micro_batch, activation_checkpointing) take every value of the search grid below, pruning
   combinations that cannot run (see ``_prune``) as soon as the fields they depend on are set;
2. evaluate memory and step time of all candidates in one vectorized pass (``estimator.model``);
3. per query, keep candidates that divide the GPUs and the batch and fit in memory, and pick the simplest layout whose
   step time is within ``LAYOUT_TOLERANCE`` of the fastest (simplest = DDP before ZeRO, lower tp/pp/cp, less
   recomputation), so a small model is not sent to ZeRO for a 0.5% gain.

Queries with no feasible layout come back with ``fits_memory`` False, NaN times and the layout that needs the least
memory (so users see how far off it is); ``memory_per_gpu_gb`` is then that layout's need.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, Protocol

import numpy as np
import numpy.typing as npt

from estimator import model
from estimator.bounds import MIN_STEP_TIME_S
from estimator.specs import PRECISIONS, all_gpus, get_gpu
from estimator.workload import (
    POOLED_STACKS,
    STACKS,
    UNKNOWN_STACK_ROW,
    Cluster,
    TrainingJob,
    WorkloadError,
    stack_properties,
)

if TYPE_CHECKING:
    from estimator.runs import ProfiledRun


class Calibration(Protocol):
    """What predicting needs of a fitted calibration (``estimator.calibrate.Calibration`` is one); a protocol so
    that prediction does not import the fitting module that imports it."""

    def theta(self) -> dict[str, object]: ...

    def interval(
        self, *, stack: str | None = None, known_stack: bool = True, family: str | None = None
    ) -> dict[str, float]: ...

    def borrowed_families(self) -> dict[str, str]: ...

    def has_stack(self, stack: str | None) -> bool: ...

    def family_mfu_max(self) -> dict[str, float]: ...

    def precision_mfu_caps(self) -> dict[str, dict[str, float]]: ...

    def scoped(self, *, family: str, stack: str | None) -> tuple[Calibration, str | None]: ...


# Search grid for open layout fields. TP stays inside the NVLink domain (Megatron advice, Narayanan 2021; the
# domain: nvlink_domain): the divisors of an 8-GPU server. Pipeline depths: every depth up to 64 (the 1T-parameter
# Megatron run) that divides the GPUs and is no deeper than the layers. The layers need not split evenly (3 stages of
# 32 layers are 11, 11, 10): the step time counts the longest stage and frameworks place uneven splits (Megatron-LM
# --decoder-first/last-pipeline-num-layers, nanotron and torchtitan's split points); the search skips the uneven
# depths whose memory the model would undercount (_possible_depths). Powers of two alone left 3-, 6- and 12-node
# clusters without a layout for a batch of 256, under-predicted by 25-28% (an outside tester's probe). Micro-batches:
# powers of two.
STRATEGY_OPTIONS: Final[tuple[int, ...]] = (model.DDP, model.ZERO1, model.ZERO2, model.ZERO3, model.HSDP)
TP_OPTIONS: Final[tuple[int, ...]] = (1, 2, 4, 8)
PP_MAX: Final[int] = 64
PP_OPTIONS: Final[tuple[int, ...]] = tuple(range(1, PP_MAX + 1))
CP_OPTIONS: Final[tuple[int, ...]] = (1, 2, 4, 8)
MB_OPTIONS: Final[tuple[int, ...]] = (1, 2, 4, 8, 16, 32)
# Virtual pipeline stages per GPU of the interleaved schedule (Narayanan 2021 §2.2.2), searched where a pipelined run
# does not give them and its stack offers the schedule (stacks.csv interleaved_pipeline); each must divide the stage's
# layers. Published recipes use 2-12 (NeMo/Megatron-Bridge performance summaries: 4, 5, 7, 8, 12).
VP_OPTIONS: Final[tuple[int, ...]] = (1, 2, 3, 4, 5, 6, 7, 8, 12, 16)
VP_DEEPEST_TIMED: Final[int] = 2
# "selective" (recompute the attention core, Korthikanti et al. 2022) keeps the same bytes as "false" under a
# FlashAttention-class kernel and costs more compute; the stacks whose attention keeps the s x s scores (stacks.csv
# attention_scores_stored: Megatron-LM 2021, Megatron-DeepSpeed) predate it and recomputed whole layers. So the search
# weighs full recomputation against none; a given "selective" is kept.
AC_OPTIONS: Final[tuple[int, ...]] = (model.AC_NONE, model.AC_FULL)
# Context parallelism is used for long sequences only (NeMo/Megatron recipes enable it from 8k tokens).
CP_MIN_SEQ: Final[int] = 8192
# Prefer a simpler layout when it is within this fraction of the fastest one.
LAYOUT_TOLERANCE: Final[float] = 0.02
OPEN: Final[int] = -1
# Memory bound of one vectorized pass: ~60 float64 temporaries per candidate -> ~250 MB at 500k candidates.
MAX_CANDIDATES_PER_CHUNK: Final[int] = 500_000

_GPUS = all_gpus()
FAMILIES: Final[tuple[str, ...]] = tuple(dict.fromkeys(g.family for g in _GPUS))
GPU_INDEX: Final[dict[str, int]] = {g.id: i for i, g in enumerate(_GPUS)}
PEAK_FLOPS: Final[np.ndarray] = np.array([[g.peak_tflops.get(p, np.nan) * 1e12 for p in PRECISIONS] for g in _GPUS])
# What a job is held against: the memory the driver reports (gpus.csv memory_bytes), as the serving model holds it; the
# model's own MEMORY_RESERVE_BYTES is counted in each case's need.
_MEMORY = np.array([g.memory_bytes for g in _GPUS])
_NVLINK_DOMAIN = np.array([g.nvlink_domain for g in _GPUS])
_SERVER = np.array([g.gpus_per_node for g in _GPUS])
_HBM = np.array([g.memory_bw_gbps * 1e9 for g in _GPUS])
# Datasheets quote bidirectional scale-up bandwidth; a ring collective moves data one way per link.
_NVL = np.array([g.nvlink_gbps * 1e9 / 2 for g in _GPUS])
GPU_FAMILY: Final[np.ndarray] = np.array([FAMILIES.index(g.family) for g in _GPUS])
_PRECISION_INDEX = {p: i for i, p in enumerate(PRECISIONS)}
STACK_INDEX: Final[dict[str, int]] = {s: i for i, s in enumerate(STACKS)}
UNKNOWN_STACK: Final[int] = len(STACKS)  # index of the prior-mean entry of theta["stack_eff"]
# Per stack code (STACKS, then unknown): whether it offers the interleaved pipeline schedule (stacks.csv).
_INTERLEAVES = np.array([stack_properties()[s].interleaved_pipeline for s in (*STACKS, UNKNOWN_STACK_ROW)])
# Family peak used to find the nearest calibrated family of an uncalibrated one: the 16-bit dense peak.
_FAMILY_PEAK = {
    f: max(g.peak_tflops.get("bf16", g.peak_tflops.get("fp16", 0.0)) for g in _GPUS if g.family == f) for f in FAMILIES
}


def nearest_calibrated_family(family: str, calibrated: Sequence[str]) -> str | None:
    """The calibrated family whose 16-bit peak is closest (in ratio) to ``family``'s, or None when none is.

    An uncalibrated family then predicts with that family's efficiencies applied to its own published peaks, i.e.
    throughput scaled by the peak ratio."""
    if family in calibrated or not calibrated:
        return None
    own = _FAMILY_PEAK[family]
    return min(sorted(calibrated), key=lambda other: abs(np.log(_FAMILY_PEAK[other] / own)))


def borrowed_families(calibrated: Sequence[str]) -> dict[str, str]:
    """Every uncalibrated family -> the calibrated family it borrows efficiencies from."""
    pairs = {f: nearest_calibrated_family(f, calibrated) for f in FAMILIES}
    return {f: other for f, other in pairs.items() if other is not None}


@dataclass(frozen=True)
class Solution:
    """Per-query answers (arrays of equal length); layout fields as codes (see estimator.model)."""

    fits_memory: npt.NDArray[np.bool_]
    memory_per_gpu_gb: npt.NDArray[np.float64]
    step_time_s: npt.NDArray[np.float64]
    tokens_per_s: npt.NDArray[np.float64]
    mfu: npt.NDArray[np.float64]
    strategy: npt.NDArray[np.int64]
    tp: npt.NDArray[np.int64]
    pp: npt.NDArray[np.int64]
    cp: npt.NDArray[np.int64]
    micro_batch: npt.NDArray[np.int64]
    activation_checkpointing: npt.NDArray[np.int64]
    # Virtual pipeline stages per GPU (1 = plain 1F1B; OPEN where a query has no candidate)
    virtual_pipeline: npt.NDArray[np.int64]

    def layout_labels(self) -> dict[str, np.ndarray]:
        """Layout columns as the CSV writes them (strategy and checkpointing as words)."""
        strategies = np.array([*model.STRATEGY_LABELS, ""], dtype=object)
        checkpoints = np.array([*model.CHECKPOINT_LABELS, ""], dtype=object)
        return {
            "strategy": strategies[np.where(self.strategy < 0, -1, self.strategy)],
            "tp": self.tp,
            "pp": self.pp,
            "cp": self.cp,
            "micro_batch": self.micro_batch,
            "activation_checkpointing": checkpoints[
                np.where(self.activation_checkpointing < 0, -1, self.activation_checkpointing)
            ],
            "virtual_pipeline": self.virtual_pipeline,
        }


@dataclass(frozen=True)
class Prediction:
    """One entry per cluster size (times in seconds, memory in GB, fractions in 0..1).

    fits_memory is False where no layout fits (or divides the size); there step_time_s, tokens_per_s, mfu and
    scaling_efficiency are NaN. scaling_efficiency = per-GPU tokens/s relative to the best per-GPU tokens/s of the
    sizes that fit (at most 1; 1 at that size).
    The interval multipliers turn tokens_per_s into a P10..P90 band from the calibration's held-out errors:
    tokens_per_s * p10_multiplier .. tokens_per_s * p90_multiplier (interval_log_sigma = std of log error).
    """

    gpus: npt.NDArray[np.int64]
    nodes: npt.NDArray[np.int64]
    fits_memory: npt.NDArray[np.bool_]
    memory_per_gpu_gb: npt.NDArray[np.float64]
    step_time_s: npt.NDArray[np.float64]
    tokens_per_s: npt.NDArray[np.float64]
    mfu: npt.NDArray[np.float64]
    scaling_efficiency: npt.NDArray[np.float64]
    strategy: npt.NDArray[np.str_]
    tp: npt.NDArray[np.int64]
    pp: npt.NDArray[np.int64]
    cp: npt.NDArray[np.int64]
    micro_batch: npt.NDArray[np.int64]
    activation_checkpointing: npt.NDArray[np.str_]
    # Virtual pipeline stages per GPU of the interleaved schedule (1 = plain 1F1B), searched like the layout
    virtual_pipeline: npt.NDArray[np.int64]
    interval_log_sigma: float
    p10_multiplier: float
    p90_multiplier: float
    # Notes the advisor shows: uncalibrated GPU family (borrowed calibration), unknown stack, MFU capped.
    warnings: tuple[str, ...] = ()
    # GPUs each size actually uses (fewer where no layout fits: see use_fewer_gpus_when_infeasible)
    gpus_used: npt.NDArray[np.int64] | None = None

    def smallest_fitting_size(self) -> int | None:
        """Fewest GPUs among the predicted sizes that hold the job, or None when none does."""
        return smallest_fitting_size(self)


def smallest_fitting_size(prediction: Prediction) -> int | None:
    fitting = prediction.gpus[prediction.fits_memory]
    return int(fitting.min()) if fitting.size else None


def _code(value: object, codes: dict[str, int]) -> int:
    return OPEN if value is None else codes[str(value)]


def _stack_code(stack: str | None) -> int:
    return UNKNOWN_STACK if stack is None else STACK_INDEX[stack]


def _int_or_open(value: int | None) -> int:
    return OPEN if value is None else int(value)


def job_queries(job: TrainingJob, cluster: Cluster, sizes: npt.ArrayLike) -> dict[str, np.ndarray]:
    """The query table for one job on ``sizes`` GPUs of ``cluster``."""
    n = np.asarray(sizes)
    if n.ndim != 1 or n.size == 0:
        raise WorkloadError("sizes", "must be a non-empty 1-D list of GPU counts")
    if not np.issubdtype(n.dtype, np.number) or np.any(n < 1) or np.any(n != np.round(n)):
        raise WorkloadError("sizes", "every size must be a positive whole number of GPUs")
    cluster.gpu.peak_flops(job.precision)  # raises UnsupportedPrecisionError naming the precision
    count = n.size
    # Optional only as inputs: Cluster.__post_init__ fills both from the GPU's typical server.
    assert cluster.gpus_per_node is not None and cluster.inter_node_gbps is not None

    def full(value: float) -> np.ndarray:
        return np.full(count, value)

    return {
        "gpu": full(GPU_INDEX[cluster.gpu.id]).astype(np.int64),
        "precision": full(_PRECISION_INDEX[job.precision]).astype(np.int64),
        "n": n.astype(np.int64),
        "gpn": full(cluster.gpus_per_node),
        "node_bw": full(cluster.inter_node_gbps * 1e9 / 8),  # Gb/s -> bytes/s
        "params": full(job.params),
        "active_params": full(job.active_params),
        "layers": full(job.layers),  # type: ignore[arg-type]
        "hidden": full(job.hidden),  # type: ignore[arg-type]
        "attn": full(job.attention_width),  # type: ignore[arg-type]
        "heads": full(job.heads),  # type: ignore[arg-type]
        # Unknown KV heads bound tp as the heads do (every kv_heads check then repeats the heads one).
        "kv_heads": full(job.heads if job.kv_heads is None else job.kv_heads),  # type: ignore[arg-type]
        "attn_kv_heads": full(job.heads if job.kv_heads is None else job.kv_heads),  # type: ignore[arg-type]
        "vocab": full(job.vocab),  # type: ignore[arg-type]
        "ffn": full(job.ffn_hidden),  # type: ignore[arg-type]
        "stack": full(_stack_code(job.stack)).astype(np.int64),
        "vp": full(_int_or_open(job.virtual_pipeline)).astype(np.int64),
        "seq": full(job.seq_len),
        "global_batch": full(job.global_batch),
        "strategy": full(_code(job.strategy, model.STRATEGY_CODES)).astype(np.int64),
        "tp": full(_int_or_open(job.tp)).astype(np.int64),
        "pp": full(_int_or_open(job.pp)).astype(np.int64),
        "cp": full(_int_or_open(job.cp)).astype(np.int64),
        "mb": full(_int_or_open(job.micro_batch)).astype(np.int64),
        "ac": full(_code(job.activation_checkpointing, model.CHECKPOINT_CODES)).astype(np.int64),
    }


def run_queries(runs: Sequence[ProfiledRun]) -> dict[str, np.ndarray]:
    """The query table for profiled-run rows (architecture and cluster defaults filled as runs.py documents)."""
    from estimator.runs import assumed_values, effective_stack, given_kv_heads, given_virtual_stages, row_kv_heads

    rows: dict[str, list[float]] = {k: [] for k in _QUERY_KEYS}
    for run in runs:
        # Each empty cell's default as the estimate output writes it back (an empty ffn follows the row's hidden).
        filled = {**{k: getattr(run, k) for k in ("gpus_per_node", "inter_node_gbps")}, **assumed_values(run)}
        rows["gpu"].append(GPU_INDEX[run.gpu])
        rows["precision"].append(_PRECISION_INDEX[run.precision])
        rows["n"].append(run.num_gpus)
        rows["gpn"].append(filled["gpus_per_node"])
        rows["node_bw"].append(filled["inter_node_gbps"] * 1e9 / 8)
        rows["params"].append(run.params_b * 1e9)
        rows["active_params"].append(run.params_b * 1e9)  # profiled runs are dense models
        for key, attr in (
            ("layers", "layers"),
            ("hidden", "hidden"),
            ("heads", "heads"),
            ("vocab", "vocab"),
            ("ffn", "ffn_hidden"),
        ):
            value = getattr(run, attr)
            rows[key].append(filled[attr] if value is None else value)
        # A read (not given) KV-head count does not bound tp: heads alone do, so no layout is refused on a reading.
        rows["kv_heads"].append(given_kv_heads(run) or rows["heads"][-1])
        rows["attn_kv_heads"].append(row_kv_heads(run))
        rows["attn"].append(rows["hidden"][-1])  # profiled runs: multi-head (or grouped-query) attention, hidden wide
        rows["stack"].append(_stack_code(effective_stack(run)))
        rows["vp"].append(_int_or_open(given_virtual_stages(run)))
        rows["seq"].append(run.seq_len)
        rows["global_batch"].append(run.global_batch)
        rows["strategy"].append(_code(run.strategy, model.STRATEGY_CODES))
        rows["tp"].append(_int_or_open(run.tp))
        rows["pp"].append(_int_or_open(run.pp))
        rows["cp"].append(_int_or_open(run.cp))
        rows["mb"].append(_int_or_open(run.micro_batch))
        rows["ac"].append(_code(run.activation_checkpointing, model.CHECKPOINT_CODES))
    out = {k: np.asarray(v, dtype=np.float64) for k, v in rows.items()}
    for key in _INT_KEYS:
        out[key] = out[key].astype(np.int64)
    return out


_QUERY_KEYS: Final[tuple[str, ...]] = (
    "gpu",
    "precision",
    "n",
    "gpn",
    "node_bw",
    "params",
    "active_params",
    "layers",
    "hidden",
    "attn",
    "heads",
    "kv_heads",
    "attn_kv_heads",
    "vocab",
    "ffn",
    "stack",
    "vp",
    "seq",
    "global_batch",
    "strategy",
    "tp",
    "pp",
    "cp",
    "mb",
    "ac",
)
_INT_KEYS: Final[tuple[str, ...]] = ("gpu", "precision", "n", "stack", "vp", "strategy", "tp", "pp", "cp", "mb", "ac")
_SEARCH: Final[dict[str, tuple[int, ...]]] = {
    "strategy": STRATEGY_OPTIONS,
    "tp": TP_OPTIONS,
    "cp": CP_OPTIONS,
    "pp": PP_OPTIONS,
    "vp": VP_OPTIONS,
    "mb": MB_OPTIONS,
    "ac": AC_OPTIONS,
}


def _expand(
    parent: np.ndarray, given: np.ndarray, options: tuple[int, ...], allowed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Repeat each candidate once per option where its query left the field open (only the options ``allowed``,
    shape (candidates, options), marks); returns (parent, values)."""
    opts = np.asarray(options, dtype=np.int64)
    is_open = given == OPEN
    if allowed is None:
        counts = np.where(is_open, opts.size, 1)
        new_parent = np.repeat(parent, counts)
        starts = np.repeat(np.cumsum(counts) - counts, counts)
        position = np.arange(new_parent.size) - starts
        values = np.where(np.repeat(is_open, counts), opts[position % opts.size], np.repeat(given, counts))
        return new_parent, values
    rows, columns = np.nonzero(np.where(is_open[:, None], allowed, np.arange(opts.size) == 0))
    return parent[rows], np.where(is_open[rows], opts[columns], given[rows])


def _odd_part(k: np.ndarray) -> np.ndarray:
    k = np.maximum(k, 1)
    return k // (k & -k)


def _possible_depths(n: np.ndarray, layers: np.ndarray, batch: np.ndarray) -> np.ndarray:
    """(rows, PP_OPTIONS) whether the search tries each depth p for ``n`` GPUs (those left after tensor and context
    parallelism), ``layers`` layers and a global ``batch``:

    * p divides the GPUs, and its odd part is the one the GPUs' odd part needs beyond what the batch can take: tp,
      cp and micro-batches are powers of two, so the odd factor of the GPUs that does not divide the batch must go to
      the pipeline (24 GPUs with a batch of 256: 3, so depths 3, 6, 12, 24). Where the batch takes it all, the search
      keeps to powers of two, as it did before: a search over every divisor doubled the candidates (and the time).
    * Where the layers do not split evenly, the first stage, which takes the short share and holds the most
      micro-batches in flight (up to p), still holds the most activations (q layers x p against (q + 1) layers x the
      r = layers mod p micro-batches of the first long stage), as the memory model counts them. 3 stages of 32 layers
      pass (10 x 3 >= 11 x 2); 56 of 105 would not (1 x 56 < 2 x 49)."""
    gpus = n.astype(np.int64)
    odd = _odd_part(gpus)
    needed = odd // np.gcd(odd, _odd_part(np.maximum(batch.astype(np.int64), 1)))
    # Per distinct (GPUs, layers, odd factor): candidate rows repeat a handful of them.
    keys, row = np.unique((gpus << 40) | (layers.astype(np.int64) << 20) | needed, return_inverse=True)
    gpus, layers, needed = (keys >> 40)[:, None], ((keys >> 20) & 0xFFFFF)[:, None], (keys & 0xFFFFF)[:, None]
    depths = np.asarray(PP_OPTIONS, dtype=np.int64)
    short, rest = layers // depths, layers % depths
    counted = (short >= 1) & ((short + 1) * rest <= short * depths)
    return ((gpus % depths == 0) & (_odd_part(depths) == needed) & counted)[row.ravel()]


def candidates(
    q: dict[str, np.ndarray], *, survivors: dict[str, np.ndarray] | None = None
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(query index per candidate, layout columns per candidate), pruned of combinations that cannot run.

    ``survivors``, when given, receives per query whether any candidate is left after each pruning step: "divides"
    (tp x pp x cp divides the GPUs, within the heads, sequence and layers), "batch" (the global batch splits over the
    data-parallel ranks), "virtual" (the virtual stages fit the pipeline)."""
    query = np.arange(q["n"].size)
    layout: dict[str, np.ndarray] = {}
    for key, options in (("strategy", STRATEGY_OPTIONS), ("tp", TP_OPTIONS), ("cp", CP_OPTIONS), ("pp", PP_OPTIONS)):
        index = np.arange(query.size)
        # Pipeline depths only where they split the GPUs tp and cp leave (pruned below anyway): 64 depths, few divide.
        allowed = (
            _possible_depths(
                q["n"][query] // (layout["tp"] * layout["cp"]), q["layers"][query], q["global_batch"][query]
            )
            if key == "pp"
            else None
        )
        index, values = _expand(index, q[key][query], options, allowed)
        query = query[index]
        layout = {k: v[index] for k, v in layout.items()}
        layout[key] = values
    keep = _prune_model_parallel(q, query, layout)
    query = query[keep]
    layout = {k: v[keep] for k, v in layout.items()}
    steps = {"mb": "batch", "vp": "virtual"}
    if survivors is not None:
        survivors["divides"] = np.bincount(query, minlength=q["n"].size) > 0
    for key, options in (("mb", MB_OPTIONS), ("vp", VP_OPTIONS), ("ac", AC_OPTIONS)):
        index = np.arange(query.size)
        index, values = _expand(index, q[key][query], options)
        query = query[index]
        layout = {k: v[index] for k, v in layout.items()}
        layout[key] = values
        if key == "mb":
            dp = q["n"][query] // (layout["tp"] * layout["pp"] * layout["cp"])
            keep = (dp >= 1) & (q["global_batch"][query] % np.maximum(dp * layout["mb"], 1) == 0)
        elif key == "vp":
            keep = _prune_virtual_stages(q, query, layout)
        else:
            continue
        query = query[keep]
        layout = {k: v[keep] for k, v in layout.items()}
        if survivors is not None:
            survivors[steps[key]] = np.bincount(query, minlength=q["n"].size) > 0
    return query, layout


def _prune_virtual_stages(q: dict[str, np.ndarray], query: np.ndarray, layout: dict[str, np.ndarray]) -> np.ndarray:
    """Searched virtual stages: 1 without pipeline parallelism or in a stack without the interleaved schedule,
    otherwise each option that divides the stage's layers (a virtual stage holds whole layers), given at least p
    micro-batches (the interleaved schedule's bubble (p - 1) / (v m) needs them in flight: Narayanan 2021 §2.2.2) and
    a plain 1F1B bubble above LAYOUT_TOLERANCE of the step (below it no interleaving can win by more than the
    tolerance, so the search would keep the simpler plain schedule anyway). Given values are kept."""
    vp, pp, mb = layout["vp"], layout["pp"], layout["mb"]
    stage_layers = -(-q["layers"][query].astype(np.int64) // pp)
    micro = q["global_batch"][query] // np.maximum(q["n"][query] // (layout["tp"] * pp * layout["cp"]) * mb, 1)
    worth_it = (micro >= pp) & ((pp - 1) > LAYOUT_TOLERANCE * (micro + pp - 1))
    interleaves = (pp > 1) & _INTERLEAVES[q["stack"][query]] & worth_it
    options = np.asarray(VP_OPTIONS)
    position = np.minimum(np.searchsorted(options, vp), options.size - 1)  # given values need not be options
    # Per distinct stage length (a few dozen) rather than per candidate: a table indexed by the stage's layers.
    by_length = _timed_virtual_stages(np.arange(int(stage_layers.max(initial=1)) + 1))
    timed = by_length[stage_layers, position] & (options[position] == vp)
    searched = np.where(interleaves, timed, vp == 1)
    return (q["vp"][query] != OPEN) | searched


def _timed_virtual_stages(stage_layers: np.ndarray) -> np.ndarray:
    """Which VP_OPTIONS the search times for stages of ``stage_layers`` layers (shape (..., options)): plain 1F1B and
    the VP_DEEPEST_TIMED deepest options that divide the stage. More virtual stages shrink the bubble and the
    in-flight activations and add point-to-point traffic in proportion, so the best lies among the deepest."""
    options = np.asarray(VP_OPTIONS)
    divides = stage_layers[..., None] % options == 0
    rank_from_deepest = np.cumsum(divides[..., ::-1], axis=-1)[..., ::-1]  # 1 = the deepest dividing option
    return divides & ((rank_from_deepest <= VP_DEEPEST_TIMED) | (options == 1))


def _prune_model_parallel(q: dict[str, np.ndarray], query: np.ndarray, layout: dict[str, np.ndarray]) -> np.ndarray:
    """Drop searched combinations that cannot run or that no framework offers; given values are never dropped."""
    tp, pp, cp = layout["tp"], layout["pp"], layout["cp"]
    n, domain = q["n"][query], nvlink_domain(q)[query]
    keep = (n % (tp * pp * cp) == 0) & (q["heads"][query].astype(np.int64) % tp == 0)
    keep &= _kv_heads(q)[query] % tp == 0
    keep &= (q["seq"][query].astype(np.int64) % cp == 0) & (pp <= q["layers"][query])
    searched = {k: q[k][query] == OPEN for k in ("strategy", "tp", "pp", "cp")}
    keep &= ~searched["tp"] | (tp <= domain)
    keep &= ~searched["cp"] | (cp == 1) | (q["seq"][query] >= CP_MIN_SEQ)
    # DeepSpeed and Megatron do not combine ZeRO-2/3 (or FSDP) with pipeline parallelism.
    keep &= ~(searched["strategy"] | searched["pp"]) | (pp == 1) | (layout["strategy"] <= model.ZERO1)
    # Given virtual stages need a pipeline with at least one layer per virtual stage (workload.virtual_stage_problem).
    given_vp = q["vp"][query]
    stage_layers = -(-q["layers"][query].astype(np.int64) // pp)
    keep &= ~searched["pp"] | (given_vp <= 1) | ((pp > 1) & (given_vp <= stage_layers))
    return keep


def nvlink_domain(q: dict[str, np.ndarray]) -> np.ndarray:
    """Per query, the GPUs of one NVLink domain: the model's "node", over whose NVLink the step time runs tensor-,
    context- and packed pipeline-parallel traffic, and the bound of the tensor parallelism the search tries. Where
    the GPU's domain spans servers (gpus.csv nvlink_domain, GB200 NVL72: 72 GPUs over 4-GPU trays) it is that
    domain, otherwise the server the query gives (gpus_per_node: 4-GPU H100 servers get 4, not the 8 of the
    typical one); as estimator.inference.sizing.scale_up_gpus bounds the serving TP."""
    gpu, server = q["gpu"], q["gpn"]
    return np.where(_NVLINK_DOMAIN[gpu] > _SERVER[gpu], np.maximum(server, _NVLINK_DOMAIN[gpu]), server)


def _kv_heads(q: dict[str, np.ndarray]) -> np.ndarray:
    """KV heads per query (a table without the column: its heads)."""
    return q.get("kv_heads", q["heads"]).astype(np.int64)


def case_table(q: dict[str, np.ndarray], query: np.ndarray, layout: dict[str, np.ndarray]) -> model.Cases:
    """Everything model.py needs per candidate: query fields, the GPU's specs and the layout."""
    gpu = q["gpu"][query]
    precision = q["precision"][query]
    fp8 = precision == _PRECISION_INDEX["fp8"]
    cases: model.Cases = {k: q[k][query] for k in ("n", "params", "active_params", "layers", "hidden", "heads")}
    cases["kv_heads"] = _kv_heads(q)[query]
    # The model's KV heads, for the context-parallel ring and the K/V activations: a profiled run's read from its
    # sizes (row_kv_heads), while its tp stays bounded by the heads alone (kv_heads) unless the row gives them.
    cases["attn_kv_heads"] = q["attn_kv_heads"][query] if "attn_kv_heads" in q else cases["kv_heads"]
    # The model's "node" is the NVLink domain (nvlink_domain): collectives inside it run over NVLink. Where the domain
    # spans servers (GB200 NVL72) its fabric bandwidth is its servers' together (the per-GPU share unchanged).
    server = q["gpn"][query]
    domain = nvlink_domain(q)[query]
    cases["gpn"] = domain
    cases["node_bw"] = q["node_bw"][query] * domain / server
    cases.update({k: q[k][query] for k in ("attn", "vocab", "ffn", "stack", "seq", "global_batch")})
    # A layout without virtual stages (a caller's fixed layout) runs plain 1F1B where the query leaves them open.
    vp = layout["vp"] if "vp" in layout else q["vp"][query]
    cases["vp"] = np.where(vp == OPEN, 1, vp)
    cases.update(
        {
            "peak": PEAK_FLOPS[gpu, precision],
            # Attention runs at the 16-bit peak in fp8 recipes; fp32/tf32 jobs keep their own.
            "peak_attn": PEAK_FLOPS[gpu, np.where(fp8, _PRECISION_INDEX["bf16"], precision)],
            "memory": _MEMORY[gpu],
            "hbm": _HBM[gpu],
            "nvl": _NVL[gpu],
            "family": GPU_FAMILY[gpu],
            "fp8": fp8,
            "fp32": precision <= _PRECISION_INDEX["tf32"],
            "strategy": layout["strategy"],
            "tp": layout["tp"],
            "pp": layout["pp"],
            "cp": layout["cp"],
            "mb": layout["mb"],
            "ac": layout["ac"],
        }
    )
    return cases


def _complexity(layout: dict[str, np.ndarray]) -> np.ndarray:
    """Rank of how much machinery a layout needs (lower = simpler); used to break near-ties."""
    rank = layout["strategy"].astype(np.float64)
    for key in ("tp", "pp", "cp"):
        rank = rank * 8 + np.log2(layout[key])
    return (rank * 3 + layout["ac"]) * 17 + layout["vp"]


def search_bound(q: dict[str, np.ndarray]) -> np.ndarray:
    """Candidate layouts per query: at most the product of the options of its open fields that the query alone
    allows (a tp that divides the heads and the GPUs, a cp that divides the sequence, a pipeline no deeper than the
    layers, virtual stages that divide a stage's layers), and no fewer than the first expansion step makes before
    pruning (strategy x tp x cp x pp)."""
    n = q["n"].astype(np.int64)[:, None]
    tp_ok = (q["heads"].astype(np.int64)[:, None] % TP_OPTIONS == 0) & (n % TP_OPTIONS == 0)
    tp_ok &= _kv_heads(q)[:, None] % TP_OPTIONS == 0
    tp_ok &= np.asarray(TP_OPTIONS)[None, :] <= nvlink_domain(q)[:, None]
    seq = q["seq"].astype(np.int64)[:, None]
    cp_ok = (seq % CP_OPTIONS == 0) & (n % CP_OPTIONS == 0) & ((np.asarray(CP_OPTIONS) == 1) | (seq >= CP_MIN_SEQ))
    allowed = {"tp": tp_ok.sum(axis=1), "cp": cp_ok.sum(axis=1)}
    tight = np.ones(q["n"].size)
    first_step = np.ones(q["n"].size)
    for key, options in _SEARCH.items():
        is_open = q[key] == OPEN
        if key in ("strategy", "tp", "cp"):
            first_step *= np.where(is_open, len(options), 1)
        elif key == "pp":  # expanded over the depths that divide the GPUs only
            first_step *= np.where(
                is_open, np.maximum(_possible_depths(q["n"], q["layers"], q["global_batch"]).sum(axis=1), 1), 1
            )
        if key not in ("pp", "vp"):
            tight *= np.where(is_open, np.maximum(allowed.get(key, len(options)), 1), 1)
    return np.maximum(tight * _pipeline_pairs(q), first_step)


def _pipeline_pairs(q: dict[str, np.ndarray]) -> np.ndarray:
    """Per query: the (pipeline depth, virtual stages) pairs the search can expand (depths no deeper than the layers
    that divide the GPUs; virtual stages that divide a stage's layers where they are searched)."""
    layers = q["layers"].astype(np.int64)
    searched = q["pp"] == OPEN
    pp = np.where(searched[:, None], np.asarray(PP_OPTIONS)[None, :], q["pp"][:, None])  # (queries, depths)
    # A given depth once (its first column), searched ones where they split the GPUs.
    possible = np.where(
        searched[:, None], _possible_depths(q["n"], layers, q["global_batch"]), np.arange(len(PP_OPTIONS)) == 0
    )
    stage_layers = -(-layers[:, None] // np.maximum(pp, 1))
    timed = _timed_virtual_stages(np.arange(int(stage_layers.max(initial=1)) + 1)).sum(axis=-1)  # per stage length
    interleaved = (q["vp"][:, None] == OPEN) & (pp > 1) & _INTERLEAVES[q["stack"]][:, None]
    pairs = np.where(possible, np.where(interleaved, timed[stage_layers], 1), 0).sum(axis=1)
    return np.maximum(pairs, 1)


def run_search_size(runs: Sequence[ProfiledRun]) -> int:
    """Candidate layouts `predict_runs` would evaluate for these rows: its work, known before doing it."""
    return int(search_bound(run_queries(runs)).sum())


def solve(q: dict[str, np.ndarray], theta: dict[str, object], *, require_fit: bool = True) -> Solution:
    """Best feasible layout and its prediction for every query of the table ``q``.

    ``require_fit=False`` (calibration on published runs) still prefers layouts that fit, but when none does it
    predicts the fastest layout that divides the GPUs instead of answering NaN: the run did happen.
    Queries are answered in chunks of at most MAX_CANDIDATES_PER_CHUNK candidates (before pruning) to bound memory."""
    bound = search_bound(q)
    chunk_of = (np.cumsum(bound) - 1) // MAX_CANDIDATES_PER_CHUNK
    if chunk_of.size == 0 or chunk_of[-1] == 0:
        return _solve_chunk(q, theta, require_fit=require_fit)
    starts = np.flatnonzero(np.diff(chunk_of, prepend=-1))
    parts = [
        _solve_chunk({k: v[a:b] for k, v in q.items()}, theta, require_fit=require_fit)
        for a, b in zip(starts, [*starts[1:], q["n"].size], strict=True)
    ]
    return Solution(**{f: np.concatenate([getattr(p, f) for p in parts]) for f in Solution.__dataclass_fields__})


def _solve_chunk(q: dict[str, np.ndarray], theta: dict[str, object], *, require_fit: bool) -> Solution:
    count = q["n"].size
    query, layout = candidates(q)
    cases = model.with_shard_degree(case_table(q, query, layout))
    memory = model.memory_per_gpu(cases)
    valid = model.layout_valid(cases)
    fits = valid & (memory <= cases["memory"])
    timed = fits if require_fit else valid
    time = np.full(query.size, np.inf)
    time[timed] = model.step_time({k: v[timed] for k, v in cases.items()}, theta)

    best = np.full(count, np.inf)  # fastest layout that fits, per query
    np.minimum.at(best, query[fits], time[fits])
    near = fits & (time <= best[query] * (1.0 + LAYOUT_TOLERANCE))
    # Per query: near-best candidates first (simplest, then fastest); otherwise the least memory.
    memory_key = np.where(valid, memory, np.inf)
    order = np.lexsort((memory_key, time, np.where(near, _complexity(layout), 0.0), ~near, query))
    first = np.ones(order.size, dtype=bool)
    first[1:] = query[order][1:] != query[order][:-1]
    chosen = order[first]
    answered = query[chosen]

    def per_query(values: np.ndarray, fill: float, dtype: type) -> np.ndarray:
        out: np.ndarray = np.full(count, fill, dtype=dtype)
        out[answered] = values[chosen]
        return out

    fits_q = per_query(fits, False, bool)
    step = per_query(time, np.nan, np.float64)
    step = np.where(np.isfinite(step) & (fits_q | (not require_fit)), step, np.nan)
    tokens = q["global_batch"] * q["seq"] / step
    peak = PEAK_FLOPS[q["gpu"], q["precision"]]
    mfu = model.model_flops_per_token(q) * tokens / (q["n"] * peak)
    memory_q = np.where(per_query(valid, False, bool), per_query(memory, np.nan, np.float64), np.nan)
    return Solution(
        fits_memory=fits_q,
        memory_per_gpu_gb=memory_q / 1e9,
        step_time_s=step,
        tokens_per_s=tokens,
        mfu=mfu,
        strategy=_layout_per_query(q, "strategy", layout, chosen, answered),
        tp=_layout_per_query(q, "tp", layout, chosen, answered),
        pp=_layout_per_query(q, "pp", layout, chosen, answered),
        cp=_layout_per_query(q, "cp", layout, chosen, answered),
        micro_batch=_layout_per_query(q, "mb", layout, chosen, answered),
        activation_checkpointing=_layout_per_query(q, "ac", layout, chosen, answered),
        virtual_pipeline=_layout_per_query(q, "vp", layout, chosen, answered),
    )


def _layout_per_query(
    q: dict[str, np.ndarray], key: str, layout: dict[str, np.ndarray], chosen: np.ndarray, answered: np.ndarray
) -> np.ndarray:
    out = q[key].astype(np.int64).copy()  # queries with no candidate keep what they gave (or OPEN)
    out[answered] = layout[key][chosen]
    return out


def predict(job: TrainingJob, cluster: Cluster, sizes: npt.ArrayLike, calibration: Calibration) -> Prediction:
    """Predict ``job`` on each GPU count in ``sizes`` (1-D) with ``calibration``; see :class:`Prediction`."""
    q = job_queries(job, cluster, sizes)
    count = q["n"].size
    grid = reference_sizes(int(q["n"].max()), int(cluster.gpus_per_node))  # type: ignore[arg-type]
    admitted = admitted_sizes(q)
    admitted = admitted[~np.isin(admitted, grid)]
    extended = job_queries(job, cluster, np.concatenate([q["n"], grid, admitted]))
    position = np.arange(extended["n"].size)
    # Layouts carry over from the size-independent grid; a size with none of its own may also fall back on an
    # admitted smaller count.
    reference, fallbacks = (position >= count) & (position < count + grid.size), position >= count
    calibration, outside = calibration.scoped(family=cluster.gpu.family, stack=job.stack)
    theta = calibration.theta()
    s = keep_smaller_layouts(extended, solve(extended, theta), theta, reference)
    reasons = no_layout_reasons(q, fits=s.fits_memory[:count], memory_per_gpu_gb=s.memory_per_gpu_gb[:count])
    s, used = use_fewer_gpus_when_infeasible(extended, s, fallbacks)
    tokens, capped = cap_curve(extended, s.tokens_per_s, calibration)
    capped = capped[:count]
    s = replace(s, tokens_per_s=tokens)
    s = Solution(**{f: getattr(s, f)[:count] for f in Solution.__dataclass_fields__})
    gpus_used = used[:count]
    reasons = [
        r or (f"the layouts that split the batch over all {n:,} GPUs run slower" if m < n else "")
        for r, n, m in zip(reasons, q["n"], gpus_used, strict=True)
    ]
    tokens = floored_step(q, s.tokens_per_s)
    s = replace(s, tokens_per_s=tokens, step_time_s=q["global_batch"] * q["seq"] / tokens, mfu=_mfu(q, tokens))
    per_gpu = s.tokens_per_s / q["n"]
    feasible = np.flatnonzero(s.fits_memory)
    # A fraction (DESIGN.md) of the best per-GPU throughput of any size, not of the smallest's capped at 1: a smallest
    # size that only fits with full recomputation is the slowest per GPU, and against it every larger size read 1.0,
    # hiding their own losses (an outsider's probe: Nemotron-4 340B on 128-2,048 H100).
    best = np.max(per_gpu[feasible]) if feasible.size else np.nan
    scaling = per_gpu / best
    forced = forced_recomputation_notes(q, s, theta, gpus_used=gpus_used)
    labels = s.layout_labels()
    interval = calibration.interval(stack=job.stack, known_stack=job.stack is not None, family=cluster.gpu.family)
    return Prediction(
        gpus=q["n"],
        nodes=-(-q["n"] // int(cluster.gpus_per_node)),  # type: ignore[arg-type]
        fits_memory=s.fits_memory,
        memory_per_gpu_gb=s.memory_per_gpu_gb,
        step_time_s=s.step_time_s,
        tokens_per_s=s.tokens_per_s,
        mfu=s.mfu,
        scaling_efficiency=scaling,
        strategy=labels["strategy"].astype(str),
        tp=s.tp,
        pp=s.pp,
        cp=s.cp,
        micro_batch=s.micro_batch,
        activation_checkpointing=labels["activation_checkpointing"].astype(str),
        virtual_pipeline=s.virtual_pipeline,
        interval_log_sigma=interval["log_sigma"],
        p10_multiplier=interval["p10_multiplier"],
        p90_multiplier=interval["p90_multiplier"],
        warnings=(
            *([outside] if outside else []),
            *prediction_warnings(
                job, cluster, calibration, capped=bool(np.any(capped)), gpus_used=gpus_used, q=q, reasons=reasons
            ),
            *forced,
        ),
        gpus_used=gpus_used,
    )


def forced_recomputation_need(q: dict[str, np.ndarray], s: Solution, theta: dict[str, object]) -> np.ndarray:
    """Per query, GB per GPU the leanest layout without full recomputation needs (selective, the leanest other
    choice, included) where the search took full recomputation only because none fits without it; NaN elsewhere.
    Only where activation_checkpointing was left open: the memory model's count decided it, and a run that holds the
    layout without recomputing skips the second forward pass, about a quarter of its compute (an outsider's probe:
    Nemotron-4 340B at TP8 PP8 VP12 on 128 H100, 87 GB counted, ran without it)."""
    need = np.full(q["n"].size, np.nan)
    rows = np.flatnonzero(s.fits_memory & (s.activation_checkpointing == model.AC_FULL) & (q["ac"] == OPEN))
    if rows.size:
        lean = solve({**{k: v[rows] for k, v in q.items()}, "ac": np.full(rows.size, model.AC_SELECTIVE)}, theta)
        need[rows] = np.where(lean.fits_memory, np.nan, lean.memory_per_gpu_gb)
    return need


def _capacity_text(gpu: int) -> str:
    """The memory a job is held against per GPU [GB = 1e9 bytes], beside the datasheet's figure users know: the two
    differ because datasheets count binary units (an H100's 80 GB shows as 85.5 GB)."""
    return _GPUS[gpu].capacity_text()


def _forced_text(need_gb: float, gpu: int) -> str:
    return f"the leanest layout without it needs {need_gb:.0f} GB of {_capacity_text(gpu)}"


FORCED_RECOMPUTATION: Final[str] = (
    "full activation recomputation taken because the memory model holds no layout without it"
)
FORCED_CONSEQUENCE: Final[str] = (
    "a run that holds it without recomputation computes about a quarter less (no second forward pass)"
)


def forced_recomputation_notes(
    q: dict[str, np.ndarray], s: Solution, theta: dict[str, object], *, gpus_used: np.ndarray
) -> tuple[str, ...]:
    """One note naming the sizes (run on their own GPUs) whose layout takes full recomputation only because memory
    forced it (``forced_recomputation_need``), each with what the leanest layout without it needs."""
    need = forced_recomputation_need(q, s, theta)
    rows = np.flatnonzero(np.isfinite(need) & (gpus_used == q["n"]))
    if rows.size == 0:
        return ()
    sizes = [f"{q['n'][i]} GPUs ({_forced_text(need[i], int(q['gpu'][i]))})" for i in rows]
    listed = "; ".join(sizes[:5]) + ("; ..." if len(sizes) > 5 else "")
    return (f"{FORCED_RECOMPUTATION} at {listed}: {FORCED_CONSEQUENCE}",)


def prediction_warnings(
    job: TrainingJob,
    cluster: Cluster,
    calibration: Calibration,
    *,
    capped: bool = False,
    gpus_used: np.ndarray | None = None,
    q: dict[str, np.ndarray] | None = None,
    reasons: Sequence[str] | None = None,
) -> tuple[str, ...]:
    """What the advisor should show next to a prediction: borrowed calibration, unknown stack, MFU cap, sizes whose
    fastest option leaves GPUs idle and sizes no layout runs, each with the constraint that rules its own layouts out
    (``reasons``: per size, as :func:`no_layout_reasons` words it; empty where the size runs its own layout)."""
    notes = []
    if gpus_used is not None and q is not None:
        notes.extend(_size_notes(q["n"], gpus_used, reasons or [""] * q["n"].size))
    family = cluster.gpu.family
    source = calibration.borrowed_families().get(family)
    if source is not None:
        notes.append(f"{cluster.gpu.id}: {borrowed_family_note(gpu=cluster.gpu.id, family=family, source=source)}")
    if job.stack is None or not calibration.has_stack(job.stack):
        which = "unknown" if job.stack is None else f"{job.stack!r} (no calibration runs)"
        notes.append(
            f"software stack {which}: predicted with the stacks' prior mean; "
            "the interval includes the spread between stacks"
        )
    elif job.stack in POOLED_STACKS:
        notes.append(
            f"software stack {job.stack!r} pools several different stacks under one fitted multiplier; "
            "the interval includes the spread between stacks"
        )
    if capped:
        notes.append(mfu_cap_note(cluster, job.precision, calibration))
    return tuple(notes)


def _size_notes(sizes: np.ndarray, gpus_used: np.ndarray, reasons: Sequence[str]) -> list[str]:
    """The notes on sizes that do not run a layout of their own: those whose fastest option runs on fewer GPUs, and
    those with no layout at all for a reason other than memory (a size that does not fit says so already) or fewer
    GPUs than the given model-parallel group (the advice's one-GPU check asks for 1 GPU of any job)."""
    # GPU counts grouped as advisor.formatting groups them (the estimator cannot import it): "65,536", not "65536".
    fewer = [f"{n:,} GPUs -> {m:,} ({why})" for n, m, why in zip(sizes, gpus_used, reasons, strict=True) if m < n]
    none = [
        f"{n:,} GPUs ({why})"
        for n, m, why in zip(sizes, gpus_used, reasons, strict=True)
        if m == n and why and not why.startswith((MEMORY_REASON, TOO_FEW_REASON))
    ]
    notes = []
    if fewer:
        notes.append(
            "some sizes have no faster layout of their own, so their fastest option runs on fewer GPUs and leaves the "
            "rest idle: " + "; ".join(fewer[:5]) + ("; ..." if len(fewer) > 5 else "")
        )
    if none:
        notes.append("no layout runs at some sizes: " + "; ".join(none[:5]) + ("; ..." if len(none) > 5 else ""))
    return notes


MEMORY_REASON: Final[str] = "no layout that divides the GPUs fits"
TOO_FEW_REASON: Final[str] = "fewer GPUs than the given"


def no_layout_reasons(q: dict[str, np.ndarray], *, fits: np.ndarray, memory_per_gpu_gb: np.ndarray) -> list[str]:
    """Per query, why no layout runs it ('' where one fits): the given tp x pp x cp that does not divide the GPUs,
    the global batch that splits over the data-parallel ranks of no layout (or only with a pipeline deeper than the
    layers), the given virtual stages, or memory (``memory_per_gpu_gb``: the leanest layout's need, as ``solve``
    answers an infeasible query)."""
    reasons = [""] * q["n"].size
    rows = np.flatnonzero(~np.asarray(fits, dtype=bool))
    if rows.size == 0:
        return reasons
    sub = {k: v[rows] for k, v in q.items()}
    survivors: dict[str, np.ndarray] = {}
    candidates(sub, survivors=survivors)
    for j, i in enumerate(rows):
        row = {
            k: int(v[j])
            for k, v in sub.items()
            if k in _INT_KEYS or k in ("layers", "heads", "kv_heads", "seq", "global_batch")
        }
        group = max(row["tp"], 1) * max(row["pp"], 1) * max(row["cp"], 1)
        # The search expands only the depths that leave a batch it can split: none left is the batch's doing.
        if not survivors["divides"][j] and (row["pp"] != OPEN or row["n"] % group):
            reasons[i] = _given_layout_reason(row)
        elif not survivors["batch"][j]:
            reasons[i] = _batch_reason(row, domain=int(nvlink_domain(sub)[j]))
        elif not survivors["virtual"][j]:
            reasons[i] = f"no pipeline on {row['n']} GPUs holds the given {row['vp']} virtual stages per GPU"
        else:
            need = f"the leanest needs {memory_per_gpu_gb[i]:.0f} GB"
            reasons[i] = f"{MEMORY_REASON} in {_capacity_text(row['gpu'])}; {need}"
    return reasons


def _given_layout_reason(row: dict[str, int]) -> str:
    """Why the layout fields a query gives leave no layout on its GPUs."""
    tp, pp, cp = (max(row[k], 1) for k in ("tp", "pp", "cp"))
    if row["n"] < tp * pp * cp:
        return f"{TOO_FEW_REASON} tp x pp x cp = {tp * pp * cp}"
    if row["n"] % (tp * pp * cp):
        return f"{row['n']} is not a multiple of the given tp x pp x cp = {tp * pp * cp}"
    if pp > row["layers"]:
        return f"the given pp of {pp} is more than the model's {row['layers']} layers"
    kv = row.get("kv_heads", row["heads"])
    kv_words = f" ({kv} KV heads)" if kv != row["heads"] else ""
    return (
        f"the given tp {tp} and cp {cp} do not divide the model's {row['heads']} heads{kv_words} and {row['seq']} "
        "tokens"
    )


def _batch_reason(row: dict[str, int], *, domain: int) -> str:
    """Why no layout splits a query's global batch over its data-parallel ranks: the pipeline depth it would take
    beyond the layers (or the search's PP_MAX), when one would do."""
    n, batch, layers = row["n"], row["global_batch"], row["layers"]
    micro = max(row["mb"], 1)
    kv = row.get("kv_heads", row["heads"])
    tps = [row["tp"]] if row["tp"] != OPEN else [t for t in TP_OPTIONS if t <= domain and kv % t == 0]
    cp = max(row["cp"], 1)
    depths = [
        n // (tp * cp * dp)
        for tp in tps
        if n % (tp * cp) == 0
        for dp in _divisors(n // (tp * cp))
        if batch % (dp * micro) == 0
    ]
    deeper = [d for d in depths if d > min(layers, PP_MAX)]
    if row["pp"] == OPEN and deeper and len(deeper) == len(depths):
        depth = min(deeper)
        beyond = f"more than the model's {layers} layers" if depth > layers else f"deeper than the {PP_MAX} searched"
        return f"the global batch of {batch} sequences splits over {n} GPUs only with {depth} pipeline stages, {beyond}"
    given = [name for name, key in _GIVEN_NAMES if row[key] != OPEN]
    within = f" with the given {', '.join(given)}" if given else ""
    return (
        f"the global batch of {batch} sequences does not split evenly over the data-parallel ranks of any "
        f"layout{within}"
    )


_GIVEN_NAMES: Final[tuple[tuple[str, str], ...]] = (
    ("strategy", "strategy"),
    ("tp", "tp"),
    ("pp", "pp"),
    ("cp", "cp"),
    ("micro_batch", "mb"),
)


def _divisors(k: int) -> list[int]:
    small = [d for d in range(1, int(k**0.5) + 1) if k % d == 0]
    return sorted({*small, *(k // d for d in small)})


def borrowed_family_note(*, gpu: str, family: str, source: str) -> str:
    """Why a prediction on ``gpu`` is less certain: its family has no calibration runs and borrows ``source``'s."""
    return (
        f"no calibration runs on the {family} family; predicted from the calibrated {source} family's efficiencies "
        f"applied to {gpu}'s published peaks (expect a wider error)"
    )


def _listed_rows(numbers: Sequence[int]) -> str:
    return ", ".join(str(n) for n in numbers[:10]) + (f" and {len(numbers) - 10} more" if len(numbers) > 10 else "")


def borrowed_family_notes(runs: Sequence[ProfiledRun], calibration: Calibration) -> list[str]:
    """One note per GPU of ``runs`` whose family the calibration that predicts it (``scoped``) has no runs of, naming
    its rows, then one per family and stack a user's calibration leaves to its base (what ``manage.py estimate`` and
    the estimate endpoint say beside the predictions: the CSV has no column for it)."""
    from estimator.runs import effective_stack

    rows: dict[str, list[int]] = {}
    sources: dict[str, str] = {}
    outside: dict[str, list[int]] = {}
    for run in runs:
        family = get_gpu(run.gpu).family
        used, note = calibration.scoped(family=family, stack=effective_stack(run))
        if note:
            outside.setdefault(note, []).append(run.row)
        source = used.borrowed_families().get(family)
        if source is not None:
            rows.setdefault(run.gpu, []).append(run.row)
            sources[run.gpu] = source
    notes = [
        f"rows {_listed_rows(numbers)} ({gpu}): "
        f"{borrowed_family_note(gpu=gpu, family=get_gpu(gpu).family, source=sources[gpu])}"
        for gpu, numbers in rows.items()
    ]
    return notes + [f"rows {_listed_rows(numbers)}: {note}" for note, numbers in outside.items()]


def mfu_cap_flops(calibration: Calibration) -> tuple[np.ndarray, dict[tuple[int, int], str]]:
    """Per (GPU, precision) index: the highest FLOP/s per GPU a prediction may reach (inf: no cap), and the words
    that say where it comes from.

    * The precision has runs on the GPU's family (or the family it borrows from), or one at the same peak does
      (bf16 and fp16): the best MFU they measured against that peak.
    * It has none: the best achieved FLOP/s of the family's runs in a precision whose peak on this GPU is at least
      as high (the tightest such), as a job in a precision runs no faster than in one with a higher peak. That bound
      is loose (Blackwell's fp8 best is 0.89 of the bf16 peak), but it is what the runs say; capping a bf16 job at
      the fp8 runs' MFU fraction, as the precision-blind cap did, took an fp8 ratio for a bf16 one.
    * No such precision (an fp8 job where the family has bf16 runs only: they bound it from below): no cap.
    A calibration stored before the report kept precisions caps every precision at its family's best MFU (as it
    did)."""
    caps = calibration.precision_mfu_caps()
    legacy = calibration.family_mfu_max()
    flops = np.full(PEAK_FLOPS.shape, np.inf)
    basis: dict[tuple[int, int], str] = {}
    for g, spec in enumerate(_GPUS):
        if not caps:
            if spec.family in legacy:
                flops[g] = legacy[spec.family] * PEAK_FLOPS[g]
                basis.update({(g, p): f"{legacy[spec.family]:.0%}" for p in range(len(PRECISIONS))})
            continue
        measured = caps.get(spec.family, {})
        for p, precision in enumerate(PRECISIONS):
            flops[g, p], basis[g, p] = _precision_cap(g, precision, measured)
    return flops, basis


def _precision_cap(g: int, precision: str, measured: dict[str, float]) -> tuple[float, str]:
    """(FLOP/s per GPU cap, its basis) of ``precision`` on GPU index ``g`` from the family's best MFU per measured
    precision (``mfu_cap_flops``); a precision at the same peak (bf16 and fp16 run on the same tensor cores at the same
    rate) counts as its own."""
    peak = PEAK_FLOPS[g, PRECISIONS.index(precision)]
    rates = {r: PEAK_FLOPS[g, PRECISIONS.index(r)] for r in measured}
    same = [r for r in measured if rates[r] == peak]
    if same:
        best = max(same, key=lambda r: measured[r])
        return measured[best] * peak, f"{measured[best]:.0%}, the best of its {best} runs"
    bounds = [(measured[r] * rates[r], r) for r in measured if rates[r] > peak]
    if not bounds:
        return np.inf, ""
    value, source = min(bounds)
    return value, (
        f"{value / peak:.0%} of the {precision} peak: no {precision} runs, so the best achieved FLOP/s of its "
        f"{source} runs ({measured[source]:.0%} of the {source} peak), which {precision} does not exceed"
    )


def cap_mfu(
    q: dict[str, np.ndarray], tokens_per_s: np.ndarray, calibration: Calibration
) -> tuple[np.ndarray, np.ndarray]:
    """tokens/s of each row (a job of its own: a profiled run) no higher than the family's highest measured MFU in
    its precision allows (``mfu_cap_flops``); (tokens/s, which were capped)."""
    flops, _ = mfu_cap_flops(calibration)
    limit = flops[q["gpu"], q["precision"]] * q["n"] / model.model_flops_per_token(q)
    capped = np.isfinite(tokens_per_s) & (tokens_per_s > limit)
    return np.where(capped, limit, tokens_per_s), capped


def cap_curve(
    q: dict[str, np.ndarray], tokens_per_s: np.ndarray, calibration: Calibration
) -> tuple[np.ndarray, np.ndarray]:
    """``cap_mfu`` for one job over cluster sizes (``q``: one GPU and precision, sizes in any order): each size's
    tokens/s scaled by one factor, the one that brings the highest MFU at it or any smaller size down to the cap, so
    the per-GPU throughput of every size relative to the smaller ones stands. Clipping each size on its own gave
    every size above the cap the same per-GPU rate, a flat curve (13B on 8 and 64 B200s: scaling 1.0).
    The factor at a size depends only on the sizes up to it, so it is the same whichever larger sizes are asked
    alongside when ``q`` holds a size-independent grid (``reference_sizes``). (tokens/s, which were scaled)."""
    flops, _ = mfu_cap_flops(calibration)
    limit = flops[q["gpu"], q["precision"]] * q["n"] / model.model_flops_per_token(q)
    share = np.where(np.isfinite(tokens_per_s), tokens_per_s / limit, 0.0)  # MFU / cap
    order = np.argsort(q["n"], kind="stable")
    highest = np.maximum.accumulate(share[order])
    upto = np.searchsorted(q["n"][order], q["n"], side="right") - 1  # last position with a size <= this one
    factor = np.minimum(1.0, 1.0 / np.maximum(highest[upto], 1e-300))
    capped = np.isfinite(tokens_per_s) & (factor < 1.0)
    return tokens_per_s * factor, capped


def mfu_cap_note(cluster: Cluster, precision: str, calibration: Calibration) -> str:
    """What a capped prediction says of its cap: the family, the precision and where the cap comes from."""
    _, basis = mfu_cap_flops(calibration)
    where = basis.get((GPU_INDEX[cluster.gpu.id], _PRECISION_INDEX[precision]), "")
    return (
        f"capped at the highest MFU measured on the {cluster.gpu.family} family in {precision} ({where}): every size "
        "scaled down by one factor, so the scaling between sizes stands"
    )


def step_floored_tokens_per_s(*, tokens_per_s: Any, tokens_per_step: Any) -> np.ndarray:
    """Tokens/s with the step no shorter than bounds.MIN_STEP_TIME_S, the floor a measured step is held to (one
    optimizer step launches hundreds of kernels): a 1M-parameter model on 8 x 512 tokens a step was predicted at
    0.26 ms (a hostile probe, F11). The one rule every step time and throughput pass through: the prediction's
    (``floored_step``) and the draws and sensitivity that scale it (advisor.advice.costs; a hostile review, F6)."""
    return np.minimum(np.asarray(tokens_per_s, dtype=float), np.asarray(tokens_per_step, dtype=float) / MIN_STEP_TIME_S)


def floored_step(q: dict[str, np.ndarray], tokens_per_s: np.ndarray) -> np.ndarray:
    """``step_floored_tokens_per_s`` over the query's steps (global_batch sequences of seq tokens)."""
    return step_floored_tokens_per_s(tokens_per_s=tokens_per_s, tokens_per_step=q["global_batch"] * q["seq"])


def _mfu(q: dict[str, np.ndarray], tokens_per_s: np.ndarray) -> np.ndarray:
    return model.model_flops_per_token(q) * tokens_per_s / (q["n"] * PEAK_FLOPS[q["gpu"], q["precision"]])


def reference_sizes(largest: int, gpus_per_node: int) -> np.ndarray:
    """The sizes every prediction compares itself with (depending only on the cluster, so a size's answer does not
    depend on which other sizes were asked): powers of two, every whole number of nodes up to 64 nodes, then 8 steps
    per doubling (k x 2^j nodes, k = 8..15)."""
    powers = 2 ** np.arange(int(np.log2(max(largest, 1))) + 1)
    nodes = np.arange(1, 65)
    coarse = (np.arange(8, 16)[None, :] * 2 ** np.arange(3, 31)[:, None]).ravel()
    sizes = np.concatenate([powers, gpus_per_node * nodes, gpus_per_node * coarse])
    return np.unique(sizes[sizes <= largest]).astype(np.int64)


# A size with no layout of its own may fall back on this many of the largest smaller GPU counts that the job's batch
# and model-parallel options split (``admitted_sizes``), beside the reference grid.
ADMITTED_FALLBACKS: Final[int] = 4


def admitted_sizes(q: dict[str, np.ndarray]) -> np.ndarray:
    """The GPU counts below each size of ``q`` (one job) that its constraints admit, the ADMITTED_FALLBACKS largest
    per size: tp x cp x pp x dp with tp, cp and pp the given values or the search's options (tp dividing the KV
    heads and within the NVLink domain, cp dividing the sequence from CP_MIN_SEQ, pp up to the layers and PP_MAX) and dp
    dividing the global batch in the given micro-batches (1 where searched). Powers of two and whole nodes alone left
    a batch of 1000 in micro-batches of 2 on 24 GPUs to 4 of them, though 20 take 25 micro-batches each.
    Bounded: (divisors of the batch) x (at most 4 x 4 x 64 groups), sorted once. A smaller size's picks are the
    largest of those of any larger size below it, so an answer does not depend on the other sizes asked."""
    first = {k: int(v[0]) for k, v in q.items() if k in (*_INT_KEYS, "global_batch", "layers", "seq")}
    kv = int(_kv_heads(q)[0])
    micro = max(first["mb"], 1)
    if first["global_batch"] % micro:
        return np.zeros(0, dtype=np.int64)

    def given_or(key: str, options: Sequence[int]) -> np.ndarray:
        return np.asarray([first[key]] if first[key] != OPEN else options, dtype=np.int64)

    tps = given_or("tp", [t for t in TP_OPTIONS if kv % t == 0 and t <= int(nvlink_domain(q)[0])])
    cps = given_or("cp", [c for c in CP_OPTIONS if first["seq"] % c == 0 and (c == 1 or first["seq"] >= CP_MIN_SEQ)])
    pps = given_or("pp", range(1, min(first["layers"], PP_MAX) + 1))
    groups = np.unique(np.multiply.outer(np.multiply.outer(tps, cps), pps).ravel())
    dps = np.asarray(_divisors(first["global_batch"] // micro), dtype=np.int64)
    admitted = np.unique(np.multiply.outer(groups, dps).ravel())
    below = np.searchsorted(admitted, q["n"], side="left")[:, None] - np.arange(1, ADMITTED_FALLBACKS + 1)[None, :]
    return np.unique(admitted[below[below >= 0]])


def running_argmax(values: np.ndarray) -> np.ndarray:
    """Per position k, the index of the largest of ``values[: k + 1]``: the first to reach it (a later value must
    exceed it strictly), a NaN never taken after position 0, and a NaN at position 0 never given up (nothing
    compares greater than it); the loop ``r[k] = k if values[k] > values[r[k - 1]] else r[k - 1]``, vectorised."""
    if values.size == 0:
        return np.zeros(0, dtype=np.int64)
    finite = np.where(np.isnan(values), -np.inf, values)  # a later NaN loses every comparison, as -inf does
    best = np.maximum.accumulate(finite)
    exceeds = (finite[1:] > best[:-1]) & ~np.isnan(values[:1])
    return np.maximum.accumulate(np.where(np.r_[True, exceeds], np.arange(values.size), 0))


def use_fewer_gpus_when_infeasible(
    q: dict[str, np.ndarray], s: Solution, reference: np.ndarray
) -> tuple[Solution, np.ndarray]:
    """A size with no feasible layout (the batch or the heads do not divide it; memory never shrinks with more GPUs),
    or whose layouts are slower than a smaller ``reference`` size whose layout it cannot run (224 GPUs split a batch
    of 256 only with 7 pipeline stages, slower than 192 GPUs' 3), runs the fastest smaller reference size's job and
    leaves GPUs idle. A feasible size that is slower than a smaller one whose layout it could run keeps its own
    answer: that is the fabric's knee, which users must see. Returns the solution and the GPUs each query actually
    uses."""
    used = q["n"].copy()
    candidates = np.flatnonzero(reference & s.fits_memory)
    if candidates.size == 0:
        return s, used
    candidates = candidates[np.argsort(q["n"][candidates], kind="stable")]
    tokens = s.tokens_per_s[candidates]
    running = running_argmax(tokens)  # in size order: index into candidates of the fastest so far
    below = np.searchsorted(q["n"][candidates], q["n"], side="left") - 1  # last reference size strictly smaller
    source = np.where(below >= 0, candidates[running[np.maximum(below, 0)]], -1)
    has = source >= 0
    slower = has & s.fits_memory & (s.tokens_per_s < s.tokens_per_s[source] * (1.0 - 1e-9))
    take = has & (~s.fits_memory | (slower & ~_runs_layout_of(q, s, source)))
    fields = {f: getattr(s, f).copy() for f in Solution.__dataclass_fields__}
    for name in fields:
        fields[name][take] = fields[name][source[take]]
    used[take] = q["n"][source[take]]
    return Solution(**fields), used


def _runs_layout_of(q: dict[str, np.ndarray], s: Solution, source: np.ndarray) -> np.ndarray:
    """Per query: whether its GPUs and global batch split by the layout ``s`` chose for query ``source`` (tp x pp x cp
    divides the GPUs and the data-parallel ranks divide the batch in micro-batches the search could pick)."""
    source = np.maximum(source, 0)
    group = s.tp[source] * s.pp[source] * s.cp[source]
    dp = q["n"] // np.maximum(group, 1)
    micro = np.where(q["mb"] == OPEN, 1, q["mb"])
    divides = (group >= 1) & (dp >= 1) & (q["n"] % np.maximum(group, 1) == 0)
    return divides & (q["global_batch"] % np.maximum(dp * micro, 1) == 0)


def keep_smaller_layouts(
    q: dict[str, np.ndarray], s: Solution, theta: dict[str, object], reference: np.ndarray
) -> Solution:
    """Each size also tries the layouts (strategy, tp, pp, cp, checkpointing) chosen at smaller ``reference`` sizes,
    micro-batch searched again, and keeps the faster: adding GPUs never loses throughput by switching layout family."""
    chosen = np.flatnonzero(s.fits_memory & reference)
    if chosen.size == 0:
        return s
    keys = ("strategy", "tp", "pp", "cp", "vp", "ac")
    every = np.stack([s.strategy, s.tp, s.pp, s.cp, s.virtual_pipeline, s.activation_checkpointing], axis=1)[chosen]
    # Each distinct layout once, with the smallest size that chose it.
    by_size = np.argsort(q["n"][chosen], kind="stable")
    layout, first = np.unique(every[by_size], axis=0, return_index=True)
    first_n = q["n"][chosen][by_size][first]
    query, source = np.meshgrid(np.arange(q["n"].size), np.arange(layout.shape[0]), indexing="ij")
    pairs = first_n[source] < q["n"][query]
    query, source = query[pairs], source[pairs]
    if query.size == 0:
        return s
    alt = {k: v[query].copy() for k, v in q.items()}
    for column, key in enumerate(keys):
        alt[key] = layout[source, column]
    alternatives = solve(alt, theta)
    best = np.where(s.fits_memory, s.step_time_s, np.inf)
    better = alternatives.fits_memory & (alternatives.step_time_s < best[query] * (1.0 - 1e-9))
    if not np.any(better):
        return s
    fields = {f: getattr(s, f).copy() for f in Solution.__dataclass_fields__}
    order = np.argsort(alternatives.step_time_s[better], kind="stable")[::-1]  # fastest written last wins
    index, rows = query[better][order], np.flatnonzero(better)[order]
    for name in fields:
        fields[name][index] = getattr(alternatives, name)[rows]
    return Solution(**fields)


def predict_runs(runs: Sequence[ProfiledRun], calibration: Calibration) -> Solution:
    """Predict every profiled-run row (open layout cells searched) with ``calibration``; tokens/s capped at the
    family's highest measured MFU."""
    q = run_queries(runs)
    groups = _rows_by_calibration(q, calibration)
    if len(groups) == 1:
        return _predict_queries(q, groups[0][0])
    parts = [(rows, _predict_queries({k: v[rows] for k, v in q.items()}, used)) for used, rows in groups]
    fields = {}
    for name in Solution.__dataclass_fields__:
        column = np.empty(q["n"].size, dtype=getattr(parts[0][1], name).dtype)
        for rows, part in parts:
            column[rows] = getattr(part, name)
        fields[name] = column
    return Solution(**fields)


def _rows_by_calibration(q: dict[str, np.ndarray], calibration: Calibration) -> list[tuple[Calibration, np.ndarray]]:
    """The query rows each calibration predicts: a user's calibration its own GPU families and stacks, its base the
    rest (``Calibration.scoped``); one group when every row is its own."""
    family = GPU_FAMILY[q["gpu"]]
    groups: dict[int, tuple[Calibration, list[np.ndarray]]] = {}
    for f, code in {(int(f), int(c)) for f, c in zip(family, q["stack"], strict=True)}:
        stack = None if code == UNKNOWN_STACK else STACKS[code]
        used, _ = calibration.scoped(family=FAMILIES[f], stack=stack)
        rows = np.flatnonzero((family == f) & (q["stack"] == code))
        groups.setdefault(id(used), (used, []))[1].append(rows)
    return [(used, np.sort(np.concatenate(rows))) for used, rows in groups.values()]


def _predict_queries(q: dict[str, np.ndarray], calibration: Calibration) -> Solution:
    s = solve(q, calibration.theta())
    tokens, _ = cap_mfu(q, s.tokens_per_s, calibration)
    tokens = floored_step(q, tokens)
    return replace(s, tokens_per_s=tokens, step_time_s=q["global_batch"] * q["seq"] / tokens, mfu=_mfu(q, tokens))


def estimate_runs_csv(runs: Sequence[ProfiledRun], calibration: Calibration) -> str:
    """The profiled-run rows predicted with ``calibration`` and written back as ``manage.py estimate`` writes them
    (``estimator.runs.write_predictions_csv``: predicted columns, assumed defaults, the chosen layout, and for a row
    with no layout a ``prediction_note`` naming the constraint that rules it out)."""
    from estimator.runs import write_predictions_csv

    solution = predict_runs(runs, calibration)
    q = run_queries(runs)
    reasons = no_layout_reasons(q, fits=solution.fits_memory, memory_per_gpu_gb=solution.memory_per_gpu_gb)
    # Whether a layout fits does not depend on the fitted parameters: any calibration's theta answers it.
    need = forced_recomputation_need(q, solution, calibration.theta())
    reasons = [
        r or (f"{FORCED_RECOMPUTATION} ({_forced_text(n, int(g))}): {FORCED_CONSEQUENCE}" if np.isfinite(n) else "")
        for r, n, g in zip(reasons, need, q["gpu"], strict=True)
    ]
    return write_predictions_csv(
        runs,
        tokens_per_s=solution.tokens_per_s,
        step_time_s=solution.step_time_s,
        mfu=solution.mfu,
        fits_memory=solution.fits_memory,
        layout=solution.layout_labels(),
        notes=reasons,
    )
