"""Calibration: fit the step-time model's free parameters to profiled runs, and report held-out accuracy.

``fit(runs, *, name)`` -> :class:`Calibration` (plain JSON-able data: parameters + report). The fit is a robust
least-squares on log error of tokens/s (``scipy.optimize.least_squares``, soft-L1 loss) with weak priors that keep
parameters the runs cannot identify at their physical defaults (``model.PARAMETER_BOUNDS``) or, when a ``prior``
calibration is given (a user's few runs on top of the shipped default), at that calibration's values.

The report gives in-sample and leave-one-out errors (each run predicted by a fit without it), leave-one-source-out
errors (each ``source`` predicted by a fit on the others) when there are several sources, the per-GPU breakdown, the
naive baseline "constant MFU per GPU and precision" on the same splits, and a P10/P90 interval from the leave-one-out
log errors.

Regenerate the shipped default (``estimator/data/default_calibration.json``) from ``estimator/data/public_runs.csv``:

    .venv/bin/python -m estimator.calibrate --write-default
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from scipy.optimize import least_squares

from estimator import model
from estimator.prediction import _FAMILY, _PEAK, FAMILIES, Solution, run_queries, solve
from estimator.runs import ProfiledRun, RowError, RunValidationError, effective_stack, read_runs_csv
from estimator.specs import DATA_DIR, get_gpu
from estimator.workload import derive_architecture

DEFAULT_FILE: Final[str] = "default_calibration.json"
PUBLIC_RUNS_FILE: Final[str] = "public_runs.csv"
DEFAULT_NAME: Final[str] = "default (public runs)"
FORMAT_VERSION: Final[int] = 1
# Robust loss scale: log errors beyond ~10% count linearly, so a few odd published rows cannot drag the fit.
LOSS_SCALE: Final[float] = 0.1
# Prior widths (the fit pays 1 unit of squared residual for moving this far from the prior value): a fraction of
# each parameter's allowed range, and 0.5 in log space for family multipliers (a factor of ~1.6).
PRIOR_RANGE_FRACTION: Final[float] = 0.5
FAMILY_PRIOR_LOG_WIDTH: Final[float] = 0.5
# How much more a prior calibration's values are trusted than the built-in starting values.
PRIOR_CALIBRATION_WEIGHT: Final[float] = 10.0
MIN_RUNS: Final[int] = 2
FAMILY_BOUNDS: Final[tuple[float, float]] = (0.3, 3.0)
# Published facts used as priors (reference/estimator.md, "What published measurements say"):
# FP8 is 1.3-1.5x faster than BF16 at the same configuration -> fp8_gain ~0.7 of the 2x fp8 peak, +-0.1;
# H100 is 2.0-2.4x faster than A100 per GPU in BF16 while its peak is 989/312 = 3.17x -> Hopper efficiency
# ~2.2/3.17 = 0.69 of A100's. Family priors are (centre, log width); the widths are tight (0.03) so a family's
# efficiency follows the published ratio unless many of its runs say otherwise: without that, one software stack's
# runs (NeMo fp8) set the whole family's efficiency and another stack's (llm-foundry bf16) is mispredicted when
# held out. No published Blackwell ratio is at hand: Blackwell is centred on Hopper's value with a loose width.
# FlashAttention-2 reaches 50-73% of A100 peak (Dao 2023, arXiv 2307.08691) but ~35% of H100 peak (FlashAttention-3,
# Shah et al. 2024, arXiv 2407.08608; both figures as quoted by secondary summaries, checked 2026-12-02): relative to
# the families' matmul ratio (0.69) that is (35 / 62) / 0.69 ~= 0.82 for Hopper's attention kernels.
ATTENTION_PRIORS: dict[str, tuple[float, float]] = {"a100": (1.0, 0.05), "hopper": (0.82, 0.05)}
PRIOR_WIDTHS: dict[str, float] = {"fp8_gain": 0.1}
FAMILY_PRIORS: dict[str, tuple[float, float]] = {"a100": (1.0, 0.03), "hopper": (0.69, 0.03), "blackwell": (0.69, 0.1)}
# Two rounds: search open layout cells with the prior parameters, fit, search again with the fit, refit.
LAYOUT_ROUNDS: Final[int] = 2
# The P10/P90 band: quantiles of the held-out log errors.
INTERVAL_QUANTILES: Final[tuple[float, float]] = (0.1, 0.9)


class CalibrationError(ValueError):
    """A calibration document that is not valid; ``field`` names the bad key."""

    def __init__(self, field_name: str, message: str) -> None:
        self.field = field_name
        super().__init__(f"{field_name}: {message}")


@dataclass(frozen=True)
class Calibration:
    """Fitted parameters (``params``: name -> value, see model.PARAMETER_BOUNDS and family_eff.<family>) and
    the fit ``report``. JSON-safe through to_dict()/from_dict()."""

    name: str
    params: Mapping[str, float]
    report: Mapping[str, Any] = field(default_factory=dict)

    def theta(self) -> dict[str, object]:
        return model.unpack_parameters(self.params, FAMILIES)

    def interval(self) -> dict[str, float]:
        """log_sigma, p10_multiplier and p90_multiplier for tokens/s (1.0 and 0 when the report has none)."""
        band = self.report.get("prediction_interval") or {}
        return {
            "log_sigma": float(band.get("log_sigma", 0.0)),
            "p10_multiplier": float(band.get("p10_multiplier", 1.0)),
            "p90_multiplier": float(band.get("p90_multiplier", 1.0)),
        }

    @property
    def runs(self) -> int:
        return int(self.report.get("runs", 0))

    @property
    def loo_mape(self) -> float | None:
        value = self.report.get("loo_mape")
        return None if value is None else float(value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "name": self.name,
            "params": {k: float(v) for k, v in self.params.items()},
            "report": _json_safe(self.report),
        }

    @classmethod
    def from_dict(cls, document: Mapping[str, Any]) -> Calibration:
        if not isinstance(document, Mapping):
            raise CalibrationError("calibration", "must be an object with name, params and report")
        name = document.get("name")
        if not isinstance(name, str) or not name.strip():
            raise CalibrationError("name", "must be a non-empty string")
        params = document.get("params")
        if not isinstance(params, Mapping):
            raise CalibrationError("params", "must be an object of parameter name -> number")
        clean: dict[str, float] = {}
        for key, value in params.items():
            if key not in model.PARAMETER_BOUNDS and not str(key).startswith(
                (model.FAMILY_PREFIX, model.ATTENTION_PREFIX)
            ):
                prefixes = [model.FAMILY_PREFIX + "<family>", model.ATTENTION_PREFIX + "<family>"]
                allowed = ", ".join([*model.PARAMETER_BOUNDS, *prefixes])
                raise CalibrationError(f"params/{key}", f"unknown parameter; allowed: {allowed}")
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise CalibrationError(f"params/{key}", f"must be a finite number, got {value!r}")
            clean[str(key)] = float(value)
        report = document.get("report", {})
        if not isinstance(report, Mapping):
            raise CalibrationError("report", "must be an object")
        return cls(name=name.strip(), params=clean, report=dict(report))


def _json_safe(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def measured_tokens_per_s(runs: Sequence[ProfiledRun]) -> np.ndarray:
    """Measured tokens/s per run; RunValidationError names rows with neither tokens_per_s nor step_time_s."""
    errors = [
        RowError(run.row, "tokens_per_s", "a calibration run needs tokens_per_s (or step_time_s)")
        for run in runs
        if run.measured_tokens_per_s is None
    ]
    if errors:
        raise RunValidationError(errors)
    return np.array([run.measured_tokens_per_s for run in runs], dtype=np.float64)


# --------------------------------------------------------------------------------------------------- fitting core


@dataclass(frozen=True)
class _Problem:
    queries: dict[str, np.ndarray]
    measured: np.ndarray
    names: tuple[str, ...]
    prior: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    width: np.ndarray
    log_prior: np.ndarray  # True where the prior residual is in log space (family multipliers)
    prior_weight: float


def _problem(queries: dict[str, np.ndarray], measured: np.ndarray, prior: Mapping[str, float]) -> _Problem:
    """The fit problem; a ``prior`` calibration (non-empty) is trusted PRIOR_CALIBRATION_WEIGHT times more than the
    built-in starting values, so a handful of a user's runs adjust the default instead of replacing it."""
    families = sorted({FAMILIES[i] for i in np.unique(_FAMILY[queries["gpu"]])})
    names = (
        *model.PARAMETER_BOUNDS,
        *(model.FAMILY_PREFIX + f for f in families),
        *(model.ATTENTION_PREFIX + f for f in families),
    )
    lower, upper, init, width, log_prior = [], [], [], [], []
    for name in names:
        if name in model.PARAMETER_BOUNDS:
            start, lo, hi = model.PARAMETER_BOUNDS[name]
            width.append(PRIOR_WIDTHS.get(name, (hi - lo) * PRIOR_RANGE_FRACTION))
            log_prior.append(False)
        else:
            if name.startswith(model.ATTENTION_PREFIX):
                family = name.removeprefix(model.ATTENTION_PREFIX)
                start, family_width = ATTENTION_PRIORS.get(family, (1.0, FAMILY_PRIOR_LOG_WIDTH))
            else:
                family = name.removeprefix(model.FAMILY_PREFIX)
                start, family_width = FAMILY_PRIORS.get(family, (1.0, FAMILY_PRIOR_LOG_WIDTH))
            lo, hi = FAMILY_BOUNDS
            width.append(family_width)
            log_prior.append(True)
        lower.append(lo)
        upper.append(hi)
        init.append(min(max(float(prior.get(name, start)), lo), hi))
    return _Problem(
        queries,
        measured,
        names,
        np.array(init),
        np.array(lower),
        np.array(upper),
        np.array(width),
        np.array(log_prior),
        PRIOR_CALIBRATION_WEIGHT * LOSS_SCALE if prior else LOSS_SCALE,
    )


def _params(problem: _Problem, x: np.ndarray) -> dict[str, float]:
    return {name: float(v) for name, v in zip(problem.names, x, strict=True)}


def _fixed_layout_cases(problem: _Problem, solution: Solution) -> model.Cases:
    from estimator.prediction import case_table

    layout = {
        "strategy": solution.strategy,
        "tp": solution.tp,
        "pp": solution.pp,
        "cp": solution.cp,
        "mb": solution.micro_batch,
        "ac": solution.activation_checkpointing,
    }
    return case_table(problem.queries, np.arange(problem.measured.size), layout)


def _least_squares(problem: _Problem, cases: model.Cases, x0: np.ndarray, rows: np.ndarray) -> np.ndarray:
    tokens_per_step = (cases["global_batch"] * cases["seq"])[rows]
    sub = {k: v[rows] for k, v in cases.items()}
    log_measured = np.log(problem.measured[rows])

    def residuals(x: np.ndarray) -> np.ndarray:
        theta = model.unpack_parameters(_params(problem, x), FAMILIES)
        predicted = tokens_per_step / model.step_time(sub, theta)
        data = np.log(predicted) - log_measured
        prior = np.where(
            problem.log_prior,
            (np.log(x) - np.log(problem.prior)) / problem.width,
            (x - problem.prior) / problem.width,
        )
        return np.concatenate([data, prior * problem.prior_weight])

    result = least_squares(
        residuals,
        np.clip(x0, problem.lower, problem.upper),
        bounds=(problem.lower, problem.upper),
        loss="soft_l1",
        f_scale=LOSS_SCALE,
        x_scale=np.maximum(np.abs(x0), 1e-3),
    )
    return result.x


def _fit_params(problem: _Problem, rows: np.ndarray) -> tuple[np.ndarray, Solution]:
    """Fit on ``rows`` of the problem; open layout cells are searched LAYOUT_ROUNDS times."""
    x = problem.prior.copy()
    sub_queries = {k: v[rows] for k, v in problem.queries.items()}
    sub_problem = _Problem(sub_queries, problem.measured[rows], *_tail(problem))
    for _ in range(LAYOUT_ROUNDS):
        theta = model.unpack_parameters(_params(problem, x), FAMILIES)
        solution = solve(sub_queries, theta, require_fit=False)
        cases = _fixed_layout_cases(sub_problem, solution)
        x = _least_squares(sub_problem, cases, x, np.arange(rows.size))
    return x, solution


def _tail(problem: _Problem) -> tuple[Any, ...]:
    return (
        problem.names,
        problem.prior,
        problem.lower,
        problem.upper,
        problem.width,
        problem.log_prior,
        problem.prior_weight,
    )


def _predict(problem: _Problem, x: np.ndarray, rows: np.ndarray) -> np.ndarray:
    theta = model.unpack_parameters(_params(problem, x), FAMILIES)
    sub = {k: v[rows] for k, v in problem.queries.items()}
    return solve(sub, theta, require_fit=False).tokens_per_s


# --------------------------------------------------------------------------------------------------- baseline


def naive_mfu_baseline(queries: dict[str, np.ndarray], measured: np.ndarray, train: np.ndarray) -> np.ndarray:
    """Predicted tokens/s for every query from the median MFU of ``train`` rows with the same GPU and precision
    (falling back to the same GPU, then to all training rows)."""
    per_token = 6.0 * queries["params"] + 6.0 * queries["layers"] * queries["seq"] * queries["hidden"]
    capacity = queries["n"] * _PEAK[queries["gpu"], queries["precision"]]
    mfu = measured * per_token / capacity
    predicted_mfu = np.full(measured.size, np.median(mfu[train]))
    for key in (("gpu",), ("gpu", "precision")):  # coarse to fine: the finer group overrides
        group = np.stack([queries[k] for k in key], axis=1)
        for value in np.unique(group[train], axis=0):
            members = np.all(group == value, axis=1)
            predicted_mfu[members] = np.median(mfu[train & members])
    return predicted_mfu * capacity / per_token


# --------------------------------------------------------------------------------------------------- public API


def _errors(predicted: np.ndarray, measured: np.ndarray) -> dict[str, float]:
    ape = np.abs(predicted / measured - 1.0)
    return {
        "mape": float(np.mean(ape)),
        "median_ape": float(np.median(ape)),
        "p90_ape": float(np.quantile(ape, 0.9)),
    }


def fit(
    runs: Sequence[ProfiledRun],
    *,
    name: str,
    prior: Calibration | None = None,
    held_out: bool = True,
) -> Calibration:
    """Fit a calibration to ``runs`` (each needs tokens_per_s or step_time_s).

    ``prior``: start from and regularise toward this calibration (users' own runs on top of the default);
    ``held_out``: compute leave-one-out and leave-one-source-out figures (one refit per run / source)."""
    if len(runs) < MIN_RUNS:
        message = f"a calibration needs at least {MIN_RUNS} runs, got {len(runs)}"
        raise RunValidationError([RowError(0, "runs", message)])
    measured = measured_tokens_per_s(runs)
    queries = run_queries(runs)
    problem = _problem(queries, measured, prior.params if prior else {})
    every = np.arange(measured.size)
    x, solution = _fit_params(problem, every)
    in_sample = _predict(problem, x, every)
    report: dict[str, Any] = {
        "runs": len(runs),
        "sources": sorted({run.source for run in runs}),
        "in_sample_mape": _errors(in_sample, measured)["mape"],
        "in_sample_median_ape": _errors(in_sample, measured)["median_ape"],
        "memory_model_misses": int(np.count_nonzero(~solution.fits_memory)),
        "loss": f"soft_l1 on log(predicted/measured tokens/s), scale {LOSS_SCALE}",
    }
    if held_out:
        report.update(_held_out_report(problem, runs))
    return Calibration(name=name, params=_params(problem, x), report=report)


def config_family(run: ProfiledRun) -> str:
    """Runs that are twins of one another (same stack, GPU family, precision, architecture and sequence length; only
    the GPU count, batch, layout or release differ): held out together, or a twin would leak the answer."""
    arch = derive_architecture(run.params_b)
    layers = run.layers or arch["layers"]
    hidden = run.hidden or arch["hidden"]
    family = get_gpu(run.gpu).family
    return f"{effective_stack(run) or 'unknown'}/{family}/{run.precision}/L{layers}xH{hidden}/s{run.seq_len}"


def stack_label(run: ProfiledRun) -> str:
    return effective_stack(run) or "unknown"


@dataclass(frozen=True)
class HeldOut:
    """Held-out predictions of tokens/s, one per run: each group of ``labels`` predicted by a fit from scratch (from
    the prior, layouts searched again) on the other groups, and the constant-MFU baseline on the same splits."""

    measured: np.ndarray
    labels: np.ndarray
    predicted: np.ndarray
    baseline: np.ndarray

    def errors(self) -> dict[str, float]:
        return _errors(self.predicted, self.measured)

    def baseline_errors(self) -> dict[str, float]:
        return _errors(self.baseline, self.measured)

    def per_group(self) -> dict[str, dict[str, float]]:
        return {
            str(label): {
                "runs": int(np.count_nonzero(self.labels == label)),
                **_errors(self.predicted[self.labels == label], self.measured[self.labels == label]),
                "baseline_median_ape": _errors(
                    self.baseline[self.labels == label], self.measured[self.labels == label]
                )["median_ape"],
            }
            for label in sorted(set(self.labels))
        }


def held_out_predictions(problem: _Problem, labels: Sequence[str]) -> HeldOut:
    """Refit without each group of ``labels`` (from the prior, layouts searched again) and predict it."""
    label_array = np.asarray(labels, dtype=object)
    every = np.arange(problem.measured.size)
    predicted = np.full(every.size, np.nan)
    baseline = np.full(every.size, np.nan)
    for label in sorted(set(labels)):
        held = label_array == label
        if held.all():  # nothing to train on
            continue
        x, _ = _fit_params(problem, every[~held])
        predicted[held] = _predict(problem, x, every[held])
        baseline[held] = naive_mfu_baseline(problem.queries, problem.measured, ~held)[held]
    return HeldOut(problem.measured, label_array, predicted, baseline)


def _held_out_report(problem: _Problem, runs: Sequence[ProfiledRun]) -> dict[str, Any]:
    families = held_out_predictions(problem, [config_family(run) for run in runs])
    stacks = held_out_predictions(problem, [stack_label(run) for run in runs])
    measured, loo = families.measured, families.predicted
    log_error = np.log(loo / measured)
    low, high = np.quantile(log_error, INTERVAL_QUANTILES)
    loo_errors = families.errors()
    gpus = np.array([run.gpu for run in runs])
    per_gpu = {
        gpu: {"runs": int(np.count_nonzero(gpus == gpu)), **_errors(loo[gpus == gpu], measured[gpus == gpu])}
        for gpu in sorted(set(gpus))
    }
    report: dict[str, Any] = {
        "held_out": "leave-one-config-family-out: twins (same stack, GPU family, precision, architecture, sequence "
        "length) held out together, each fold refitted from the prior with layouts searched again",
        "loo_mape": loo_errors["mape"],
        "loo_median_ape": loo_errors["median_ape"],
        "loo_p90_ape": loo_errors["p90_ape"],
        "config_families": len(set(families.labels)),
        "per_gpu": per_gpu,
        "baseline": {"name": "constant MFU per GPU and precision", "loo": families.baseline_errors()},
        "prediction_interval": {
            "from": "leave-one-config-family-out log errors of tokens/s",
            "log_sigma": float(np.std(log_error)),
            "p10_multiplier": float(np.exp(-high)),
            "p90_multiplier": float(np.exp(-low)),
        },
        "residuals": [
            {
                "row": run.row,
                "gpu": run.gpu,
                "source": run.source,
                "measured_tokens_per_s": float(m),
                "predicted_tokens_per_s": float(p),
            }
            for run, m, p in zip(runs, measured, loo, strict=True)
        ],
    }
    if len(set(stacks.labels)) > 1:
        stack_errors = stacks.errors()
        report.update(
            {
                "stack_out_mape": stack_errors["mape"],
                "stack_out_median_ape": stack_errors["median_ape"],
                "stack_out_p90_ape": stack_errors["p90_ape"],
                "per_stack": stacks.per_group(),
            }
        )
        report["baseline"]["stack_out"] = stacks.baseline_errors()
    return report


def cross_validate(runs: Sequence[ProfiledRun], *, prior: Calibration | None = None) -> dict[str, HeldOut]:
    """Held-out predictions for ``runs`` (what the accuracy bench prints), each fold fitted as :func:`fit` does:
    ``config_family`` (twins held out together) and ``stack`` (leave-one-stack-out)."""
    problem = _problem(run_queries(runs), measured_tokens_per_s(runs), prior.params if prior else {})
    return {
        "config_family": held_out_predictions(problem, [config_family(run) for run in runs]),
        "stack": held_out_predictions(problem, [stack_label(run) for run in runs]),
    }


def public_runs() -> list[ProfiledRun]:
    """The shipped calibration set (estimator/data/public_runs.csv; sources in its `source` column)."""
    return read_runs_csv((DATA_DIR / PUBLIC_RUNS_FILE).read_text(encoding="utf-8"))


def load_default() -> Calibration:
    """The shipped calibration, fitted on the public runs (see the module docstring to regenerate it)."""
    text = (DATA_DIR / DEFAULT_FILE).read_text(encoding="utf-8")
    return Calibration.from_dict(json.loads(text))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fit the default calibration on the shipped public runs.")
    parser.add_argument("--write-default", action="store_true", help=f"write estimator/data/{DEFAULT_FILE}")
    args = parser.parse_args(argv)
    calibration = fit(public_runs(), name=DEFAULT_NAME)
    document = json.dumps(calibration.to_dict(), indent=1, sort_keys=True)
    if args.write_default:
        (DATA_DIR / DEFAULT_FILE).write_text(document + "\n", encoding="utf-8")
    print(json.dumps({k: calibration.report[k] for k in ("runs", "loo_mape", "loo_median_ape", "loo_p90_ape")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
