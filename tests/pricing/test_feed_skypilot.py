"""The SkyPilot catalog adapter through `requests`, answered by a recorded v7 runpod vms.csv excerpt."""

from __future__ import annotations

from decimal import Decimal

import pytest
import responses

from pricing.feeds.skypilot import CATALOG_URL
from pricing.models import FeedRun, Offer
from pricing.services import feed_refresh
from tests.pricing.helpers import fixture_text

pytestmark = pytest.mark.django_db
RUNPOD = CATALOG_URL.format(cloud="runpod")


@pytest.fixture(autouse=True)
def _one_cloud(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PRICING_SKYPILOT_CLOUDS = ["runpod"]


@responses.activate
def test_catalog_rows_become_on_demand_and_spot_offers() -> None:
    responses.get(RUNPOD, body=fixture_text("skypilot_runpod_vms.csv"))
    run = feed_refresh(name="skypilot")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    assert {reason: entry["count"] for reason, entry in run.rejections.items()} == {
        "no_accelerator": 1,
        "unknown_gpu": 1,
    }
    assert "RTXPRO6000" in run.rejections["unknown_gpu"]["examples"][0]
    assert run.accepted == 12
    offer = Offer.objects.get(instance_type="8x_A100-80GB_SECURE", market="spot")
    assert (offer.provider.slug, offer.gpu, offer.gpu_count, offer.usd_per_gpu_hour) == (
        "runpod",
        "a100-80gb",
        8,
        Decimal("1.19"),
    )
    assert "catalog states no date" in offer.source
    assert Offer.objects.get(instance_type="1x_H100_SECURE").gpu == "h100-pcie"
    assert Offer.objects.get(instance_type="1x_H100-SXM_SECURE", market="on_demand").gpu == "h100-sxm"
    assert Offer.objects.get(instance_type="1x_RTX4090_SECURE", market="on_demand").usd_per_hour == Decimal("0.69")


@responses.activate
def test_a_truncated_catalog_counts_the_broken_row_and_the_shrink_guard_keeps_offers() -> None:
    text = fixture_text("skypilot_runpod_vms.csv")
    responses.get(RUNPOD, body=text)
    assert feed_refresh(name="skypilot").status == FeedRun.Status.SUCCESS
    before = list(Offer.objects.values_list("id", "usd_per_hour", "withdrawn_at"))
    cut = text[: text.index("1x_H100-SXM_SECURE") + 30]  # the download stopped mid-row
    responses.replace(responses.GET, RUNPOD, body=cut)
    run = feed_refresh(name="skypilot")
    assert run.status == FeedRun.Status.REJECTED
    assert run.rejections["malformed_row"]["count"] == 1
    assert list(Offer.objects.values_list("id", "usd_per_hour", "withdrawn_at")) == before


@responses.activate
def test_an_html_error_page_is_not_a_catalog() -> None:
    responses.get(RUNPOD, body="<html><body>rate limited</body></html>")
    run = feed_refresh(name="skypilot")
    assert run.status == FeedRun.Status.FAILED and "missing columns" in run.error
