"""A hostile review (F4): a training document issued before recommendation.none_reason existed (2026-12-06) whose
chosen size is priced but finishes no runs read "Not priced: no rental offer or price, and no hardware quote or
capex". Without none_reason the label is read from the sizes the document holds, as the code then decided it."""

from __future__ import annotations

from typing import Any

from advisor.web.presenters import NO_FIT_LABEL, NOT_PRICED_LABEL, RUNS_UNFINISHED_LABEL, action_label


def _size(*, rent: float | None, buy: float | None) -> dict[str, Any]:
    return {
        "gpus": 64,
        "gpus_used": 64,
        "run_hours": 8990.0,
        "rent": {"usd_per_run": rent},
        "buy": {"usd_per_run": buy},
    }


OLD = {"action": "none", "gpus": 64, "reasons": []}  # no none_reason: issued before it existed


def test_priced_size_that_finishes_nothing_reads_runs_unfinished() -> None:
    for rent, buy in ((1_697_260.0, 1_336_406.0), (1_697_260.0, None), (None, 1_336_406.0)):
        label = action_label(OLD, sizes=[_size(rent=rent, buy=buy)])
        assert label.startswith(RUNS_UNFINISHED_LABEL), (rent, buy, label)
        assert "8,990 hours" in label


def test_unpriced_size_and_no_size_keep_their_labels() -> None:
    assert action_label(OLD, sizes=[_size(rent=None, buy=None)]) == NOT_PRICED_LABEL
    assert action_label({"action": "none", "gpus": None}, sizes=[]) == NO_FIT_LABEL
