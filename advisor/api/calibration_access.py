"""Calibrations an API user may see and use: their own and the shared ones (owner null, incl. the default).
Another user's calibration does not exist for them (404), like scenarios and tokens."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import Q, QuerySet

from advisor.calibrations import default_calibration_row
from advisor.models import ActiveCalibration, Calibration
from core.api.budget import require_within_budget
from estimator import calibrate
from estimator.prediction import estimate_runs_csv, run_search_size
from estimator.runs import PREDICTED_COLUMNS, ProfiledRun


def calibrations_visible_to(*, user: User) -> QuerySet[Calibration]:
    return Calibration.objects.filter(Q(owner=user) | Q(owner__isnull=True)).order_by(
        "-is_default", "-created_at", "-id"
    )


def calibration_visible_to(*, user: User, calibration_id: int) -> Calibration:
    """Raises Calibration.DoesNotExist for a missing id and for another user's calibration alike."""
    return calibrations_visible_to(user=user).get(pk=calibration_id)


def active_calibration_id(*, user: User) -> int:
    active = ActiveCalibration.objects.filter(user=user).values_list("calibration_id", flat=True).first()
    return active if active is not None else default_calibration_row().pk


def estimate_rows(*, runs: Sequence[ProfiledRun], calibration: Calibration) -> list[dict[str, Any]]:
    """Each run's row with the predicted columns and the chosen layout, as `manage.py estimate` writes them;
    predicted values as numbers (null when the run does not fit in memory), fits_memory as a boolean."""
    require_within_budget(
        work=run_search_size(runs),
        limit=settings.ESTIMATE_MAX_LAYOUTS,
        unit="candidate layouts (each row's open layout fields multiply the search)",
        setting="ESTIMATE_MAX_LAYOUTS",
        advice="Give tp, pp, cp, micro_batch, strategy and activation_checkpointing, or send fewer rows.",
    )
    text = estimate_runs_csv(runs, calibrate.Calibration.from_dict(calibration.document))
    rows: list[dict[str, Any]] = []
    for row in csv.DictReader(io.StringIO(text)):
        typed: dict[str, Any] = dict(row)
        for column in PREDICTED_COLUMNS:
            if column == "fits_memory":
                typed[column] = row[column] == "true"
            else:
                typed[column] = float(row[column]) if row[column] else None
        rows.append(typed)
    return rows
