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
    ],
)
def test_bad_records_are_rejected_with_a_reason(changes: dict, reason: str) -> None:
    result = validate_offer(record(**changes))
    assert isinstance(result, Rejection) and result.reason == reason


def test_a_good_record_gets_its_canonical_gpu_and_per_gpu_price() -> None:
    result = validate_offer(record())
    assert not isinstance(result, Rejection)
    assert (result.gpu, result.usd_per_gpu_hour) == ("h100-sxm", Decimal("6.88"))


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
