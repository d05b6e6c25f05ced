"""The fleet plan for a signed-in (or anonymous) user: the advice pipeline's ``fleet_plan`` and save-time
validation with the user's active calibration (the default one for anonymous users)."""

from __future__ import annotations

from typing import Any

from advisor.advice.fleet.document import FleetInput
from advisor.advice.fleet.service import fleet_plan, validate_fleet
from advisor.calibrations import calibration_for_user
from estimator.calibrate import Calibration


def _calibration(user: Any) -> Calibration | None:
    authenticated = user is not None and getattr(user, "is_authenticated", False)
    _, calibration = calibration_for_user(user=user if authenticated else None)
    return calibration


def fleet_plan_for(*, document: Any, user: Any = None, usage_csv: str | None = None) -> dict[str, Any]:
    """``fleet_plan`` with the user's active calibration."""
    return fleet_plan(document=document, usage_csv=usage_csv, calibration=_calibration(user))


def validate_fleet_for(*, document: Any, user: Any = None) -> FleetInput:
    """``validate_fleet`` with the user's active calibration: a document that passes may be stored."""
    return validate_fleet(document=document, calibration=_calibration(user))
