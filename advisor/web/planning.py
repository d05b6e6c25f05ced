"""The web pages' one door to the advice pipeline: a Scenario JSON (and who asks) in, an Advice dict out.

Validation errors come back as ScenarioError (JSON pointers); the pages map them onto fields.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser, User

from advisor.scenario import ScenarioError, parse_scenario

__all__ = ["ScenarioError", "advice_for", "catalog_freshness", "ownership_defaults_or_none", "validate"]


def validate(*, document: dict[str, Any]) -> dict[str, Any]:
    """The normalized Scenario JSON; raises ScenarioError."""
    return parse_scenario(document).to_dict()


def _calibration(user: User | AnonymousUser | None) -> Any:
    from advisor.calibrations import calibration_for_user

    _, calibration = calibration_for_user(user=user if user is not None and user.is_authenticated else None)
    return calibration


def advice_for(*, document: dict[str, Any], user: User | AnonymousUser | None = None) -> dict[str, Any]:
    """The Advice JSON of ``document`` with the user's active calibration (the default one for anonymous users)."""
    from advisor.advice import advise

    scenario = parse_scenario(document)
    return advise(scenario, calibration=_calibration(user)).to_dict()


def ownership_defaults_or_none() -> dict[str, float] | None:
    """The catalog's ownership defaults for the form's placeholders; None when the catalog is not loaded."""
    from advisor.scenario import ownership_defaults

    try:
        return ownership_defaults()
    except Exception:  # a missing catalog must not break the planner; the validator reports it on submit
        return None


def catalog_freshness() -> dict[str, Any]:
    """The price catalog's freshness (snapshot or live, observed when), before any advice is computed."""
    from pricing.selectors import price_freshness

    return price_freshness()
