"""The numbers an integrator reads: the quoted rental cost per run lies inside its own P10-P90 band, and
prices_as_of is the oldest observation among the offers quoted, with the undated ones counted and named."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from advisor.advice import advise
from pricing.models import Offer

pytestmark = pytest.mark.django_db
EXAMPLE = json.loads((Path(__file__).resolve().parents[2] / "examples" / "7b-training.json").read_text())


@pytest.fixture(autouse=True)
def _catalog(db: None) -> None:
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data

    load_bundled_data()
    ensure_default_calibration()


def _advice(document: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(advise(document).to_dict()))


def _quoted(advice: dict[str, Any]) -> list[dict[str, Any]]:
    offers = []
    for size in advice["sizes"]:
        offers.append(size["rent"]["offer"])
        for entry in size["rent"]["by_market"].values():
            offers.append(entry and (entry.get("offer") if "offer" in entry else entry))
    return [offer for offer in offers if offer]


@pytest.mark.parametrize("gpu", ["h100-sxm", "a100-80gb"])
def test_quoted_rental_cost_lies_inside_its_band(gpu: str) -> None:
    advice = _advice({**EXAMPLE, "gpu": gpu})
    priced = [size["rent"] for size in advice["sizes"] if size["rent"]["usd_per_run"] is not None]
    assert priced
    for rent in priced:
        assert rent["usd_per_run_p10"] <= rent["usd_per_run"] <= rent["usd_per_run_p90"], rent
        # The quoted price is the point estimate: cost per run = price x GPUs x hours at that price.
        assert rent["usd_per_run_p10"] < rent["usd_per_run_p90"]


def test_prices_as_of_is_the_oldest_observation_quoted_and_undated_offers_are_named() -> None:
    first = _advice(EXAMPLE)
    quoted = _quoted(first)
    undated = [o for o in quoted if not o["observed_at"]]
    assert undated, "the bundled H100 snapshot rows the example quotes are undated"
    freshness = first["price_freshness"]
    assert freshness["undated_offers"] == len(freshness["undated"]) >= 1
    assert any(undated[0]["provider"] in name and undated[0]["instance"] in name for name in freshness["undated"])
    assert any("no observation date" in warning for warning in first["warnings"])

    # Date one of the quoted offers, long ago: it is now the oldest observation used.
    target = undated[0]
    old = dt.datetime(2025, 3, 4, 12, tzinfo=dt.UTC)
    Offer.objects.filter(
        provider__slug=target["provider"], instance_type=target["instance"], market=target["market"]
    ).update(observed_at=old)
    second = _advice(EXAMPLE)
    assert second["prices_as_of"] == "2025-03-04"
    assert second["price_freshness"]["undated_offers"] == freshness["undated_offers"] - 1


@pytest.mark.parametrize("stack", [None, "llm-foundry", "other"])
def test_run_hour_band_is_the_stated_tokens_per_s_band_inverted(stack: str | None) -> None:
    """A spreadsheet check: run hours = tokens / tokens_per_s, so their P10/P50/P90 are the point over the stated
    throughput P90/1/P10 multipliers, and the calibration line names the held-out check that applies."""
    advice = _advice({**EXAMPLE, "workload": {**EXAMPLE["workload"], "stack": stack}})
    band = advice["uncertainty"]
    low, high = band["throughput_p10_multiplier"], band["throughput_p90_multiplier"]
    assert low < 1.0 < high
    for size in advice["sizes"]:
        if size["run_hours"] is None:
            continue
        assert size["run_hours_p50"] == pytest.approx(size["run_hours"], rel=1e-4)
        assert size["run_hours_p10"] == pytest.approx(size["run_hours"] / high, rel=1e-3)
        assert size["run_hours_p90"] == pytest.approx(size["run_hours"] / low, rel=1e-3)
    calibration = advice["calibration"]
    assert calibration["stack"] == stack
    known = stack == "llm-foundry"  # fitted on its own runs; "other" pools several stacks, None is unknown
    assert calibration["held_out"] == ("leave-one-config-family-out" if known else "leave-one-stack-out")
    assert calibration["held_out_median_ape"] < calibration["baseline_held_out_median_ape"]
    # The unknown stack's band is wider than a fitted stack's (it carries the spread between stacks).
    assert (high / low > 1.4) is not known
