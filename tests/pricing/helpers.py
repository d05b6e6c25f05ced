from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def fixture_json(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text()


def lambda_payload_with_regions(count: int) -> dict[str, Any]:
    """The recorded Lambda response with its 8x H100 type offered in `count` regions and nothing else."""
    payload = fixture_json("written/lambda_instance_types.json")
    entry = copy.deepcopy(payload["data"]["gpu_8x_h100_sxm5"])
    entry["regions_with_capacity_available"] = [
        {"name": f"region-{index}", "description": f"Region {index}"} for index in range(count)
    ]
    return {"data": {"gpu_8x_h100_sxm5": entry}}


def as_json(payload: Any) -> str:
    return json.dumps(payload)
