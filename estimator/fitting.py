"""The fit itself: penalised robust least squares of the step-time model on profiled runs, fast enough to refit per
held-out fold.

A :class:`Problem` holds the query table, the measured tokens/s, and one entry per parameter: its prior value and width
(the fit pays one unit of squared, LOSS_SCALE-normalised residual for moving one width away), its bounds, and whether it
is free. Residuals are log(predicted / measured tokens/s), one per run with unit weight; priors are residual rows too
(Gaussian in the parameter, or in its log for multipliers).

Weights: the model is a random-effects model. Each stack's level is its own multiplier (stack_eff, prior width tau =
STACK_PRIOR_LOG_WIDTH) and every run carries the within-stack noise sigma = LOSS_SCALE (the pooled within-stack residual
sd of the public fit is ~0.1, reported as within_stack_log_sigma). The penalised fit of that model gives each stack's
mean the textbook weight n_s / (sigma^2 + n_s tau^2) in the prior mean that an unseen stack predicts with (nearly equal
per stack when tau >> sigma, proportional to n_s for small stacks), and lets every run inform the shared physics within
its stack. Weighting rows 1/n_s on top (every stack the same total weight) double-counts: it gave a single run the
weight of 43 runs (a 1.5% noise), so a one-run stack's effect was never shrunk toward the mean.

Speed: the residuals of all rows come from one vectorised ``model.step_time`` call, and the forward-difference
Jacobian from ONE call on the case table tiled once per free parameter (each tile with its own parameter set).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

import numpy as np
from scipy.optimize import least_squares

from estimator import model
from estimator.prediction import FAMILIES, GPU_FAMILY, UNKNOWN_STACK, Solution, case_table, solve
from estimator.workload import STACKS, stack_properties

# Robust loss scale: log errors beyond ~10% count linearly, so a few odd published rows cannot drag the fit.
LOSS_SCALE: Final[float] = 0.1
# Prior widths (one LOSS_SCALE-normalised unit of squared residual per width moved), with their sources. Parameters
# not listed get half their allowed range: the data decide them.
PRIOR_WIDTHS: Final[dict[str, float]] = {
    # FlashAttention-2 fwd+bwd 50-70% of A100 peak (Dao 2023): centre 0.55, +-0.1.
    "attention_eff": 0.1,
    # fp8/bf16 speed-up 1.3-1.5x at equal configuration (reference/estimator.md): matmul gain 0.7 +- 0.05.
    "fp8_gain": 0.05,
    # fp8_knee: per token and layer the FP8 casts move ~63 h bytes (the inputs of the four GEMMs forward, ~7 h
    # elements, and their output gradients backward, ~14 h, each read in 16 bits and written in 8: 3 B) at HBM
    # bandwidth, while the GEMMs run 72 h^2 FLOPs (6 x ~12 h^2 parameters) at the FP8 peak: cast / GEMM time =
    # 0.875 x peak / bandwidth / h, a knee of 517 on H100 SXM (1,979 TFLOP/s, 3.35 TB/s; gpus.csv), 492 on B200, 361
    # on H200. Transformer Engine writes the LayerNorm outputs (two of the four forward inputs) straight in FP8, which
    # removes part of it: centre 450, +- 250 (fully fused ~200 to unfused Hopper/Blackwell ~700).
    "fp8_knee": 250.0,
    # vidur NCCL busbw at 64 MB: 0.58 (A100) to 0.81 (H100) of one-way NVLink peak: 0.7 +- 0.1.
    "nvlink_eff": 0.1,
    # Calculon's IB tier efficiency 0.9, nccl-tests busbw of healthy fabrics 0.7-0.9 of line rate: 0.8 +- 0.1.
    "fabric_eff": 0.1,
    # Share of tensor-parallel collectives hidden behind GEMMs by stacks that overlap them (stacks.csv): split
    # all-gather/reduce-scatter + GEMM pipelines hide all but one of the tp chunks (Wang et al. 2023, ASPLOS,
    # "Overlap communication with dependent computation via decomposition"; Transformer Engine userbuffers):
    # 1 - 1/tp = 0.75 at tp = 4, +- 0.1.
    "tp_overlap": 0.1,
    # Overlap of data-parallel communication with backward: frameworks bucket and overlap (DDP, ZeRO, FSDP
    # prefetch) but never perfectly: 0.7 +- 0.15.
    "overlap": 0.15,
    # Full recomputation pays about one extra forward (Korthikanti 2022, HFU = 4/3 MFU): 1.0 +- 0.15.
    "recompute_fraction": 0.15,
    "layer_overhead_us": 30.0,
    "elementwise_bytes": 40.0,
    "collective_latency_us": 20.0,
}
PRIOR_RANGE_FRACTION: Final[float] = 0.5
# Family multipliers: (centre, log width). family_eff scales GEMM efficiency only (attention, memory-bound work and
# communication have their own terms), so its prior is the measured GEMM ratio, not an end-to-end speed-up:
# microsoft/vidur data/profiling/compute/{a100,h100}/<model>/mlp.csv (a100 @ 25e529de, h100 @ 683364e9), 4,096 tokens,
# tp 1, the QKV, output, gated-up and down projections: Llama-2-70B 0.77/0.74/0.77/0.76 of A100's 312 TFLOP/s and
# 0.71/0.70/0.69/0.73 of H100's 989; Qwen-72B 0.72/0.71/0.75/0.73 and 0.65/0.71/0.70/0.75. Per-peak H100/A100 ratio
# 0.89-1.02 over the 8 GEMMs, mean 0.94, sd 0.045: 0.94 +- 0.05. (End-to-end, H100 is
# only 2.0-2.4x A100 in BF16, reference/estimator.md: attention and elementwise work do not scale with the GEMM peak,
# and 2023 stacks were immature on Hopper, which their stack_eff carries.) No published Blackwell GEMM ratio is at
# hand: centred on Hopper's with a looser width. Attention (relative to attention_eff, which is A100's
# FlashAttention-2 figure; a stack's faster or slower kernel is its stack_attention multiplier, stacks.csv):
# FlashAttention-2 reaches only ~35% of H100 peak (Shah et al. 2024, arXiv 2407.08608, abstract) against ~55% on A100:
# 0.35 / 0.55 = 0.64.
FAMILY_PRIORS: Final[dict[str, tuple[float, float]]] = {
    "a100": (1.0, 0.03),
    "hopper": (0.94, 0.05),
    "blackwell": (0.94, 0.1),
}
# Blackwell: attention does not scale with the doubled tensor-core peak (exponential units and shared-memory bandwidth
# unchanged from H100): cuDNN 9.13 reaches ~1,240 TFLOP/s on B200 BF16 (FlashAttention-4 paper abstract and
# together.ai/blog/flashattention-4, 2026: FA4 up to 1,613 TFLOP/s = 71% of 2.25 PFLOP/s, 1.3x cuDNN 9.13), i.e.
# 55% of peak, against ~75% for FlashAttention-3-class kernels on H100 (Shah et al. 2024: 740 TFLOP/s of 989). The
# stack kernel multiplier (stacks.csv) is shared by families, so Blackwell's is Hopper's x 0.55/0.75: 0.64 x 0.73 =
# 0.47, log width 0.3 (forward-pass "up to" figures; the backward pass is slower on B200).
ATTENTION_PRIORS: Final[dict[str, tuple[float, float]]] = {
    "a100": (1.0, 0.1),
    "hopper": (0.64, 0.15),
    "blackwell": (0.47, 0.3),
}
FAMILY_PRIOR_LOG_WIDTH: Final[float] = 0.5
# Stack multipliers are a random effect around 1 (the prior mean that unknown stacks predict with); the width is the
# between-stack spread tau: published MFU of the same model on the same GPU differs by ~20% between stacks and releases
# (llm-foundry vs NeMo vs Megatron-2021 tables in public_runs.csv). The fitted stack effects spread by sd ~0.15 in log
# once attention kernels and tensor-parallel overlap are stack properties (the report's between_stack_log_sigma; a
# test keeps the two within a factor of 2).
STACK_PRIOR_LOG_WIDTH: Final[float] = 0.2
MULTIPLIER_BOUNDS: Final[tuple[float, float]] = (0.3, 3.0)
# Attention kernels relative to FlashAttention-2: unfused attention with materialised scores runs at a fraction of it.
STACK_ATTENTION_BOUNDS: Final[tuple[float, float]] = (0.1, 3.0)
# Parameters the public fit holds at their physical prior (build_problem starts them fixed; a user's refinement frees
# the cluster ones, estimator.calibrate.CLUSTER_PARAMETERS):
# - cluster_eff, fabric_eff, nvlink_eff, overlap, collective_latency_us: properties of one cluster's network and
#   stack. The public runs come from many clusters and almost none is communication-bound, so left free the fit drove
#   them to "communication is free" (overlap and fabric efficiency at 1.0, latency at its 1 us floor) and predicted
#   ZeRO-3 at 1,536 GPUs 3-5x too fast (Narayanan 2021 Table 2); held at the published NCCL / Calculon figures.
# - recompute_fraction: full activation recomputation reruns the whole forward pass (Korthikanti et al. 2022: HFU =
#   4/3 MFU), so 1.0 by definition; left free the fit took it to 0.56-0.66, lending llm-foundry's large-model
#   efficiency to every recomputing run (Megatron-LM rows 1.5x over-predicted when held out).
HELD_AT_PRIOR: Final[tuple[str, ...]] = (
    "cluster_eff",
    "fabric_eff",
    "nvlink_eff",
    "overlap",
    "collective_latency_us",
    "recompute_fraction",
)
# Two rounds: search open layout cells with the prior parameters, fit, search again with the fit, refit.
LAYOUT_ROUNDS: Final[int] = 2
# A parameter whose posterior sd is below this fraction of its prior width was moved (identified) by the data.
IDENTIFIED_RATIO: Final[float] = 0.7
# A fitted value within this fraction of its range from a bound is reported "at_bound".
BOUND_MARGIN: Final[float] = 0.01
_STEP: Final[float] = 1e-6
# Relative change of cost / parameters at which the fit stops: 1e-4 of a ~10% log error is far below what the data
# resolve, and an order of magnitude fewer iterations than scipy's 1e-8 default.
FIT_TOLERANCE: Final[float] = 1e-4


@dataclass(frozen=True)
class Problem:
    queries: dict[str, np.ndarray]
    measured: np.ndarray
    names: tuple[str, ...]
    prior: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    width: np.ndarray
    log_prior: np.ndarray  # True where the prior residual is in log space (multipliers)
    free: np.ndarray  # False = held at its prior value

    def params(self, x: np.ndarray) -> dict[str, float]:
        return {name: float(v) for name, v in zip(self.names, x, strict=True)}

    def theta(self, x: np.ndarray) -> dict[str, object]:
        return model.unpack_parameters(self.params(x), FAMILIES)

    def rows(self, rows: np.ndarray) -> Problem:
        return replace(self, queries={k: v[rows] for k, v in self.queries.items()}, measured=self.measured[rows])

    def freeing(self, names: Sequence[str]) -> Problem:
        """The same problem with only ``names`` free."""
        return replace(self, free=np.array([name in names for name in self.names]))


def _prior_of(name: str) -> tuple[float, float, float, float, bool]:
    """(value, width, lower, upper, log) of a parameter's built-in prior."""
    if name in model.PARAMETER_BOUNDS:
        start, lo, hi = model.PARAMETER_BOUNDS[name]
        return start, PRIOR_WIDTHS.get(name, (hi - lo) * PRIOR_RANGE_FRACTION), lo, hi, False
    lo, hi = MULTIPLIER_BOUNDS
    if name.startswith(model.STACK_PREFIX):
        return 1.0, STACK_PRIOR_LOG_WIDTH, lo, hi, True
    if name.startswith(model.STACK_ATTENTION_PREFIX):
        kernel = stack_properties()[name.removeprefix(model.STACK_ATTENTION_PREFIX)]
        return kernel.attention_vs_fa2, kernel.attention_log_width, *STACK_ATTENTION_BOUNDS, True
    if name.startswith(model.ATTENTION_PREFIX):
        start, width = ATTENTION_PRIORS.get(name.removeprefix(model.ATTENTION_PREFIX), (1.0, FAMILY_PRIOR_LOG_WIDTH))
    else:
        start, width = FAMILY_PRIORS.get(name.removeprefix(model.FAMILY_PREFIX), (1.0, FAMILY_PRIOR_LOG_WIDTH))
    return start, width, lo, hi, True


def parameter_names(queries: Mapping[str, np.ndarray]) -> tuple[str, ...]:
    """Every parameter the runs of ``queries`` can inform: the global ones, one multiplier (matmul and attention) per
    GPU family present, one per known stack present."""
    families = sorted({FAMILIES[i] for i in np.unique(GPU_FAMILY[queries["gpu"]])})
    stacks = sorted({STACKS[i] for i in np.unique(queries["stack"]) if i != UNKNOWN_STACK})
    return (
        *model.PARAMETER_BOUNDS,
        *(model.FAMILY_PREFIX + f for f in families),
        *(model.ATTENTION_PREFIX + f for f in families),
        *(model.STACK_PREFIX + s for s in stacks),
        *(model.STACK_ATTENTION_PREFIX + s for s in stacks),
    )


def build_problem(
    queries: dict[str, np.ndarray],
    measured: np.ndarray,
    *,
    names: Sequence[str],
    prior: Mapping[str, float] | None = None,
    widths: Mapping[str, float] | None = None,
) -> Problem:
    """The fit problem over ``names``: priors are the built-in ones, or ``prior`` values (a calibration refined by a
    user's runs) with ``widths`` overriding the built-in widths. HELD_AT_PRIOR parameters start fixed."""
    prior, widths = prior or {}, widths or {}
    rows = []
    for name in names:
        start, width, lo, hi, log = _prior_of(name)
        value = min(max(float(prior.get(name, start)), lo), hi)
        rows.append((value, widths.get(name, width), lo, hi, log, name not in HELD_AT_PRIOR))
    columns = [np.array(column) for column in zip(*rows, strict=True)]
    return Problem(
        queries,
        measured,
        tuple(names),
        prior=columns[0].astype(np.float64),
        lower=columns[2].astype(np.float64),
        upper=columns[3].astype(np.float64),
        width=columns[1].astype(np.float64),
        log_prior=columns[4].astype(bool),
        free=columns[5].astype(bool),
    )


def _prior_residual(problem: Problem, x: np.ndarray) -> np.ndarray:
    shift = np.where(problem.log_prior, np.log(x) - np.log(problem.prior), x - problem.prior)
    return shift / problem.width * LOSS_SCALE


def _prior_jacobian(problem: Problem, x: np.ndarray) -> np.ndarray:
    return np.where(problem.log_prior, 1.0 / x, 1.0) / problem.width * LOSS_SCALE


def fixed_layout_cases(queries: dict[str, np.ndarray], solution: Solution) -> model.Cases:
    layout = {
        "strategy": solution.strategy,
        "tp": solution.tp,
        "pp": solution.pp,
        "cp": solution.cp,
        "mb": solution.micro_batch,
        "ac": solution.activation_checkpointing,
        "vp": solution.virtual_pipeline,
    }
    return case_table(queries, np.arange(queries["n"].size), layout)


class _Residuals:
    """Weighted log residuals of tokens/s over fixed layouts, and their Jacobian from one tiled model evaluation."""

    def __init__(self, problem: Problem, cases: model.Cases) -> None:
        self.problem = problem
        self.cases = cases
        self.count = problem.measured.size
        self.log_target = np.log(problem.measured) - np.log(cases["global_batch"] * cases["seq"])
        self.free = np.flatnonzero(problem.free)
        self.gather = _theta_gather(problem)

    def full(self, z: np.ndarray) -> np.ndarray:
        x = self.problem.prior.copy()
        x[self.free] = z
        return x

    def data(self, x: np.ndarray) -> np.ndarray:
        # log(predicted tokens/s) - log(measured) = -log(step time) - (log measured - log tokens per step)
        log_step = np.log(model.step_time(self.cases, self.problem.theta(x)))
        return -log_step - self.log_target

    def __call__(self, z: np.ndarray) -> np.ndarray:
        x = self.full(z)
        return np.concatenate([self.data(x), _prior_residual(self.problem, x)[self.free]])

    def jacobian(self, z: np.ndarray) -> np.ndarray:
        x = self.full(z)
        k = self.free.size
        steps = _STEP * np.maximum(np.abs(x[self.free]), 1e-3)
        steps = np.where(x[self.free] + steps > self.problem.upper[self.free], -steps, steps)
        sets = np.repeat(x[None, :], k + 1, axis=0)
        sets[np.arange(1, k + 1), self.free] += steps
        log_step = np.log(model.step_time(self.cases, self._batched_theta(sets)))  # (k + 1, rows)
        data = -(log_step[1:] - log_step[0]) / steps[:, None]
        prior = np.diag(_prior_jacobian(self.problem, x)[self.free])
        return np.concatenate([data.T, prior])

    def _batched_theta(self, sets: np.ndarray) -> dict[str, object]:
        """theta holding every parameter set of ``sets`` (K, parameters): scalars (K, 1), group tables (K, groups)."""
        out: dict[str, object] = {}
        for key, (columns, constants) in self.gather.items():
            values = np.where(columns >= 0, sets[:, np.maximum(columns, 0)], constants)
            out[key] = values if key in model.GROUP_TABLES else values[:, :1]
        return out


def _theta_gather(problem: Problem) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """For each theta entry: which column of a parameter vector feeds each of its values (-1 = a constant, given).

    Found by probing unpack_parameters with distinct markers, so it follows whatever mapping it implements."""
    markers = np.arange(1, len(problem.names) + 1, dtype=np.float64) * 1e3 + 0.5
    probed = problem.theta(markers)
    gather = {}
    for key, value in probed.items():
        array = np.atleast_1d(np.asarray(value, dtype=np.float64))
        index = np.rint((array - 0.5) / 1e3).astype(np.int64) - 1
        is_marker = np.isclose(array, markers[np.clip(index, 0, len(markers) - 1)]) & (index >= 0)
        gather[key] = (np.where(is_marker, index, -1), np.where(is_marker, 0.0, array))
    return gather


def least_squares_fit(problem: Problem, cases: model.Cases, x0: np.ndarray) -> tuple[np.ndarray, float]:
    """Penalised soft-L1 fit of the free parameters over fixed layouts, from ``x0``: (parameters, final cost)."""
    residuals = _Residuals(problem, cases)
    if residuals.free.size == 0:
        return problem.prior.copy(), 0.0
    lower, upper = problem.lower[residuals.free], problem.upper[residuals.free]
    start = np.clip(x0[residuals.free], lower + 1e-6 * (upper - lower), upper - 1e-6 * (upper - lower))
    result = least_squares(
        residuals,
        start,
        jac=residuals.jacobian,
        bounds=(lower, upper),
        loss="soft_l1",
        f_scale=LOSS_SCALE,
        x_scale=np.maximum(np.abs(start), 1e-3),
        ftol=FIT_TOLERANCE,
        xtol=FIT_TOLERANCE,
    )
    return residuals.full(result.x), float(result.cost)


def fit_rows(
    problem: Problem, rows: np.ndarray, *, starts: Sequence[Mapping[str, float]] = ()
) -> tuple[np.ndarray, Solution]:
    """Fit on ``rows`` from the prior (never from another fit: held-out folds stay independent); open layout cells
    are searched LAYOUT_ROUNDS times. ``starts``: extra starting points (parameter overrides of the prior) for
    problems with several local minima; the lowest cost wins."""
    sub = problem.rows(rows)
    x = problem.prior.copy()
    layout: tuple[np.ndarray, ...] = ()
    for _ in range(LAYOUT_ROUNDS):
        solution = solve(sub.queries, sub.theta(x), require_fit=False)
        again = _layout_of(solution)
        if layout and all(np.array_equal(a, b) for a, b in zip(again, layout, strict=True)):
            break  # the search chose the same layouts: refitting would give the same parameters
        layout = again
        cases = fixed_layout_cases(sub.queries, solution)
        candidates = [least_squares_fit(sub, cases, x)]
        for override in starts:
            x0 = x.copy()
            for name, value in override.items():
                x0[problem.names.index(name)] = value
            candidates.append(least_squares_fit(sub, cases, x0))
        x = min(candidates, key=lambda pair: pair[1])[0]
    return x, solution


def _layout_of(solution: Solution) -> tuple[np.ndarray, ...]:
    return (
        solution.strategy,
        solution.tp,
        solution.pp,
        solution.cp,
        solution.micro_batch,
        solution.activation_checkpointing,
        solution.virtual_pipeline,
    )


def predict_rows(problem: Problem, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    sub = problem.rows(rows)
    return solve(sub.queries, sub.theta(x), require_fit=False).tokens_per_s


def posterior_ratio(problem: Problem, cases: model.Cases, x: np.ndarray) -> np.ndarray:
    """Per free parameter: posterior sd / prior sd from the Gauss-Newton curvature at ``x`` (1 = the data say nothing
    about it, small = the data pin it down). NaN for fixed parameters."""
    residuals = _Residuals(problem, cases)
    ratio = np.full(len(problem.names), np.nan)
    if residuals.free.size == 0:
        return ratio
    jac = residuals.jacobian(x[residuals.free])
    precision = jac.T @ jac
    prior_precision = _prior_jacobian(problem, x)[residuals.free] ** 2
    covariance = np.linalg.pinv(precision)
    ratio[residuals.free] = np.sqrt(np.clip(np.diag(covariance) * prior_precision, 0.0, None))
    return ratio


def parameter_report(problem: Problem, cases: model.Cases, x: np.ndarray) -> list[dict[str, Any]]:
    """One entry per parameter: prior, width, fitted value, whether the data moved it and whether it sits at a bound."""
    ratio = posterior_ratio(problem, cases, x)
    entries = []
    for i, name in enumerate(problem.names):
        margin = BOUND_MARGIN * (problem.upper[i] - problem.lower[i])
        shift = np.log(x[i] / problem.prior[i]) if problem.log_prior[i] else x[i] - problem.prior[i]
        entries.append(
            {
                "name": name,
                "prior": float(problem.prior[i]),
                "prior_width": float(problem.width[i]),
                "prior_width_in": "log" if problem.log_prior[i] else "value",
                "fitted": float(x[i]),
                "free": bool(problem.free[i]),
                "shift_in_widths": float(shift / problem.width[i]),
                "posterior_to_prior_sd": None if np.isnan(ratio[i]) else float(ratio[i]),
                "moved_by_data": bool(problem.free[i] and ratio[i] < IDENTIFIED_RATIO),
                "at_bound": bool(x[i] <= problem.lower[i] + margin or x[i] >= problem.upper[i] - margin),
            }
        )
    return entries
