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


def test_the_own_options_band_is_of_owning_plus_overflow(overflow_advice: dict[str, Any]) -> None:
    from advisor.web.presenters import risk_words, usd_exact

    size = overflow_advice["sizes"][0]
    buy, overflow = size["buy"], size["buy"]["overflow"]
    low, mid, high = (overflow[f"usd_per_run_p{q}"] for q in (10, 50, 90))
    assert low <= mid <= high and low < high
    # At the P10-P90 run times, owned and rented runs both move: the band is of the mix, not the owned runs alone.
    assert (low, high) != pytest.approx((buy["usd_per_run_p10"], buy["usd_per_run_p90"]))
    assert overflow["usd_per_run"] == pytest.approx(mid, rel=0.05)
    words = risk_words(advice=overflow_advice)
    assert f"({usd_exact(high)} and {usd_exact(low)} owned, the rest rented)" in words


def test_the_sensitivity_bars_compare_the_own_option_the_advice_prices(overflow_advice: dict[str, Any]) -> None:
    size = overflow_advice["sizes"][0]
    base = size["buy"]["overflow"]["usd_per_run"] - size["rent"]["usd_per_run"]
    rows = overflow_advice["sensitivity"]
    assert rows and all(r["base"] == pytest.approx(base) for r in rows)
    assert all("rest rented" in r["metric"] for r in rows)


def test_a_compared_gpu_that_owns_with_overflow_is_ranked_by_its_own_option(overflow_advice: dict[str, Any]) -> None:
    from advisor.advice.recommendation import alternative_compared_usd, own_option_usd_per_run
    from advisor.advice.training import alternative_row

    runs = float(REVIEWER["workload"]["runs_per_year"])
    size = overflow_advice["sizes"][0]
    row = alternative_row("h100-sxm", overflow_advice["sizes"], 0)
    own = own_option_usd_per_run(size, runs_per_year=runs)
    assert own is not None and own < size["rent"]["usd_per_run"]
    assert row["buy_overflow_usd_per_run"] == pytest.approx(own)
    assert alternative_compared_usd(row, monthly=False, runs_per_year=runs) == pytest.approx(own)
