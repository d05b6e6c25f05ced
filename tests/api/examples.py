"""Scenario documents the API tests send."""

from __future__ import annotations

import copy
from typing import Any

DESIGN_SCENARIO: dict[str, Any] = {
    "name": "7B pretraining",
    "workload": {
        "kind": "training",
        "model": {"params_b": 7, "layers": 32, "hidden": 4096, "heads": 32, "seq_len": 4096},
        "tokens": 1.0e12,
        "global_batch": 1024,
        "precision": "bf16",
        "parallelism": {"strategy": "fsdp", "tp": 1, "pp": 1, "micro_batch": 2, "activation_checkpointing": False},
        "runs_per_year": 4,
    },
    "gpu": "h100-sxm",
    "cluster_sizes": [8, 16, 32, 64, 128],
    "network": {"gpus_per_node": 8, "inter_node_gbps": 3200},
    "rent": {"providers": [], "markets": ["on_demand", "spot", "reserved_1y", "reserved_3y"], "usd_per_gpu_hour": None},
    "buy": {
        "server": None,
        "capex_usd": None,
        "years": 5,
        "discount_rate": 0.08,
        "residual_fraction": 0.1,
        "power_usd_per_kwh": 0.12,
        "pue": 1.3,
        "colo_usd_per_kw_month": 150,
        "support_fraction_per_year": 0.1,
        "staff_usd_per_year": 0,
    },
    "utilization": 0.6,
}

MINIMAL_SCENARIO: dict[str, Any] = {
    "workload": {"kind": "training", "model": {"params_b": 1}, "tokens": 1e9},
    "gpu": "h100-sxm",
    "cluster_sizes": [8, 16],
}


def scenario(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(MINIMAL_SCENARIO)
    doc.update(changes)
    return doc
