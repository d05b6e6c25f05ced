"""The AWS adapter on real recorded payloads (fixtures/README.md names each source).

- `aws_describe_instance_types_moto.json`: moto's record of EC2 DescribeInstanceTypes (g6f slices
  of an L4, p4d, p4de, p5, p5.4xlarge, p5e, p5en), answered through botocore's Stubber.
- `aws_spot_price_history_botocore_example.json`, `aws_get_products_botocore_example.json`: the
  example responses AWS ships in botocore's service data.
- `aws_offer_file_us_east_1_opencost.json`: OpenCost's excerpt of the EC2 bulk offer file
  (p4d.24xlarge on demand and its $0 Capacity Block twin), read by `import_prices`.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from io import StringIO
from pathlib import Path

import boto3
import pytest
from botocore.stub import ANY, Stubber
from django.core.management import CommandError, call_command

from pricing.feeds import aws
from pricing.feeds.aws import PRICING_REGION, AwsFeed, product_filters
from pricing.feeds.base import OfferRecord, Rejection
from pricing.models import FeedRun
from pricing.services import feed_refresh, validate_all
from tests.pricing.helpers import FIXTURES, fixture_json

INSTANCE_TYPES = "aws_describe_instance_types_moto.json"
OFFER_FILE = "aws_offer_file_us_east_1_opencost.json"
SQL_TWIN_OFFER_FILE = "aws_offer_file_us_east_1_opencost_sql_std_twin.json"
G6F_TYPES = ["g6f.2xlarge", "g6f.4xlarge", "g6f.large", "g6f.xlarge"]
P_TYPES = ["p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5.4xlarge", "p5e.48xlarge", "p5en.48xlarge"]


@pytest.fixture
def feed(monkeypatch: pytest.MonkeyPatch) -> AwsFeed:
    session = boto3.Session(aws_access_key_id="AKIDRECORDED", aws_secret_access_key="recorded", region_name="us-east-1")
    instance = AwsFeed(session=session, regions=["us-east-1"], max_attempts=1)
    monkeypatch.setattr(aws, "from_settings", lambda: instance)
    return instance


def test_real_describe_instance_types_give_gpu_ids_by_memory(feed: AwsFeed) -> None:
    with Stubber(feed.client("ec2", "us-east-1")) as stub:
        stub.add_response(
            "describe_instance_types", fixture_json(INSTANCE_TYPES), {"InstanceTypes": G6F_TYPES + P_TYPES}
        )
        gpus = feed._gpu_info("us-east-1", G6F_TYPES + P_TYPES)
        stub.assert_no_pending_responses()
    assert gpus == {
        # A g6f is a slice of one L4: EC2 says Count 0 and gives the slice as GpuPartitionSize.
        "g6f.2xlarge": ("l4", Decimal("0.25"), 5722),
        "g6f.4xlarge": ("l4", Decimal("0.5"), 11444),
        "g6f.large": ("l4", Decimal("0.125"), 2861),
        "g6f.xlarge": ("l4", Decimal("0.125"), 2861),
        "p4d.24xlarge": ("a100-40gb", Decimal(8), 40960),  # both report "A100": memory decides
        "p4de.24xlarge": ("a100-80gb", Decimal(8), 81920),
        "p5.48xlarge": ("h100-sxm", Decimal(8), 81920),
        "p5.4xlarge": ("h100-sxm", Decimal(1), 81920),
        "p5e.48xlarge": ("h200", Decimal(8), 144384),
        "p5en.48xlarge": ("h200", Decimal(8), 144384),  # this record names the GPU; SkyPilot saw "NVIDIA" (#4652)
    }
    records = [
        OfferRecord(
            provider="aws", instance_type=name, region="us-east-1", market="on_demand", gpu_name=gpu,
            gpu=aws.GPU_FIXUPS.get(name, (None, 0))[0], gpu_count=count, usd_per_hour=4 * count, source="test",
        )
        for name, (gpu, count, _) in gpus.items()
    ]  # fmt: skip
    checked = validate_all(records)
    assert checked.rejections == {}
    assert {o.record.instance_type: o.record.canonical_gpu for o in checked.accepted} == {
        **dict.fromkeys(G6F_TYPES, "l4"),
        "p4d.24xlarge": "a100-40gb",
        "p4de.24xlarge": "a100-80gb",
        "p5.48xlarge": "h100-sxm",
        "p5.4xlarge": "h100-sxm",
        "p5e.48xlarge": "h200",
        "p5en.48xlarge": "h200",
    }


def test_real_spot_history_keeps_the_cheapest_zone_and_its_time(feed: AwsFeed) -> None:
    with Stubber(feed.client("ec2", "us-west-1")) as stub:
        stub.add_response(
            "describe_spot_price_history",
            fixture_json("aws_spot_price_history_botocore_example.json"),
            {"InstanceTypes": ["m1.xlarge"], "ProductDescriptions": ["Linux/UNIX"], "StartTime": ANY},
        )
        records = list(feed._spot("us-west-1", ["m1.xlarge"], {}))
    assert len(records) == 1 and isinstance(records[0], OfferRecord)
    spot = records[0]
    assert (spot.market, spot.region, spot.usd_per_hour) == ("spot", "us-west-1", Decimal("0.080000"))
    assert "us-west-1a" in spot.source  # equal prices: the first zone listed is kept
    assert spot.effective_at == dt.datetime(2014, 1, 6, 4, 32, 53, tzinfo=dt.UTC)
    # m1.xlarge has no GPU: validation counts it instead of storing a GPU-less offer.
    assert {reason: entry["count"] for reason, entry in validate_all(records).rejections.items()} == {"unknown_gpu": 1}


@pytest.mark.django_db
def test_a_real_get_products_page_of_storage_is_counted_not_offered(feed: AwsFeed) -> None:
    page = fixture_json("aws_get_products_botocore_example.json")
    with Stubber(feed.client("pricing", PRICING_REGION)) as stub:
        params = {"ServiceCode": "AmazonEC2", "Filters": product_filters("us-east-1"), "FormatVersion": "aws_v1"}
        stub.add_response("get_products", page, params)
        stub.add_response(
            "get_products", {"FormatVersion": "aws_v1", "PriceList": []}, {**params, "NextToken": page["NextToken"]}
        )
        run = feed_refresh(name="aws")
        stub.assert_no_pending_responses()
    # The EBS volume row is no instance: counted as such, not as a non-Linux instance.
    assert {reason: entry["count"] for reason, entry in run.rejections.items()} == {"not_compute_instance": 1}
    assert run.accepted == 0 and run.status != FeedRun.Status.SUCCESS


def _import(*names: str) -> dict:
    out = StringIO()
    call_command("import_prices", "--feed", "aws", *[str(FIXTURES / name) for name in names], stdout=out)
    return json.loads(out.getvalue())


@pytest.mark.django_db
def test_import_prices_reads_the_real_offer_file_with_the_real_instance_types() -> None:
    result = _import(OFFER_FILE, INSTANCE_TYPES)
    assert result["rejected"] == {"capacity_block": 1}  # the $0.00 Capacity Block product
    assert result["accepted"] == 1
    assert result["offers"] == [
        {
            "provider": "aws",
            "instance": "p4d.24xlarge",
            "region": "us-east-1",
            "market": "on_demand",
            "gpu": "a100-40gb",
            "gpu_count": 8.0,
            "usd_per_gpu_hour": 4.096575,
        }
    ]


@pytest.mark.django_db
def test_a_linux_with_sql_server_product_of_an_offer_file_is_counted_not_priced_as_on_demand() -> None:
    # The offer file lists "Linux with SQL Std" beside plain Linux: same operatingSystem and BoxUsage usagetype, only
    # preInstalledSw and operation differ. It was kept as the on-demand price when listed first ($5.536575/GPU-h).
    result = _import(SQL_TWIN_OFFER_FILE, INSTANCE_TYPES)
    assert result["rejected"] == {"preinstalled_software": 1, "capacity_block": 1}
    assert [(o["instance"], o["market"], o["usd_per_gpu_hour"]) for o in result["offers"]] == [
        ("p4d.24xlarge", "on_demand", 4.096575)
    ]


def test_the_api_filters_are_the_product_rule_each_offer_file_product_is_checked_against(tmp_path: Path) -> None:
    rule = {term.field: term.value for term in aws.PRODUCT_RULE}
    assert {f["Field"]: f["Value"] for f in product_filters("us-west-2")} == {"regionCode": "us-west-2", **rule}
    product = next(aws.offer_file_products(fixture_json(OFFER_FILE)))
    for term in aws.PRODUCT_RULE:
        changed = json.loads(json.dumps(product))
        changed["product"]["attributes"][term.field] = "something else"
        saved = tmp_path / "page.json"
        saved.write_text(json.dumps({"PriceList": [changed]}))
        [rejection] = aws.records_from_files([saved])
        assert isinstance(rejection, Rejection) and rejection.reason == term.reason
        assert term.field in rejection.detail and "something else" in rejection.detail


@pytest.mark.django_db
def test_without_instance_types_the_offer_file_names_no_gpu_and_is_counted() -> None:
    # The price list says "gpu": "8" and "gpuMemory": "NA": no model, so no guess; nothing accepted is exit 2.
    out = StringIO()
    with pytest.raises(CommandError, match="no offer accepted") as caught:
        call_command("import_prices", "--feed", "aws", str(FIXTURES / OFFER_FILE), stdout=out)
    assert caught.value.returncode == 2
    result = json.loads(out.getvalue())
    assert result["accepted"] == 0 and result["rejected"] == {"capacity_block": 1, "unknown_gpu": 1}


def test_the_offer_file_products_carry_their_own_terms() -> None:
    products = list(aws.offer_file_products(fixture_json(OFFER_FILE)))
    assert [p["product"]["sku"] for p in products] == ["H7NGEAC6UEHNTKSJ", "YSXJGN78QTXNVGDQ"]
    assert list(products[0]["terms"]["OnDemand"]) == ["H7NGEAC6UEHNTKSJ.JRTCKXETXF"]
    assert products[0]["terms"]["Reserved"] == {} and products[0]["version"] == "20240528203522"


def test_an_unknown_json_file_is_refused_naming_what_aws_files_are(tmp_path: Path) -> None:
    other = tmp_path / "azure.json"
    other.write_text(json.dumps({"Items": []}))
    with pytest.raises(aws.FeedFileError, match="offer file"):
        aws.records_from_files([other])
    assert not any(isinstance(r, Rejection) for r in aws.records_from_files([FIXTURES / INSTANCE_TYPES]))
