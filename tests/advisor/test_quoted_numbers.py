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
