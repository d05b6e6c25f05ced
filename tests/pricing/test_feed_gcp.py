"""The GCP adapter through `requests`, answered by recorded Cloud Billing Catalog pages (price-feeds.md 5.5)."""

from __future__ import annotations

from decimal import Decimal

import pytest
import responses
from responses import matchers

from pricing.feeds.gcp import API_URL, unit_price
from pricing.models import FeedRun, Offer
from pricing.services import feed_refresh
from tests.pricing.helpers import fixture_json

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
    run = feed_refresh(name="gcp")
    assert run.status == FeedRun.Status.FAILED and run.retryable
    assert "recorded-key" not in run.error
