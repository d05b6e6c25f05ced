"""The AWS adapter through real boto3 clients answered by botocore's Stubber with recorded responses.

Traps from price-feeds.md 5.1: a Capacity Block product at $0, a Windows row, the per-region
usagetype prefix (USW2-), p5en's GPU name "NVIDIA", NextToken paging; and ThrottlingException.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from decimal import Decimal

import boto3
import pytest
from botocore.stub import ANY, Stubber

from pricing.feeds import aws
from pricing.feeds.aws import PRICING_REGION, AwsFeed, product_filters
from pricing.models import FeedRun, Offer
from pricing.services import feed_refresh
from tests.pricing.helpers import fixture_json

pytestmark = pytest.mark.django_db
REGIONS = ["us-east-1", "us-west-2"]


def _spot(name: str) -> dict:
    payload = fixture_json(name)
    for entry in payload["SpotPriceHistory"]:
        entry["Timestamp"] = dt.datetime.fromisoformat(entry["Timestamp"])
    return payload


@pytest.fixture
def feed(monkeypatch: pytest.MonkeyPatch) -> AwsFeed:
    session = boto3.Session(aws_access_key_id="AKIDRECORDED", aws_secret_access_key="recorded", region_name="us-east-1")
    instance = AwsFeed(session=session, regions=REGIONS, max_attempts=1)
    monkeypatch.setattr(aws, "from_settings", lambda: instance)
    return instance


@pytest.fixture
def stubs(feed: AwsFeed) -> Iterator[dict[str, Stubber]]:
    stubbers = {
        "pricing": Stubber(feed.client("pricing", PRICING_REGION)),
        "us-east-1": Stubber(feed.client("ec2", "us-east-1")),
        "us-west-2": Stubber(feed.client("ec2", "us-west-2")),
    }
    for stubber in stubbers.values():
        stubber.activate()
    yield stubbers
    for stubber in stubbers.values():
        stubber.deactivate()


def _products_params(region: str, token: str | None = None) -> dict:
    params = {"ServiceCode": "AmazonEC2", "Filters": product_filters(region), "FormatVersion": "aws_v1"}
    if token:
        params["NextToken"] = token
    return params


def _queue_good_run(stubs: dict[str, Stubber], west_page: dict | None = None) -> None:
    page1 = fixture_json("written/aws_get_products_us_east_1_page1.json")
    stubs["pricing"].add_response("get_products", page1, _products_params("us-east-1"))
    stubs["pricing"].add_response(
        "get_products",
        fixture_json("written/aws_get_products_us_east_1_page2.json"),
        _products_params("us-east-1", page1["NextToken"]),
    )
    east_types = ["g5.2xlarge", "g6.xlarge", "p4d.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge"]
    stubs["us-east-1"].add_response(
        "describe_instance_types",
        fixture_json("written/aws_describe_instance_types_us_east_1.json"),
        {"InstanceTypes": east_types},
    )
    stubs["us-east-1"].add_response(
        "describe_spot_price_history",
        _spot("written/aws_spot_price_history_us_east_1.json"),
        {"InstanceTypes": east_types, "ProductDescriptions": ["Linux/UNIX"], "StartTime": ANY},
    )
    stubs["pricing"].add_response(
        "get_products",
        west_page or fixture_json("written/aws_get_products_us_west_2.json"),
        _products_params("us-west-2"),
    )
    west_types = ["g5.2xlarge", "p4d.24xlarge"]
    stubs["us-west-2"].add_response(
        "describe_instance_types",
        fixture_json("written/aws_describe_instance_types_us_west_2.json"),
        {"InstanceTypes": west_types},
    )
    stubs["us-west-2"].add_response(
        "describe_spot_price_history",
        _spot("written/aws_spot_price_history_us_west_2.json"),
        {"InstanceTypes": west_types, "ProductDescriptions": ["Linux/UNIX"], "StartTime": ANY},
    )


def test_a_full_run_reads_prices_gpus_and_spot_and_counts_the_traps(feed: AwsFeed, stubs: dict[str, Stubber]) -> None:
    _queue_good_run(stubs)
    run = feed_refresh(name="aws")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    for stubber in stubs.values():
        stubber.assert_no_pending_responses()
    rejections = {reason: entry["count"] for reason, entry in run.rejections.items()}
    assert rejections == {
        "capacity_block": 1,
        "not_linux": 1,
        "not_box_usage": 1,
        "reserved_variant_not_modelled": 1,  # a convertible/upfront term: an alternative, counted not kept
    }
    assert "1yr/standard/All Upfront" in run.rejections["reserved_variant_not_modelled"]["examples"][0]
    p5 = Offer.objects.get(instance_type="p5.48xlarge", region="us-east-1", market="on_demand")
    assert (p5.gpu, p5.gpu_count, p5.usd_per_hour, p5.usd_per_gpu_hour) == (
        "h100-sxm",
        8,
        Decimal("55.04"),
        Decimal("6.88"),
    )
    assert p5.vcpus == 192 and p5.memory_gib == 2048 and "20260910195514" in p5.source
    assert Offer.objects.get(instance_type="p5.48xlarge", market="reserved_1y").usd_per_hour == Decimal("36.19")
    assert not Offer.objects.filter(instance_type="p5.48xlarge", market="reserved_3y").exists()
    spot = Offer.objects.get(instance_type="p5.48xlarge", market="spot")
    assert spot.usd_per_hour == Decimal("29.87") and "us-east-1b" in spot.source
    assert Offer.objects.get(instance_type="p5en.48xlarge").gpu == "h200"
    assert Offer.objects.get(instance_type="g6.xlarge").gpu == "l4"
    assert Offer.objects.get(instance_type="p4d.24xlarge", region="us-east-1", market="on_demand").gpu == "a100-40gb"
    west = Offer.objects.get(instance_type="p4d.24xlarge", region="us-west-2", market="on_demand")
    assert west.usd_per_hour == Decimal("21.95764")
    assert not Offer.objects.filter(instance_type="p5e.48xlarge").exists()
    assert run.accepted == Offer.objects.count() == 10


def test_a_product_of_the_wrong_shape_is_one_counted_record_and_the_run_succeeds(
    feed: AwsFeed, stubs: dict[str, Stubber]
) -> None:
    west = fixture_json("written/aws_get_products_us_west_2.json")
    windows = json.loads(west["PriceList"][1])  # the p4d.24xlarge Windows row: not_linux as it stands
    windows["product"]["attributes"] = None  # mutated: this one product has no attributes object
    west["PriceList"][1] = json.dumps(windows)
    _queue_good_run(stubs, west_page=west)
    run = feed_refresh(name="aws")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    rejections = {reason: entry["count"] for reason, entry in run.rejections.items()}
    assert rejections == {
        "capacity_block": 1,
        "malformed_record": 1,
        "not_box_usage": 1,
        "reserved_variant_not_modelled": 1,
    }
    assert run.accepted == Offer.objects.count() == 10


def test_throttling_keeps_previous_offers_and_is_retryable(feed: AwsFeed, stubs: dict[str, Stubber]) -> None:
    _queue_good_run(stubs)
    assert feed_refresh(name="aws").status == FeedRun.Status.SUCCESS
    before = list(Offer.objects.values_list("id", "usd_per_hour", "withdrawn_at"))
    stubs["pricing"].add_client_error(
        "get_products", service_error_code="ThrottlingException", service_message="Rate exceeded", http_status_code=400
    )
    run = feed_refresh(name="aws", worker_retries=True)  # retryable only where a Celery worker retries it
    assert run.status == FeedRun.Status.FAILED and run.retryable
    assert "ThrottlingException" in run.error and "Rate exceeded" in run.error
    assert list(Offer.objects.values_list("id", "usd_per_hour", "withdrawn_at")) == before


def test_access_denied_is_a_failure_not_a_retry(feed: AwsFeed, stubs: dict[str, Stubber]) -> None:
    stubs["pricing"].add_client_error("get_products", service_error_code="AccessDeniedException", http_status_code=403)
    run = feed_refresh(name="aws")
    assert run.status == FeedRun.Status.FAILED and not run.retryable and "AccessDeniedException" in run.error


def test_a_truncated_price_list_page_fails_the_run(feed: AwsFeed, stubs: dict[str, Stubber]) -> None:
    page = fixture_json("written/aws_get_products_us_east_1_page1.json")
    page["PriceList"][0] = page["PriceList"][0][:400]  # the JSON string was cut off
    stubs["pricing"].add_response("get_products", page, _products_params("us-east-1"))
    run = feed_refresh(name="aws")
    assert run.status == FeedRun.Status.FAILED and "malformed product" in run.error


def test_without_credentials_aws_is_not_configured(monkeypatch: pytest.MonkeyPatch, settings) -> None:  # type: ignore[no-untyped-def]
    for variable in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    settings.PRICING_AWS_ACCESS_KEY_ID = ""
    run = feed_refresh(name="aws")
    assert run.status == FeedRun.Status.NOT_CONFIGURED and "credentials" in run.error
