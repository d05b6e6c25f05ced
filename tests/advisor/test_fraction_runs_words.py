"""A hostile review (F10): where the owned cluster misses a small part of a run, the words said "renting the 0.0 runs
a year" beside $943 a year. A share of runs is printed with one decimal from one run up and two significant digits
below it."""

from __future__ import annotations

import copy
import datetime as dt
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
    scenario["workload"]["runs_per_year"] = 19.5  # the 64 GPUs finish about 19.49 of them
    advice = advise(scenario, now=NOW).to_dict()
    size = advice["sizes"][0]
    rented = size["buy"]["overflow"]["rented_runs"]
    assert 0 < rented < 0.05
    words = overflow_words(size, runs_per_year=19.5)
    assert "the other 0.0 " not in words
    assert f"the other {fmt.runs(rented)} are rented" in words
