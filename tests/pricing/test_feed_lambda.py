"""Lambda's real instance-type names (as SkyPilot's v8 Lambda catalog lists them) map to GPU ids, and the
response example of Lambda's own API documentation goes through the live path."""

from __future__ import annotations

import csv
from decimal import Decimal
from typing import Any

import pytest
import responses

from pricing.feeds.base import OfferRecord
from pricing.feeds.lambda_cloud import GPU_FROM_NAME, NAME, instance_records
from pricing.feeds.skypilot import parse_catalog
from pricing.models import FeedRun, Offer
from pricing.services import feed_refresh, validate_all
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
    # Its descriptions are placeholders that name no known GPU ("1x RTX A100 (24 GB)"), so the names decide:
    # Lambda's bare gpu_1x_a100 is the A100 PCIe card ("A100 (40 GB PCIe)"), not the SXM4 a100-40gb.
    assert (a100.gpu, a100.gpu_count, a100.usd_per_hour, a100.region) == (
        "a100-pcie-40gb",
        1,
        Decimal("0.8"),
        "us-tx-1",
    )
    assert (a6000.gpu, a6000.gpu_count, a6000.usd_per_gpu_hour) == ("a6000", 4, Decimal("0.275"))
    assert a6000.region == "us-az-1" and a6000.vcpus == 24


def _written_entry(name: str, gpu_description: str | None, cents: int) -> dict[str, Any]:
    """An instance-types entry WRITTEN for these tests (not a recorded response): the names and descriptions as
    Lambda publishes them (gpu_1x_rtx6000 "RTX 6000 (24 GB)" at $0.50, gpu_1x_a100 "A100 (40 GB PCIe)" at $1.29),
    in the shape of the documented example (tests/pricing/fixtures/lambda_instance_types_openapi_example.json)."""
    count = int(NAME.match(name).group(1))  # type: ignore[union-attr]
    instance: dict[str, Any] = {
        "name": name,
        "price_cents_per_hour": cents,
        "specs": {"vcpus": 14, "memory_gib": 46, "gpus": count},
    }
    if gpu_description is not None:
        instance |= {"description": f"{count}x {gpu_description}", "gpu_description": gpu_description}
    return {"instance_type": instance, "regions_with_capacity_available": [{"name": "us-south-1"}]}


@pytest.mark.parametrize(
    ("name", "gpu_description", "gpu"),
    [
        # The 24 GB Quadro RTX 6000 has no id: an unknown GPU, never the 48 GB RTX A6000 (it was the cheapest
        # "a6000" at $0.50 and passed 48 GB memory-fit checks).
        ("gpu_1x_rtx6000", "RTX 6000 (24 GB)", None),
        ("gpu_1x_rtx6000", None, None),
        ("gpu_1x_a100", "A100 (40 GB PCIe)", "a100-pcie-40gb"),  # was the SXM4 a100-40gb
        ("gpu_1x_a100_pcie", "A100 (40 GB PCIe)", "a100-pcie-40gb"),  # was an unknown GPU
        ("gpu_1x_a100_pcie", None, "a100-pcie-40gb"),
        ("gpu_8x_a100", "A100 (40 GB SXM4)", "a100-40gb"),  # the description decides over the bare name
        ("gpu_1x_a100_sxm4", "A100 (40 GB SXM4)", "a100-40gb"),
        ("gpu_8x_a100_80gb_sxm4", "A100 (80 GB SXM4)", "a100-80gb"),
        ("gpu_1x_a100_80gb_pcie", None, "a100-pcie-80gb"),  # was the SXM4 a100-80gb
        ("gpu_1x_h100_pcie", "H100 (80 GB PCIe)", "h100-pcie"),
        ("gpu_8x_h100_sxm5", "H100 (80 GB SXM5)", "h100-sxm"),
        ("gpu_1x_a6000", "A6000 (48 GB)", "a6000"),
        ("gpu_1x_gh200", "GH200 (96 GB)", "gh200"),
        ("gpu_8x_b200_sxm6", "B200 (180 GB SXM6)", "b200"),
        ("gpu_8x_v100", "Tesla V100 (16 GB)", "v100-16gb"),
    ],
)
def test_the_records_own_description_decides_the_gpu_and_a_24gb_rtx_6000_is_no_a6000(
    name: str, gpu_description: str | None, gpu: str | None
) -> None:
    records = list(instance_records(name, _written_entry(name, gpu_description, 50), url="written"))
    checked = validate_all(records)
    if gpu is None:
        assert not checked.accepted and set(checked.rejections) == {"unknown_gpu"}
    else:
        assert [offer.record.canonical_gpu for offer in checked.accepted] == [gpu]
