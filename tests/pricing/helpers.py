from __future__ import annotations

import copy
import datetime as dt
import json
import os
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


def lambda_h100_catalog(path: Path, *, usd_per_hour: str, mtime: dt.datetime) -> Path:
    """A mutated copy of the real SkyPilot Lambda catalog (skypilot_lambda_v8_vms.csv): its 2x H100 SXM5 row made the
    8x type `gpu_8x_h100_sxm5` in europe-central-1 at `usd_per_hour`, the file dated `mtime` (the date
    `import_prices --feed skypilot` gives its offers)."""
    lines = fixture_text("skypilot_lambda_v8_vms.csv").splitlines()
    row = next(line for line in lines if line.startswith("gpu_2x_h100_sxm5,"))
    row = row.replace(
        "gpu_2x_h100_sxm5,H100,2.0,52.0,450.0,8.38,", f"gpu_8x_h100_sxm5,H100,8.0,208.0,1800.0,{usd_per_hour},"
    )
    row = row.replace("'Count': 2.0", "'Count': 8.0")
    path.write_text(f"{lines[0]}\n{row}\n")
    os.utime(path, (mtime.timestamp(), mtime.timestamp()))
    return path
