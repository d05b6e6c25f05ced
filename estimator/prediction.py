"""Predictions: a training job over many cluster sizes, or many profiled-run rows, with the layout searched.

Both go through :func:`solve`, which takes a *query table* (dict of 1-D arrays, one entry per question "this job on n
GPUs of this cluster") and answers every query at once:

1. expand each query into candidate layouts: fields the query gives are kept, open ones (strategy, tp, pp, cp,
   micro_batch, activation_checkpointing) take every value of the search grid below, pruning combinations that cannot
   run (see ``_prune``) as soon as the fields they depend on are set;
2. evaluate memory and step time of all candidates in one vectorized pass (``estimator.model``);
3. per query, keep candidates that divide the GPUs and the batch and fit in memory, and pick the simplest layout whose
   step time is within ``LAYOUT_TOLERANCE`` of the fastest (simplest = DDP before ZeRO, lower tp/pp/cp, less
   recomputation), so a small model is not sent to ZeRO for a 0.5% gain.

Queries with no feasible layout come back with ``fits_memory`` False, NaN times and the layout that needs the least
memory (so users see how far off it is); ``memory_per_gpu_gb`` is then that layout's need.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np
import numpy.typing as npt

from estimator import model
from estimator.specs import PRECISIONS, all_gpus
from estimator.workload import Cluster, TrainingJob, WorkloadError

if TYPE_CHECKING:
    from estimator.calibrate import Calibration
    from estimator.runs import ProfiledRun

# Search grid for open layout fields. TP stays inside a node's NVLink domain (Megatron advice, Narayanan 2021);
# pipeline depths up to 64 cover the 1T-parameter Megatron run; micro-batches are powers of two.
STRATEGY_OPTIONS: Final[tuple[int, ...]] = (model.DDP, model.ZERO1, model.ZERO2, model.ZERO3, model.HSDP)
TP_OPTIONS: Final[tuple[int, ...]] = (1, 2, 4, 8)
PP_OPTIONS: Final[tuple[int, ...]] = (1, 2, 4, 8, 16, 32, 64)
CP_OPTIONS: Final[tuple[int, ...]] = (1, 2, 4, 8)
MB_OPTIONS: Final[tuple[int, ...]] = (1, 2, 4, 8, 16, 32)
# "selective" keeps the same bytes as "false" under FlashAttention (model.py) and costs more compute, so the search
# only weighs full recomputation against none; a given "selective" is kept.
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
_PEAK = np.array([[g.peak_tflops.get(p, np.nan) * 1e12 for p in PRECISIONS] for g in _GPUS])
_MEMORY = np.array([g.memory_gb * 1e9 for g in _GPUS])
_HBM = np.array([g.memory_bw_gbps * 1e9 for g in _GPUS])
# Datasheets quote bidirectional scale-up bandwidth; a ring collective moves data one way per link.
_NVL = np.array([g.nvlink_gbps * 1e9 / 2 for g in _GPUS])
_FAMILY = np.array([FAMILIES.index(g.family) for g in _GPUS])
_PRECISION_INDEX = {p: i for i, p in enumerate(PRECISIONS)}


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
        }


@dataclass(frozen=True)
class Prediction:
    """One entry per cluster size (times in seconds, memory in GB, fractions in 0..1).

    fits_memory is False where no layout fits (or divides the size); there step_time_s, tokens_per_s, mfu and
    scaling_efficiency are NaN. scaling_efficiency = per-GPU tokens/s relative to the smallest size that fits.
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
    interval_log_sigma: float
    p10_multiplier: float
    p90_multiplier: float

    def smallest_fitting_size(self) -> int | None:
        """Fewest GPUs among the predicted sizes that hold the job, or None when none does."""
        return smallest_fitting_size(self)


def smallest_fitting_size(prediction: Prediction) -> int | None:
    fitting = prediction.gpus[prediction.fits_memory]
    return int(fitting.min()) if fitting.size else None


def _code(value: object, codes: dict[str, int]) -> int:
    return OPEN if value is None else codes[str(value)]


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

    def full(value: float) -> np.ndarray:
        return np.full(count, value)

    return {
        "gpu": full(GPU_INDEX[cluster.gpu.id]).astype(np.int64),
        "precision": full(_PRECISION_INDEX[job.precision]).astype(np.int64),
        "n": n.astype(np.int64),
        "gpn": full(cluster.gpus_per_node),
        "node_bw": full(cluster.inter_node_gbps * 1e9 / 8),  # Gb/s -> bytes/s
        "params": full(job.params),
        "layers": full(job.layers),  # type: ignore[arg-type]
        "hidden": full(job.hidden),  # type: ignore[arg-type]
        "heads": full(job.heads),  # type: ignore[arg-type]
        "vocab": full(job.vocab),  # type: ignore[arg-type]
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
    from estimator.specs import get_gpu
    from estimator.workload import derive_architecture

    rows: dict[str, list[float]] = {k: [] for k in _QUERY_KEYS}
    for run in runs:
        spec = get_gpu(run.gpu)
        arch = derive_architecture(run.params_b)
        rows["gpu"].append(GPU_INDEX[spec.id])
        rows["precision"].append(_PRECISION_INDEX[run.precision])
        rows["n"].append(run.num_gpus)
        rows["gpn"].append(run.gpus_per_node or spec.gpus_per_node)
        rows["node_bw"].append((run.inter_node_gbps or spec.inter_node_gbps) * 1e9 / 8)
        rows["params"].append(run.params_b * 1e9)
        for key, attr in (("layers", "layers"), ("hidden", "hidden"), ("heads", "heads"), ("vocab", "vocab")):
            value = getattr(run, attr)
            rows[key].append(arch[attr] if value is None else value)
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
    "layers",
    "hidden",
    "heads",
    "vocab",
    "seq",
    "global_batch",
    "strategy",
    "tp",
    "pp",
    "cp",
    "mb",
    "ac",
)
_INT_KEYS: Final[tuple[str, ...]] = ("gpu", "precision", "n", "strategy", "tp", "pp", "cp", "mb", "ac")
_SEARCH: Final[dict[str, tuple[int, ...]]] = {
    "strategy": STRATEGY_OPTIONS,
    "tp": TP_OPTIONS,
    "cp": CP_OPTIONS,
    "pp": PP_OPTIONS,
    "mb": MB_OPTIONS,
    "ac": AC_OPTIONS,
}


def _expand(parent: np.ndarray, given: np.ndarray, options: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Repeat each candidate once per option where its query left the field open; returns (parent, values)."""
    opts = np.asarray(options, dtype=np.int64)
    is_open = given == OPEN
    counts = np.where(is_open, opts.size, 1)
    new_parent = np.repeat(parent, counts)
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    position = np.arange(new_parent.size) - starts
    values = np.where(np.repeat(is_open, counts), opts[position % opts.size], np.repeat(given, counts))
    return new_parent, values


def candidates(q: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(query index per candidate, layout columns per candidate), pruned of combinations that cannot run."""
    query = np.arange(q["n"].size)
    layout: dict[str, np.ndarray] = {}
    for key, options in (("strategy", STRATEGY_OPTIONS), ("tp", TP_OPTIONS), ("cp", CP_OPTIONS), ("pp", PP_OPTIONS)):
        index = np.arange(query.size)
        index, values = _expand(index, q[key][query], options)
        query = query[index]
        layout = {k: v[index] for k, v in layout.items()}
        layout[key] = values
    keep = _prune_model_parallel(q, query, layout)
    query = query[keep]
    layout = {k: v[keep] for k, v in layout.items()}
    for key, options in (("mb", MB_OPTIONS), ("ac", AC_OPTIONS)):
        index = np.arange(query.size)
        index, values = _expand(index, q[key][query], options)
        query = query[index]
        layout = {k: v[index] for k, v in layout.items()}
        layout[key] = values
    dp = q["n"][query] // (layout["tp"] * layout["pp"] * layout["cp"])
    keep = (dp >= 1) & (q["global_batch"][query] % np.maximum(dp * layout["mb"], 1) == 0)
    return query[keep], {k: v[keep] for k, v in layout.items()}


def _prune_model_parallel(q: dict[str, np.ndarray], query: np.ndarray, layout: dict[str, np.ndarray]) -> np.ndarray:
    """Drop searched combinations that cannot run or that no framework offers; given values are never dropped."""
    tp, pp, cp = layout["tp"], layout["pp"], layout["cp"]
    n, gpn = q["n"][query], q["gpn"][query]
    keep = (n % (tp * pp * cp) == 0) & (q["heads"][query].astype(np.int64) % tp == 0)
    keep &= (q["seq"][query].astype(np.int64) % cp == 0) & (pp <= q["layers"][query])
    searched = {k: q[k][query] == OPEN for k in ("strategy", "tp", "pp", "cp")}
    keep &= ~searched["tp"] | (tp <= gpn)
    keep &= ~searched["cp"] | (cp == 1) | (q["seq"][query] >= CP_MIN_SEQ)
    # DeepSpeed and Megatron do not combine ZeRO-2/3 (or FSDP) with pipeline parallelism.
    keep &= ~(searched["strategy"] | searched["pp"]) | (pp == 1) | (layout["strategy"] <= model.ZERO1)
    return keep


def case_table(q: dict[str, np.ndarray], query: np.ndarray, layout: dict[str, np.ndarray]) -> model.Cases:
    """Everything model.py needs per candidate: query fields, the GPU's specs and the layout."""
    gpu = q["gpu"][query]
    precision = q["precision"][query]
    fp8 = precision == _PRECISION_INDEX["fp8"]
    cases: model.Cases = {k: q[k][query] for k in ("n", "gpn", "node_bw", "params", "layers", "hidden", "heads")}
    cases.update({k: q[k][query] for k in ("vocab", "seq", "global_batch")})
    cases.update(
        {
            "peak": _PEAK[gpu, precision],
            # Attention runs at the 16-bit peak in fp8 recipes; fp32/tf32 jobs keep their own.
            "peak_attn": _PEAK[gpu, np.where(fp8, _PRECISION_INDEX["bf16"], precision)],
            "memory": _MEMORY[gpu],
            "hbm": _HBM[gpu],
            "nvl": _NVL[gpu],
            "family": _FAMILY[gpu],
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
    return rank * 3 + layout["ac"]


def search_bound(q: dict[str, np.ndarray]) -> np.ndarray:
    """Candidate layouts per query before pruning: the product of the grid sizes of its open fields."""
    bound = np.ones(q["n"].size)
    for key, options in _SEARCH.items():
        bound *= np.where(q[key] == OPEN, len(options), 1)
    return bound


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
    cases = case_table(q, query, layout)
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
        out = np.full(count, fill, dtype=dtype)
        out[answered] = values[chosen]
        return out

    fits_q = per_query(fits, False, bool)
    step = per_query(time, np.nan, np.float64)
    step = np.where(np.isfinite(step) & (fits_q | (not require_fit)), step, np.nan)
    tokens = q["global_batch"] * q["seq"] / step
    peak = _PEAK[q["gpu"], q["precision"]]
    per_token = 6.0 * q["params"] + 6.0 * q["layers"] * q["seq"] * q["hidden"]
    mfu = per_token * tokens / (q["n"] * peak)
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
    s = solve(q, calibration.theta())
    per_gpu = s.tokens_per_s / q["n"]
    feasible = np.flatnonzero(s.fits_memory)
    if feasible.size:
        reference = per_gpu[feasible[np.argmin(q["n"][feasible])]]
        scaling = per_gpu / reference
    else:
        scaling = np.full(q["n"].size, np.nan)
    labels = s.layout_labels()
    interval = calibration.interval()
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
        interval_log_sigma=interval["log_sigma"],
        p10_multiplier=interval["p10_multiplier"],
        p90_multiplier=interval["p90_multiplier"],
    )


def predict_runs(runs: Sequence[ProfiledRun], calibration: Calibration) -> Solution:
    """Predict every profiled-run row (open layout cells searched) with ``calibration``."""
    return solve(run_queries(runs), calibration.theta())
