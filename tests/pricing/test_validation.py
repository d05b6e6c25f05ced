"""Every record is validated; each rejection carries its reason (no database needed)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pricing.feeds.base import OfferRecord, Rejection
from pricing.gpus import CANONICAL_GPUS, canonical_gpu
from pricing.services import validate_all, validate_offer


def record(**changes: object) -> OfferRecord:
    values = {
        "provider": "aws",
        "instance_type": "p5.48xlarge",
        "region": "us-east-1",
        "market": "on_demand",
        "gpu_name": "H100",
        "gpu_count": Decimal(8),
        "usd_per_hour": Decimal("55.04"),
        "source": "test",
    }
    values.update(changes)
    return OfferRecord(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"currency": "EUR"}, "currency_not_usd"),
        ({"market": "capacity_block"}, "unknown_market"),
        ({"gpu_name": "Quantum X9"}, "unknown_gpu"),
        ({"gpu_count": Decimal(0)}, "no_gpu_count"),
        ({"usd_per_hour": Decimal(0)}, "non_positive_price"),
        ({"usd_per_hour": Decimal("-1")}, "non_positive_price"),
        ({"usd_per_hour": Decimal("800")}, "implausible_per_gpu_price"),
        ({"usd_per_hour": Decimal("0.01")}, "implausible_per_gpu_price"),
        ({"instance_type": ""}, "missing_identity"),
        # Values the Offer columns cannot hold: DECIMAL(6,3) gpu_count, DECIMAL(12,6) prices, DECIMAL(9,1)
        # memory, a PositiveIntegerField vcpus, 120/60/40-character text, no NUL (PostgreSQL refuses it).
        ({"gpu_count": Decimal(1000), "usd_per_hour": Decimal(2000)}, "invalid_gpu_count"),
        ({"gpu_count": Decimal("999.9996"), "usd_per_hour": Decimal(2000)}, "invalid_gpu_count"),  # rounds to 1000
        ({"gpu_count": Decimal("1e30"), "usd_per_hour": Decimal("1e31")}, "invalid_gpu_count"),
        ({"gpu_count": Decimal("0.0001"), "usd_per_hour": Decimal("0.001")}, "no_gpu_count"),  # 0.000 stored
        ({"gpu_count": "8"}, "no_gpu_count"),  # not a Decimal
        ({"gpu_count": Decimal(800), "usd_per_hour": Decimal(1_000_000)}, "invalid_usd_per_hour"),
        ({"gpu_count": Decimal("0.01"), "usd_per_hour": Decimal("0.0000004")}, "non_positive_price"),  # 0 stored
        ({"vcpus": -5}, "invalid_vcpus"),
        ({"vcpus": 10**20}, "invalid_vcpus"),
        ({"vcpus": 2**31}, "invalid_vcpus"),
        ({"vcpus": "many"}, "invalid_vcpus"),
        ({"vcpus": True}, "invalid_vcpus"),
        ({"vcpus": Decimal(192)}, "invalid_vcpus"),  # adapters convert to int; the column type is checked here
        ({"memory_gib": Decimal("1e20")}, "invalid_memory_gib"),
        ({"memory_gib": Decimal("1e8")}, "invalid_memory_gib"),
        ({"memory_gib": Decimal(-1)}, "invalid_memory_gib"),
        ({"memory_gib": 2048.0}, "invalid_memory_gib"),
        ({"instance_type": "x" * 121}, "invalid_instance_type"),
        ({"instance_type": "p5.48xlarge\x00"}, "invalid_instance_type"),
        ({"region": "r" * 61}, "invalid_region"),
        ({"provider": "p" * 41}, "invalid_provider"),
        ({"source": "AWS Price List\x00"}, "invalid_source"),
    ],
)
def test_bad_records_are_rejected_with_a_reason(changes: dict, reason: str) -> None:
    result = validate_offer(record(**changes))
    assert isinstance(result, Rejection) and result.reason == reason


def test_a_good_record_gets_its_canonical_gpu_and_per_gpu_price() -> None:
    result = validate_offer(record())
    assert not isinstance(result, Rejection)
    assert (result.gpu, result.usd_per_gpu_hour) == ("h100-sxm", Decimal("6.88"))


def test_values_are_stored_at_the_columns_precision_and_the_largest_that_fit_pass() -> None:
    result = validate_offer(
        record(
            gpu_count=Decimal("999.999"),
            usd_per_hour=Decimal("9999.9899999"),
            vcpus=2**31 - 1,
            memory_gib=Decimal("99999999.94"),
        )
    )
    assert not isinstance(result, Rejection)
    assert (result.gpu_count, result.usd_per_hour, result.vcpus, result.memory_gib) == (
        Decimal("999.999"),
        Decimal("9999.990000"),
        2**31 - 1,
        Decimal("99999999.9"),
    )


def test_a_rejected_records_nul_is_escaped_in_the_examples() -> None:
    checked = validate_all([record(instance_type="p5\x00")])
    assert checked.rejections["invalid_instance_type"]["examples"] == [
        "aws p5\\x00 us-east-1 on_demand: instance_type holds a NUL character"
    ]


def test_duplicates_are_counted_and_spot_above_on_demand_is_flagged() -> None:
    checked = validate_all(
        [
            record(),
            record(),
            record(market="spot", usd_per_hour=Decimal("60")),
            Rejection("malformed_record", "from the adapter"),
        ]
    )
    assert checked.fetched == 4 and len(checked.accepted) == 2
    assert {reason: entry["count"] for reason, entry in checked.rejections.items()} == {
        "duplicate_offer": 1,
        "malformed_record": 1,
    }
    assert checked.warnings and "spot above on-demand" in checked.warnings[0]


@pytest.mark.parametrize(
    ("name", "gpu"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("Quantum X9", None),
        ("H100", "h100-sxm"),
        ("A100-80GB", "a100-80gb"),
        ("NVIDIA A10G", "a10g"),
        ("Tesla T4", "t4"),
        ("RTX 4090", "rtx4090"),
        ("NVIDIA GeForce RTX 4090", "rtx4090"),
        ("MI300X", "mi300x"),
        ("H100 NVL", "h100-pcie"),
        ("GH200", "gh200"),
        ("b200", "b200"),
        ("", None),
    ],
)
def test_provider_gpu_names_map_to_canonical_ids(name: str, gpu: str | None) -> None:
    assert canonical_gpu(name) == gpu


def test_design_gpu_ids_are_all_canonical() -> None:
    design = "v100-32gb a10g l4 l40s a100-40gb a100-80gb h100-pcie h100-sxm h200 gh200 b200 gb200 rtx4090 mi300x"
    assert set(design.split()) <= set(CANONICAL_GPUS)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"vcpus": 10**5000}, "invalid_vcpus"),  # repr() of it raised ValueError (Python's 4,300-digit limit)
        ({"vcpus": "9" * 5000}, "invalid_vcpus"),
        ({"memory_gib": Decimal("9" * 5000)}, "invalid_memory_gib"),
        ({"gpu_count": Decimal("9" * 5000)}, "invalid_gpu_count"),
        ({"usd_per_hour": Decimal("9" * 5000)}, "invalid_usd_per_hour"),
        ({"usd_per_hour": Decimal("-" + "9" * 5000)}, "non_positive_price"),
    ],
)
def test_a_rejection_never_writes_out_a_value_of_thousands_of_digits(changes: dict, reason: str) -> None:
    # A hostile probe: the message is kept in the run's rejection examples and shown on the feed status.
    result = validate_offer(record(**changes))
    assert isinstance(result, Rejection) and result.reason == reason
    assert len(result.detail) < 300, result.detail[:300]
