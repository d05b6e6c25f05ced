"""The GCP adapter through `requests`, answered by recorded Cloud Billing Catalog pages (price-feeds.md 5.5)."""

from __future__ import annotations

import copy
from decimal import Decimal
from pathlib import Path

import pytest
import responses
from responses import matchers

from pricing.feeds.base import OfferRecord, Rejection
from pricing.feeds.gcp import API_URL, assemble, machine_types, records_from_files, unit_price
from pricing.models import FeedRun, Offer
from pricing.services import feed_refresh
from tests.pricing.helpers import FIXTURES, fixture_json

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _api_key(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PRICING_GCP_API_KEY = "recorded-key"


def _register_pages() -> None:
    page1 = fixture_json("written/gcp_skus_page1.json")
    responses.get(
        API_URL, json=page1, match=[matchers.query_param_matcher({"currencyCode": "USD", "pageSize": "5000"})]
    )
    responses.get(
        API_URL,
        json=fixture_json("written/gcp_skus_page2.json"),
        match=[
            matchers.query_param_matcher(
                {"currencyCode": "USD", "pageSize": "5000", "pageToken": page1["nextPageToken"]}
            ),
            matchers.header_matcher({"X-Goog-Api-Key": "recorded-key"}),
        ],
    )


def test_units_plus_nanos() -> None:
    sku = fixture_json("written/gcp_skus_page1.json")["skus"][0]
    assert unit_price(sku) == (Decimal("2.933908"), "h", "USD")


@responses.activate
def test_machine_prices_are_host_plus_gpus_per_region_and_market() -> None:
    _register_pages()
    run = feed_refresh(name="gcp")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    assert run.accepted == 33
    assert {reason: entry["count"] for reason, entry in run.rejections.items()} == {
        "missing_host_sku": 10,
        "gpu_sku_without_machine_type": 1,
    }
    a2 = Offer.objects.get(instance_type="a2-highgpu-1g", region="us-central1", market="on_demand")
    # 12 vCPU x 0.031611 + 85 GiB x 0.004237 + 1 x 2.933908 (the reference's ~$3.67/h)
    assert a2.usd_per_hour == Decimal("3.673385")
    assert "A2 Instance Core" in a2.source and "Nvidia Tesla A100 GPU" in a2.source
    assert a2.gpu == "a100-40gb" and a2.vcpus == 12
    eight = Offer.objects.get(instance_type="a2-highgpu-8g", region="us-east1", market="on_demand")
    assert eight.usd_per_gpu_hour == a2.usd_per_gpu_hour  # A2 hosts scale with the GPUs
    assert Offer.objects.filter(market="spot").count() == 5
    assert Offer.objects.filter(market="reserved_1y", region="us-central1").count() == 5
    l4 = Offer.objects.get(instance_type="g2-standard-4")
    assert (l4.gpu, l4.usd_per_hour) == ("l4", Decimal("0.705964"))


@responses.activate
def test_a_page_without_skus_is_truncated() -> None:
    responses.get(API_URL, json={"nextPageToken": "abc"})
    run = feed_refresh(name="gcp")
    assert run.status == FeedRun.Status.FAILED and "truncated page" in run.error


@responses.activate
def test_the_api_key_never_reaches_the_error_text() -> None:
    responses.get(API_URL, status=500, body="backend error")
    run = feed_refresh(name="gcp", worker_retries=True)  # retryable only where a Celery worker retries it
    assert run.status == FeedRun.Status.FAILED and run.retryable
    assert "recorded-key" not in run.error


# GCP SKU descriptions as GCP writes them: SkyPilot's fetch_gcp.py (price-feeds.md 1.3) matches them by
# the substrings 'A100 80GB GPU', 'H200 141GB GPU' (no vendor prefix) and 'Nvidia B200 (1 gpu slice)';
# the full strings are the ones public GCP-pricing projects test against. The records around them are
# the written A100 SKUs of written/gcp_skus_page1.json with only the description changed.
def _skus_with(descriptions: dict[str, str]) -> list[dict]:
    skus = fixture_json("written/gcp_skus_page1.json")["skus"]
    by_description = {sku["description"]: sku for sku in skus}
    extra = []
    for template, description in descriptions.items():
        sku = copy.deepcopy(by_description[template])
        sku["description"] = description
        extra.append(sku)
    return skus + extra


def _by_reason(items: list) -> dict[str, list[str]]:
    reasons: dict[str, list[str]] = {}
    for item in items:
        if isinstance(item, Rejection):
            reasons.setdefault(item.reason, []).append(item.detail)
    return reasons


def test_real_a100_80gb_and_h200_descriptions_find_their_machine_types() -> None:
    on_demand = "Nvidia Tesla A100 GPU running in Americas"
    items = list(
        assemble(
            _skus_with(
                {
                    on_demand: "Nvidia Tesla A100 80GB GPU running in Americas",
                    "Spot Preemptible Nvidia Tesla A100 GPU running in Americas": "H200 141GB GPU running in Americas",
                }
            ),
            machine_types(),
        )
    )
    offers = {(o.instance_type, o.region, o.market): o for o in items if isinstance(o, OfferRecord)}
    ultra = offers[("a2-ultragpu-8g", "us-central1", "on_demand")]
    assert ultra.gpu == "a100-80gb" and ultra.gpu_count == 8
    assert "'Nvidia Tesla A100 80GB GPU running in Americas'" in ultra.source
    reasons = _by_reason(items)
    assert "gpu_sku_without_machine_type" not in reasons  # neither real string is lost any more
    # The H200 SKU is recognised (a3-ultragpu-8g); its A3 Ultra host SKUs are not on the page.
    assert any("a3-ultragpu-8g" in detail for detail in reasons["missing_host_sku"])


def test_a_dws_flex_start_gpu_sku_is_counted_and_does_not_replace_the_on_demand_price() -> None:
    on_demand = "Nvidia Tesla A100 GPU running in Americas"
    plain = [o for o in assemble(_skus_with({}), machine_types()) if isinstance(o, OfferRecord)]
    dws = "Nvidia Tesla A100 GPU attached to DWS Defined Duration VMs running in Americas"
    items = list(assemble(_skus_with({on_demand: dws}), machine_types()))
    reasons = _by_reason(items)
    assert reasons["special_mode_sku"] == [f"gcp {dws}"]
    after = [o for o in items if isinstance(o, OfferRecord)]
    assert [(o.key, o.usd_per_hour) for o in after] == [(o.key, o.usd_per_hour) for o in plain]


@pytest.mark.parametrize(
    ("description", "machine"),
    [
        ("Nvidia Tesla A100 80GB GPU running in Americas", "a2-ultragpu-1g"),
        ("Nvidia A100 80GB GPU running in Americas", "a2-ultragpu-1g"),
        ("Nvidia Tesla A100 GPU running in Americas", "a2-highgpu-1g"),
        ("H200 141GB GPU running in Belgium", "a3-ultragpu-8g"),
        ("Nvidia H100 80GB GPU running in Americas", "a3-highgpu-8g"),
        ("Nvidia H100 80GB Mega GPU running in Frankfurt", "a3-megagpu-8g"),
        ("A4 Nvidia B200 (1 gpu slice) running in Netherlands", "a4-highgpu-8g"),
        ("Nvidia L4 GPU running in Netherlands", "g2-standard-4"),
    ],
)
def test_each_real_gpu_description_maps_to_its_machine_type(description: str, machine: str) -> None:
    machines = [m for m in machine_types() if m.name == machine]
    sku = copy.deepcopy(fixture_json("written/gcp_skus_page1.json")["skus"][0])
    sku["description"] = description
    items = list(assemble([sku], machines))
    # Recognised: only the host SKUs are missing (this page has none for the series), never the GPU; A4 has no host
    # SKU, its GPU slice is the whole VM's price.
    reasons = {item.reason for item in items if isinstance(item, Rejection)}
    assert reasons == (set() if machine.startswith("a4-") else {"missing_host_sku"})
    assert all(item.instance_type == machine for item in items if isinstance(item, OfferRecord))


@pytest.mark.parametrize("component", ["Nvidia Tesla A100 GPU", "A2 Instance Core", "A2 Instance Ram"])
@pytest.mark.parametrize(("units", "nanos"), [("0", 0), ("-2", -933908000)])
def test_a_component_priced_zero_or_below_rejects_the_offers_by_name(component: str, units: str, nanos: int) -> None:
    # The real Cloud Billing page (OpenCost's): A100 GPU, A2 core and A2 RAM SKUs. With the GPU's unitPrice 0, the
    # a2-highgpu-1g in us-central1 was stored at 0.739477/GPU-h (12 vCPU + 85 GiB, no GPU) instead of 3.673385.
    page = fixture_json("gcp_skus_opencost_page.json")["skus"]
    whole = {o.key: o for o in assemble(page, machine_types()) if isinstance(o, OfferRecord)}
    assert whole[("gcp", "a2-highgpu-1g", "us-central1", "on_demand")].usd_per_hour == Decimal("3.673385")
    mutated = copy.deepcopy(page)  # a copy of the real page with one component's price edited here
    (sku,) = [sku for sku in mutated if sku["description"] == f"{component} running in Americas"]
    sku["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"].update(units=units, nanos=nanos)
    items = list(assemble(mutated, machine_types()))
    assert [item for item in items if isinstance(item, OfferRecord)] == []
    reasons = _by_reason(items)
    assert set(reasons) == {"non_positive_price"} and len(reasons["non_positive_price"]) == len(whole)
    named = [d for d in reasons["non_positive_price"] if d.startswith("gcp a2-highgpu-1g us-central1 on_demand:")]
    assert len(named) == 1 and component in named[0]


def test_a_saved_sku_page_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    # A JSON file saved with a BOM was refused with Python's own words: "Unexpected UTF-8 BOM (decode using utf-8-sig)".
    text = (FIXTURES / "gcp_skus_opencost_page.json").read_text(encoding="utf-8")
    plain, marked = tmp_path / "plain.json", tmp_path / "marked.json"
    plain.write_text(text, encoding="utf-8")
    marked.write_text(text, encoding="utf-8-sig")  # the real page, saved here with a BOM
    assert marked.read_bytes().startswith(b"\xef\xbb\xbf")
    offers = [
        {(r.key, r.usd_per_hour) for r in records_from_files([path]) if isinstance(r, OfferRecord)}
        for path in (plain, marked)
    ]
    assert offers[0] == offers[1] and len(offers[0]) == 15


# A3 Mega, A3 Ultra and A4 on OpenCost's real page (gcp_skus_opencost_page.json), each SKU a copy of one of its
# records with description, price (units/nanos) and, for a spot SKU, usageType changed (fixtures/README.md names the
# sources of the descriptions and prices). Host SKUs are 'A3Plus Instance Core/Ram' (a3-megagpu) and 'A3Ultra
# Instance Core/Ram' (a3-ultragpu), no space; A4 has no core/RAM SKU: the VM is priced per GPU slice.
def _real_sku(kind: str, description: str, units: str, nanos: int, usage: str = "OnDemand") -> dict:
    page = fixture_json("gcp_skus_opencost_page.json")["skus"]
    template = {"gpu": page[0], "ram": page[1], "core": page[2]}[kind]
    sku = copy.deepcopy(template)
    sku["description"] = description
    sku["category"]["usageType"] = usage
    sku["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"].update(units=units, nanos=nanos)
    return sku


A3_MEGA_SKUS = [
    _real_sku("gpu", "Nvidia H100 80GB Mega GPU running in Americas", "10", 344275712),
    _real_sku("core", "A3Plus Instance Core running in Americas", "0", 26924000),
    _real_sku("ram", "A3Plus Instance Ram running in Americas", "0", 2344000),
]
A3_HIGH_HOST = [
    _real_sku("core", "A3 Instance Core running in Americas", "0", 1000000),
    _real_sku("ram", "A3 Instance Ram running in Americas", "0", 100000),
]
A3_ULTRA_SKUS = [
    _real_sku("gpu", "H200 141GB GPU running in Americas", "9", 311740000),
    _real_sku("core", "A3Ultra Instance Core running in Americas", "0", 30000000),
    _real_sku("ram", "A3Ultra Instance Ram running in Americas", "0", 3000000),
]
A4_SKUS = [
    _real_sku("gpu", "A4 Nvidia B200 (1 gpu slice) running in Americas", "16", 110000000),
    _real_sku("gpu", "Spot Preemptible A4 Nvidia B200 (1 gpu slice) running in Americas", "4", 954200000),
]


def test_a3_mega_and_a3_ultra_use_their_own_host_skus_and_a4_is_priced_per_gpu_slice() -> None:
    # Before: every one of these was missing_host_sku (12), or a3-megagpu took A3 High's host SKUs when listed.
    items = list(assemble(A3_MEGA_SKUS + A3_HIGH_HOST + A3_ULTRA_SKUS + A4_SKUS, machine_types()))
    assert _by_reason(items) == {}
    offers = {(o.instance_type, o.market): o for o in items if isinstance(o, OfferRecord) and o.region == "us-central1"}
    mega = offers[("a3-megagpu-8g", "on_demand")]
    assert mega.usd_per_hour == 208 * Decimal("0.026924") + 1872 * Decimal("0.002344") + 8 * Decimal("10.344275712")
    assert "A3Plus Instance Core" in mega.source and "'A3 Instance" not in mega.source
    ultra = offers[("a3-ultragpu-8g", "on_demand")]
    assert (ultra.gpu, ultra.gpu_count) == ("h200", 8)
    assert ultra.usd_per_hour == 224 * Decimal("0.03") + 2952 * Decimal("0.003") + 8 * Decimal("9.31174")
    b200 = offers[("a4-highgpu-8g", "on_demand")]
    assert (b200.gpu, b200.gpu_count, b200.usd_per_hour) == ("b200", 8, 8 * Decimal("16.11"))
    assert "8 x 'A4 Nvidia B200 (1 gpu slice) running in Americas'" in b200.source and "Core" not in b200.source
    assert offers[("a4-highgpu-8g", "spot")].usd_per_hour == 8 * Decimal("4.9542")
