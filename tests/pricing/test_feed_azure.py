"""The Azure adapter through `requests`, answered by recorded Retail Prices pages (price-feeds.md 5.4)."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

from pricing.feeds import azure
from pricing.feeds.azure import API_URL, AzureFeed, gpu_of_sku
from pricing.feeds.base import OfferRecord
from pricing.models import FeedRun, Offer
from pricing.services import feed_import, feed_refresh, validate_all
from tests.pricing.helpers import FIXTURES, fixture_json

pytestmark = pytest.mark.django_db
NEXT = "https://prices.azure.com:443/api/retail/prices"


@pytest.fixture
def feed(monkeypatch: pytest.MonkeyPatch) -> AzureFeed:
    # One region and the recorded pages' size, so the empty-NextPageLink fallback is exercised.
    instance = AzureFeed(enabled=True, regions=["eastus"], page_size=5)
    monkeypatch.setattr(azure, "from_settings", lambda: instance)
    return instance


def _register_pages() -> None:
    responses.get(API_URL, json=fixture_json("written/azure_page1.json"))
    responses.get(NEXT, json=fixture_json("written/azure_page2_empty_next_link.json"))


@responses.activate
def test_pages_follow_next_link_then_fall_back_to_skip(feed: AzureFeed) -> None:
    _register_pages()
    responses.get(NEXT, json=fixture_json("written/azure_page3_empty.json"))
    run = feed_refresh(name="azure")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    first_query = parse_qs(urlsplit(responses.calls[0].request.url).query)
    assert "armRegionName eq 'eastus'" in first_query["$filter"][0]
    assert "contains(armSkuName, 'Standard_ND')" in first_query["$filter"][0]
    assert parse_qs(urlsplit(responses.calls[2].request.url).query)["$skip"] == ["10"]
    assert len(responses.calls) == 3
    assert (run.fetched, run.accepted) == (10, 6)
    assert {reason: entry["count"] for reason, entry in run.rejections.items()} == {
        "not_linux": 1,
        "low_priority": 1,
        "unknown_gpu": 1,
        "unsupported_price_type": 1,
    }
    h100 = Offer.objects.get(instance_type="Standard_ND96isr_H100_v5", market="on_demand")
    assert (h100.gpu, h100.gpu_count, h100.usd_per_hour) == ("h100-sxm", 8, Decimal("98.32"))
    assert h100.effective_at.year == 2024
    spot = Offer.objects.get(instance_type="Standard_ND96isr_H100_v5", market="spot")
    assert spot.usd_per_hour == Decimal("18.169536")
    reserved = Offer.objects.get(instance_type="Standard_NC24ads_A100_v4", market="reserved_1y")
    assert reserved.usd_per_hour == (Decimal("19306") / 8760).quantize(Decimal("0.000001"))
    assert reserved.gpu == "a100-pcie-80gb"  # NC A100 v4: PCIe cards, not the SXM4 a100-80gb
    a10 = Offer.objects.get(instance_type="Standard_NV6ads_A10_v5")
    assert a10.gpu_count == Decimal("0.167") and a10.usd_per_gpu_hour == Decimal("2.724")


@responses.activate
def test_fractional_gpus_refresh_idempotently(feed: AzureFeed) -> None:
    _register_pages()
    responses.get(NEXT, json=fixture_json("written/azure_page3_empty.json"))
    _register_pages()
    responses.get(NEXT, json=fixture_json("written/azure_page3_empty.json"))
    feed_refresh(name="azure")
    second = feed_refresh(name="azure")
    assert (second.created, second.changed, second.unchanged) == (0, 0, 6)


@responses.activate
def test_a_truncated_page_fails_the_run_and_keeps_offers(feed: AzureFeed) -> None:
    _register_pages()
    responses.get(NEXT, json=fixture_json("written/azure_page3_empty.json"))
    assert feed_refresh(name="azure").status == FeedRun.Status.SUCCESS
    before = list(Offer.objects.values_list("id", "usd_per_hour"))
    page = fixture_json("written/azure_page1.json")
    page["Items"] = page["Items"][:2]  # the body was cut: Count still says 5
    responses.replace(responses.GET, API_URL, json=page)
    run = feed_refresh(name="azure")
    assert run.status == FeedRun.Status.FAILED and "truncated page" in run.error
    assert list(Offer.objects.values_list("id", "usd_per_hour")) == before


@responses.activate
def test_a_page_without_items_is_truncated_not_empty(feed: AzureFeed) -> None:
    responses.get(API_URL, json={"NextPageLink": NEXT + "?$skip=100", "Count": 100})
    run = feed_refresh(name="azure")
    assert run.status == FeedRun.Status.FAILED and "no 'Items' list" in run.error


@pytest.mark.parametrize(
    ("sku", "expected"),
    [
        ("Standard_ND96isr_H200_v5", ("h200", Decimal(8))),
        ("Standard_NC80adis_H100_v5", ("h100-pcie", Decimal(2))),
        ("Standard_NC64as_T4_v3", ("t4", Decimal(4))),
        ("Standard_ND96is_MI300X_v5", ("mi300x", Decimal(8))),
        ("Standard_NC12s_v3", ("v100-16gb", Decimal(2))),
        ("Standard_NC7s_v3", None),
        ("Standard_D4s_v5", None),
    ],
)
def test_sku_names_map_to_gpus(sku: str, expected: tuple[str, Decimal] | None) -> None:
    assert gpu_of_sku(sku) == expected


@pytest.mark.parametrize(
    ("arm_sku", "expected"),
    [
        ("Standard_ND96isr_H100_v5", ("h100-sxm", Decimal(8))),
        ("Standard_ND96is_H100_v5", ("h100-sxm", Decimal(8))),
        ("Standard_ND96isr_H200_v5", ("h200", Decimal(8))),
        ("Standard_NC40ads_H100_v5", ("h100-pcie", Decimal(1))),
        ("Standard_NC80adis_H100_v5", ("h100-pcie", Decimal(2))),
        ("Standard_NCC40ads_H100_v5", ("h100-pcie", Decimal(1))),
        ("Standard_ND128isr_NDR_GB200_v6", ("gb200", Decimal(4))),
        ("Standard_ND96is_MI300X_v5", ("mi300x", Decimal(8))),
        ("Standard_D4s_v3", None),
    ],
)
def test_nd_h100_v5_and_its_relatives_have_a_gpu_and_count(arm_sku: str, expected: tuple | None) -> None:
    assert gpu_of_sku(arm_sku) == expected


# Items in the shape a live capture of 2026-09-16 recorded for eastus (price-feeds.md 5.4): the meter
# spelled "ND96isrH100v5", Spot and Low Priority marked only in meterName, Windows only in productName.
CAPTURED = [
    {"armRegionName": "eastus", "armSkuName": "Standard_ND96isr_H100_v5", "meterName": "ND96isrH100v5",
     "productName": "Virtual Machines NDsr H100 v5 Series", "type": "Consumption",
     "unitOfMeasure": "1 Hour", "currencyCode": "USD", "retailPrice": 98.32},
    {"armRegionName": "eastus", "armSkuName": "Standard_ND96isr_H100_v5", "meterName": "ND96isrH100v5",
     "productName": "Virtual Machines NDsr H100 v5 Series Windows", "type": "Consumption",
     "unitOfMeasure": "1 Hour", "currencyCode": "USD", "retailPrice": 102.736},
    {"armRegionName": "eastus", "armSkuName": "Standard_ND96isr_H100_v5", "meterName": "ND96isrH100v5 Spot",
     "productName": "Virtual Machines NDsr H100 v5 Series", "type": "Consumption",
     "unitOfMeasure": "1 Hour", "currencyCode": "USD", "retailPrice": 18.169536},
    {"armRegionName": "eastus", "armSkuName": "Standard_ND96isr_H100_v5", "meterName": "ND96isrH100v5 Low Priority",
     "productName": "Virtual Machines NDsr H100 v5 Series", "type": "Consumption",
     "unitOfMeasure": "1 Hour", "currencyCode": "USD", "retailPrice": 20.0},
]  # fmt: skip


def test_spot_and_low_priority_are_read_from_the_meter_name_when_sku_name_is_absent() -> None:
    items = [entry for item in CAPTURED for entry in azure.item_records(item)]
    offers = {o.market: o for o in items if hasattr(o, "market")}
    reasons = sorted(r.reason for r in items if not hasattr(r, "market"))
    assert reasons == ["low_priority", "not_linux"]
    assert offers["on_demand"].usd_per_hour == Decimal("98.32") and offers["on_demand"].gpu == "h100-sxm"
    assert offers["spot"].usd_per_hour == Decimal("18.169536")


# Real productName spellings from SkyPilot's fetch_azure.py (get_pricing_df): some H100 series end
# their Windows product in " Win", not " Windows" ("Virtual Machines NCCadsv5 Srs Win"), and Cloud
# Services rows share the Virtual Machines service. The items around them are written.
def _item(product: str, price: float) -> dict:
    return {"armRegionName": "eastus2", "armSkuName": "Standard_NCC40ads_H100_v5", "meterName": "NCC40ads H100 v5",
            "skuName": "NCC40ads H100 v5", "productName": product, "type": "Consumption", "unitOfMeasure": "1 Hour",
            "currencyCode": "USD", "retailPrice": price}  # fmt: skip


@pytest.mark.parametrize(
    ("product", "reason"),
    [
        ("Virtual Machines NCCadsv5 Srs Win", "not_linux"),
        ("Virtual Machines NDsr H100 v5 Series Windows", "not_linux"),
        ("Cloud Services NCCadsv5 Srs", "cloud_services"),
        ("Virtual Machines NCCadsv5 Srs Cloud Services", "cloud_services"),
        ("Virtual Machines NCCadsv5 Srs CloudServices", "cloud_services"),
    ],
)
def test_windows_and_cloud_services_rows_are_counted_in_every_real_spelling(product: str, reason: str | None) -> None:
    [record] = list(azure.item_records(_item(product, 8.82)))
    assert getattr(record, "reason", None) == reason


def test_the_linux_row_of_a_win_series_is_kept_and_its_win_twin_is_not() -> None:
    records = [r for p, price in (("Virtual Machines NCCadsv5 Srs", 6.98), ("Virtual Machines NCCadsv5 Srs Win", 8.82))
               for r in azure.item_records(_item(p, price))]  # fmt: skip
    offers = [r for r in records if hasattr(r, "market")]
    assert [(o.gpu, o.gpu_count, o.usd_per_hour) for o in offers] == [("h100-pcie", Decimal(1), Decimal("6.98"))]


# Recorded Retail Prices responses (fixtures/README.md): ten ND rows of a live eastus response kept by
# mrmonroe90/compute-price-tracker, and the three sample items of Microsoft's API documentation page.
REAL_EASTUS = "azure_retail_eastus_nd_compute_price_tracker.json"
DOCS_EXAMPLES = "azure_retail_prices_docs_examples.json"


@responses.activate
def test_a_recorded_eastus_nd_response_through_the_live_path() -> None:
    feed = AzureFeed(enabled=True, regions=["eastus"])
    responses.get(API_URL, json=fixture_json(REAL_EASTUS))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(azure, "from_settings", lambda: feed)
        run = feed_refresh(name="azure")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    assert len(responses.calls) == 1  # NextPageLink null on a short page: the last page
    assert (run.fetched, run.accepted) == (10, 5)
    # Windows rows of every kind (Low Priority, DevTest, Spot) and the Linux Low Priority row.
    assert {reason: entry["count"] for reason, entry in run.rejections.items()} == {"not_linux": 4, "low_priority": 1}
    offers = {(o.instance_type, o.market): o for o in Offer.objects.filter(feed="azure")}
    assert set(offers) == {
        ("Standard_ND96isr_H100_v5", "on_demand"),
        ("Standard_ND96isr_H100_v5", "reserved_1y"),
        ("Standard_ND96isr_H100_v5", "reserved_3y"),
        ("Standard_ND96is_H100_v5", "on_demand"),
        ("Standard_ND96asr_v4", "spot"),
    }
    h100 = offers[("Standard_ND96isr_H100_v5", "on_demand")]
    assert (h100.gpu, h100.gpu_count, h100.usd_per_gpu_hour) == ("h100-sxm", 8, Decimal("12.29"))
    assert h100.effective_at.date().isoformat() == "2023-12-01"
    # Reservation rows carry the whole term's price under unitOfMeasure "1 Hour".
    one_year = offers[("Standard_ND96isr_H100_v5", "reserved_1y")].usd_per_hour
    assert one_year == (Decimal("551221") / 8760).quantize(Decimal("0.000001"))
    three_years = offers[("Standard_ND96isr_H100_v5", "reserved_3y")].usd_per_hour
    assert three_years == (Decimal("1134310") / (3 * 8760)).quantize(Decimal("0.000001"))
    nd_is = offers[("Standard_ND96is_H100_v5", "on_demand")]
    assert (nd_is.gpu, nd_is.usd_per_hour) == ("h100-sxm", Decimal("88.488"))
    a100 = offers[("Standard_ND96asr_v4", "spot")]
    assert (a100.gpu, a100.gpu_count, a100.usd_per_hour) == ("a100-40gb", 8, Decimal("5.98334"))


def test_the_documentation_sample_items_are_each_counted_by_reason() -> None:
    result = feed_import(name="azure", paths=[FIXTURES / DOCS_EXAMPLES])
    # F16s Spot (DevTest and Consumption, "FS Series Windows") and a reserved E64 v4: no GPU VM.
    assert (result.run.fetched, result.run.accepted) == (3, 0)
    assert {reason: entry["count"] for reason, entry in result.run.rejections.items()} == {
        "not_linux": 2,
        "unknown_gpu": 1,
    }
    assert result.run.status == FeedRun.Status.REJECTED


# The real recorded eastus ND96isr H100 v5 on-demand item (REAL_EASTUS, Items[0]) with armSkuName, meterName, skuName
# and productName changed to another real size (fixtures/README.md); each was counted unknown_gpu before.
@pytest.mark.parametrize(
    ("arm_sku", "meter", "product", "expected"),
    [
        ("Standard_ND96isr_MI300X_v5", "ND96isr MI300X v5", "Virtual Machines ND MI300X v5 Series", ("mi300x", 8)),
        ("Standard_NC24rs_v3", "NC24rs v3", "Virtual Machines NCSv3 Series", ("v100-16gb", 4)),
    ],
)
def test_real_sizes_the_table_missed_are_priced_per_gpu(
    arm_sku: str, meter: str, product: str, expected: tuple
) -> None:
    item = copy.deepcopy(fixture_json(REAL_EASTUS)["Items"][0])
    item.update(armSkuName=arm_sku, meterName=meter, skuName=meter, productName=product)
    [record] = azure.item_records(item)
    assert isinstance(record, OfferRecord)
    assert (record.gpu, record.gpu_count) == (expected[0], Decimal(expected[1]))


@pytest.mark.parametrize(
    "arm_sku",
    # No Microsoft Learn size page was found for the flex sizes; GB300 is no GPU of the catalog (pricing/gpus.py).
    ["Standard_ND96isrf_H200_v5", "Standard_ND96isf_H100_v5", "Standard_ND128isr_GB300_v6", "Standard_NC6rs_v3"],
)
def test_sizes_without_a_documented_gpu_stay_unknown(arm_sku: str) -> None:
    assert gpu_of_sku(arm_sku) is None


def test_an_item_without_its_size_or_price_is_rejected_naming_the_item_and_the_field() -> None:
    # The real recorded 1-year reservation of ND96isr H100 v5 (REAL_EASTUS, Items[1]) with one field removed. Before:
    # 'azure  eastus reserved_1y' (missing_identity, naming neither item nor field) and '...: no price'.
    item = fixture_json(REAL_EASTUS)["Items"][1]
    unnamed = {key: value for key, value in item.items() if key != "armSkuName"}
    checked = validate_all(list(azure.item_records(unnamed)))
    [detail] = checked.rejections["missing_identity"]["examples"]
    assert "armSkuName" in detail and item["meterId"] in detail and item["meterName"] in detail
    unpriced = {key: value for key, value in item.items() if key not in ("retailPrice", "unitPrice")}
    [rejection] = azure.item_records(unpriced)
    assert rejection.reason == "malformed_record"
    assert "retailPrice" in rejection.detail and "unitPrice" in rejection.detail
    assert item["meterId"] in rejection.detail and "Standard_ND96isr_H100_v5" in rejection.detail


def test_a_record_without_instance_type_names_the_field_and_its_source() -> None:
    record = OfferRecord(
        provider="azure", instance_type="", region="eastus", market="on_demand", gpu_name="", gpu="h100-sxm",
        gpu_count=Decimal(8), usd_per_hour=Decimal("98.32"), source="Azure Retail Prices API meterId 42",
    )  # fmt: skip
    [detail] = validate_all([record]).rejections["missing_identity"]["examples"]
    assert "no instance_type" in detail and "meterId 42" in detail


def test_a_size_number_of_thousands_of_digits_is_one_unknown_gpu_and_the_other_items_are_stored(tmp_path: Path) -> None:
    # A hostile probe: int() of the NC size number raised ValueError (Python's 4,300-digit limit) and the whole file
    # was refused, the 4 good offers with it. A mutated copy of the recorded eastus response.
    payload = fixture_json(REAL_EASTUS)
    payload["Items"][0]["armSkuName"] = "Standard_NC" + "9" * 5000 + "s_v3"
    saved = tmp_path / "azure_nc.json"
    saved.write_text(json.dumps(payload))
    assert gpu_of_sku(payload["Items"][0]["armSkuName"]) is None
    result = feed_import(name="azure", paths=[saved])
    counts = {reason: entry["count"] for reason, entry in result.run.rejections.items()}
    # the item's 5,016-character name is also more than the instance_type column holds, which validation checks first
    assert counts == {"invalid_instance_type": 1, "not_linux": 4, "low_priority": 1}
    assert result.run.accepted == 4 and len(str(result.run.rejections)) < 2000  # the other offers
