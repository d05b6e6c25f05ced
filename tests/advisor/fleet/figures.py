"""The issue's "Done when" fleets as Fleet Plan documents, shared by the command, API and page tests."""

from __future__ import annotations

from typing import Any

from advisor.advice.fleet.plan import TierPrices

# $2.50 per GPU-hour; a $438,000 8-GPU node kept 5 years with no other cost: u* = 0.5.
MANUAL_QUOTES: dict[str, Any] = {
    "gpu": "h100-sxm",
    "network": {"gpus_per_node": 8},
    "rent": {"usd_per_gpu_hour": 2.50},
    "buy": {
        "capex_usd": 438_000,
        "years": 5,
        "discount_rate": 0,
        "residual_fraction": 0,
        "power_usd_per_kwh": 0,
        "colo_usd_per_kw_month": 0,
        "support_fraction_per_year": 0,
        "staff_usd_per_year": 0,
    },
}


def fleet(*jobs: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"name": "done-when", **MANUAL_QUOTES, "jobs": list(jobs), **extra}


BASE_AND_WEEK = fleet({"name": "base", "gpus": 32, "hours": 8760}, {"name": "big week", "gpus": 256, "hours": 168})
FOUR_SHORT = fleet({"name": "pretrain", "gpus": 128, "hours": 500, "runs_per_year": 4})
TEN_LONG = fleet({"name": "pretrain", "gpus": 64, "hours": 700, "runs_per_year": 10})


def jan_june(wait_days: float = 0) -> dict[str, Any]:
    return fleet(
        {"name": "jan", "gpus": 48, "hours": 4000, "months": [1]},
        {"name": "june", "gpus": 32, "hours": 4000, "months": [6], "max_wait_days": wait_days},
    )


# (document, owned GPUs recommended, USD a year, all-rent USD a year)
FIGURES: list[tuple[str, dict[str, Any], int, float, float]] = [
    ("base-and-week", BASE_AND_WEEK, 32, 457_920, 808_320),
    ("four-short", FOUR_SHORT, 0, 640_000, 640_000),
    ("ten-long", TEN_LONG, 64, 700_800, 1_120_000),
    ("jan-june-no-wait", jan_june(0), 0, 800_000, 800_000),
    ("jan-june-wait-16", jan_june(16), 48, 525_600, 800_000),
]


def option(plan: dict[str, Any], owned: int) -> dict[str, Any]:
    return next(o for o in plan["options"] if o["owned_gpus"] == owned)


# A capacity planner's probe: a $300,000 node under the default buy settings ($118,383.24 a year fixed, $0.1989 of
# energy per busy GPU-hour).
PROBE_NODE = TierPrices(
    gpus_per_node=8,
    owned_one_node_usd_per_year=118_383.24,
    owned_per_node_usd_per_year=118_383.24,
    owned_base_usd_per_year=0.0,
    owned_variable_usd_per_gpu_hour=0.1989,
    on_demand_usd_per_gpu_hour=3.0,
)
