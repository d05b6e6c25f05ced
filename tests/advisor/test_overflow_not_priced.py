"""A hostile review (F2): where the owned cluster cannot finish the year's runs and no rent price exists for the runs
it cannot do, a rented run would still finish within the year; what fails is pricing, not the run time. The
recommendation says so (none_reason not_priced), and the headline does not claim that no size finishes."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import pytest

from advisor.advice import advise
from advisor.web.presenters import action_label
from tests.advisor.test_own_overflow import REVIEWER

NOW = dt.datetime(2026, 12, 6, 9, 0, tzinfo=dt.UTC)


@pytest.fixture
def no_rent_advice(db: Any) -> dict[str, Any]:
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data

    load_bundled_data()
    ensure_default_calibration()
    scenario = copy.deepcopy(REVIEWER)
    scenario["rent"] = {"markets": ["reserved_1y"]}  # the snapshot has no reserved 1-year H100 offer
    return advise(scenario, now=NOW).to_dict()


def test_unpriced_overflow_is_not_priced_not_runs_unfinished(no_rent_advice: dict[str, Any]) -> None:
    advice = no_rent_advice
    size, rec = advice["sizes"][0], advice["recommendation"]
    assert size["rent"]["usd_per_run"] is None and size["buy"]["usd_per_run"] is not None
    assert size["run_hours"] < 8760 < 25 * size["run_hours"]  # one rented run would finish within the year
    assert rec["action"] == "none"
    assert rec["none_reason"] == "not_priced"
    text = " ".join(rec["reasons"])
    assert "owned or rented" not in text
    assert "cannot be priced" in text and "/rent/usd_per_gpu_hour" in text
    label = action_label(rec, sizes=advice["sizes"])
    assert "No size finishes" not in label
    assert "no hardware quote" not in label  # owning is priced: the missing price is the rent of the rest
