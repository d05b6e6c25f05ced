"""Hostile probe F5: a size whose runs are priced but that no candidate size finishes in the year was labelled "Not
priced: no rental offer or price, and no hardware quote or capex" on the page headline and the PDF cover, inferred
from ``gpus``. The recommendation carries why there is no action (recommendation.none_reason), and the label says it."""

from __future__ import annotations

import datetime as dt
from html import escape
from typing import Any

import pytest

from advisor import formatting as fmt
from advisor.advice import advise

NOW = dt.datetime(2026, 12, 6, 9, 0, tzinfo=dt.UTC)

# The probe's input: 70B, 15T tokens, one run a year, at most 256 H100.
SLOW = {
    "workload": {"kind": "training", "model": {"name": "llama-3.1-70b"}, "tokens": 1.5e13, "runs_per_year": 1},
    "gpu": "h100-sxm",
    "cluster_sizes": [64, 128, 256],
}


@pytest.fixture
def slow_advice(db: Any) -> dict[str, Any]:
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data

    load_bundled_data()
    ensure_default_calibration()
    return advise(SLOW, now=NOW).to_dict()


def test_priced_sizes_that_do_not_finish_the_runs_are_labelled_so(slow_advice: dict[str, Any]) -> None:
    from advisor.proposal import render_proposal_html
    from advisor.web.presenters import NOT_PRICED_LABEL, headline

    recommendation = slow_advice["recommendation"]
    assert recommendation["action"] == "none" and recommendation["none_reason"] == "runs_unfinished"
    priced = [d for d in slow_advice["sizes"] if d["rent"]["usd_per_run"] is not None]
    assert priced and all(d["buy"]["usd_per_run"] is not None for d in priced)
    fastest = min(priced, key=lambda d: d["run_hours"])
    assert fastest["run_hours"] > 8760
    label = headline(advice=slow_advice)["action_label"]
    expected = (
        f"No size finishes the year's runs: the fastest, {fmt.count(fastest['gpus'], 'GPU')}, takes "
        f"{fmt.hours(fastest['run_hours'])} a run"
    )
    assert label == expected
    html = render_proposal_html(advice=slow_advice, scenario_name="slow")
    assert NOT_PRICED_LABEL not in html
    # One sentence, not the label and the GPUs run together: "... takes 39,897 hours a run 16 NVIDIA H100 ... GPUs".
    assert f"Decision: {escape(expected)}</p>" in html
    assert f'<span class="verdict">{escape(expected)}</span></h2>' in html


def test_the_other_reasons_for_no_action_carry_their_codes(db: Any) -> None:
    from advisor.calibrations import ensure_default_calibration
    from advisor.web.presenters import NO_FIT_LABEL, NOT_PRICED_LABEL, action_label
    from pricing.services import load_bundled_data

    load_bundled_data()
    ensure_default_calibration()
    no_fit = advise({**SLOW, "cluster_sizes": [1]}, now=NOW).to_dict()["recommendation"]
    assert (no_fit["none_reason"], action_label(no_fit)) == ("no_fit", NO_FIT_LABEL)
    assert action_label({"action": "none", "gpus": 8, "none_reason": "not_priced"}) == NOT_PRICED_LABEL
    rented = advise({**SLOW, "cluster_sizes": [512]}, now=NOW).to_dict()["recommendation"]
    assert rented["action"] in ("rent", "buy") and rented["none_reason"] is None
