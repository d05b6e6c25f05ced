"""Lambda's real instance-type names (as SkyPilot's v8 Lambda catalog lists them) map to GPU ids, and the
response example of Lambda's own API documentation goes through the live path."""

from __future__ import annotations

import csv
from decimal import Decimal

import pytest
import responses

from pricing.feeds.base import OfferRecord
from pricing.feeds.lambda_cloud import GPU_FROM_NAME, NAME
from pricing.feeds.skypilot import parse_catalog
from pricing.models import FeedRun, Offer
from pricing.services import feed_refresh
from tests.pricing.helpers import FIXTURES, fixture_json, fixture_text

REAL = FIXTURES / "skypilot_lambda_v8_vms.csv"
EXPECTED = {
    "gpu_8x_v100_n": "v100-16gb",
    "gpu_4x_a6000": "a6000",
    "gpu_8x_a100_80gb_sxm4": "a100-80gb",
    "gpu_1x_h100_pcie": "h100-pcie",
    "gpu_1x_h100_sxm5": "h100-sxm",
    "gpu_2x_h100_sxm5": "h100-sxm",
}


@pytest.mark.parametrize("name", [row["InstanceType"] for row in csv.DictReader(REAL.open()) if row["AcceleratorName"]])
def test_each_real_lambda_instance_name_maps_to_its_gpu(name: str) -> None:
    match = NAME.match(name)
    assert match is not None
    assert GPU_FROM_NAME.get(match.group(2)) == EXPECTED[name]


def test_the_same_rows_read_as_a_skypilot_catalog_agree_and_h100_pcie_is_not_sxm() -> None:
    records = [
        r for r in parse_catalog("lambda", fixture_text(REAL.name), url="lambda-v8") if isinstance(r, OfferRecord)
    ]
    assert {r.instance_type: r.canonical_gpu for r in records} == EXPECTED


@pytest.mark.django_db
@responses.activate
def test_the_api_documentations_response_example_through_the_live_path(settings) -> None:  # type: ignore[no-untyped-def]
    # Lambda's OpenAPI 1.5.3 example: prices as strings ("80"), no specs.gpus and no gpu_description,
    # so the price is read as a number and the count and GPU come from the instance name.
    settings.PRICING_LAMBDA_API_KEY = "test-key"
    settings.PRICING_LAMBDA_API_URL = "https://cloud.lambdalabs.com/api/v1/instance-types"
    responses.get(settings.PRICING_LAMBDA_API_URL, json=fixture_json("lambda_instance_types_openapi_example.json"))
    run = feed_refresh(name="lambda")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    assert responses.calls[0].request.headers["Authorization"] == "Bearer test-key"
    assert (run.fetched, run.accepted, run.rejections) == (2, 2, {})
    offers = {o.instance_type: o for o in Offer.objects.filter(feed="lambda")}
    a100, a6000 = offers["gpu_1x_a100"], offers["gpu_4x_a6000"]
    assert (a100.gpu, a100.gpu_count, a100.usd_per_hour, a100.region) == ("a100-40gb", 1, Decimal("0.8"), "us-tx-1")
    assert (a6000.gpu, a6000.gpu_count, a6000.usd_per_gpu_hour) == ("a6000", 4, Decimal("0.275"))
    assert a6000.region == "us-az-1" and a6000.vcpus == 24
