"""Lambda's real instance-type names (as SkyPilot's v8 Lambda catalog lists them) map to GPU ids."""

from __future__ import annotations

import csv

import pytest

from pricing.feeds.base import OfferRecord
from pricing.feeds.lambda_cloud import GPU_FROM_NAME, NAME
from pricing.feeds.skypilot import parse_catalog
from tests.pricing.helpers import FIXTURES, fixture_text

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
