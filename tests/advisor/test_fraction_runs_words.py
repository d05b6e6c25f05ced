"""A hostile review (F10): where the owned cluster misses a small part of a run, the words said "renting the 0.0 runs
a year" beside $943 a year. A share of runs is printed with one decimal from one run up and two significant digits
below it."""

from __future__ import annotations

import copy
import datetime as dt
import math
from typing import Any

from advisor import formatting as fmt
from advisor.advice import advise
from advisor.advice.recommendation import overflow_words
from tests.advisor.test_own_overflow import REVIEWER

NOW = dt.datetime(2026, 12, 6, 9, 0, tzinfo=dt.UTC)


def test_run_shares_keep_two_significant_digits_below_one() -> None:
    assert fmt.runs(0.0114) == "0.011"
    assert fmt.runs(0.5) == "0.5"
    assert fmt.runs(5.511) == "5.5"
    assert fmt.runs(19.489) == "19.5"


def test_the_overflow_words_name_the_fraction_of_a_run(db: Any) -> None:
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data

    load_bundled_data()
    ensure_default_calibration()
    scenario = copy.deepcopy(REVIEWER)
    # A hundredth of a run more than the 64 GPUs finish in a year (about 19.5 of them; the calibration moves it).
    owned_runs = 8760 / advise(scenario, now=NOW).to_dict()["sizes"][0]["run_hours"]
    runs_per_year = math.ceil(owned_runs * 100) / 100 + 0.01
    scenario["workload"]["runs_per_year"] = runs_per_year
    advice = advise(scenario, now=NOW).to_dict()
    size = advice["sizes"][0]
    rented = size["buy"]["overflow"]["rented_runs"]
    assert 0 < rented < 0.05
    words = overflow_words(size, runs_per_year=runs_per_year)
    assert "the other 0.0 " not in words
    assert f"the other {fmt.runs(rented)} are rented" in words
