"""Translate domain validation errors into located API errors (the one place that does it)."""

from __future__ import annotations

from typing import Any

from advisor.api.errors import FieldErrors, pointer, pointer_from_path
from advisor.scenario import Scenario, ScenarioError, parse_scenario


def scenario_error_entries(error: ScenarioError, *, at: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    base = pointer(*at)
    return [
        {"pointer": base + pointer_from_path(entry["pointer"])[1:], "detail": entry["message"], "code": "invalid"}
        for entry in error.errors
    ]


def parse_scenario_or_400(document: Any, *, at: tuple[str, ...] = ()) -> Scenario:
    """parse_scenario, with its errors as a 400 whose pointers are relative to the request body."""
    try:
        return parse_scenario(document)
    except ScenarioError as error:
        raise FieldErrors(
            scenario_error_entries(error, at=at), detail="The scenario is invalid; see errors."
        ) from error
