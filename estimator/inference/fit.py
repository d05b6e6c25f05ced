"""Calibration of the serving model (separate from prediction): penalised bounded least squares on log(predicted /
measured) output tokens/s over the bundled TensorRT-LLM max-throughput rows, with one prior residual per parameter
(model.PARAMETER_PRIORS: what the table cannot identify stays at its physical prior, the bounds are sanity limits);
held-out error by row and by group (model, serving stack) beside a naive baseline (a constant fraction of the memory
bandwidth turned into tokens: ``f x tp x BW / weight bytes``); the stored calibration with its per-parameter report
(prior, fitted value, whether the data moved it, whether it sits at a bound).

Regenerate the shipped calibration with::

    python -m estimator.inference --fit --out estimator/data/inference/calibration.json
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from scipy.optimize import least_squares

from estimator.calibrate import MIN_RUNS_OWN_BAND, log_error_band
from estimator.fitting import BOUND_MARGIN, IDENTIFIED_RATIO
from estimator.inference.data import (
    DATA_DIR,
    FloatArray,
    InferenceError,
    ServedModel,
    ServingCases,
    build_cases,
    gpu_overrides,
    read_data_csv,
    serving_gpu,
)
from estimator.inference.engines import BENCHMARK_STACK_ENGINES
from estimator.inference.model import (
    PARAMETER_BOUNDS,
    PARAMETER_NAMES,
    PARAMETER_PRIORS,
    kv_share,
    max_throughput,
    theta_of,
    weight_bytes_total,
)

TABLE_FILE: Final[str] = "trtllm_inference_throughput.csv"
CALIBRATION_FILE: Final[str] = "calibration.json"
# The max-throughput tables were run by trtllm-bench (its engine heuristics: serving_stacks.csv trtllm_bench); a table
# row's own ``stack`` column wins.
TABLE_STACK: Final[str] = "trtllm_bench"
REGENERATE_COMMAND: Final[str] = "python -m estimator.inference --fit --out estimator/data/inference/calibration.json"
# Decimals of each held-out row's KV share in the document, and the rounding a share read from it may carry (a row of
# the very layout being advised must count as "as tight").
KV_SHARE_DECIMALS: Final[int] = 5
KV_SHARE_ROUNDING: Final[float] = 0.5 * 10.0**-KV_SHARE_DECIMALS
FIT_STARTS: Final[int] = 8  # extra starting points of the full fit (held-out refits start from the full fit)
FIT_SEED: Final[int] = 0
# Log error scale of one table row: the RMS log residual of the calibration fit (the document's residual_log_sd, 0.18
# for the shipped fit; a test keeps the two within a factor 1.5). A prior residual is (value - centre) / width x this,
# so a parameter one width from its prior costs as much as one row off by this much.
FIT_LOG_SIGMA: Final[float] = 0.18
# Calibration document format: 1 = fitted kv_output_reserved, no parameter report (read: the old kv_output_reserved is
# ignored, it is now the serving stack's fact); 2 = prior-penalised fit with its parameter report.
CALIBRATION_FORMAT: Final[int] = 2
_JACOBIAN_STEP: Final[float] = 1e-6


@dataclass(frozen=True, slots=True)
class MeasuredTable:
    """Measured rows as cases plus the measured output tokens/s of the group, each row's source and model id."""

    cases: ServingCases
    measured: FloatArray
    sources: tuple[str, ...]
    models: tuple[str, ...] = ()


def table_model(name: str) -> ServedModel:
    """A table's model name (catalog id in any case) as a ServedModel."""
    return ServedModel.from_catalog(name.strip().lower())


def table_gpu(name: str) -> str:
    """A table's GPU name (TensorRT-LLM spelling or GPU id) as a GPU id."""
    return gpu_overrides()[1].get(name, name)


# bf16 and fp16 are one format to the serving model (data.PRECISIONS: 2-byte weights and KV cache, one efficiency
# group) and to every GPU the table measures (one tensor-core peak for both in gpus.csv): an FP16 row measures a BF16
# deployment as well as an FP16 one.
SAME_FORMAT: Final[dict[str, str]] = {"bf16": "fp16"}


def measured_format(precision: str) -> str:
    """The precision a calibration row must have to measure a deployment at ``precision`` (lower case)."""
    spelled = precision.strip().lower()
    return SAME_FORMAT.get(spelled, spelled)


def table_coverage(
    rows: Sequence[Mapping[str, str]] | None = None,
) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """The (GPU id, precision) pairs and the serving engines (estimator.inference.engines names) the calibration
    table has rows of (the bundled copy when ``rows`` is None): what the fitted efficiencies and the held-out
    accuracy were measured on. Pairs, not GPUs: the table holds B200 at FP4 only and L40S at FP8 only, and a serving
    lead's probe got a "1 chance in 10" band on a B200 at BF16 from errors never measured at that precision."""
    rows = read_data_csv(TABLE_FILE) if rows is None else rows
    pairs = sorted({(table_gpu(r["gpu"]), r["precision"].strip().lower()) for r in rows})
    stacks = {(r.get("stack") or TABLE_STACK).strip().lower() for r in rows}
    return tuple(pairs), tuple(sorted({BENCHMARK_STACK_ENGINES.get(x, x) for x in stacks}))


def load_table(rows: Sequence[Mapping[str, str]] | None = None) -> MeasuredTable:
    """Rows of trtllm_inference_throughput.csv (the bundled copy when ``rows`` is None) as a MeasuredTable; serving
    stack from the row's ``stack`` column, else trtllm-bench's (TABLE_STACK)."""
    rows = read_data_csv(TABLE_FILE) if rows is None else rows
    try:
        cases = build_cases(
            models=[table_model(r["model"]) for r in rows],
            gpus=[serving_gpu(table_gpu(r["gpu"])) for r in rows],
            precisions=[r["precision"].strip().lower() for r in rows],
            tps=[int(r["tp"]) for r in rows],
            input_tokens=[float(r["isl"]) for r in rows],
            output_tokens=[float(r["osl"]) for r in rows],
            stacks=[r.get("stack") or TABLE_STACK for r in rows],
            labels=[f"{r['model']} {r['gpu']} {r['precision']} tp{r['tp']} {r['isl']}/{r['osl']}" for r in rows],
        )
    except KeyError as exc:
        raise InferenceError("table", f"unknown model or GPU {exc}") from None
    return MeasuredTable(
        cases=cases,
        measured=np.asarray([float(r["output_tok_per_s"]) for r in rows], dtype=np.float64),
        sources=tuple(r["source"] for r in rows),
        models=tuple(r["model"].strip().lower() for r in rows),
    )


def subset(table: MeasuredTable, mask: npt.NDArray[np.bool_] | npt.NDArray[np.int64]) -> MeasuredTable:
    return MeasuredTable(
        cases=table.cases.take(mask),
        measured=table.measured[mask],
        sources=tuple(np.asarray(table.sources, dtype=object)[mask]),
        models=tuple(np.asarray(table.models, dtype=object)[mask]) if table.models else (),
    )


def _to_vector(params: Mapping[str, float]) -> FloatArray:
    return np.asarray([params[k] for k in PARAMETER_NAMES], dtype=np.float64)


def _to_params(x: FloatArray) -> dict[str, float]:
    return {k: float(v) for k, v in zip(PARAMETER_NAMES, x, strict=True)}


def _prior_arrays() -> tuple[FloatArray, FloatArray]:
    centre = np.asarray([PARAMETER_PRIORS[k][0] for k in PARAMETER_NAMES], dtype=np.float64)
    width = np.asarray([PARAMETER_PRIORS[k][1] for k in PARAMETER_NAMES], dtype=np.float64)
    return centre, width


def _log_residuals(x: FloatArray, table: MeasuredTable) -> FloatArray:
    pred = max_throughput(table.cases, _to_params(x))
    return np.log(np.maximum(pred, 1e-3)) - np.log(table.measured)


def _penalised_residuals(x: FloatArray, table: MeasuredTable) -> FloatArray:
    """The rows' log residuals, then one prior residual per parameter in the same units (FIT_LOG_SIGMA)."""
    centre, width = _prior_arrays()
    return np.concatenate([_log_residuals(x, table), (x - centre) / width * FIT_LOG_SIGMA])


def fit(table: MeasuredTable, *, start: Mapping[str, float] | None = None) -> dict[str, float]:
    """Parameters minimizing the squared log error of output tokens/s on ``table`` plus the priors' penalty (bounded
    least squares; the bounds are sanity limits the priors keep the fit away from)."""
    lo = np.asarray([b[1] for b in PARAMETER_BOUNDS.values()])
    hi = np.asarray([b[2] for b in PARAMETER_BOUNDS.values()])
    if start is not None:
        starts = [_to_vector(start)]
    else:  # the problem has local minima: a fixed set of starts spread over the box, plus the prior's centre
        spread = np.random.default_rng(FIT_SEED).uniform(0.1, 0.9, (FIT_STARTS, lo.size))
        starts = [_prior_arrays()[0], *(lo + (hi - lo) * spread)]
    results = [
        least_squares(_penalised_residuals, np.clip(x0, lo, hi), bounds=(lo, hi), args=(table,), x_scale="jac")
        for x0 in starts
    ]
    return _to_params(min(results, key=lambda r: r.cost).x)


def _data_jacobian(x: FloatArray, table: MeasuredTable) -> FloatArray:
    """d(row log residual) / d(parameter) at ``x`` (forward differences, stepping inward at an upper bound)."""
    hi = np.asarray([b[2] for b in PARAMETER_BOUNDS.values()])
    base = _log_residuals(x, table)
    steps = _JACOBIAN_STEP * np.maximum(np.abs(x), 1.0)
    steps = np.where(x + steps > hi, -steps, steps)
    columns = [(_log_residuals(x + np.eye(x.size)[i] * steps[i], table) - base) / steps[i] for i in range(x.size)]
    return np.stack(columns, axis=1)


def parameter_report(table: MeasuredTable, params: Mapping[str, float]) -> list[dict[str, object]]:
    """One entry per fitted parameter: its prior (centre, width, source), bounds, fitted value, shift from the prior in
    widths, posterior sd / prior sd from the Gauss-Newton curvature at the fit (1 = the table says nothing about it),
    whether the data moved it (that ratio below IDENTIFIED_RATIO) and whether it sits at a bound."""
    x = _to_vector(params)
    centre, width = _prior_arrays()
    jac = _data_jacobian(x, table)
    precision = jac.T @ jac / FIT_LOG_SIGMA**2 + np.diag(1.0 / width**2)
    ratio = np.sqrt(np.clip(np.diag(np.linalg.pinv(precision)), 0.0, None)) / width
    entries: list[dict[str, object]] = []
    for i, name in enumerate(PARAMETER_NAMES):
        _, lo, hi = PARAMETER_BOUNDS[name]
        margin = BOUND_MARGIN * (hi - lo)
        entries.append(
            {
                "name": name,
                "prior": float(centre[i]),
                "prior_width": float(width[i]),
                "prior_source": PARAMETER_PRIORS[name][2],
                "lower": lo,
                "upper": hi,
                "fitted": float(x[i]),
                "shift_in_widths": round(float((x[i] - centre[i]) / width[i]), 3),
                "posterior_to_prior_sd": round(float(ratio[i]), 4),
                "moved_by_data": bool(ratio[i] < IDENTIFIED_RATIO),
                "at_bound": bool(x[i] <= lo + margin or x[i] >= hi - margin),
            }
        )
    return entries


def format_parameter_report(entries: Sequence[Mapping[str, object]]) -> str:
    """The parameter report as text lines: prior, fitted value, shift, whether the data moved it, bound."""
    lines = []
    for e in entries:
        moved = "identified by the table" if e["moved_by_data"] else "not identified: stays at its prior"
        bound = "; AT A BOUND" if e["at_bound"] else ""
        lines.append(
            f"  {e['name']:<26} prior {e['prior']:.4g} +- {e['prior_width']:.3g}  fitted {e['fitted']:.4g}"
            f"  ({e['shift_in_widths']:+.2f} widths; posterior/prior sd {e['posterior_to_prior_sd']:.2f}:"
            f" {moved}{bound})"
        )
    return "\n".join(lines)


def residual_log_sd(table: MeasuredTable, params: Mapping[str, float]) -> float:
    """RMS log residual of the rows at ``params`` (what FIT_LOG_SIGMA stands for)."""
    return float(np.sqrt(np.mean(_log_residuals(_to_vector(params), table) ** 2)))


def baseline_unit(c: ServingCases) -> FloatArray:
    """Tokens/s of a replica if every step read the weights once at full bandwidth (the baseline's unit)."""
    return c.tp * c.mem_bw / weight_bytes_total(c)


def baseline_fit(table: MeasuredTable) -> float:
    """Naive baseline: output tokens/s = f x tp x memory bandwidth / weight bytes; f is the geometric-mean ratio."""
    return float(np.exp(np.mean(np.log(table.measured / baseline_unit(table.cases)))))


def baseline_predict(c: ServingCases, fraction: float) -> FloatArray:
    return fraction * baseline_unit(c)


def ape(predicted: FloatArray, measured: FloatArray) -> FloatArray:
    """Absolute percentage error as a fraction."""
    return np.abs(predicted - measured) / measured


@dataclass(frozen=True, slots=True)
class LooReport:
    """Held-out predictions of the model and of the baseline, one per table row."""

    model_pred: FloatArray
    baseline_pred: FloatArray
    measured: FloatArray

    @property
    def model_mape(self) -> float:
        return float(np.mean(ape(self.model_pred, self.measured)))

    @property
    def baseline_mape(self) -> float:
        return float(np.mean(ape(self.baseline_pred, self.measured)))


def hold_out(table: MeasuredTable, groups: Sequence[str], *, start: Mapping[str, float] | None = None) -> LooReport:
    """Refit (model and baseline) without each group in turn and predict that group's rows. Each fold's model is
    fitted from scratch (the fit's own starting points) unless ``start`` is given: a start taken from a fit that saw
    the held-out group would carry it into the fold."""
    labels = np.asarray(groups, dtype=object)
    model_pred = np.empty(len(labels))
    base_pred = np.empty(len(labels))
    for g in dict.fromkeys(labels):  # one refit per held-out group: inherently sequential
        out = labels == g
        train = subset(table, ~out)
        params = fit(train, start=start)
        test = subset(table, out)
        model_pred[out] = max_throughput(test.cases, params)
        base_pred[out] = baseline_predict(test.cases, baseline_fit(train))
    return LooReport(model_pred=model_pred, baseline_pred=base_pred, measured=table.measured)


def leave_one_out(table: MeasuredTable, *, start: Mapping[str, float] | None = None) -> LooReport:
    """Refit without each row in turn and predict it (model warm-started from ``start`` or the full fit: one row
    barely moves it, and one fit per row from scratch would cost minutes)."""
    return hold_out(table, [str(i) for i in range(len(table.cases))], start=start or fit(table))


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
    format: int = CALIBRATION_FORMAT
    # Per fitted parameter: prior, fitted value, moved by the data, at a bound (parameter_report); empty in format 1.
    parameters: tuple[Mapping[str, object], ...] = ()
    residual_log_sd: float = 0.0
    # The model against published latency it was never fitted on (estimator.inference.checks.latency_check); None in
    # a document written before the check existed.
    latency_check: Mapping[str, Any] | None = None
    # log(predicted / measured) of each table row with its model held out (every row of a model refitted without
    # it: a model the calibration has not seen, as a user's is); empty in a document written before they were kept.
    held_out_log_errors: tuple[float, ...] = ()
    # Each of those rows' share of its GPU memory for the KV cache (model.kv_share), same order; empty in a document
    # written before they were kept.
    held_out_kv_shares: tuple[float, ...] = ()


def calibration_from_json(data: Mapping[str, object]) -> InferenceCalibration:
    """A calibration document (format 1 or 2) as an InferenceCalibration. Format 1 documents (no ``format`` key) carry
    a fitted kv_output_reserved, which is ignored: the serving stack now says how much output KV a request holds."""
    params = data["params"]
    if not isinstance(params, Mapping):
        raise InferenceError("calibration", "params must be an object")
    fmt = data.get("format", 1)
    if not isinstance(fmt, int) or not 1 <= fmt <= CALIBRATION_FORMAT:
        raise InferenceError("calibration", f"unknown format {fmt!r}; known: 1..{CALIBRATION_FORMAT}")
    report = data.get("parameters", [])
    if not isinstance(report, list) or not all(isinstance(e, Mapping) for e in report):
        raise InferenceError("calibration", "parameters must be a list of objects")

    def number(key: str) -> float:
        value = data[key]
        if not isinstance(value, int | float):
            raise InferenceError("calibration", f"{key} must be a number")
        return float(value)

    return InferenceCalibration(
        name=str(data["name"]),
        params=theta_of(params),
        runs=int(number("runs")),
        loo_mape=number("loo_mape"),
        baseline_loo_mape=number("baseline_loo_mape"),
        baseline_fraction=number("baseline_fraction"),
        fitted_at=str(data["fitted_at"]),
        command=str(data["command"]),
        source=str(data["source"]),
        format=fmt,
        parameters=tuple(report),
        residual_log_sd=number("residual_log_sd") if "residual_log_sd" in data else 0.0,
        latency_check=_latency_check(data.get("latency_check")),
        held_out_log_errors=_held_out_numbers(data.get("held_out_by_model"), "log_errors"),
        held_out_kv_shares=_held_out_numbers(data.get("held_out_by_model"), "kv_shares", optional=True),
    )


def _held_out_numbers(value: object, key: str, *, optional: bool = False) -> tuple[float, ...]:
    """A document's held_out_by_model.<key> list, or () where it has no held_out_by_model (or, ``optional``, no
    such key)."""
    if value is None or (optional and isinstance(value, Mapping) and key not in value):
        return ()
    numbers = value.get(key) if isinstance(value, Mapping) else None
    if not isinstance(numbers, list) or not all(isinstance(e, int | float) for e in numbers):
        raise InferenceError("calibration", f"held_out_by_model.{key} must be a list of numbers")
    return tuple(float(e) for e in numbers)


def capacity_band(cal: InferenceCalibration) -> dict[str, float] | None:
    """The P10-P90 band of a replica's measured over predicted capacity (multipliers of the predicted requests/s):
    the calibration's held-out-by-model errors, by the rule training's band uses (estimator.calibrate
    .log_error_band); None where the calibration keeps fewer than two."""
    if len(cal.held_out_log_errors) < 2:
        return None
    return log_error_band(np.asarray(cal.held_out_log_errors))


def held_out_at_kv_share(cal: InferenceCalibration, share: float) -> FloatArray | None:
    """The held-out-by-model log errors of the calibration rows whose KV-cache share of GPU memory is ``share`` or
    less, widened to the MIN_RUNS_OWN_BAND tightest rows (ties included) where fewer are that tight: a deployment
    whose weights leave little memory for the KV cache is checked against rows as tight. None where the calibration
    keeps no shares (or fewer rows than that)."""
    shares = np.asarray(cal.held_out_kv_shares)
    if len(shares) != len(cal.held_out_log_errors) or len(shares) < MIN_RUNS_OWN_BAND:
        return None
    limit = max(share + KV_SHARE_ROUNDING, float(np.sort(shares)[MIN_RUNS_OWN_BAND - 1]))
    return np.asarray(cal.held_out_log_errors)[shares <= limit]


def _latency_check(value: object) -> Mapping[str, Any] | None:
    """A document's latency_check: an object of the check's figures, or absent."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InferenceError("calibration", "latency_check must be an object")
    return dict(value)


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
    by_model = hold_out(table, list(table.models))  # each fold from scratch, as bench/inference_accuracy.py does
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
        parameters=tuple(parameter_report(table, params)),
        residual_log_sd=residual_log_sd(table, params),
        held_out_log_errors=tuple(float(e) for e in np.log(by_model.model_pred / by_model.measured)),
        held_out_kv_shares=tuple(float(x) for x in kv_share(table.cases)),
    )


def calibration_document(cal: InferenceCalibration) -> dict[str, object]:
    """The JSON document of a calibration (what calibration.json holds)."""
    return {
        "name": cal.name,
        "format": cal.format,
        "params": dict(cal.params),
        "runs": cal.runs,
        "loo_mape": round(cal.loo_mape, 4),
        "baseline_loo_mape": round(cal.baseline_loo_mape, 4),
        "baseline_fraction": cal.baseline_fraction,
        "fitted_at": cal.fitted_at,
        "command": cal.command,
        "source": cal.source,
        "residual_log_sd": round(cal.residual_log_sd, 4),
        "fit_log_sigma": FIT_LOG_SIGMA,
        "parameters": [dict(e) for e in cal.parameters],
        **({} if cal.latency_check is None else {"latency_check": dict(cal.latency_check)}),
        **({"held_out_by_model": _held_out_document(cal)} if cal.held_out_log_errors else {}),
    }


def _held_out_document(cal: InferenceCalibration) -> dict[str, object]:
    """Hold out by model: each row's log(predicted / measured), their absolute percentage errors' median and p90
    (bench/inference_accuracy.py section 1) and the band of a replica's capacity they give (capacity_band)."""
    errors = np.asarray(cal.held_out_log_errors)
    ape_ = np.abs(np.expm1(errors))
    band = capacity_band(cal) or {}
    return {
        "from": "hold out by model: every row of a model predicted by a fit without that model",
        "median_ape": round(float(np.median(ape_)), 4),
        "p90_ape": round(float(np.quantile(ape_, 0.9)), 4),
        "p10_multiplier": round(band.get("p10_multiplier", 1.0), 4),
        "p90_multiplier": round(band.get("p90_multiplier", 1.0), 4),
        "log_errors": [round(float(e), 5) for e in errors],
        **(
            {"kv_shares": [round(x, KV_SHARE_DECIMALS) for x in cal.held_out_kv_shares]}
            if cal.held_out_kv_shares
            else {}
        ),
    }
