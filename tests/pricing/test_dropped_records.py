"""Every record an adapter drops is counted under a reason, one test per reason, each on a record of
the real shape: a recorded payload's item (tests/pricing/fixtures) with the one field changed that
makes it unusable."""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from pricing.feeds import aws, azure, gcp, lambda_cloud
from pricing.feeds.base import OfferRecord, Rejection
from pricing.feeds.skypilot import parse_catalog
from pricing.services import SNAPSHOT_CSV, snapshot_load, validate_all
from tests.pricing.helpers import FIXTURES, fixture_json, fixture_text

AZURE_PAGE = "azure_retail_eastus_nd_compute_price_tracker.json"
GCP_PAGE = "gcp_skus_opencost_page.json"
LAMBDA_EXAMPLE = "lambda_instance_types_openapi_example.json"
AWS_OFFER_FILE = "aws_offer_file_us_east_1_opencost.json"
AWS_INSTANCE_TYPES = "aws_describe_instance_types_moto.json"
CUDO_V8 = "skypilot_cudo_v8_vms.csv"


def reasons(items: list[OfferRecord | Rejection]) -> dict[str, int]:
    """What the refresh service records for these items: the count per reason, after validation."""
    return {reason: entry["count"] for reason, entry in validate_all(items).rejections.items()}


# --- Azure Retail Prices ----------------------------------------------------------------------


def azure_item() -> dict[str, Any]:
    """The recorded ND96isr H100 v5 on-demand item (Linux, $98.32/h), accepted as it stands."""
    return copy.deepcopy(fixture_json(AZURE_PAGE)["Items"][0])


def test_the_azure_item_as_recorded_is_accepted() -> None:
    assert reasons(list(azure.item_records(azure_item()))) == {}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"retailPrice": None, "unitPrice": None}, "malformed_record"),
        ({"unitOfMeasure": "1/Month"}, "unsupported_unit"),
        ({"type": "DevTestConsumption"}, "unsupported_price_type"),
        ({"type": "Reservation", "reservationTerm": "5 Years"}, "unsupported_price_type"),
        ({"type": "Reservation", "reservationTerm": ["1 Year"]}, "unsupported_price_type"),  # wrong type (mutated)
        ({"productName": "Virtual Machines NDsr H100 v5 Series Windows"}, "not_linux"),
        ({"meterName": "ND96isrH100v5 Low Priority", "skuName": "ND96isrH100v5 Low Priority"}, "low_priority"),
        ({"armSkuName": "NDasrA100v4_Type1"}, "unknown_gpu"),  # a non-ARM name compute-price-tracker observed
        ({"currencyCode": "EUR"}, "currency_not_usd"),
        ({"retailPrice": 0.0}, "non_positive_price"),
    ],
)
def test_each_dropped_azure_item_is_counted(change: dict[str, Any], reason: str) -> None:
    item = azure_item() | change
    assert reasons(list(azure.item_records(item))) == {reason: 1}


def test_an_azure_item_that_is_no_object_is_counted_on_the_live_path_too() -> None:
    items = [azure_item(), "ND96isrH100v5", None]
    assert reasons(list(azure.page_records(items, where="Azure prices eastus"))) == {"malformed_record": 2}


# --- GCP Cloud Billing Catalog ----------------------------------------------------------------


def gcp_skus() -> list[dict[str, Any]]:
    """OpenCost's recorded page: the A100 (40 GB) GPU SKU, then the A2 core and RAM SKUs."""
    return copy.deepcopy(fixture_json(GCP_PAGE)["skus"])


def gcp_reasons(skus: list[Any]) -> dict[str, int]:
    return reasons(list(gcp.assemble(skus, gcp.machine_types())))


def test_the_recorded_gcp_page_prices_a2_highgpu_with_nothing_dropped() -> None:
    records = list(gcp.assemble(gcp_skus(), gcp.machine_types()))
    assert reasons(records) == {}
    assert {r.instance_type for r in records if isinstance(r, OfferRecord)} >= {"a2-highgpu-1g", "a2-megagpu-16g"}


def _set(sku: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    target = sku
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return sku


GPU_PRICE = ("pricingInfo", 0, "pricingExpression")


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        # "Commit1Mo": a usage type the Cloud Billing v1 reference names (Category.UsageType: "Example:
        # "OnDemand", "Preemptible", "Commit1Mo", "Commit1Yr" etc.", Google.Cloud.Billing.V1 3.9.0 docs).
        (("category", "usageType"), "Commit1Mo", "unsupported_usage_type"),
        (("pricingInfo",), [], "malformed_record"),
        ((*GPU_PRICE, "tieredRates", 0, "unitPrice", "currencyCode"), "EUR", "currency_not_usd"),
        ((*GPU_PRICE, "usageUnit"), "mo", "unsupported_unit"),
        (("serviceRegions",), [], "no_service_region"),
        (("description",), "Nvidia Tesla A100 GPU attached to DWS Defined Duration VMs running in Americas", None),
        (("description",), "Nvidia L40 GPU running in Americas", "gpu_sku_without_machine_type"),
        # Wrong JSON types (mutated): each one malformed SKU, counted; they raised out of the adapter before.
        ((*GPU_PRICE, "tieredRates"), "2.933", "malformed_record"),
        ((*GPU_PRICE, "tieredRates"), None, "malformed_record"),
        ((*GPU_PRICE, "tieredRates", 0, "unitPrice"), "2.933", "malformed_record"),
        (("category",), "GPU", "malformed_record"),
        (("serviceRegions",), 7, "malformed_record"),
    ],
)
def test_each_dropped_gcp_gpu_sku_is_counted(path: tuple[Any, ...], value: Any, reason: str | None) -> None:
    skus = gcp_skus()
    _set(skus[0], path, value)
    # The A2 host SKUs stay priced, so the only reason counted is the GPU SKU's own (or, when the
    # GPU SKU is gone, that the a2 machine types have no GPU price: no record, nothing to count).
    got = gcp_reasons(skus)
    if reason is None:  # a DWS description: counted as a purchase mode this app does not model
        assert got == {"special_mode_sku": 1}
    else:
        assert got == {reason: 1}


def test_a_gcp_host_sku_missing_in_a_region_is_counted_per_machine_type() -> None:
    skus = gcp_skus()
    ram = next(s for s in skus if "Ram" in s["description"])
    ram["serviceRegions"] = [r for r in ram["serviceRegions"] if r != "us-central1"]
    got = gcp_reasons(skus)
    a2_machines = [m for m in gcp.machine_types() if m.gpu_skus == ("nvidia tesla a100 gpu",)]
    assert got == {"missing_host_sku": len(a2_machines)}


def test_a_gcp_sku_that_is_no_object_is_counted() -> None:
    assert gcp_reasons([*gcp_skus(), "039F-D0DA-4055"]) == {"malformed_record": 1}


# --- Lambda instance-types --------------------------------------------------------------------


def lambda_data() -> dict[str, Any]:
    return copy.deepcopy(fixture_json(LAMBDA_EXAMPLE)["data"])


def lambda_reasons(data: dict[str, Any]) -> dict[str, int]:
    items: list[OfferRecord | Rejection] = []
    for key, entry in data.items():
        items.extend(lambda_cloud.instance_records(key, entry, url="test"))
    return reasons(items)


def test_each_dropped_lambda_entry_is_counted() -> None:
    data = lambda_data()
    del data["gpu_1x_a100"]["instance_type"]["price_cents_per_hour"]
    assert lambda_reasons(data) == {"malformed_record": 1}
    data = lambda_data()
    data["gpu_4x_a6000"] = {"regions_with_capacity_available": []}  # no instance_type object
    assert lambda_reasons(data) == {"malformed_record": 1}
    data = lambda_data()
    data["gpu_1x_a100"]["instance_type"]["name"] = data["gpu_1x_a100"]["instance_type"]["name"].replace("a100", "x9")
    assert lambda_reasons(data) == {"unknown_gpu": 1}


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        # Wrong JSON types (mutated copies of the documented gpu_1x_a100 entry): one counted record each,
        # where they raised AttributeError/TypeError out of the adapter (or stored "many" as vCPUs) before.
        (("instance_type", "specs"), "24 vCPUs", "malformed_record"),
        (("instance_type", "name"), 42, "malformed_record"),
        (("regions_with_capacity_available",), 3, "malformed_record"),
        (("instance_type", "gpu_description"), 7, "malformed_record"),
        (("instance_type", "specs", "vcpus"), "many", "malformed_record"),
        (("instance_type", "specs", "vcpus"), 24.5, "malformed_record"),
        (("instance_type", "specs", "vcpus"), -5, "invalid_vcpus"),  # an integer, outside the column
        (("instance_type", "specs", "memory_gib"), 1e20, "invalid_memory_gib"),
    ],
)
def test_a_wrong_typed_lambda_field_is_one_counted_record(path: tuple[str, ...], value: Any, reason: str) -> None:
    data = lambda_data()
    _set(data["gpu_1x_a100"], path, value)
    assert lambda_reasons(data) == {reason: 1}
    # The other instance type of the payload is still read.
    records = list(lambda_cloud.instance_records("gpu_4x_a6000", data["gpu_4x_a6000"], url="test"))
    assert validate_all(records).accepted


def test_a_lambda_vcpu_count_written_as_a_number_string_is_stored_as_an_integer() -> None:
    data = lambda_data()
    data["gpu_1x_a100"]["instance_type"]["specs"]["vcpus"] = "24"  # mutated: the number as a string
    records = list(lambda_cloud.instance_records("gpu_1x_a100", data["gpu_1x_a100"], url="test"))
    accepted = validate_all(records).accepted
    assert [offer.vcpus for offer in accepted] == [24] and type(accepted[0].vcpus) is int


def test_a_lambda_region_given_as_a_bare_name_keeps_its_name() -> None:
    data = lambda_data()
    data["gpu_1x_a100"]["regions_with_capacity_available"] = ["us-tx-1", {"name": "us-az-1"}]
    records = list(lambda_cloud.instance_records("gpu_1x_a100", data["gpu_1x_a100"], url="test"))
    assert [r.region for r in records if isinstance(r, OfferRecord)] == ["us-tx-1", "us-az-1"]


# --- AWS offer file / get_products ------------------------------------------------------------


def aws_offer_file() -> dict[str, Any]:
    """OpenCost's offer file: p4d.24xlarge on demand (SKU H7NGEAC6UEHNTKSJ) and its Capacity Block twin."""
    return copy.deepcopy(fixture_json(AWS_OFFER_FILE))


def aws_reasons(offer_file: dict[str, Any], tmp_path: Path) -> dict[str, int]:
    # Read as `import_prices` reads saved files: the GPUs from moto's record of DescribeInstanceTypes.
    path = tmp_path / "index.json"
    path.write_text(json.dumps(offer_file), encoding="utf-8")
    return reasons(aws.records_from_files([path, FIXTURES / AWS_INSTANCE_TYPES]))


def test_the_recorded_aws_offer_file_drops_only_the_capacity_block(tmp_path: Path) -> None:
    assert aws_reasons(aws_offer_file(), tmp_path) == {"capacity_block": 1}


def test_an_aws_product_without_price_terms_is_counted(tmp_path: Path) -> None:
    offer_file = aws_offer_file()
    del offer_file["terms"]["OnDemand"]["H7NGEAC6UEHNTKSJ"]
    assert aws_reasons(offer_file, tmp_path) == {"capacity_block": 1, "no_price_terms": 1}


def test_an_aws_on_demand_term_without_an_hourly_dimension_is_counted(tmp_path: Path) -> None:
    offer_file = aws_offer_file()
    for term in offer_file["terms"]["OnDemand"]["H7NGEAC6UEHNTKSJ"].values():
        for dimension in term["priceDimensions"].values():
            dimension["unit"] = "Quantity"  # the unit of an upfront fee
    assert aws_reasons(offer_file, tmp_path) == {"capacity_block": 1, "malformed_record": 1}


ON_DEMAND = ("terms", "OnDemand", "H7NGEAC6UEHNTKSJ", "H7NGEAC6UEHNTKSJ.JRTCKXETXF")
DIMENSION = (*ON_DEMAND, "priceDimensions", "H7NGEAC6UEHNTKSJ.JRTCKXETXF.6YS6EN2CT7")
P4D = ("products", "H7NGEAC6UEHNTKSJ")


@pytest.mark.parametrize(
    ("path", "value", "reason"),
    [
        # Wrong JSON types in the recorded p4d.24xlarge product and its on-demand term (mutated): one counted
        # record each, where they raised AttributeError/TypeError out of the adapter before.
        ((*P4D, "attributes"), None, "malformed_record"),
        ((*P4D, "attributes", "instanceType"), ["p4d.24xlarge"], "malformed_record"),
        ((*P4D, "productFamily"), [], "not_compute_instance"),
        ((*P4D, "attributes", "usagetype"), None, "not_box_usage"),
        (ON_DEMAND, None, "malformed_record"),
        (ON_DEMAND[:3], "JRTCKXETXF", "malformed_record"),
        ((*ON_DEMAND, "priceDimensions"), "Hrs", "malformed_record"),
        (DIMENSION, None, "malformed_record"),
        ((*DIMENSION, "pricePerUnit"), "32.7726000000", "malformed_record"),
        ((*DIMENSION, "pricePerUnit"), 32, "malformed_record"),
        ((*P4D, "attributes", "memory"), "100000000 GiB", "invalid_memory_gib"),
    ],
)
def test_a_wrong_typed_aws_field_is_one_counted_record(
    path: tuple[str, ...], value: Any, reason: str, tmp_path: Path
) -> None:
    offer_file = aws_offer_file()
    _set(offer_file, path, value)
    assert aws_reasons(offer_file, tmp_path) == {"capacity_block": 1, reason: 1}


def test_a_wrong_typed_aws_reserved_term_is_counted_and_the_on_demand_term_kept(tmp_path: Path) -> None:
    offer_file = aws_offer_file()
    on_demand = offer_file["terms"]["OnDemand"]["H7NGEAC6UEHNTKSJ"]["H7NGEAC6UEHNTKSJ.JRTCKXETXF"]
    # Mutated: Reserved terms of the shape the offer file gives them, one with termAttributes as text and one
    # with a list for LeaseContractLength.
    offer_file["terms"]["Reserved"] = {
        "H7NGEAC6UEHNTKSJ": {
            "H7NGEAC6UEHNTKSJ.A": on_demand | {"termAttributes": "1yr standard No Upfront"},
            "H7NGEAC6UEHNTKSJ.B": on_demand
            | {"termAttributes": {"LeaseContractLength": ["1yr"], "OfferingClass": "standard"}},
        }
    }
    path = tmp_path / "index.json"
    path.write_text(json.dumps(offer_file), encoding="utf-8")
    checked = validate_all(aws.records_from_files([path, FIXTURES / AWS_INSTANCE_TYPES]))
    counts = {reason: entry["count"] for reason, entry in checked.rejections.items()}
    assert counts == {"capacity_block": 1, "malformed_record": 2}
    assert [(o.record.instance_type, o.record.market) for o in checked.accepted] == [("p4d.24xlarge", "on_demand")]


def test_an_aws_vcpu_attribute_that_is_no_integer_leaves_vcpus_unknown(tmp_path: Path) -> None:
    offer_file = aws_offer_file()
    _set(offer_file, (*P4D, "attributes", "vcpu"), "\u00b2")  # mutated: '²' passed str.isdigit() and broke int()
    path = tmp_path / "index.json"
    path.write_text(json.dumps(offer_file), encoding="utf-8")
    checked = validate_all(aws.records_from_files([path, FIXTURES / AWS_INSTANCE_TYPES]))
    assert [o.vcpus for o in checked.accepted] == [None]


# --- SkyPilot catalog -------------------------------------------------------------------------


def cudo_rows(change: dict[str, str]) -> str:
    """The recorded Cudo v8 catalog with `change` applied to its first row."""
    reader = csv.DictReader(io.StringIO(fixture_text(CUDO_V8)))
    rows = list(reader)
    rows[0] |= change
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(reader.fieldnames or []), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"Price": "", "SpotPrice": ""}, "no_price"),
        ({"Price": "n/a"}, "bad_cell_Price"),
        ({"AcceleratorCount": ""}, "bad_cell_AcceleratorCount"),
        ({"GpuInfo": "{'Gpus': [{'Name': 'H100-SXM'"}, "bad_cell_GpuInfo"),
        ({"AcceleratorName": ""}, "no_accelerator"),
        ({"AcceleratorName": "NoSuchGPU", "GpuInfo": ""}, "unknown_gpu"),
    ],
)
def test_each_dropped_skypilot_row_is_counted(change: dict[str, str], reason: str) -> None:
    before = reasons(list(parse_catalog("cudo", fixture_text(CUDO_V8), url="test")))
    after = reasons(list(parse_catalog("cudo", cudo_rows(change), url="test")))
    assert before == {}
    assert after == {reason: 1}


# --- the bundled snapshot ---------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("change", [{"gpu_count": "eight"}, {"usd_per_hour": ""}, {"observed_on": "2026-13-01"}])
def test_each_unreadable_snapshot_row_is_counted(tmp_path: Path, change: dict[str, str]) -> None:
    reader = csv.DictReader(io.StringIO(SNAPSHOT_CSV.read_text(encoding="utf-8")))
    rows = list(reader)[:3]
    rows[0] |= change
    path = tmp_path / "snapshot.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(reader.fieldnames or []))
        writer.writeheader()
        writer.writerows(rows)
    run = snapshot_load(path=path)
    assert run is not None and (run.fetched, run.accepted) == (3, 2)
    assert {reason: entry["count"] for reason, entry in run.rejections.items()} == {"unreadable_row": 1}
