"""The bundled snapshot, hardware quotes and ownership defaults, through the selectors the advice uses."""

from __future__ import annotations

import csv
import datetime as dt

import pandas as pd
import pytest

from pricing.feeds.base import OfferRecord
from pricing.feeds.lambda_cloud import record_gpu
from pricing.feeds.skypilot import parse_catalog
from pricing.models import FeedRun, HardwareQuote, Offer, OwnershipDefault, PriceObservation
from pricing.selectors import (
    OFFER_COLUMNS,
    best_offers,
    hardware_quote,
    offers_frame,
    ownership_defaults,
    price_freshness,
)
from pricing.services import SNAPSHOT_CSV, load_bundled_data
from tests.pricing.helpers import fixture_text

pytestmark = pytest.mark.django_db


def test_snapshot_gives_at_least_six_providers_and_eight_gpus_with_sources(bundled: str) -> None:
    offers = Offer.objects.filter(withdrawn_at__isnull=True)
    assert offers.values("provider").distinct().count() >= 6
    assert offers.values("gpu").distinct().count() >= 8
    assert not offers.filter(source="").exists()
    assert offers.filter(is_snapshot=False).count() == 0
    # Undated catalog rows stay undated: never stamped with a load time.
    assert offers.filter(observed_at__isnull=True).exists()
    assert offers.get(
        provider__slug="aws", instance_type="p5.48xlarge", region="us-east-1", market="on_demand"
    ).observed_at == dt.datetime(2026, 1, 21, tzinfo=dt.UTC)


def test_bootstrap_loader_is_idempotent(bundled: str) -> None:
    before = (Offer.objects.count(), PriceObservation.objects.count(), FeedRun.objects.count())
    again = load_bundled_data()
    assert "nothing changed" in again
    assert (Offer.objects.count(), PriceObservation.objects.count(), FeedRun.objects.count()) == before
    assert HardwareQuote.objects.count() >= 6 and OwnershipDefault.objects.count() == 7


def test_the_snapshot_run_finishes_no_earlier_than_it_started(bundled: str) -> None:
    # It read finished_at 0.3 ms before started_at: finished_at was taken before create() stamped started_at.
    run = FeedRun.objects.get(kind=FeedRun.Kind.SNAPSHOT)
    assert run.finished_at is not None and run.finished_at >= run.started_at, (run.started_at, run.finished_at)


def test_offers_frame_has_the_contract_columns_and_types(bundled: str) -> None:
    frame = offers_frame(gpu="h100-sxm")
    assert list(frame.columns) == OFFER_COLUMNS
    assert len(frame) > 10
    assert frame["usd_per_gpu_hour"].is_monotonic_increasing
    assert (frame["usd_per_gpu_hour"] * frame["gpu_count"] - frame["usd_per_hour"]).abs().max() < 1e-3
    assert str(frame["observed_at"].dtype) == "datetime64[us, UTC]" or "UTC" in str(frame["observed_at"].dtype)
    assert frame["is_snapshot"].all() and frame["stale"].all()
    assert set(offers_frame(gpu="h100-sxm", providers=["aws"], markets=["on_demand"])["provider"]) == {"aws"}
    empty = offers_frame(gpu="no-such-gpu")
    assert empty.empty and list(empty.columns) == OFFER_COLUMNS


def test_best_offers_is_the_cheapest_per_market_and_per_provider(bundled: str) -> None:
    frame = offers_frame(gpu="a100-80gb")
    best = best_offers(gpu="a100-80gb")
    assert sorted(best["market"]) == sorted(frame["market"].unique())
    for _, row in best.iterrows():
        assert row["usd_per_gpu_hour"] == frame[frame["market"] == row["market"]]["usd_per_gpu_hour"].min()
    per_provider = best_offers(gpu="a100-80gb", per_provider=True)
    assert len(per_provider) == len(frame.drop_duplicates(["provider", "market"]))


@pytest.mark.parametrize(
    ("gpu", "size"),
    [("h100-sxm", 8), ("h200", 8), ("a100-80gb", 8), ("b200", 8), ("l40s", 4), ("rtx4090", 4)],
)
def test_shipped_hardware_quotes_cover_the_required_servers(bundled: str, gpu: str, size: int) -> None:
    quote = hardware_quote(gpu=gpu, gpus_per_server=size)
    assert quote is not None
    assert quote.usd > 0 and quote.power_kw > 0 and quote.source and quote.quoted_on.year >= 2020
    assert quote.networking_usd_per_node >= 0


def test_every_shipped_quote_prices_its_cluster_fabric_by_the_19_percent_rule(bundled: str) -> None:
    """hardware_quotes.csv: networking per node = usd x 0.19 / 0.81, the Epoch AI rule that the cluster fabric is 19%
    of total cluster cost (training-cost-trends constants.py, reference/cost-model.md 1.2), for every quote, derived
    ones included: a multi-node RTX 4090 cluster needs the fabric the estimator assumes (gpus.csv 100 Gb/s per node)."""
    for quote in HardwareQuote.objects.all():
        assert float(quote.networking_usd_per_node) == pytest.approx(float(quote.usd) * 0.19 / 0.81, abs=1.0), quote.gpu


def test_a_32_gpu_rtx4090_cluster_pays_for_its_fabric(bundled: str) -> None:
    from advisor.advice import advise

    scenario = {
        "workload": {"kind": "training", "model": {"params_b": 1.3}, "tokens": 1e10, "global_batch": 256},
        "gpu": "rtx4090",
        "cluster_sizes": [32],
        "utilization": 0.6,
    }
    doc = advise(scenario).to_dict()
    size = next(s for s in doc["sizes"] if s["gpus"] == 32)
    quote = doc["hardware_quote"]
    assert quote["networking_usd_per_node"] > 0
    per_node = (quote["usd"] + quote["networking_usd_per_node"]) * size["nodes"] * 8 / quote["gpus_per_server"]
    assert size["nodes"] > 1 and size["buy"]["capex_usd"] == pytest.approx(per_node)


def test_hardware_quote_picks_the_newest_and_says_none_when_missing(bundled: str) -> None:
    assert hardware_quote(gpu="h100-sxm").quoted_on == dt.date(2024, 8, 1)
    assert hardware_quote(gpu="t4") is None
    assert hardware_quote(gpu="h100-sxm", gpus_per_server=3) is None


def test_admin_edits_to_quotes_survive_another_bootstrap(bundled: str) -> None:
    quote = HardwareQuote.objects.get(gpu="h200", gpus_per_server=8)
    quote.usd = 299_000
    quote.save()
    load_bundled_data()
    assert hardware_quote(gpu="h200", gpus_per_server=8).usd == 299_000


def test_ownership_defaults_carry_value_unit_source_and_date(db: None) -> None:
    from_file = ownership_defaults()  # before bootstrap: the bundled file answers
    load_bundled_data()
    defaults = ownership_defaults()
    assert defaults == from_file
    assert set(defaults) == {
        "power_usd_per_kwh",
        "pue",
        "colo_usd_per_kw_month",
        "support_fraction_per_year",
        "years",
        "residual_fraction",
        "discount_rate",
    }
    for entry in defaults.values():
        assert set(entry) == {"value", "unit", "source", "as_of"}
        assert entry["source"] and isinstance(entry["as_of"], dt.date)


def test_price_freshness_says_snapshot_not_live(bundled: str) -> None:
    fresh = price_freshness(gpu="h100-sxm")
    assert fresh["snapshot"] and not fresh["live"] and fresh["stale"]
    assert fresh["snapshot_compiled_on"] == dt.date(2026, 12, 2)
    assert "snapshot compiled 2026-12-02" in fresh["label"]
    assert isinstance(fresh["newest_observed_at"], dt.datetime | pd.Timestamp)


def test_an_undated_offer_cheaper_than_every_dated_one_says_so(bundled: str) -> None:
    """The snapshot's SkyPilot rows have no source date; AWS rows are dated (2026-01-21)."""
    frame = offers_frame(gpu="h100-sxm", markets=["on_demand"])
    dated = frame[frame["observed_at"].notna()]
    undated = frame[frame["observed_at"].isna()]
    assert not dated.empty and not undated.empty
    floor = dated["usd_per_gpu_hour"].min()
    cheaper = undated[undated["usd_per_gpu_hour"] < floor]
    dearer = undated[undated["usd_per_gpu_hour"] >= floor]
    assert not cheaper.empty  # the bundled data has such rows, so the rule is exercised
    ref = dated.sort_values("usd_per_gpu_hour").iloc[0]
    note = f"the cheapest dated on_demand offer of h100-sxm is {ref['provider']} {ref['instance']}"
    assert cheaper["source"].str.contains("[undated price;", regex=False).all()
    assert cheaper["source"].str.contains(note, regex=False).all()
    assert not dearer["source"].str.contains("[undated price;", regex=False).any()
    assert not dated["source"].str.contains("[undated price;", regex=False).any()
    assert cheaper["stale"].all()  # shown as undated: no date, flagged stale


def test_the_snapshot_labels_runpods_a100_80gb_rows_as_the_live_adapter_does() -> None:
    # RunPod's 'A100-80GB' is the PCIe card (its v8 GpuInfo: 'A100 PCIe'); 'A100-80GB-SXM' is the SXM4 one. The
    # snapshot had the PCIe rows under the SXM4 a100-80gb, so they undercut RunPod's real SXM4 offer there.
    with SNAPSHOT_CSV.open(newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["provider"] == "runpod" and "A100" in row["instance_type"]]
    records = parse_catalog("runpod", fixture_text("skypilot_runpod_v8_vms.csv"), url="x")
    live = {r.canonical_gpu for r in records if isinstance(r, OfferRecord)}
    pcie = {row["gpu"] for row in rows if "-SXM" not in row["instance_type"]}
    assert pcie == live == {"a100-pcie-80gb"}
    assert {row["gpu"] for row in rows if "-SXM" in row["instance_type"]} == {"a100-80gb"}
    assert all("A100 PCIe" in row["source"] for row in rows if row["gpu"] == "a100-pcie-80gb")


def test_the_snapshot_labels_lambdas_a100_pcie_rows_as_the_live_adapter_does() -> None:
    # Lambda describes gpu_1x/2x/4x_a100 as "A100 (40 GB PCIe)", gpu_8x_a100 as "A100 (40 GB SXM4)".
    with SNAPSHOT_CSV.open(newline="", encoding="utf-8") as handle:
        rows = {row["instance_type"]: row["gpu"] for row in csv.DictReader(handle) if row["provider"] == "lambda"}
    for count in (1, 2, 4):
        assert rows[f"gpu_{count}x_a100"] == record_gpu("a100", ["A100 (40 GB PCIe)"]) == "a100-pcie-40gb"
    assert rows["gpu_8x_a100"] == record_gpu("a100", ["A100 (40 GB SXM4)"]) == "a100-40gb"
