"""Calibration pages: upload profiled runs (CSV), read the fit report, make a calibration the active one."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from advisor.calibrations import (
    CalibrationFitFailed,
    CalibrationNotReady,
    FitOverBudget,
    TooManyQueuedFits,
    active_calibration_id,
    calibration_submit,
    calibration_visible_to,
    calibrations_visible_to,
    held_out_accuracy,
    with_measurement_errors,
)
from advisor.charts import chart_residuals, chart_scaling_efficiency
from advisor.formatting import percent
from advisor.models import Calibration
from advisor.runs_csv import TooManyColumns, TooManyRows, read_runs_text
from advisor.web.presenters import held_out_words
from advisor.web.serving_calibration import serving_calibration_report
from core.auth import signed_in_user
from core.queueing import QueueUnavailable
from estimator.calibrate import fit_warnings, held_out_name, load_default, prior_warning
from estimator.runs import RunValidationError

MAX_ERRORS_SHOWN = 20
# How often a page showing a fit in progress reloads itself: a 240-run fit takes tens of seconds.
FIT_POLL_S = 5


class CalibrationUploadForm(forms.Form):
    name = forms.CharField(
        label="Name", max_length=200, help_text="How this calibration is listed, e.g. 'our H100 runs'."
    )
    runs = forms.FileField(
        label="Profiled runs (CSV)",
        help_text="One row per measured run; columns as in DESIGN.md (gpu, num_gpus, params_b, seq_len, "
        "global_batch, tokens_per_s or step_time_s, ...).",
    )

    def clean_runs(self) -> str:
        upload = self.cleaned_data["runs"]
        if upload.size > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            raise forms.ValidationError(f"The file is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 1024} KiB.")
        try:
            return upload.read().decode("utf-8-sig")
        except UnicodeDecodeError:
            raise forms.ValidationError("The file is not UTF-8 text; export the CSV as UTF-8.") from None


@login_required
@require_http_methods(["GET", "POST"])
def calibration_list(request: HttpRequest) -> HttpResponse:
    form = CalibrationUploadForm()
    row_errors: list[str] = []
    status = 200
    if request.method == "POST":
        form = CalibrationUploadForm(request.POST, request.FILES)
        if form.is_valid():
            try:
                try:
                    runs = read_runs_text(
                        form.cleaned_data["runs"],
                        max_rows=settings.MAX_UPLOAD_ROWS,
                        max_extra_columns=settings.MAX_EXTRA_COLUMNS,
                    )
                except RunValidationError as error:
                    raise with_measurement_errors(error) from None
                except TooManyRows:
                    raise forms.ValidationError(f"At most {settings.MAX_UPLOAD_ROWS} rows per upload.") from None
                except TooManyColumns as error:
                    raise forms.ValidationError(str(error)) from None
                owner = signed_in_user(request)
                calibration = calibration_submit(owner=owner, name=form.cleaned_data["name"], runs=runs)
            except RunValidationError as error:
                row_errors = [str(e) for e in error.errors[:MAX_ERRORS_SHOWN]]
                if len(error.errors) > MAX_ERRORS_SHOWN:
                    row_errors.append(f"... and {len(error.errors) - MAX_ERRORS_SHOWN} more")
                form.add_error("runs", f"{len(error.errors)} problem(s) in the file; see the list below.")
            except CalibrationFitFailed as error:
                form.add_error("runs", f"The runs could not be fitted: {error.reason}")
            except (forms.ValidationError, ValueError) as error:
                form.add_error("runs" if isinstance(error, forms.ValidationError) else "name", str(error))
            except (QueueUnavailable, TooManyQueuedFits) as error:
                form.add_error(None, str(error))
            except FitOverBudget as error:
                form.add_error("runs", str(error))
            else:
                if calibration.state == Calibration.State.READY:
                    messages.success(request, f"Fitted “{calibration.name}” on {calibration.runs} runs.")
                else:
                    messages.info(request, f"“{calibration.name}” ({calibration.runs} runs) is being fitted.")
                return redirect("calibration-detail", calibration_id=calibration.pk)
        status = 400
    context = {
        "form": form,
        "row_errors": row_errors,
        "calibrations": [
            {"row": c, "loo_mape": _pct(c.loo_mape), "held_out": _held_out(c)}
            for c in calibrations_visible_to(user=signed_in_user(request))
        ],
        "active_id": active_calibration_id(user=signed_in_user(request)),
        "serving": serving_calibration_report(),
    }
    return render(request, "calibrations/list.html", context, status=status)


def _own_or_default(request: HttpRequest, calibration_id: int) -> Calibration:
    try:
        return calibration_visible_to(user=signed_in_user(request), calibration_id=calibration_id)
    except Calibration.DoesNotExist:
        raise Http404("No such calibration") from None


# The pages' errors and shares, to one decimal (formatting.percent: "n/a" for none, never 100% for 0.9996).
_pct = functools.partial(percent, digits=1)


def _held_out(calibration: Calibration) -> dict[str, str] | None:
    """The held-out error the planner, the PDF and the workbook print for a scenario naming no stack, labelled, beside
    the constant-MFU guess held out the same way (advisor.calibrations.held_out_accuracy); None without one."""
    figures = held_out_accuracy(row=calibration)
    if figures["held_out_median_ape"] is None:
        return None
    baseline = figures["baseline_held_out_median_ape"]
    return {
        "words": held_out_words(figures["held_out"]),
        "median_ape": _pct(figures["held_out_median_ape"]),
        "baseline": _pct(baseline) if baseline is not None else "",
    }


def _run_key(row: Any) -> tuple[str, int, float]:
    """A residual row's run as the shipped public runs list it: GPU, GPU count and measured tokens/s (an upload of a
    public run repeats all three; a different run agreeing on all three is not plausible)."""
    return str(row.get("gpu", "")), int(row.get("num_gpus") or 0), float(row.get("measured_tokens_per_s") or 0.0)


def _ape(rows: list[Any]) -> list[float]:
    return sorted(abs(float(r["predicted_tokens_per_s"]) / float(r["measured_tokens_per_s"]) - 1) for r in rows)


def prior_in_fit(*, residuals: list[Any], prior: Calibration | Any) -> dict[str, Any] | None:
    """Which of a user's held-out runs are in the fit of the calibration it refines (so the prior "as it is" is
    in-sample on them), and the prior's own held-out error on those runs from its report's held-out residuals; None
    when none are. A new user's probe (F9): 13 public runs uploaded, held-out 3.5% was set beside the default's
    in-sample 3.1% "on the same runs" without a word, and read as the upload making it worse."""
    report = getattr(prior, "report", None) or {}
    held_out = {_run_key(r): r for r in report.get("residuals") or [] if r.get("measured_tokens_per_s")}
    shared = [held_out[_run_key(r)] for r in residuals if _run_key(r) in held_out]
    usable = [r for r in shared if r.get("predicted_tokens_per_s")]
    if not shared:
        return None
    errors = _ape(usable)
    return {
        "runs": len(shared),
        "of": len(residuals),
        "method": held_out_name(report),
        "mape": _pct(sum(errors) / len(errors)) if errors else None,
        "median_ape": _pct(float(np.median(errors))) if errors else None,
    }


def _prior_figures(prior: dict[str, Any], residuals: list[Any]) -> dict[str, Any] | None:
    """The prior "as it is" on the user's runs, with which of them are in its own fit (``prior_in_fit``)."""
    if prior.get("median_ape") is None:
        return None
    shipped = load_default()
    in_fit = prior_in_fit(residuals=residuals, prior=shipped) if prior.get("name") == shipped.name else None
    return {
        "name": prior.get("name"),
        "mape": _pct(prior.get("mape")),
        "median_ape": _pct(prior["median_ape"]),
        "in_fit": in_fit,
    }


def fit_report(calibration: Calibration) -> dict[str, Any]:
    """What the fit report page prints, read from the stored calibration document."""
    report = (calibration.document or {}).get("report") or {}
    per_gpu = [
        {
            "gpu": gpu,
            "runs": values.get("runs"),
            "mape": _pct(values.get("mape")),
            "median_ape": _pct(values.get("median_ape")),
            "p90_ape": _pct(values.get("p90_ape")),
        }
        for gpu, values in sorted((report.get("per_gpu") or {}).items())
    ]
    residuals = report.get("residuals") or []
    points = [
        (float(r["measured_tokens_per_s"]), float(r["predicted_tokens_per_s"]), str(r.get("gpu", "")))
        for r in residuals
        if r.get("measured_tokens_per_s") and r.get("predicted_tokens_per_s")
    ]
    baseline = (report.get("baseline") or {}).get("loo") or {}
    prior = report.get("prior_on_held_out") or {}
    return {
        "runs": calibration.runs,
        "held_out_name": held_out_name(report),
        "held_out_method": report.get("held_out") or "",
        "loo_mape": _pct(calibration.loo_mape),
        "loo_median_ape": _pct(report.get("loo_median_ape")),
        "loo_p90_ape": _pct(report.get("loo_p90_ape")),
        "in_sample_mape": _pct(report.get("in_sample_mape")),
        "baseline_mape": _pct(baseline.get("mape")) if baseline.get("mape") is not None else None,
        "held_out": _held_out(calibration),
        "baseline_median_ape": _pct(baseline.get("median_ape")),
        "prior": _prior_figures(prior, residuals),
        "per_gpu": per_gpu,
        "chart": chart_residuals(points=points) if points else None,
        "sources": report.get("sources") or [],
        "warnings": fit_warnings(name=calibration.name, report=report),
        **_refinement_report(report),
    }


def _pct_list(values: Any) -> list[str]:
    return [_pct(value) for value in values or []]


def _table(records: Any) -> dict[str, Any] | None:
    """A list of flat dicts (e.g. the fitted parameters) as columns (keys in first-seen order) and rows."""
    if not isinstance(records, list) or not all(isinstance(record, dict) for record in records) or not records:
        return None
    columns = list(dict.fromkeys(key for record in records for key in record))
    return {"columns": columns, "rows": [[_cell(record.get(column)) for column in columns] for record in records]}


def _cell(value: Any) -> str:
    """A report value as table text: names as they are (an outsider's probe: a number filter blanked them), yes/no,
    numbers to 4 significant digits."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{value:.4g}"
    return str(value)


def _refinement_report(report: dict[str, Any]) -> dict[str, Any]:
    """What a refining fit adds, each only when the stored report has it: measured vs predicted scaling efficiency by
    GPU count, the residual trend with size, the parameters (which moved, which kept the prior, and why), the range
    the runs cover."""
    scaling = [
        {
            "family": curve.get("config_family", ""),
            "rows": [
                {"gpus": gpus, "measured": measured, "predicted": predicted}
                for gpus, measured, predicted in zip(
                    curve.get("gpus") or [],
                    _pct_list(curve.get("measured")),
                    _pct_list(curve.get("predicted")),
                    strict=False,
                )
            ],
        }
        for curve in report.get("scaling_efficiency") or []
        if isinstance(curve, dict)
    ]
    curves = [c for c in report.get("scaling_efficiency") or [] if isinstance(c, dict)]
    trend = report.get("residual_trend_per_doubling")
    flagged = bool(report.get("residual_trend_flagged"))
    raw_coverage = report.get("coverage")
    coverage: dict[str, Any] = raw_coverage if isinstance(raw_coverage, dict) else {}
    return {
        "scaling": scaling,
        "scaling_chart": chart_scaling_efficiency(curves=curves) if scaling else None,
        # log(predicted/measured) per doubling of GPUs: about the fractional error it adds per doubling.
        "trend": None if trend is None else {"per_doubling": _pct(trend), "flagged": flagged},
        "parameters": _table(report.get("parameters")),
        "moved": list(report.get("moved") or []),
        "kept_at_prior": sorted((report.get("kept_at_prior") or {}).items()),
        "coverage": [(key, value) for key, value in coverage.items()],
        "refines": report.get("refines"),
    }


@login_required
@require_GET
def calibration_detail(request: HttpRequest, calibration_id: int) -> HttpResponse:
    calibration = _own_or_default(request, calibration_id)
    context = {
        "calibration": calibration,
        "report": fit_report(calibration),
        "is_active": active_calibration_id(user=signed_in_user(request)) == calibration.pk,
        "refresh_s": FIT_POLL_S,
    }
    return render(request, "calibrations/detail.html", context)


@require_GET
def calibration_serving(request: HttpRequest) -> HttpResponse:
    """The shipped serving calibration, read-only. Open to everyone, as the inference results that cite it are."""
    return render(request, "calibrations/serving.html", {"report": serving_calibration_report()})


@login_required
@require_POST
def calibration_activate(request: HttpRequest, calibration_id: int) -> HttpResponse:
    calibration = _own_or_default(request, calibration_id)
    from advisor.calibrations import calibration_activate as activate

    try:
        activate(user=signed_in_user(request), calibration=calibration)
    except CalibrationNotReady as error:
        # The service's reason says it whole ("'big' cannot be activated: its fit failed").
        messages.error(request, f"{str(error).removeprefix('calibration: ')}.")
    else:
        messages.success(request, f"Your scenarios now use “{calibration.name}”.")
        report = (calibration.document or {}).get("report") or {}
        if (worse := prior_warning(name=calibration.name, report=report)) is not None:
            messages.warning(request, worse)
    return redirect("calibration-detail", calibration_id=calibration.pk)
