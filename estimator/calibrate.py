"""Calibration: fit the step-time model's free parameters to profiled runs, and report held-out accuracy.

``fit(runs, *, name)`` -> :class:`Calibration` (plain JSON-able data: parameters + report), the public fit of the
shipped default: a penalised robust least-squares on log error of tokens/s (``estimator.fitting``), one unit-weight
residual per run, physical priors on what the runs cannot identify, a random-effect stack term.
``refine(prior=..., runs=...)`` -> a user's calibration: the public fit kept as the prior, only the parameters of the
user's cluster (fabric and NVLink efficiency, overlap, cluster/stack efficiency) moved, and only those the runs
identify; ``fit(runs, prior=...)`` does the same; its ``loo_*`` figures hold out one configuration at a time
(identical configurations, i.e. repeats of one measurement, together; ``refine_folds``).

The report gives held-out errors that do not leak: leave-one-config-family-out (twins held out together) as ``loo_*``,
leave-one-stack-out as ``stack_out_*``, each fold refitted from the prior with layouts searched again, beside the naive
baseline "constant MFU per GPU and precision" fitted on the same folds and, for a user's calibration, the prior as it is
on the same runs (``prior_on_held_out``: keeping the default may predict the team's runs better); the per-parameter
table (prior, fitted, moved by the data, at a bound); measured vs predicted scaling efficiency by GPU count with the
residual trend with size; the range the runs cover; the measured MFU range per GPU family (the public fit caps
predictions at its maximum; a user's calibration at ``family_mfu_cap``, see ``user_mfu_caps``).

Regenerate the shipped default (``estimator/data/default_calibration.json``) from ``estimator/data/public_runs.csv``:

    .venv/bin/python -m estimator.calibrate --write-default
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from scipy.special import ndtr, ndtri
from scipy.stats import t as student_t
from scipy.stats import wilcoxon

from estimator import fitting, model
from estimator.prediction import FAMILIES, GPU_FAMILY, PEAK_FLOPS, borrowed_families, run_queries, solve
from estimator.runs import (
    WHOLE_DOCUMENT,
    ProfiledRun,
    RowError,
    RunValidationError,
    assumed_values,
    effective_stack,
    read_runs_csv,
    virtual_stages,
)
from estimator.specs import DATA_DIR, PRECISIONS, get_gpu
from estimator.workload import POOLED_STACKS, derive_architecture

DEFAULT_FILE: Final[str] = "default_calibration.json"
PUBLIC_RUNS_FILE: Final[str] = "public_runs.csv"
DEFAULT_NAME: Final[str] = "default (public runs)"
# The estimator's parameter set a calibration was fitted for. 3: attention kernel and tensor-parallel overlap per
# software stack (data/stacks.csv); 4: ZeRO-3/FSDP collectives prefetched per layer in the stacks that document it
# (stacks.csv fsdp_prefetch; exposed_floor now applies to the others only). A calibration of an earlier format still
# loads and predicts, but its parameters were fitted without those terms, so the Advice says so
# (stale_calibration_warning).
FORMAT_VERSION: Final[int] = 4
MIN_RUNS: Final[int] = 2
# The P10/P90 band: quantiles of the held-out log errors.
INTERVAL_QUANTILES: Final[tuple[float, float]] = (0.1, 0.9)
# Held-out runs a user's calibration needs before its band may be narrower than the one of the calibration it refines:
# the smallest n for which even the widest band n runs give without assuming a distribution (their min..max, which
# holds a new run with probability (n - 1)/(n + 1)) reaches the band's nominal coverage (0.8: n = 9).
_BAND_COVERAGE: Final[float] = INTERVAL_QUANTILES[1] - INTERVAL_QUANTILES[0]
MIN_RUNS_OWN_BAND: Final[int] = math.ceil(round((1 + _BAND_COVERAGE) / (1 - _BAND_COVERAGE), 9))
# z of the 90th percentile of a normal: widens the band of an unknown stack by the between-stack spread.
Z90: Final[float] = 1.2816
# What a user's runs may move (cluster-specific); everything else stays at the public fit.
CLUSTER_PARAMETERS: Final[tuple[str, ...]] = ("cluster_eff", "fabric_eff", "nvlink_eff", "overlap")
# A user's calibration trusts the public fit's values this tightly (prior widths of the cluster parameters).
REFINE_WIDTHS: Final[dict[str, float]] = {"cluster_eff": 0.3, "fabric_eff": 0.3, "nvlink_eff": 0.2, "overlap": 0.3}
# A refinement's held-out figure: one fold per run up to this many runs, else this many folds of config families.
REFINE_MAX_FOLDS: Final[int] = 10
# Config families a refinement needs to hold one out at a time: with two, each fold refits on one family alone.
MIN_FAMILY_FOLDS: Final[int] = 3
# Starting fabric shares (of the prior's effective bandwidth) tried by a refinement besides the prior itself.
REFINE_FABRIC_SHARES: Final[tuple[float, ...]] = (1.0, 1 / 3, 1 / 10)
# A user's calibration caps a family's MFU at the higher of the prior's cap (its public runs' maximum, or the borrowed
# family's where it has none) and the user's own best MFU plus this margin: a handful of one cluster's runs is not the
# family's ceiling, and a cap at their own maximum pinned their predictions to it. 10% is the fit's per-run noise
# (fitting.LOSS_SCALE, a 0.1 log error).
USER_MFU_CAP_MARGIN: Final[float] = 0.10
# The one-sided level at which the per-run comparison must show a refinement's prior better on the refinement's own
# held-out runs before the advice says to keep the prior (prior_warning): the conventional 5% of a significance test.
PRIOR_BETTER_LEVEL: Final[float] = 0.05
# Residual trend with size flagged above this change of log error per doubling of GPUs.
TREND_FLAG_PER_DOUBLING: Final[float] = 0.03


class CalibrationError(ValueError):
    """A calibration document that is not valid; ``field`` names the bad key."""

    def __init__(self, field_name: str, message: str) -> None:
        self.field = field_name
        super().__init__(f"{field_name}: {message}")


@dataclass(frozen=True)
class Calibration:
    """Fitted parameters (``params``: name -> value, see model.PARAMETER_BOUNDS and the <prefix><group> multipliers) and
    the fit ``report``. JSON-safe through to_dict()/from_dict()."""

    name: str
    params: Mapping[str, float]
    report: Mapping[str, Any] = field(default_factory=dict)
    fitted_format: int = FORMAT_VERSION
    # A user's calibration: the calibration it refines (its parameters and the report figures a prediction reads),
    # which predicts every GPU family and stack its runs do not cover (report["scope"], ``scoped``).
    base: Calibration | None = None

    def calibrated_families(self) -> tuple[str, ...]:
        return tuple(
            sorted(k.removeprefix(model.FAMILY_PREFIX) for k in self.params if k.startswith(model.FAMILY_PREFIX))
        )

    def borrowed_families(self) -> dict[str, str]:
        """Uncalibrated family -> the nearest calibrated family whose efficiencies it uses (scaled by its own peaks)."""
        return borrowed_families(self.calibrated_families())

    def theta(self) -> dict[str, object]:
        return model.unpack_parameters(self.params, FAMILIES, borrowed=self.borrowed_families())

    def has_stack(self, stack: str | None) -> bool:
        return stack is not None and (model.STACK_PREFIX + stack) in self.params

    def covers(self, *, family: str, stack: str | None) -> bool:
        """Whether a prediction on a GPU of ``family`` with ``stack`` (None: not said) is the calibration's own. A
        user's calibration (one with a ``base``) covers the GPU families and stacks of its runs: their cluster
        efficiency, fabric and overlap were learned there, and said nothing of another GPU or stack. A job that does
        not name its stack, on one of those families, is the user's calibration's to predict (with the stacks' prior
        mean for its stack effect: it did not say it is the runs' stack)."""
        scope = self.report.get("scope") or {}
        if self.base is None or not scope:
            return True
        if family not in scope.get("gpu_families", ()):
            return False
        if stack is None:
            return True
        pairs = scope.get("pairs")
        if pairs is None:  # a calibration stored before pairs were: its families and stacks in any combination
            return stack in scope.get("stacks", ())
        # The (family, stack) pairs measured, not every combination: runs of H100 torchtitan and A100 DeepSpeed
        # predicted H100 DeepSpeed at 2x the default with no note (a hostile probe).
        return [family, stack] in [list(pair) for pair in pairs]

    def scoped(self, *, family: str, stack: str | None) -> tuple[Calibration, str | None]:
        """The calibration that predicts ``family`` with ``stack`` (itself, or its base outside its scope) and, when
        it is the base, the note that says so."""
        if self.base is None or self.covers(family=family, stack=stack):
            return self, None
        scope = self.report.get("scope") or {}
        covered = ", ".join(f"{f}" for f in scope.get("gpu_families", ())) or "none"
        stacks = ", ".join(scope.get("stacks", ())) or "none"
        which = f"the {family} family" + ("" if stack is None else f" with stack {stack!r}")
        pairs = scope.get("pairs")
        runs_cover = (
            f"the {covered} family, stack {stacks}"
            if pairs is None
            else ", ".join(f"{pair_family} with {pair_stack}" for pair_family, pair_stack in pairs)
        )
        return self.base, (
            f"the calibration '{self.name}' has no runs on {which} (its runs cover {runs_cover}): predicted with "
            f"the calibration it refines, '{self.base.name}', and its band"
        )

    def interval(
        self, *, stack: str | None = None, known_stack: bool = True, family: str | None = None
    ) -> dict[str, float]:
        """log_sigma, p10_multiplier and p90_multiplier for tokens/s (1.0 and 0 when the report has none).

        One definition for every caller (Advice, ``estimate``, the unseen check, the report's coverage): the held-out
        log errors of the report (``residuals``) convolved with the part of the stack effect the calibration does not
        pin down (``stack_effect_sigma``) and, for a GPU ``family`` without calibration runs, the spread of the
        calibrated families' efficiencies it borrows across (``family_effect_sigma``), see :func:`band_multipliers`."""
        extra = self.stack_effect_sigma(stack=stack, known_stack=known_stack)
        if family is not None and family in self.borrowed_families():
            extra = math.hypot(extra, self.family_effect_sigma())
        errors = held_out_log_errors(self.report)
        band = band_multipliers(self.report.get("prediction_interval") or {}, errors, extra)
        if self.base is None:
            return band
        # A user's calibration: its few held-out errors as a small-sample predictive interval, and below
        # MIN_RUNS_OWN_BAND of them never narrower than the band of the calibration it refines (team_band).
        base = self.base.interval(stack=stack, known_stack=known_stack, family=family)
        return team_band(band, errors, extra, base=base)

    def family_effect_sigma(self) -> float:
        """What borrowing a calibrated family's efficiencies costs a family without runs (an outsider: MI300X,
        borrowing Hopper's, stated a P10-P90 band of x0.86-1.13 while her runs measured 1.7-2x slower).

        Measured where the report has it (``family_borrow_log_offsets``): each calibrated family's runs predicted with
        the family it would borrow from in its place, against its own fit, one offset per family, scaled to the next
        family's as tau is to the next stack's (:func:`_predictive_spread`). Otherwise the sd (log) of the fitted GEMM
        multipliers (family_eff), or with fewer than two calibrated families the widest family prior
        (estimator.fitting.FAMILY_PRIORS)."""
        offsets = self.report.get("family_borrow_log_offsets") or {}
        if len(offsets) >= 2:
            return _predictive_spread([float(v) for v in offsets.values()])
        values = [float(v) for k, v in self.params.items() if k.startswith(model.FAMILY_PREFIX) and float(v) > 0]
        if len(values) < 2:
            return max(width for _, width in fitting.FAMILY_PRIORS.values())
        return float(np.std(np.log(values), ddof=1))

    def stack_effect_sigma(self, *, stack: str | None = None, known_stack: bool = True) -> float:
        """sd (log) of the part of ``stack``'s effect the calibration does not pin down, added to the band.

        No runs of the stack (``known_stack=False``, or ``stack`` not fitted) or a pooled label (``other``: several
        different stacks under one multiplier): the whole between-stack spread tau. A fitted stack: the posterior sd of
        its effect from its k config families (:func:`stack_posterior_sigma`), so a stack known from one recipe keeps
        about half of tau and one known from a hundred almost none. ``stack=None`` with ``known_stack=True`` (the
        generic band) adds nothing."""
        tau = float(self.report.get("between_stack_log_sigma", 0.0))
        if not known_stack or (stack is not None and (stack in POOLED_STACKS or not self.has_stack(stack))):
            return tau
        families = (self.report.get("stack_config_families") or {}).get(stack or "", 0)
        if stack is None or families <= 0:  # the generic band, or a calibration without per-stack counts
            return 0.0
        s = float((self.report.get("prediction_interval") or {}).get("log_sigma", 0.0))
        return stack_posterior_sigma(tau, s, families)

    def held_out_accuracy(self, *, stack: str | None = None, known_stack: bool = True) -> dict[str, Any]:
        """The held-out error that applies to a prediction for ``stack`` (the same rule as stack_effect_sigma): a
        stack the calibration has runs of is judged by leave-one-config-family-out (its stack known from other
        recipes), any other by leave-one-stack-out (a stack the fit never saw), each beside the constant-MFU
        baseline held out the same way. A user's calibration: its own held-out runs for their stacks (the pooled
        'other' too) and a job naming none; its base's figures for another stack, which the base predicts. ``{}``
        when the report has no figure for the case (a fit without held-out figures)."""
        own = self._judged_by_own_runs(stack)
        if self.base is not None and not own:  # a stack outside a user's runs is predicted by its base
            return self.base.held_out_accuracy(stack=stack, known_stack=known_stack)
        unknown = not known_stack or stack is None or stack in POOLED_STACKS or not self.has_stack(stack)
        baseline = self.report.get("baseline") or {}
        if own and "loo_median_ape" in self.report:
            # The held-out check of a user's calibration is over its own runs, and their stack (even the pooled
            # label 'other') or a job that names none is theirs: the Advice said 'never checked on stack other'.
            name = held_out_name(self.report)
            prefix, base = "loo", baseline.get("loo") or {}
        elif unknown and "stack_out_median_ape" in self.report:
            prefix, name, base = "stack_out", "leave-one-stack-out", baseline.get("stack_out") or {}
        elif not unknown and "loo_median_ape" in self.report:
            prefix, name, base = "loo", "leave-one-config-family-out", baseline.get("loo") or {}
        else:  # no figure for the case (a user's calibration of one stack has no leave-one-stack-out)
            return {}
        return {
            "held_out": name,
            "held_out_median_ape": float(self.report[f"{prefix}_median_ape"]),
            "held_out_mape": float(self.report[f"{prefix}_mape"]),
            "baseline_held_out_median_ape": None if "median_ape" not in base else float(base["median_ape"]),
        }

    def _judged_by_own_runs(self, stack: str | None) -> bool:
        """A calibration without a leave-one-stack-out figure (a user's refinement) predicting a stack its runs have,
        or, where it has a scope that takes a job naming none as its own (``covers``), such a job."""
        if "stack_out_median_ape" in self.report:
            return False
        if stack is None:
            return bool(self.report.get("scope"))
        return stack in ((self.report.get("scope") or self.report.get("coverage") or {}).get("stacks") or ())

    def family_mfu_max(self) -> dict[str, float]:
        """The MFU cap per calibrated family (borrowing families take their source's): the highest MFU measured, or,
        in a user's calibration, the report's ``family_mfu_cap`` (``user_mfu_caps``)."""
        table = {k: float(v[1]) for k, v in (self.report.get("family_mfu") or {}).items()}
        table.update({k: float(v) for k, v in (self.report.get("family_mfu_cap") or {}).items()})
        for family, source in self.borrowed_families().items():
            if source in table:
                table.setdefault(family, table[source])
        return table

    def precision_mfu_caps(self) -> dict[str, dict[str, float]]:
        """family -> precision -> MFU cap, each against that precision's peak: the highest MFU the family's runs in
        that precision measured (``family_precision_mfu``) or, in a user's calibration, ``family_precision_mfu_cap``;
        borrowing families take their source's. Only the precisions that have runs: ``prediction.mfu_cap_flops``
        says what another precision gets. {} for a calibration stored before the report kept precisions (its
        precision-blind ``family_mfu_max`` then applies)."""
        if "family_precision_mfu" not in self.report:
            return {}
        table = {
            family: {precision: float(v[1]) for precision, v in by.items()}
            for family, by in (self.report.get("family_precision_mfu") or {}).items()
        }
        for family, by in (self.report.get("family_precision_mfu_cap") or {}).items():
            table.setdefault(family, {}).update({precision: float(v) for precision, v in by.items()})
        for family, source in self.borrowed_families().items():
            if source in table:
                table.setdefault(family, dict(table[source]))
        return table

    @property
    def runs(self) -> int:
        return int(self.report.get("runs", 0))

    @property
    def loo_mape(self) -> float | None:
        value = self.report.get("loo_mape")
        return None if value is None else float(value)

    def to_dict(self) -> dict[str, Any]:
        document = {
            "format": self.fitted_format,
            "name": self.name,
            "params": {k: float(v) for k, v in self.params.items()},
            "report": _json_safe(self.report),
        }
        if self.base is not None:
            document["base"] = {k: v for k, v in self.base.to_dict().items() if k != "base"}
        return document

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
            if key not in model.PARAMETER_BOUNDS and not str(key).startswith(model.PARAMETER_PREFIXES):
                prefixes = [prefix + "<group>" for prefix in model.PARAMETER_PREFIXES]
                allowed = ", ".join([*model.PARAMETER_BOUNDS, *prefixes])
                raise CalibrationError(f"params/{key}", f"unknown parameter; allowed: {allowed}")
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise CalibrationError(f"params/{key}", f"must be a finite number, got {value!r}")
            clean[str(key)] = float(value)
        report = document.get("report", {})
        if not isinstance(report, Mapping):
            raise CalibrationError("report", "must be an object")
        fitted_format = document.get("format", 1)
        if isinstance(fitted_format, bool) or not isinstance(fitted_format, int) or not fitted_format >= 1:
            raise CalibrationError(
                "format", f"must be a whole number from 1 to {FORMAT_VERSION}, got {fitted_format!r}"
            )
        if fitted_format > FORMAT_VERSION:
            raise CalibrationError(
                "format", f"{fitted_format} is newer than this estimator's {FORMAT_VERSION}: upgrade GPU Advisor"
            )
        base = document.get("base")
        if base is not None:
            try:
                base = cls.from_dict(base)
            except CalibrationError as error:
                raise CalibrationError(f"base/{error.field}", str(error).removeprefix(f"{error.field}: ")) from None
        return cls(name=name.strip(), params=clean, report=dict(report), fitted_format=fitted_format, base=base)


def held_out_name(report: Mapping[str, Any]) -> str:
    """How the report's ``loo_*`` figures were held out, in a few words: the head of its ``held_out`` description
    ("leave-one-config-family-out", "leave-one-configuration-out", "4-fold by config family"), or "held out" when the
    report has none. What every label of loo_mape says: above REFINE_MAX_FOLDS runs it is not leave-one-out."""
    return re.split(r" \(|[;:]", str(report.get("held_out") or "held out"))[0]


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


def _check_runs(runs: Sequence[ProfiledRun], *, merged: int = 0) -> np.ndarray:
    if len(runs) < MIN_RUNS:
        message = f"a calibration needs at least {MIN_RUNS} runs, got {len(runs)}"
        if merged:
            message += f" (after {merged} row(s) repeating another row's configuration and measurement were merged)"
        raise RunValidationError([RowError(0, WHOLE_DOCUMENT, message)])
    return measured_tokens_per_s(runs)


def merge_duplicates(runs: Sequence[ProfiledRun]) -> tuple[list[ProfiledRun], list[tuple[int, int]]]:
    """The runs with each repeat of another row's ``configuration`` AND measurement dropped (the first row kept), and
    (row, the row it repeats) per dropped one. A pasted sweep log is one measurement, not many: the same 6 runs in
    1,000 rows overpowered the prior and shrank the held-out error 4x. Rows of one configuration measured differently
    stay (they are held out together, ``configuration_folds``); rows without a measurement stay for the fit to name."""
    first: dict[tuple[str, float], ProfiledRun] = {}
    kept: list[ProfiledRun] = []
    merged: list[tuple[int, int]] = []
    for run in runs:
        measured = run.measured_tokens_per_s
        if measured is None:
            kept.append(run)
            continue
        original = first.setdefault((configuration(run), float(measured)), run)
        if original is run:
            kept.append(run)
        else:
            merged.append((run.row, original.row))
    return kept, merged


def duplicate_warnings(merged: Sequence[tuple[int, int]]) -> list[str]:
    """The note a fit stores when ``merge_duplicates`` merged rows (empty when none)."""
    if not merged:
        return []
    listed = ", ".join(f"row {row} = row {original}" for row, original in merged[:5]) + (
        ", ..." if len(merged) > 5 else ""
    )
    return [
        f"{len(merged)} row(s) repeat another row's configuration and measurement exactly ({listed}): each counted "
        "once, as the one measurement it is (a repeated row is not new evidence)."
    ]


# --------------------------------------------------------------------------------------------------- baseline


def measured_mfu(queries: Mapping[str, np.ndarray], measured: np.ndarray) -> np.ndarray:
    capacity = queries["n"] * PEAK_FLOPS[queries["gpu"], queries["precision"]]
    return measured * model.model_flops_per_token(queries) / capacity


def naive_mfu_baseline(queries: dict[str, np.ndarray], measured: np.ndarray, train: np.ndarray) -> np.ndarray:
    """Predicted tokens/s for every query from the median MFU of ``train`` rows with the same GPU and precision
    (falling back to the same GPU, then to all training rows)."""
    capacity = queries["n"] * PEAK_FLOPS[queries["gpu"], queries["precision"]]
    mfu = measured_mfu(queries, measured)
    predicted_mfu = np.full(measured.size, np.median(mfu[train]))
    for key in (("gpu",), ("gpu", "precision")):  # coarse to fine: the finer group overrides
        group = np.stack([queries[k] for k in key], axis=1)
        for value in np.unique(group[train], axis=0):
            members = np.all(group == value, axis=1)
            predicted_mfu[members] = np.median(mfu[train & members])
    return predicted_mfu * capacity / model.model_flops_per_token(queries)


def _errors(predicted: np.ndarray, measured: np.ndarray) -> dict[str, float]:
    ape = np.abs(predicted / measured - 1.0)
    return {
        "mape": float(np.mean(ape)),
        "median_ape": float(np.median(ape)),
        "p90_ape": float(np.quantile(ape, 0.9)),
    }


# --------------------------------------------------------------------------------------------------- held out


def config_family(run: ProfiledRun) -> str:
    """Runs that are twins of one another (same stack, GPU family, precision, architecture and sequence length; only
    the GPU count, batch, layout or release differ): held out together, or a twin would leak the answer."""
    arch = derive_architecture(run.params_b)
    layers = run.layers or arch["layers"]
    hidden = run.hidden or arch["hidden"]
    family = get_gpu(run.gpu).family
    return f"{effective_stack(run) or 'unknown'}/{family}/{run.precision}/L{layers}xH{hidden}/s{run.seq_len}"


# What is not part of a run's configuration: its measurement, where it was published, and the row as read.
_NOT_CONFIGURATION: Final[frozenset[str]] = frozenset({"row", "tokens_per_s", "step_time_s", "source", "cells"})


def configuration(run: ProfiledRun) -> str:
    """The run's whole configuration: its ``config_family`` and every other column but the measurement and the
    source, empty cells read as their defaults. Runs with the same one are repeats of one measurement: held out
    together (they always fall in one config family), or a repeat would leak the answer."""
    cells = {f.name: getattr(run, f.name) for f in dataclasses.fields(run) if f.name not in _NOT_CONFIGURATION}
    cells.update(assumed_values(run), stack=effective_stack(run), virtual_pipeline=virtual_stages(run))
    return config_family(run) + "|" + ",".join(f"{k}={v}" for k, v in sorted(cells.items()))


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
        out = {}
        for label in sorted(set(self.labels)):
            sel = self.labels == label
            out[str(label)] = {
                "runs": int(np.count_nonzero(sel)),
                **_errors(self.predicted[sel], self.measured[sel]),
                "baseline_median_ape": _errors(self.baseline[sel], self.measured[sel])["median_ape"],
            }
        return out


def held_out_predictions(problem: fitting.Problem, labels: Sequence[str]) -> HeldOut:
    """Refit without each group of ``labels`` (from the prior, layouts searched again) and predict it. A held-out
    stack has no fitted multiplier in its fold: it predicts with the prior mean, as an unknown stack would."""
    label_array = np.asarray(labels, dtype=object)
    every = np.arange(problem.measured.size)
    predicted = np.full(every.size, np.nan)
    baseline = np.full(every.size, np.nan)
    for label in sorted(set(labels)):
        held = label_array == label
        if held.all():  # nothing to train on
            continue
        train = every[~held]
        fold = _fold_problem(problem, train)
        x, _ = fitting.fit_rows(fold, train)
        predicted[held] = fitting.predict_rows(fold, x, every[held])
        baseline[held] = naive_mfu_baseline(problem.queries, problem.measured, ~held)[held]
    return HeldOut(problem.measured, label_array, predicted, baseline)


def _fold_problem(problem: fitting.Problem, train: np.ndarray) -> fitting.Problem:
    """The problem restricted to the parameters the training rows inform (a held-out stack's or family's multiplier is
    held at its prior: 1.0 for a stack, the published ratio for a family)."""
    informed = set(fitting.parameter_names({k: v[train] for k, v in problem.queries.items()}))
    free = problem.free & np.array([name in informed for name in problem.names])
    return dataclasses.replace(problem, free=free)


def log_error_band(log_error: np.ndarray) -> dict[str, float]:
    """The P10-P90 band of measured/predicted from held-out ``log_error`` = log(predicted/measured): their 10th and
    90th percentiles, turned over (over-predicting means less than predicted), and their sd."""
    low, high = np.quantile(log_error, INTERVAL_QUANTILES)
    return {
        "log_sigma": float(np.std(log_error)),
        "p10_multiplier": float(np.exp(-high)),
        "p90_multiplier": float(np.exp(-low)),
    }


def _interval(measured: np.ndarray, predicted: np.ndarray, source: str) -> dict[str, Any]:
    return {"from": source, **log_error_band(np.log(predicted / measured))}


def held_out_log_errors(report: Mapping[str, Any]) -> np.ndarray | None:
    """log(predicted/measured) of the report's held-out predictions (``residuals``, but those ``flagged`` as
    implausible), or None when it has fewer than two."""
    rows = [r for r in report.get("residuals") or [] if not r.get("flagged")]
    predicted = np.array([float(r.get("predicted_tokens_per_s", np.nan)) for r in rows])
    measured = np.array([float(r.get("measured_tokens_per_s", np.nan)) for r in rows])
    ok = np.isfinite(predicted) & np.isfinite(measured) & (predicted > 0) & (measured > 0)
    return np.log(predicted[ok] / measured[ok]) if np.count_nonzero(ok) >= 2 else None


def stack_posterior_sigma(tau: float, family_sigma: float, families: int) -> float:
    """Posterior sd (log) of a stack's effect known from ``families`` config families, under the random-effects model
    the fit uses: effect ~ N(0, tau^2), each config family one observation of it with sd ``family_sigma`` (twins count
    once, so one recipe's many GPU counts do not pin the stack). sqrt(1 / (1/tau^2 + k/s^2)): tau with no family,
    shrinking as families accumulate, never growing when one is added."""
    if tau <= 0:
        return 0.0
    if families <= 0 or family_sigma <= 0:
        return tau if families <= 0 else 0.0
    return float(1.0 / math.sqrt(1.0 / tau**2 + families / family_sigma**2))


def band_multipliers(band: Mapping[str, Any], log_errors: np.ndarray | None, extra_sigma: float) -> dict[str, float]:
    """The P10-P90 band of measured/predicted tokens/s: the held-out ``log_errors`` (a new config family's error, the
    empirical distribution) convolved with N(0, extra_sigma^2) (the stack effect the calibration does not pin down),
    its 10th and 90th percentiles (exact quantiles of the smoothed empirical CDF), so heavy tails of the held-out
    errors widen the band as much as they should; adding extra_sigma in quadrature to the quantiles (as if the errors
    were normal) held 75% of the runs of a held-out stack instead of 85%. Without
    held-out errors (an older or a held_out=False report) the base is the normal of ``band``'s log_sigma."""
    sigma = float(band.get("log_sigma", 0.0))
    p10, p90 = float(band.get("p10_multiplier", 1.0)), float(band.get("p90_multiplier", 1.0))
    if extra_sigma <= 0:
        return {"log_sigma": sigma, "p10_multiplier": p10, "p90_multiplier": p90}
    widened = math.hypot(sigma, extra_sigma)
    if log_errors is None:
        extra = Z90 * (widened - sigma)
        return {"log_sigma": widened, "p10_multiplier": p10 * math.exp(-extra), "p90_multiplier": p90 * math.exp(extra)}
    low, high = _smoothed_quantiles(log_errors, extra_sigma, INTERVAL_QUANTILES)
    return {"log_sigma": widened, "p10_multiplier": float(np.exp(-high)), "p90_multiplier": float(np.exp(-low))}


def small_sample_band(log_errors: np.ndarray, extra_sigma: float) -> dict[str, float]:
    """The P10-P90 band of measured/predicted tokens/s as a predictive interval for the NEXT run from n held-out log
    errors: their mean +- t(0.9, n - 1) x sqrt(s^2 (1 + 1/n) + extra_sigma^2), s their sample sd (Student t with
    n - 1 degrees of freedom: the spread of n errors is itself known only roughly, so the band widens as n falls;
    the raw 10th/90th percentiles of 2 errors gave a 2-run team a band narrower than the 279-run default's). The
    extra (stack) spread is added to the variance under the same t quantile: conservative."""
    n = log_errors.size
    mean = float(np.mean(log_errors))
    s = float(np.std(log_errors, ddof=1))
    spread = math.sqrt(s**2 * (1.0 + 1.0 / n) + extra_sigma**2)
    half = float(student_t.ppf(INTERVAL_QUANTILES[1], n - 1)) * spread
    return {"log_sigma": spread, "p10_multiplier": math.exp(-(mean + half)), "p90_multiplier": math.exp(-(mean - half))}


def team_band(
    band: Mapping[str, float], log_errors: np.ndarray | None, extra_sigma: float, *, base: Mapping[str, float]
) -> dict[str, float]:
    """The band of a user's calibration (``Calibration.interval``): the widest of its held-out errors' own band
    (``band``, from :func:`band_multipliers`) and their small-sample predictive interval (:func:`small_sample_band`)
    and, with fewer than MIN_RUNS_OWN_BAND held-out errors, the band of the calibration it refines for the same job
    (``base``): too few runs to say its errors are smaller than the base's (the base's alone with fewer than two)."""
    if log_errors is None:
        return dict(base)
    bands = [band, small_sample_band(log_errors, extra_sigma)]
    if log_errors.size < MIN_RUNS_OWN_BAND:
        bands.append(base)
    return {
        "log_sigma": max(float(b["log_sigma"]) for b in bands),
        "p10_multiplier": min(float(b["p10_multiplier"]) for b in bands),
        "p90_multiplier": max(float(b["p90_multiplier"]) for b in bands),
    }


@dataclass(frozen=True, slots=True)
class ThroughputBand:
    """The band a prediction states for its tokens/s: P10 .. P90 = point x p10_multiplier .. x p90_multiplier, and
    the sd of the log error (``Calibration.interval``)."""

    log_sigma: float
    p10_multiplier: float
    p90_multiplier: float

    @classmethod
    def of(cls, interval: Mapping[str, float]) -> ThroughputBand:
        return cls(
            log_sigma=float(interval["log_sigma"]),
            p10_multiplier=float(interval["p10_multiplier"]),
            p90_multiplier=float(interval["p90_multiplier"]),
        )


def band_log_factors(
    *, p10_multiplier: float, p90_multiplier: float, samples: int, rng: np.random.Generator
) -> np.ndarray:
    """``samples`` draws of log(measured / predicted tokens/s) for a Monte Carlo that must agree with the band the
    prediction states: the 10th, 50th and 90th percentiles of the draws are log(p10_multiplier), 0 (the point
    prediction is the median) and log(p90_multiplier). A two-piece normal (a normal score z scaled by its own sd on
    each side of 0), drawn at the stratified quantiles (i + 1/2) / samples in random order, so the sample quantiles
    are the band's to the grid's resolution rather than up to sampling noise (2,000 plain normal draws put the median
    ~1.7% off the point). A band that does not straddle the point is widened to it on that side."""
    z90 = float(ndtri(INTERVAL_QUANTILES[1]))
    below = -math.log(min(p10_multiplier, 1.0)) / z90
    above = math.log(max(p90_multiplier, 1.0)) / z90
    z = ndtri((np.arange(samples) + 0.5) / samples)
    return rng.permutation(np.where(z < 0.0, below, above) * z)


def _smoothed_quantiles(errors: np.ndarray, sigma: float, quantiles: tuple[float, ...]) -> tuple[float, ...]:
    """Quantiles of the empirical distribution of ``errors`` convolved with N(0, sigma^2): the root of
    mean(Phi((q - e_i) / sigma)) = p, by bisection over all quantiles at once (the CDF is smooth and increasing)."""
    target = np.asarray(quantiles, dtype=np.float64)
    low = np.full(target.size, errors.min() - 8 * sigma)
    high = np.full(target.size, errors.max() + 8 * sigma)
    for _ in range(60):  # 2^-60 of a range of a few units: far below any printed digit
        mid = 0.5 * (low + high)
        below = ndtr((mid[:, None] - errors[None, :]) / sigma).mean(axis=1) < target
        low, high = np.where(below, mid, low), np.where(below, high, mid)
    return tuple(float(q) for q in 0.5 * (low + high))


def held_out_band_coverage(
    families: HeldOut, stacks: HeldOut, *, params: Mapping[str, float], band: Mapping[str, Any]
) -> dict[str, Any]:
    """How often the band a held-out run would have been given holds it: leave-one-stack-out (an unknown stack's band,
    tau without that stack's own offset) and leave-one-config-family-out (its stack known from its OTHER config
    families: the posterior sd with k - 1 families, tau when none is left or the label is pooled). Per stack, share
    of runs, mean over stacks, and the median band width log(p90/p10). The base errors are the config-family-out
    ones (each run's own error among 279: a negligible leak)."""
    errors = np.log(families.predicted / families.measured)
    sigma = float(band["log_sigma"])
    offsets = stack_out_offsets(stacks)
    tau = _between_stack_sigma(params, offsets)
    run_stack = stacks.labels
    counts = {s: len(set(families.labels[run_stack == s].tolist())) for s in offsets}
    stack_out = unknown_stack_coverage(stacks, params=params, band=band, base_log_errors=errors)
    inside = np.zeros(errors.size, dtype=bool)
    width = np.zeros(errors.size)
    for stack, k in counts.items():
        extra = tau if stack in POOLED_STACKS else stack_posterior_sigma(tau, sigma, k - 1)
        b = band_multipliers(band, errors, extra)
        sel = run_stack == stack
        ratio = families.measured[sel] / families.predicted[sel]
        inside[sel] = (ratio >= b["p10_multiplier"]) & (ratio <= b["p90_multiplier"])
        width[sel] = math.log(b["p90_multiplier"] / b["p10_multiplier"])
    per_stack = {s: float(inside[run_stack == s].mean()) for s in counts}
    return {
        "leave_one_stack_out": stack_out,
        "leave_one_config_family_out": {
            "per_stack": per_stack,
            "mean_over_stacks": float(np.mean(list(per_stack.values()))),
            "share_of_runs": float(inside.mean()),
            "median_log_width": float(np.median(width)),
        },
    }


def _held_out_report(
    problem: fitting.Problem, runs: Sequence[ProfiledRun], params: Mapping[str, float]
) -> dict[str, Any]:
    families = held_out_predictions(problem, [config_family(run) for run in runs])
    stacks = held_out_predictions(problem, [stack_label(run) for run in runs])
    measured, loo = families.measured, families.predicted
    loo_errors = families.errors()
    gpus = np.array([run.gpu for run in runs])
    report: dict[str, Any] = {
        "held_out": "leave-one-config-family-out: twins (same stack, GPU family, precision, architecture, sequence "
        "length) held out together, each fold refitted from the prior with layouts searched again",
        "loo_mape": loo_errors["mape"],
        "loo_median_ape": loo_errors["median_ape"],
        "loo_p90_ape": loo_errors["p90_ape"],
        "config_families": len(set(families.labels)),
        "per_gpu": {
            gpu: {"runs": int(np.count_nonzero(gpus == gpu)), **_errors(loo[gpus == gpu], measured[gpus == gpu])}
            for gpu in sorted(set(gpus))
        },
        "baseline": {"name": "constant MFU per GPU and precision", "loo": families.baseline_errors()},
        "prediction_interval": _interval(measured, loo, "leave-one-config-family-out log errors of tokens/s"),
        "residuals": _residual_rows(runs, measured, loo),
        "family_borrow_log_offsets": family_borrow_offsets(problem, params),
    }
    if len(set(stacks.labels)) > 1:
        stack_errors = stacks.errors()
        report.update(
            {
                "stack_out_mape": stack_errors["mape"],
                "stack_out_median_ape": stack_errors["median_ape"],
                "stack_out_p90_ape": stack_errors["p90_ape"],
                "per_stack": stacks.per_group(),
                "unknown_stack_interval": _interval(
                    measured, stacks.predicted, "leave-one-stack-out log errors of tokens/s (a stack never seen)"
                ),
                "stack_out_log_offsets": stack_out_offsets(stacks),
                # The unknown-stack band: tau from the held-out stacks' offsets, and how often it held them.
                "between_stack_log_sigma": _between_stack_sigma(params, stack_out_offsets(stacks)),
                "unknown_stack_coverage": unknown_stack_coverage(
                    stacks, params=params, band=report["prediction_interval"], base_log_errors=np.log(loo / measured)
                ),
                "band_coverage": held_out_band_coverage(
                    families, stacks, params=params, band=report["prediction_interval"]
                ),
            }
        )
        report["baseline"]["stack_out"] = stacks.baseline_errors()
    return report


def _residual_rows(runs: Sequence[ProfiledRun], measured: np.ndarray, predicted: np.ndarray) -> list[dict[str, Any]]:
    return [
        {
            "row": run.row,
            "gpu": run.gpu,
            "num_gpus": run.num_gpus,
            "source": run.source,
            "measured_tokens_per_s": float(m),
            "predicted_tokens_per_s": float(p),
        }
        for run, m, p in zip(runs, measured, predicted, strict=True)
    ]


def cross_validate(runs: Sequence[ProfiledRun]) -> dict[str, HeldOut]:
    """Held-out predictions for ``runs`` (what the accuracy bench prints), each fold fitted as :func:`fit` does:
    ``config_family`` (twins held out together) and ``stack`` (leave-one-stack-out)."""
    problem = _public_fit(runs)[0]
    return {
        "config_family": held_out_predictions(problem, [config_family(run) for run in runs]),
        "stack": held_out_predictions(problem, [stack_label(run) for run in runs]),
    }


# --------------------------------------------------------------------------------------------------- fit reports


def coverage(runs: Sequence[ProfiledRun]) -> dict[str, Any]:
    """The range the runs cover (Advice warns when a scenario leaves it)."""
    return {
        "params_b": [min(r.params_b for r in runs), max(r.params_b for r in runs)],
        "num_gpus": [min(r.num_gpus for r in runs), max(r.num_gpus for r in runs)],
        "seq_len": [min(r.seq_len for r in runs), max(r.seq_len for r in runs)],
        "gpus": sorted({r.gpu for r in runs}),
        "stacks": sorted({stack_label(r) for r in runs}),
    }


def stale_calibration_warning(calibration: Calibration) -> str | None:
    """A note when the calibration was fitted for an earlier estimator format (its numbers may shift)."""
    if calibration.fitted_format >= FORMAT_VERSION:
        return None
    return (
        f"The calibration '{calibration.name}' was fitted by an earlier estimator (format {calibration.fitted_format}; "
        f"this one is format {FORMAT_VERSION}, which adds each software stack's attention kernel, tensor-parallel "
        "overlap and per-layer FSDP prefetch): its predictions are less reliable than its report says. Upload its "
        "runs again to refit it."
    )


def coverage_warnings(
    calibration: Calibration, *, params_b: float, num_gpus: Sequence[int], seq_len: int, gpu: str
) -> list[str]:
    """Where a prediction leaves the range the calibration's runs cover (its report's ``coverage``): model size,
    GPU count, sequence length, GPU type. Empty for a calibration without a coverage record."""
    cov = calibration.report.get("coverage") or {}
    out: list[str] = []
    name = calibration.name
    for label, value, key, unit in (
        ("model size", params_b, "params_b", "B parameters"),
        ("sequence", seq_len, "seq_len", " tokens"),
    ):
        span = cov.get(key)
        if span and not span[0] <= value <= span[1]:
            # One size of runs reads "the 8B parameters", not "the 8-8B parameters" (a new user's read).
            covered = f"{span[0]:g}{unit}" if span[0] == span[1] else f"{span[0]:g}-{span[1]:g}{unit}"
            out.append(
                f"The {label} ({value:g}{unit}) is outside the {covered} the calibration "
                f"'{name}' was fitted on: the prediction extrapolates."
            )
    span = cov.get("num_gpus")
    if span and num_gpus:
        beyond = [n for n in num_gpus if not span[0] <= n <= span[1]]
        if beyond:
            # Grouped as advisor.formatting groups counts (the estimator cannot import it): "65,536".
            listed = ", ".join(f"{n:,}" for n in beyond[:5]) + (", ..." if len(beyond) > 5 else "")
            covered = f"{span[0]:,} GPUs" if span[0] == span[1] else f"{span[0]:,}-{span[1]:,} GPUs"
            out.append(
                f"Sizes of {listed} GPUs are outside the {covered} the calibration '{name}' was "
                "fitted on: their scaling is extrapolated."
            )
    gpus_run = cov.get("gpus")
    if gpus_run and gpu not in gpus_run:
        out.append(f"The calibration '{name}' has no run on {gpu} (it covers {', '.join(gpus_run)}).")
    return out


def scaling_report(runs: Sequence[ProfiledRun], measured: np.ndarray, predicted: np.ndarray) -> dict[str, Any]:
    """Measured vs predicted scaling efficiency by GPU count (per config family with several counts: per-GPU tokens/s
    relative to its smallest count) and the trend of log(predicted/measured) with log2(GPUs), flagged when the error
    changes by more than TREND_FLAG_PER_DOUBLING per doubling."""
    labels = np.array([config_family(r) for r in runs], dtype=object)
    gpus = np.array([r.num_gpus for r in runs], dtype=np.float64)
    curves = []
    for label in sorted(set(labels)):
        sel = np.flatnonzero(labels == label)
        if np.unique(gpus[sel]).size < 2:
            continue
        sel = sel[np.argsort(gpus[sel], kind="stable")]
        ref = sel[0]
        curves.append(
            {
                "config_family": str(label),
                "gpus": gpus[sel].astype(int).tolist(),
                "measured": (measured[sel] / gpus[sel] / (measured[ref] / gpus[ref])).tolist(),
                "predicted": (predicted[sel] / gpus[sel] / (predicted[ref] / gpus[ref])).tolist(),
            }
        )
    log_error = np.log(predicted / measured)
    doubling = np.log2(gpus)
    slope = float(np.polyfit(doubling, log_error, 1)[0]) if np.unique(doubling).size > 1 else 0.0
    return {
        "scaling_efficiency": curves,
        "residual_trend_per_doubling": slope,
        "residual_trend_flagged": bool(abs(slope) > TREND_FLAG_PER_DOUBLING),
    }


def low_mfu_rows(runs: Sequence[ProfiledRun], measured: np.ndarray) -> np.ndarray:
    """Indices of the runs measured below LOW_MEASURED_MFU (``low_mfu_warnings``)."""
    return np.flatnonzero(measured_mfu(run_queries(runs), measured) < LOW_MEASURED_MFU)


def low_mfu_warnings(runs: Sequence[ProfiledRun], measured: np.ndarray) -> list[str]:
    """One warning naming the runs whose measured MFU is below LOW_MEASURED_MFU (empty when none): far below any
    published run, most likely a per-GPU throughput given as the whole job's."""
    mfu = measured_mfu(run_queries(runs), measured)
    low = low_mfu_rows(runs, measured)
    if low.size == 0:
        return []
    listed = ", ".join(f"row {runs[i].row} ({mfu[i]:.2%})" for i in low[:5]) + (", ..." if low.size > 5 else "")
    return [
        f"{low.size} run(s) measured below {LOW_MEASURED_MFU:.0%} MFU, far below any of the published runs the "
        f"project ships (lowest {LOWEST_PUBLISHED_MFU:.1%}): {listed}. Is tokens_per_s the throughput of one GPU "
        "rather than the whole job's (or step_time_s per micro-batch)? The fit treats them as measured."
    ]


def held_out_warning(*, name: str, report: Mapping[str, Any]) -> str | None:
    """A warning when the calibration ``name`` (its fit ``report``) misses its own held-out runs by a median above
    UNRELIABLE_HELD_OUT_MEDIAN_APE: its predictions (and the bands built from the same errors) are not to be relied
    on."""
    median = report.get("loo_median_ape")
    if median is None or median <= UNRELIABLE_HELD_OUT_MEDIAN_APE:
        return None
    return (
        f"The calibration '{name}' misses its own held-out runs by a median {median:.0%} "
        f"(above {UNRELIABLE_HELD_OUT_MEDIAN_APE:.0%}): its predictions are unreliable. Check its runs' units "
        "(tokens_per_s of the whole job) or use the default calibration."
    )


def baseline_warning(*, name: str, report: Mapping[str, Any]) -> str | None:
    """A warning when the calibration misses its own held-out runs by a larger median than the constant-MFU baseline
    held out on the same folds (reference/estimator.md: any calibrated model must beat it on runs it was not fitted
    on)."""
    median = report.get("loo_median_ape")
    base = ((report.get("baseline") or {}).get("loo") or {}).get("median_ape")
    if median is None or base is None or not median > base:
        return None
    return (
        f"The calibration '{name}' misses its own held-out runs by a median {median:.1%}, more than the constant-MFU "
        f"baseline's {base:.1%} on the same runs: assuming each GPU keeps the median MFU measured on it does better "
        "than its model, so its predictions and band rest on a model that does not describe these runs. Check them "
        "for mixed setups, or add runs of more sizes."
    )


def prior_warning(*, name: str, report: Mapping[str, Any]) -> str | None:
    """A warning when the calibration a user's calibration refines (``prior_on_held_out``: the default, as it is)
    predicts the user's own runs better than the refinement held out on them, on the SAME runs: a smaller median AND
    mean absolute error, and, where the report has the prior's prediction per run, a one-sided paired Wilcoxon
    signed-rank test of the per-run errors below PRIOR_BETTER_LEVEL (:func:`prior_comparison`). The median alone
    told three nanotron teams to keep the default (5 runs: median 4.7% vs 6.4%, but mean 18.1% vs 6.0%) that each
    team's own fit beat on its held-back runs (median 6.7% vs 17.0%); three paired runs cannot show either better
    (p >= 1/8)."""
    comparison = prior_comparison(report)
    if comparison is None or not comparison["prior_better"]:
        return None
    refined = (report.get("prior_on_held_out") or {}).get("name") or "the calibration it refines"
    paired = ""
    if comparison["p_value"] is not None:
        paired = (
            f", and on {comparison['prior_better_runs']} of {comparison['runs']} runs (one-sided paired Wilcoxon "
            f"signed-rank p = {comparison['p_value']:.3f}, below {PRIOR_BETTER_LEVEL:.0%})"
        )
    return (
        f"The calibration '{refined}' predicts these runs better: median {comparison['prior_median_ape']:.1%} vs "
        f"{comparison['median_ape']:.1%} for '{name}', mean {comparison['prior_mape']:.1%} vs "
        f"{comparison['mape']:.1%}{paired} ({held_out_name(report)}; '{refined}' as it is, on the same runs); keep "
        "using it. Refining on these runs moves the cluster parameters in a way that does not carry over to the runs "
        "each fold left out."
    )


def prior_comparison(report: Mapping[str, Any]) -> dict[str, Any] | None:
    """The refinement's held-out errors beside its prior's on the same runs (None without both): median and mean
    absolute percentage error of each, and, when ``prior_on_held_out`` has the prior's prediction per run (in the
    order of ``residuals``), how many runs the prior predicts better and the one-sided paired Wilcoxon signed-rank
    p-value of "the refinement's per-run error is larger" (exact for small samples). ``prior_better``: the rule of
    :func:`prior_warning`."""
    prior = report.get("prior_on_held_out") or {}
    figures = [report.get("loo_median_ape"), report.get("loo_mape"), prior.get("median_ape"), prior.get("mape")]
    if any(value is None for value in figures):
        return None
    median, mean, prior_median, prior_mean = (float(value or 0.0) for value in figures)
    out: dict[str, Any] = {
        "median_ape": median,
        "mape": mean,
        "prior_median_ape": prior_median,
        "prior_mape": prior_mean,
        "p_value": None,
    }
    paired = _paired_errors(report.get("residuals") or [], prior.get("predicted_tokens_per_s"))
    if paired is not None:
        own, by_prior = paired
        differences = own - by_prior
        out["runs"], out["prior_better_runs"] = int(own.size), int(np.count_nonzero(differences > 0))
        out["p_value"] = float(wilcoxon(differences, alternative="greater").pvalue) if np.any(differences != 0) else 1.0
    significant = out["p_value"] is None or out["p_value"] < PRIOR_BETTER_LEVEL
    out["prior_better"] = bool(prior_median < median and prior_mean < mean and significant)
    return out


def _paired_errors(rows: Sequence[Mapping[str, Any]], by_prior: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """Per run (those with a finite measurement and both predictions): the refinement's held-out and the prior's
    absolute percentage errors; None when the prior's per-run predictions are missing or do not match the rows."""
    if not isinstance(by_prior, list | tuple) or len(by_prior) != len(rows) or not rows:
        return None
    measured = np.array([float(r.get("measured_tokens_per_s", np.nan)) for r in rows])
    held_out = np.array([float(r.get("predicted_tokens_per_s", np.nan)) for r in rows])
    prior = np.array([np.nan if v is None else float(v) for v in by_prior])
    ok = np.isfinite(measured) & np.isfinite(held_out) & np.isfinite(prior) & (measured > 0)
    if not ok.any():
        return None
    return np.abs(held_out[ok] / measured[ok] - 1.0), np.abs(prior[ok] / measured[ok] - 1.0)


def at_bound_warning(*, name: str, report: Mapping[str, Any]) -> str | None:
    """A warning naming the fitted parameters that sit at a bound of their range (``parameters``: free and
    ``at_bound``), for any calibration: the runs push them as far as the model allows, so the fit does not describe
    them with physical values and predictions elsewhere rest on the bound (a team's nvlink_eff at its 0.2 floor and
    fabric_eff at its 0.999 ceiling went unflagged)."""
    entries = [e for e in report.get("parameters") or [] if isinstance(e, Mapping) and e.get("free")]
    pinned = [e for e in entries if e.get("at_bound") and "fitted" in e]
    if not pinned:
        return None
    listed = ", ".join(
        f"{e['name']} {float(e['fitted']):.3f} ({_bound_side(e)}; prior {float(e['prior']):.3f})" for e in pinned
    )
    return (
        f"The calibration '{name}' has parameters pinned at a bound: {listed}. The runs push them as far as the model "
        "allows, so it does not describe these runs with physical values, and its predictions at sizes and layouts "
        "the runs do not cover rest on where the bound is, not on a measurement. Check the runs' layout columns, "
        "gpus_per_node and inter_node_gbps, or compare with the calibration it refines."
    )


def _bound_side(entry: Mapping[str, Any]) -> str:
    fitted, prior = float(entry["fitted"]), float(entry.get("prior", entry["fitted"]))
    return "its lower bound" if fitted < prior else "its upper bound" if fitted > prior else "a bound"


def trend_warning(*, name: str, report: Mapping[str, Any]) -> str | None:
    """A warning when the fit's error grows with the GPU count (``residual_trend_flagged``): the model does not
    reproduce how the runs scale, so sizes beyond (or between) them are off by more than the band says."""
    if not report.get("residual_trend_flagged"):
        return None
    slope = float(report.get("residual_trend_per_doubling") or 0.0)
    if slope > 0:
        way = "over-predicts the larger runs: they scale worse"
    else:
        way = "under-predicts the larger runs: they scale better"
    return (
        f"The calibration '{name}' {way} than it predicts (its error changes by {slope:+.1%} per doubling of GPUs, "
        f"flagged above {TREND_FLAG_PER_DOUBLING:.0%}; a knee the model does not capture, such as at the node "
        "boundary): its scaling to other sizes, and the per-GPU efficiency it shows there, are off by more than its "
        "band says."
    )


def flagged_band_warning(*, name: str, report: Mapping[str, Any]) -> str | None:
    """A note naming the held-out runs (``residuals`` marked ``flagged``) that the band leaves out."""
    rows = [r for r in report.get("residuals") or [] if r.get("flagged")]
    if not rows:
        return None
    listed = ", ".join(f"row {r.get('row')}" for r in rows[:5]) + (", ..." if len(rows) > 5 else "")
    return (
        f"The calibration '{name}' has {len(rows)} run(s) measured below {LOW_MEASURED_MFU:.0%} MFU ({listed}), "
        "left out of its P10-P90 band: their held-out errors would stretch it to cover a likely unit mistake. Its "
        "held-out error figures and its fit still include them; correct or remove them and upload again."
    )


def fit_report_warnings(*, name: str, report: Mapping[str, Any]) -> list[str]:
    """The warnings a fit derives from its own report (held-out miss, worse than the baseline, worse than the
    calibration it refines, parameters pinned at a bound, residual trend)."""
    rules = (held_out_warning, baseline_warning, prior_warning, at_bound_warning, trend_warning, flagged_band_warning)
    derived = (f(name=name, report=report) for f in rules)
    return [note for note in derived if note]


def fit_warnings(*, name: str, report: Mapping[str, Any]) -> list[str]:
    """What a calibration's fit says against its own use: the notes stored at fit time (runs far below any published
    MFU, merged duplicate rows) and those its report figures imply (``fit_report_warnings``, derived again so that
    calibrations stored before a rule existed get it too). Shown with the fit report and in every advice that uses
    it."""
    stored = [str(note) for note in report.get("warnings") or []]
    return list(dict.fromkeys([*stored, *fit_report_warnings(name=name, report=report)]))


def family_mfu_range(queries: Mapping[str, np.ndarray], measured: np.ndarray) -> dict[str, list[float]]:
    """[min, max] measured MFU per GPU family (predictions are capped at the family's max)."""
    mfu = measured_mfu(queries, measured)
    family = GPU_FAMILY[queries["gpu"]]
    return {FAMILIES[f]: [float(mfu[family == f].min()), float(mfu[family == f].max())] for f in np.unique(family)}


def family_precision_mfu_range(
    queries: Mapping[str, np.ndarray], measured: np.ndarray
) -> dict[str, dict[str, list[float]]]:
    """[min, max] measured MFU per GPU family and precision, each against its precision's peak (predictions in a
    precision are capped at its max: an fp8 run's MFU against the fp8 peak says nothing of a bf16 job's against the
    bf16 peak)."""
    mfu = measured_mfu(queries, measured)
    family = GPU_FAMILY[queries["gpu"]]
    table: dict[str, dict[str, list[float]]] = {}
    for f, p in sorted({(int(a), int(b)) for a, b in zip(family, queries["precision"], strict=True)}):
        rows = (family == f) & (queries["precision"] == p)
        table.setdefault(FAMILIES[f], {})[PRECISIONS[p]] = [float(mfu[rows].min()), float(mfu[rows].max())]
    return table


def fitted_stack_spread(params: Mapping[str, float]) -> float:
    """Spread (sd of log) of the fitted stack multipliers (0 with fewer than two)."""
    logs = [math.log(v) for k, v in params.items() if k.startswith(model.STACK_PREFIX)]
    return float(np.std(logs)) if len(logs) > 1 else 0.0


def _between_stack_sigma(params: Mapping[str, float], offsets: Mapping[str, float] | None = None) -> float:
    """tau, what an unknown stack may be off by: the larger of the fit's own random-effect width
    (fitting.STACK_PRIOR_LOG_WIDTH; the fitted multipliers' spread is shrunk toward it, so never above) and the
    spread the held-out stacks measured: the RMS over stacks of the leave-one-stack-out offsets (``stack_out_offsets``:
    one number per stack, so llm-foundry's 198 runs count once) scaled to the predictive spread of the NEXT stack from
    K measured ones (sqrt(1 + 1/K) times the t quantile with K degrees of freedom over the normal's: with 7 stacks the
    spread itself is known only to about a quarter)."""
    measured = _predictive_spread(list(offsets.values())) if offsets else 0.0
    return max(fitted_stack_spread(params), fitting.STACK_PRIOR_LOG_WIDTH, measured)


def _predictive_spread(offsets: Sequence[float]) -> float:
    """The spread (log sd) to expect for the NEXT group from K measured group offsets: their RMS times
    sqrt(1 + 1/K) times the t quantile with K degrees of freedom over the normal's."""
    k = len(offsets)
    rms = math.sqrt(float(np.mean(np.square(offsets))))
    return rms * math.sqrt(1 + 1 / k) * float(student_t.ppf(INTERVAL_QUANTILES[1], k)) / Z90


def family_borrow_offsets(problem: fitting.Problem, params: Mapping[str, float]) -> dict[str, float]:
    """Per calibrated GPU family: the median log(tokens/s predicted borrowing / predicted with its own fit) over its
    runs, where "borrowing" is what a family without runs gets (its efficiencies from the nearest other calibrated
    family, scaled by its own peaks: prediction.borrowed_families): the error of the product's borrowing rule, one
    number per family (a family's 198 runs count once)."""
    family_of = GPU_FAMILY[problem.queries["gpu"]]
    calibrated = sorted(k.removeprefix(model.FAMILY_PREFIX) for k in params if k.startswith(model.FAMILY_PREFIX))
    offsets: dict[str, float] = {}
    for name in calibrated:
        rows = np.flatnonzero(family_of == FAMILIES.index(name))
        others = [f for f in calibrated if f != name]
        if rows.size == 0 or not others:
            continue
        dropped = {
            k: v for k, v in params.items() if k not in (model.FAMILY_PREFIX + name, model.ATTENTION_PREFIX + name)
        }
        sub = problem.rows(rows)
        own = solve(sub.queries, model.unpack_parameters(params, FAMILIES), require_fit=False).tokens_per_s
        theta = model.unpack_parameters(dropped, FAMILIES, borrowed=borrowed_families(others))
        lent = solve(sub.queries, theta, require_fit=False).tokens_per_s
        ok = np.isfinite(own) & np.isfinite(lent) & (own > 0) & (lent > 0)
        if ok.any():
            offsets[name] = float(np.median(np.log(lent[ok] / own[ok])))
    return offsets


def stack_out_offsets(held: HeldOut) -> dict[str, float]:
    """Per held-out stack: the mean log(predicted/measured) of its runs when no run of it was in the fit."""
    log_error = np.log(held.predicted / held.measured)
    return {str(s): float(log_error[held.labels == s].mean()) for s in sorted(set(held.labels.tolist()))}


def unknown_stack_coverage(
    held: HeldOut,
    *,
    params: Mapping[str, float],
    band: Mapping[str, Any],
    base_log_errors: np.ndarray | None = None,
) -> dict[str, Any]:
    """Share of each held-out stack's runs inside the P10-P90 band an unknown stack gets (``band_multipliers``, as
    ``Calibration.interval``: the config-family-out errors ``base_log_errors`` convolved with tau), with tau computed
    WITHOUT that stack's offset, so no stack's band is widened by its own miss. Per stack, the mean over stacks (each
    stack weighted once), the share of runs and the median band width log(p90/p10)."""
    offsets = stack_out_offsets(held)
    share = {}
    width = []
    for stack in offsets:
        tau = _between_stack_sigma(params, {k: v for k, v in offsets.items() if k != stack})
        b = band_multipliers(band, base_log_errors, tau)
        sel = held.labels == stack
        ratio = held.measured[sel] / held.predicted[sel]
        share[stack] = float(np.mean((ratio >= b["p10_multiplier"]) & (ratio <= b["p90_multiplier"])))
        width += [math.log(b["p90_multiplier"] / b["p10_multiplier"])] * int(np.count_nonzero(sel))
    runs = {s: int(np.count_nonzero(held.labels == s)) for s in offsets}
    return {
        "per_stack": share,
        "mean_over_stacks": float(np.mean(list(share.values()))) if share else float("nan"),
        "share_of_runs": float(sum(share[s] * runs[s] for s in share) / max(sum(runs.values()), 1)),
        "median_log_width": float(np.median(width)) if width else float("nan"),
    }


def stack_config_families(runs: Sequence[ProfiledRun]) -> dict[str, int]:
    """Config families (twins together) per stack label in ``runs``: how many independent recipes pin each stack's
    effect."""
    families: dict[str, set[str]] = {}
    for run in runs:
        families.setdefault(stack_label(run), set()).add(config_family(run))
    return {stack: len(f) for stack, f in sorted(families.items())}


def _within_stack_sigma(runs: Sequence[ProfiledRun], measured: np.ndarray, predicted: np.ndarray) -> float:
    """Pooled sd of the in-sample log errors around each stack's mean: the per-run noise the fit assumes is
    fitting.LOSS_SCALE."""
    log_error = np.log(predicted / measured)
    labels = np.array([stack_label(run) for run in runs], dtype=object)
    centred = np.concatenate([log_error[labels == s] - log_error[labels == s].mean() for s in set(labels.tolist())])
    return float(np.sqrt(np.mean(centred**2)))


# --------------------------------------------------------------------------------------------------- public API


def _public_problem(runs: Sequence[ProfiledRun]) -> fitting.Problem:
    queries = run_queries(runs)
    return fitting.build_problem(queries, _check_runs(runs), names=fitting.parameter_names(queries))


# The lowest MFU measured by the 349 published runs the project ships: nanotron's 1.34B on 512 H100 (4.8%,
# unseen_runs_2.csv); public_runs.csv's lowest is 9.6% (llm-foundry 2.7B on 8 H100, FP8).
LOWEST_PUBLISHED_MFU: Final[float] = 0.048
# Below this a measured run is far outside anything published (the per-GPU-for-whole-job mistake divides by the GPU
# count: a 40% run on 64 GPUs reads 0.6%); warned, not refused, as a real run might be that slow.
LOW_MEASURED_MFU: Final[float] = 0.02
# Twice issue 13's bar for stacks the estimator was never fitted on (median 15%): above it the fit does not describe
# its own runs.
UNRELIABLE_HELD_OUT_MEDIAN_APE: Final[float] = 0.30


def fit(
    runs: Sequence[ProfiledRun],
    *,
    name: str,
    prior: Calibration | None = None,
    held_out: bool = True,
) -> Calibration:
    """Fit a calibration to ``runs`` (each needs tokens_per_s or step_time_s).

    Without ``prior``: the public fit (held-out folds when ``held_out``). With ``prior``: :func:`refine`."""
    if prior is not None:
        return refine(prior=prior, runs=runs, name=name, held_out=held_out)
    started = time.perf_counter()
    problem, x, solution, cases, held = _public_fit(runs)
    every = np.arange(problem.measured.size)
    in_sample = fitting.predict_rows(problem, x, every)
    params = problem.params(x)
    report: dict[str, Any] = {
        "runs": len(runs),
        "sources": sorted({run.source for run in runs}),
        "in_sample_mape": _errors(in_sample, problem.measured)["mape"],
        "in_sample_median_ape": _errors(in_sample, problem.measured)["median_ape"],
        "memory_model_misses": int(np.count_nonzero(~solution.fits_memory)),
        "loss": f"soft_l1 on log(predicted/measured tokens/s), scale {fitting.LOSS_SCALE} (the within-stack sigma), "
        f"unit weight per run, random stack effects of width {fitting.STACK_PRIOR_LOG_WIDTH}",
        "parameters": fitting.parameter_report(problem, cases, x),
        "held_at_prior": {
            n: "not identified by the runs and pushed to a bound by the fit: held at its physical prior" for n in held
        },
        "between_stack_log_sigma": _between_stack_sigma(params),
        "fitted_stack_log_spread": fitted_stack_spread(params),
        "within_stack_log_sigma": _within_stack_sigma(runs, problem.measured, in_sample),
        "stack_config_families": stack_config_families(runs),
        "family_mfu": family_mfu_range(problem.queries, problem.measured),
        "family_precision_mfu": family_precision_mfu_range(problem.queries, problem.measured),
        "coverage": coverage(runs),
        **scaling_report(runs, problem.measured, in_sample),
    }
    if held_out:
        report.update(_held_out_report(problem, runs, params))
    report["warnings"] = low_mfu_warnings(runs, problem.measured)
    report["fit_seconds"] = time.perf_counter() - started
    return Calibration(name=name, params=params, report=report)


def _public_fit(
    runs: Sequence[ProfiledRun],
) -> tuple[fitting.Problem, np.ndarray, Any, model.Cases, list[str]]:
    """The public fit: (problem with its final free set, parameters, layouts, their case table, parameters held)."""
    problem = _public_problem(runs)
    every = np.arange(problem.measured.size)
    x, solution = fitting.fit_rows(problem, every)
    cases = fitting.fixed_layout_cases(problem.queries, solution)
    # A parameter the runs do not identify that the fit still pushes to a bound is held at its physical prior (and the
    # report says so): otherwise it drifts wherever other misfits push it (communication "free" when nothing in the
    # data is communication-bound). Held-out folds keep the same free set.
    held = _unidentified_at_bounds(problem, cases, x)
    if held:
        problem = problem.freeing([n for n, f in zip(problem.names, problem.free, strict=True) if f and n not in held])
        x, solution = fitting.fit_rows(problem, every)
        cases = fitting.fixed_layout_cases(problem.queries, solution)
    return problem, x, solution, cases, held


def _unidentified_at_bounds(problem: fitting.Problem, cases: Any, x: np.ndarray) -> list[str]:
    entries = fitting.parameter_report(problem, cases, x)
    return [e["name"] for e in entries if e["free"] and e["at_bound"] and not e["moved_by_data"]]


def refine(
    *, prior: Calibration, runs: Sequence[ProfiledRun], name: str = "refined", held_out: bool = True
) -> Calibration:
    """A user's calibration: ``prior`` (the public fit) refined by ``runs`` of one cluster.

    Only CLUSTER_PARAMETERS may move (the cluster/stack efficiency, the fabric's and NVLink's effective bandwidth,
    the overlap), each only if the runs identify it (posterior sd below fitting.IDENTIFIED_RATIO of its prior width at
    the prior); the report's ``kept_at_prior`` names those the runs cannot move, with the reason. Held out
    (``loo_*``): each configuration predicted by a refinement without it, identical configurations (every column but
    the measurement and source) held out together so that a repeated run does not leak its own answer."""
    runs, merged = merge_duplicates(runs)
    measured = _check_runs(runs, merged=len(merged))
    queries = run_queries(runs)
    names = tuple(dict.fromkeys([*prior.params, *fitting.parameter_names(queries), *CLUSTER_PARAMETERS]))
    base = fitting.build_problem(queries, measured, names=names, prior=prior.params, widths=REFINE_WIDTHS)
    # Fit every cluster parameter, then keep free only those the runs pin down at that fit (judged at the fit, not at
    # the prior: a fabric whose cost the prior hides behind overlap only shows once overlap may move), and refit.
    candidates = base.freeing(CLUSTER_PARAMETERS)
    every = np.arange(measured.size)
    x_all, solution = fitting.fit_rows(candidates, every, starts=_refine_starts(candidates))
    cases = fitting.fixed_layout_cases(queries, solution)
    ratio = fitting.posterior_ratio(candidates, cases, x_all)
    identified = [
        n for n, r in zip(names, ratio, strict=True) if n in CLUSTER_PARAMETERS and r < fitting.IDENTIFIED_RATIO
    ]
    problem = candidates.freeing(identified)
    x, solution = fitting.fit_rows(problem, every, starts=_refine_starts(problem))
    in_sample = fitting.predict_rows(problem, x, every)
    params = {**prior.params, **problem.params(x)}
    report: dict[str, Any] = {
        "runs": len(runs),
        "duplicate_rows_merged": len(merged),
        "refines": prior.name,
        "sources": sorted({run.source for run in runs}),
        "in_sample_mape": _errors(in_sample, measured)["mape"],
        "in_sample_median_ape": _errors(in_sample, measured)["median_ape"],
        "memory_model_misses": int(np.count_nonzero(~solution.fits_memory)),
        "parameters": [p for p in fitting.parameter_report(problem, cases, x) if p["name"] in CLUSTER_PARAMETERS],
        "moved": identified,
        "kept_at_prior": {
            n: "the runs do not identify it (too few runs, or no sizes that exercise it): the prior value is kept"
            for n in CLUSTER_PARAMETERS
            if n not in identified
        },
        "family_mfu": _merged_mfu(prior, queries, measured),
        "family_mfu_cap": user_mfu_caps(prior, queries, measured),
        "family_precision_mfu": _merged_precision_mfu(prior, queries, measured),
        "family_precision_mfu_cap": user_precision_mfu_caps(prior, queries, measured),
        "family_mfu_cap_rule": "predictions are capped per GPU family at the higher of the prior's cap (the highest "
        "MFU of the family's public runs, or of the family it borrows from when it has none) and the best MFU of "
        f"these runs plus {USER_MFU_CAP_MARGIN:.0%}, so that a few runs of one cluster do not pin its predictions",
        "between_stack_log_sigma": prior.report.get("between_stack_log_sigma", fitting.STACK_PRIOR_LOG_WIDTH),
        "stack_config_families": prior.report.get("stack_config_families", {}),
        "coverage": coverage(runs),
        "scope": refine_scope(runs, base=prior.name),
        **scaling_report(runs, measured, in_sample),
    }
    refined = base_of(prior)
    if held_out:
        flagged = low_mfu_rows(runs, measured)
        report.update(_refine_held_out(problem, runs, measured, prior_name=prior.name, flagged=flagged))
        report["prediction_interval"] = stored_team_interval(report, refined)
    report["warnings"] = [
        *duplicate_warnings(merged),
        *low_mfu_warnings(runs, measured),
        *fit_report_warnings(name=name, report=report),
    ]
    return Calibration(name=name, params=params, report=report, base=refined)


def stored_team_interval(report: Mapping[str, Any], base: Calibration) -> dict[str, Any]:
    """The report's ``prediction_interval`` of a user's calibration: the generic band ``Calibration.interval`` gives
    it (:func:`team_band` with no stack spread), the raw 10th/90th percentiles of its held-out errors kept beside."""
    raw = dict(report["prediction_interval"])
    errors = held_out_log_errors(report)
    if errors is None:
        return raw
    return {
        **raw,
        **team_band(raw, errors, 0.0, base=base.interval()),
        "held_out_quantile_multipliers": [raw["p10_multiplier"], raw["p90_multiplier"]],
        "rule": f"the widest of the {INTERVAL_QUANTILES[0]:.0%}/{INTERVAL_QUANTILES[1]:.0%} percentiles of the "
        f"{errors.size} held-out log errors and their Student-t predictive interval ({errors.size - 1} degrees of "
        f"freedom)"
        + (
            f", and the band of '{base.name}' (fewer than {MIN_RUNS_OWN_BAND} held-out runs)"
            if errors.size < MIN_RUNS_OWN_BAND
            else ""
        ),
    }


def refine_scope(runs: Sequence[ProfiledRun], *, base: str) -> dict[str, Any]:
    """What a user's calibration predicts itself (``Calibration.covers``): the GPU families and stacks of its runs.
    Its cluster parameters are global in the model (cluster_eff scales every GPU's compute), so applied elsewhere a
    team's MI300X torchtitan runs moved every published H100, A100 and B200 run to 0.42-0.62x of the default."""
    return {
        "gpu_families": sorted({get_gpu(run.gpu).family for run in runs}),
        "stacks": sorted({stack_label(run) for run in runs}),
        "pairs": sorted({(get_gpu(run.gpu).family, stack_label(run)) for run in runs}),
        "base": base,
        "rule": "GPU family and stack pairs outside these runs are predicted with "
        f"'{base}', which this calibration refines, and its band; a job without a stack on these families is "
        "predicted by this calibration with the stacks' prior mean for its stack effect (name the stack to predict "
        "it as these runs were)",
    }


# What a prediction reads of a base calibration's report (band, caps, held-out figures, fit warnings).
_BASE_REPORT_KEYS: Final[tuple[str, ...]] = (
    "runs",
    "loo_mape",
    "loo_median_ape",
    "loo_p90_ape",
    "stack_out_mape",
    "stack_out_median_ape",
    "stack_out_p90_ape",
    "baseline",
    "prediction_interval",
    "between_stack_log_sigma",
    "stack_config_families",
    "family_mfu",
    "family_mfu_cap",
    "family_precision_mfu",
    "family_precision_mfu_cap",
    "coverage",
    "warnings",
)


def base_of(prior: Calibration) -> Calibration:
    """``prior`` as a user's calibration keeps it for what its runs do not cover: its parameters and the figures a
    prediction reads, the held-out residuals cut to the two numbers the band needs (a few kB, not the whole report)."""
    report = {k: prior.report[k] for k in _BASE_REPORT_KEYS if k in prior.report}
    report["residuals"] = [
        {k: r[k] for k in ("measured_tokens_per_s", "predicted_tokens_per_s") if k in r}
        for r in prior.report.get("residuals") or []
    ]
    return Calibration(name=prior.name, params=dict(prior.params), report=report, fitted_format=prior.fitted_format)


def _refine_starts(problem: fitting.Problem) -> list[dict[str, float]]:
    """Extra starting points for a refinement: a public fit that hides all communication (overlap near 1) has no
    gradient toward a slow fabric, so also start from fabrics delivering a third and a tenth of the prior, with half
    the overlap."""
    free = {n for n, f in zip(problem.names, problem.free, strict=True) if f}
    prior = problem.params(problem.prior)
    starts = []
    for share in REFINE_FABRIC_SHARES:
        start = {}
        if "fabric_eff" in free:
            start["fabric_eff"] = prior["fabric_eff"] * share
        if "overlap" in free:
            start["overlap"] = prior["overlap"] * 0.5
        if start:
            starts.append(start)
    return starts


def _merged_mfu(prior: Calibration, queries: Mapping[str, np.ndarray], measured: np.ndarray) -> dict[str, list[float]]:
    merged = {k: list(v) for k, v in (prior.report.get("family_mfu") or {}).items()}
    for family, (low, high) in family_mfu_range(queries, measured).items():
        old = merged.get(family, [low, high])
        merged[family] = [min(old[0], low), max(old[1], high)]
    return merged


def user_mfu_caps(prior: Calibration, queries: Mapping[str, np.ndarray], measured: np.ndarray) -> dict[str, float]:
    """The MFU cap per family of a user's calibration (the rule at USER_MFU_CAP_MARGIN). The public calibration's
    guarantee, no prediction above what a family's public runs ever measured, stays: a user's runs only raise a cap,
    never lower it. A family without public runs keeps the cap it had through its borrowed family instead of taking
    the user's own best as its ceiling, which pinned every prediction of it there."""
    prior_caps = prior.family_mfu_max()
    borrowing = prior.borrowed_families()
    # Families the runs do not touch keep the prior's cap; borrowing ones are left to borrow (family_mfu_max).
    caps = {family: cap for family, cap in prior_caps.items() if family not in borrowing}
    for family, (_, high) in family_mfu_range(queries, measured).items():
        caps[family] = max(prior_caps.get(family, 0.0), high * (1.0 + USER_MFU_CAP_MARGIN))
    return caps


def _merged_precision_mfu(
    prior: Calibration, queries: Mapping[str, np.ndarray], measured: np.ndarray
) -> dict[str, dict[str, list[float]]]:
    stored = prior.report.get("family_precision_mfu") or {}
    merged = {family: {p: list(v) for p, v in by.items()} for family, by in stored.items()}
    for family, by in family_precision_mfu_range(queries, measured).items():
        for precision, (low, high) in by.items():
            old = merged.setdefault(family, {}).get(precision, [low, high])
            merged[family][precision] = [min(old[0], low), max(old[1], high)]
    return merged


def user_precision_mfu_caps(
    prior: Calibration, queries: Mapping[str, np.ndarray], measured: np.ndarray
) -> dict[str, dict[str, float]]:
    """``user_mfu_caps`` per precision: the prior's cap in the precision, raised to the user's best MFU in it plus
    USER_MFU_CAP_MARGIN; families and precisions the runs do not touch keep the prior's."""
    prior_caps = prior.precision_mfu_caps()
    borrowing = prior.borrowed_families()
    caps = {f: dict(by) for f, by in prior_caps.items() if f not in borrowing}
    for family, by in family_precision_mfu_range(queries, measured).items():
        for precision, (_, high) in by.items():
            own = prior_caps.get(family, {}).get(precision, 0.0)
            caps.setdefault(family, {})[precision] = max(own, high * (1.0 + USER_MFU_CAP_MARGIN))
    return caps


def refine_folds(runs: Sequence[ProfiledRun]) -> tuple[np.ndarray, str]:
    """Held-out folds of a refinement: one per configuration for up to REFINE_MAX_FOLDS runs (a handful of one job at
    several sizes; identical configurations, repeats of one measurement, held out together); above that, one fold per
    config family (twins together; families dealt round-robin into REFINE_MAX_FOLDS folds when there are more) where
    there are at least MIN_FAMILY_FOLDS families, else one per configuration again: with two families each fold
    refitted on the other model size alone (14 runs of 1.34B and 8.86B: held-out median 12.6%, where the refinement
    on every run predicted held-back 3.57B and 80B runs at 6.8%)."""
    if len(runs) <= REFINE_MAX_FOLDS:
        return configuration_folds(runs), "leave-one-configuration-out (identical configurations held out together)"
    labels = [config_family(run) for run in runs]
    families = sorted(set(labels))
    if len(families) < MIN_FAMILY_FOLDS:
        return configuration_folds(runs), (
            f"leave-one-configuration-out ({len(families)} config famil{'y' if len(families) == 1 else 'ies'}: "
            "leaving one out would refit on one or none; identical configurations held out together)"
        )
    index = {label: i % REFINE_MAX_FOLDS for i, label in enumerate(families)}
    folds = np.array([index[label] for label in labels])
    if len(families) <= REFINE_MAX_FOLDS:
        return folds, "leave-one-config-family-out (twins held out together)"
    return folds, f"{REFINE_MAX_FOLDS}-fold by config family (twins held out together)"


def configuration_folds(runs: Sequence[ProfiledRun]) -> np.ndarray:
    """One fold per distinct ``configuration``, numbered in order of first appearance."""
    labels = [configuration(run) for run in runs]
    index = {label: i for i, label in enumerate(dict.fromkeys(labels))}
    return np.array([index[label] for label in labels])


def _refine_held_out(
    problem: fitting.Problem,
    runs: Sequence[ProfiledRun],
    measured: np.ndarray,
    *,
    prior_name: str,
    flagged: np.ndarray | None = None,
) -> dict[str, Any]:
    folds, how = refine_folds(runs)
    count = len(runs)
    if np.unique(folds).size > REFINE_MAX_FOLDS * 10:
        # One configuration per fold (fewer than MIN_FAMILY_FOLDS families) over many runs: the first runs only.
        count = REFINE_MAX_FOLDS * 10
        how = f"leave-one-configuration-out (first {count} runs; identical configurations held out together)"
    loo, baseline, from_prior = _fold_predictions(problem, measured, folds, count)
    if from_prior:
        how += "; a configuration with no other run to refine from is predicted by the prior calibration"
    left_out = np.zeros(count, dtype=bool)
    if flagged is not None:
        left_out[flagged[flagged < count]] = True
    report = _refine_held_out_report(runs[:count], measured[:count], loo[:count], baseline[:count], how, left_out)
    # The prior as it is predicts every run without seeing it refitted: what keeping it would give on the same runs.
    by_prior = fitting.predict_rows(problem, problem.prior, np.arange(count))
    report["prior_on_held_out"] = {
        "name": prior_name,
        "how": "the calibration refined, as it is (not refitted on these runs), on the same runs",
        **_errors(by_prior, measured[:count]),
        # Per run, in the order of ``residuals``: the paired comparison of prior_warning.
        "predicted_tokens_per_s": by_prior.tolist(),
    }
    return report


def _fold_predictions(
    problem: fitting.Problem, measured: np.ndarray, folds: np.ndarray, count: int
) -> tuple[np.ndarray, np.ndarray, bool]:
    """(held-out tokens/s, constant-MFU baseline, whether the prior answered a fold) for the first ``count`` runs:
    each fold predicted by a refinement on every other run. A fold with no other run (every run one configuration)
    is predicted by the prior itself, which is what refining from no runs gives; its baseline has nothing to fit."""
    every = np.arange(measured.size)
    loo = np.full(measured.size, np.nan)
    baseline = np.full(measured.size, np.nan)
    starts = _refine_starts(problem)
    from_prior = False
    for fold in np.unique(folds[:count]):
        held = folds == fold
        target = every[held & (every < count)]
        if held.all():
            x, from_prior = problem.prior, True
        else:
            x, _ = fitting.fit_rows(problem, every[~held], starts=starts)
            baseline[target] = naive_mfu_baseline(problem.queries, measured, ~held)[target]
        loo[target] = fitting.predict_rows(problem, x, target)
    return loo, baseline, from_prior


def _refine_held_out_report(
    runs: Sequence[ProfiledRun],
    measured: np.ndarray,
    loo: np.ndarray,
    baseline: np.ndarray,
    how: str,
    left_out: np.ndarray,
) -> dict[str, Any]:
    """The held-out figures of a refinement. Runs ``left_out`` (flagged by the fit as implausible: low_mfu_rows) are
    marked ``flagged`` in ``residuals`` and do not make the band (prediction_interval, held_out_log_errors): one
    per-GPU figure entered as the whole job's made a band of x0.018-1.331."""
    loo_errors = _errors(loo, measured)
    gpus = np.array([run.gpu for run in runs])
    band_rows = ~left_out if np.count_nonzero(~left_out) else np.ones_like(left_out)
    residuals = _residual_rows(runs, measured, loo)
    for i in np.flatnonzero(left_out):
        residuals[i]["flagged"] = f"measured below {LOW_MEASURED_MFU:.0%} MFU: left out of the band"
    return {
        "held_out": f"{how}; each refinement from the prior calibration, same starting points as the fit",
        "loo_mape": loo_errors["mape"],
        "loo_median_ape": loo_errors["median_ape"],
        "loo_p90_ape": loo_errors["p90_ape"],
        "per_gpu": {
            gpu: {"runs": int(np.count_nonzero(gpus == gpu)), **_errors(loo[gpus == gpu], measured[gpus == gpu])}
            for gpu in sorted(set(gpus))
        },
        "baseline": {"name": "constant MFU per GPU and precision", "loo": _errors(baseline, measured)},
        "prediction_interval": _interval(
            measured[band_rows], loo[band_rows], f"{how} log errors of tokens/s (runs the fit flags left out)"
        ),
        "residuals": residuals,
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
    keys = ("runs", "loo_mape", "loo_median_ape", "loo_p90_ape", "stack_out_median_ape", "fit_seconds")
    print(json.dumps({k: calibration.report.get(k) for k in keys}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
