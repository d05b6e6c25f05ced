"""The serving calibration: the inference throughput fit shipped with the estimator
(estimator/data/inference/calibration.json), which every inference Advice cites. It is read-only: it is not a stored
Calibration row, users cannot refit or activate it, and the page only prints its document."""

from __future__ import annotations

import functools
from typing import Any

from django.urls import reverse

from advisor.formatting import percent
from estimator.inference.fit import InferenceCalibration, default_calibration

# The pages' errors and shares, to one decimal (formatting.percent: "n/a" for none, never 100% for 0.9996).
_pct = functools.partial(percent, digits=1)


def _number(value: Any) -> str:
    return "" if value is None else f"{float(value):.4g}"


def _parameter_rows(calibration: InferenceCalibration) -> list[dict[str, str]]:
    """One row per fitted parameter: the prior it started from (and where that came from), the fitted value, bounds,
    and whether the profiled runs moved it."""
    return [
        {
            "name": str(entry.get("name", "")),
            "fitted": _number(entry.get("fitted")),
            "prior": f"{_number(entry.get('prior'))} ± {_number(entry.get('prior_width'))}",
            "bounds": f"{_number(entry.get('lower'))} to {_number(entry.get('upper'))}",
            "moved": "yes" if entry.get("moved_by_data") else "no (kept near the prior)",
            "at_bound": "yes" if entry.get("at_bound") else "no",
            "prior_source": str(entry.get("prior_source", "")),
        }
        for entry in calibration.parameters
    ]


def _latency_check(calibration: InferenceCalibration) -> dict[str, str] | None:
    check = calibration.latency_check
    if not check:
        return None
    return {
        "points": str(check.get("points", "")),
        "ttft_within": _pct(check.get("ttft_within")),
        "ttft_share": _pct(check.get("ttft_share_within")),
        "ttft_median": _pct(check.get("ttft_median_ape")),
        "tpot_within": _pct(check.get("tpot_within")),
        "tpot_share": _pct(check.get("tpot_share_within")),
        "tpot_median": _pct(check.get("tpot_median_ape")),
        "source": str(check.get("source", "")),
    }


def serving_calibration_report() -> dict[str, Any]:
    """What the serving calibration's page and the calibrations list print: name, runs, held-out error beside the
    constant-fraction baseline held out the same way, the fitted table, the latency check, where it came from."""
    calibration = default_calibration()
    return {
        "name": calibration.name,
        "runs": calibration.runs,
        "loo_mape": _pct(calibration.loo_mape),
        "baseline_loo_mape": _pct(calibration.baseline_loo_mape),
        "residual_log_sd": _number(calibration.residual_log_sd),
        "fitted_at": calibration.fitted_at,
        "command": calibration.command,
        "source": calibration.source,
        "parameters": _parameter_rows(calibration),
        "latency_check": _latency_check(calibration),
        "url": reverse("calibration-serving"),
    }


def serving_calibration_url(*, advice: dict[str, Any]) -> str:
    """The page of the calibration an inference Advice cites, or "" for training advice (its calibrations are listed
    on /calibrations/) or an inference calibration this app does not ship."""
    if advice.get("kind") != "inference":
        return ""
    name = (advice.get("calibration") or {}).get("name")
    return reverse("calibration-serving") if name == default_calibration().name else ""
