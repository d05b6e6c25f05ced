"""Finance and hostile probes (F1): where one owned cluster cannot finish the year's runs, every money surface of the
training advice prices the own option as the recommendation does (own the cluster, rent the overflow,
economics.own_with_overflow): the amount to approve, the P10-P90 band, the sensitivity bars and the compared GPUs'
ranking; renting a year is the runs a year at the rented cost per run."""

from __future__ import annotations

from typing import Any

import pytest

from advisor import economics as ec
from advisor.advice import advise
from tests.advisor.test_own_overflow import NOW, REVIEWER


@pytest.fixture
def overflow_advice(db: Any) -> dict[str, Any]:
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data

    load_bundled_data()
    ensure_default_calibration()
    return advise(REVIEWER, now=NOW).to_dict()


def test_renting_a_year_is_the_runs_at_the_rented_cost_per_run(overflow_advice: dict[str, Any]) -> None:
    size, runs = overflow_advice["sizes"][0], REVIEWER["workload"]["runs_per_year"]
    assert size["buy"]["finishes_runs"] is False
    rent_year = overflow_advice["cumulative_cost"]["rent_usd"][12] - overflow_advice["cumulative_cost"]["rent_usd"][0]
    assert rent_year == pytest.approx(runs * size["rent"]["usd_per_run"])
    assert rent_year > size["gpus"] * ec.HOURS_PER_YEAR * size["rent"]["offer"]["usd_per_gpu_hour"]


def test_the_amount_to_approve_says_the_yearly_overflow_rent_beside_the_purchase(
    overflow_advice: dict[str, Any],
) -> None:
    from advisor.cash_flow import decision_amount

    overflow = overflow_advice["sizes"][0]["buy"]["overflow"]
    amount = decision_amount(advice=overflow_advice)
    assert amount is not None and amount["action"] == "buy"
    rented = overflow["rented_runs"] * overflow["rented_usd_per_run"]
    assert amount["usd"] == pytest.approx(overflow_advice["sizes"][0]["buy"]["capex_usd"])
    assert amount["overflow_rent_usd_per_year"] == pytest.approx(rented)
    assert f"${rented:,.0f} a year" in amount["label"]
    assert f"{overflow['rented_runs']:.1f} runs a year" in amount["label"]
