"""The scenario PDF's "Buying, cash in a full year" parts re-add to the cash table's middle year also where the size
does not fill its servers: software is paid per GPU bought (whole nodes, as advisor.advice.costs charges it). A
reviewer's case: 4 GPUs on an 8-GPU server at $5,000 a GPU-year printed "= $72,367 a year" beside a cash table of
$92,367."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from advisor import cash_flow
from advisor.advice import advise

NOW = dt.datetime(2026, 12, 6, 9, 0, tzinfo=dt.UTC)
SCENARIO = {
    "name": "1B on 4",
    "workload": {
        "kind": "training",
        "model": {"params_b": 1, "layers": 16, "hidden": 2048, "heads": 16, "seq_len": 4096},
        "tokens": 2.0e11,
        "global_batch": 256,
        "precision": "bf16",
        "runs_per_year": 12,
    },
    "gpu": "h100-sxm",
    "cluster_sizes": [4],
    "buy": {"software_usd_per_gpu_year": 5000},
}


@pytest.fixture
def catalog(db: Any) -> None:
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data

    load_bundled_data()
    ensure_default_calibration()


def test_the_owning_parts_of_a_size_short_of_its_server_re_add_to_the_cash_table(catalog: None) -> None:
    advice = advise(SCENARIO, now=NOW).to_dict()
    size = advice["sizes"][0]
    assert size["gpus"] == 4 and size["nodes"] == 1
    parts = dict(cash_flow.owning_cash_parts(advice=advice) or [])
    assert parts["software"] == pytest.approx(8 * 5000)
    totals = cash_flow.yearly_totals(advice=advice)
    assert totals is not None
    middle = [y for y in totals["years"] if 0 < y["year"] < len(totals["years"]) - 1]
    assert middle
    assert sum(parts.values()) == pytest.approx(middle[0]["buy_usd"], abs=1.0)


def test_a_part_of_a_run_rented_beside_an_owned_cluster_is_not_called_zero_runs() -> None:
    # A hostile review (F10): "$943 a year renting the 0.0 runs a year the owned cluster cannot finish".
    size = {"buy": {"overflow": {"rented_runs": 0.0113, "rented_usd_per_run": 83_450.0}}}
    amount = cash_flow.overflow_rent_usd_per_year(size=size)
    assert amount is not None
    assert "renting the 0.011 runs a year" in amount[1] and "0.0 runs" not in amount[1]
