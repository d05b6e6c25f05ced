"""The work budget of one synchronous request.

An endpoint that takes rows or lists estimates its work from the request alone (rows x candidate
layouts, output size) before doing any of it; above the budget it answers 413 problem+json naming
the limit and the setting that holds it, so a client can split the request or an operator raise it.
"""

from __future__ import annotations

from rest_framework import status
from rest_framework.exceptions import APIException


class WorkBudgetExceeded(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "This request would do more work than one request may."
    default_code = "over_budget"


def require_within_budget(*, work: int, limit: int, unit: str, setting: str, advice: str) -> None:
    """Raise WorkBudgetExceeded when `work` (in `unit`) is above `limit`."""
    if work > limit:
        raise WorkBudgetExceeded(
            f"This request needs {work:,} {unit}; one request may do at most {limit:,} ({setting}). {advice}"
        )
