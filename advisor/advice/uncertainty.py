"""Uncertainty and sensitivity of the training advice: Monte Carlo quantiles and the tornado of inputs."""

from __future__ import annotations

import math
from typing import Any, Final

import numpy as np

from advisor.advice.costs import costs
from advisor.advice.ownership import Hardware
from advisor.scenario import Scenario

MC_SAMPLES: Final[int] = 2000


# The price spread a renter faces: the cheapest offer may have no capacity, so draws go uniformly over the
# cheapest few eligible offers of the chosen market (the cheapest included).
MC_PRICE_ALTERNATIVES: Final[int] = 5


MC_SEED: Final[int] = 20261202


QUANTILES: Final[tuple[float, float, float]] = (0.1, 0.5, 0.9)


SENSITIVITY_STEP: Final[float] = 0.2


SENSITIVITY_TOP: Final[int] = 6


# Inputs of the tornado: label, unit, scenario override key.
SENSITIVITY_INPUTS: Final[tuple[tuple[str, str, str], ...]] = (
    ("rental price", "USD/GPU-hour", "rent_factor"),
    ("throughput", "tokens/s", "throughput_factor"),
    ("utilization", "fraction", "utilization"),
    ("capex per node", "USD", "capex_per_node"),
    ("years of ownership", "years", "years"),
    ("discount rate", "per year", "discount_rate"),
    ("residual value", "fraction of capex", "residual_fraction"),
    ("power price", "USD/kWh", "power_usd_per_kwh"),
    ("PUE", "ratio", "pue"),
    ("colocation", "USD/kW-month", "colo_usd_per_kw_month"),
    ("support", "fraction of capex/year", "support_fraction_per_year"),
    ("staff", "USD/year", "staff_usd_per_year"),
)


def sensitivity_rows(
    *,
    s: Scenario,
    i: int,
    gpus: np.ndarray,
    nodes: np.ndarray,
    tps: np.ndarray,
    head_price: np.ndarray,
    head_reserved: np.ndarray,
    head_spot: np.ndarray,
    head_floating: np.ndarray,
    spot_lost: np.ndarray,
    be_price: np.ndarray,
    hw: Hardware,
) -> list[dict[str, Any]]:
    """Owned minus rented cost per run at size ``i`` with each input at -20% and +20%, in one vectorized call."""
    shown = {"rent_factor": float(head_price[i]), "throughput_factor": float(tps[i])}  # factors shown as values
    base_values: dict[str, float] = {
        "rent_factor": 1.0,
        "throughput_factor": 1.0,
        "utilization": s.utilization,
        "capex_per_node": hw.capex_per_node,
        "years": s.buy.years,
        "discount_rate": s.buy.discount_rate,
        "residual_fraction": s.buy.residual_fraction,
        "power_usd_per_kwh": s.buy.power_usd_per_kwh,
        "pue": s.buy.pue,
        "colo_usd_per_kw_month": s.buy.colo_usd_per_kw_month,
        "support_fraction_per_year": s.buy.support_fraction_per_year,
        "staff_usd_per_year": s.buy.staff_usd_per_year,
    }
    keys = [k for _, _, k in SENSITIVITY_INPUTS]
    cases = 1 + 2 * len(keys)
    columns = {k: np.full(cases, v, dtype=float) for k, v in base_values.items()}
    for j, k in enumerate(keys):
        columns[k][1 + 2 * j] = base_values[k] * (1 - SENSITIVITY_STEP)
        columns[k][2 + 2 * j] = base_values[k] * (1 + SENSITIVITY_STEP)
    columns["utilization"] = np.minimum(columns["utilization"], 1.0)
    columns["pue"] = np.maximum(columns["pue"], 1.0)
    columns["residual_fraction"] = np.minimum(columns["residual_fraction"], 1.0)
    out = costs(
        s=s,
        gpus=gpus[i],
        nodes=nodes[i],
        tokens_per_s=tps[i],
        rent_price=head_price[i],
        reserved=head_reserved[i],
        spot_lost=spot_lost[i] if head_spot[i] else 0.0,
        floating=head_floating[i],
        break_even_price=be_price[i],
        hw=hw,
        overrides=columns,
    )
    metric = out["own_usd_per_run"] - out["rent_usd_per_run"]
    base = float(metric[0])
    rows = []
    for j, (label, unit, k) in enumerate(SENSITIVITY_INPUTS):
        low, high = float(metric[1 + 2 * j]), float(metric[2 + 2 * j])
        if not (math.isfinite(low) and math.isfinite(high)):
            continue
        scale = shown.get(k, 1.0)
        rows.append(
            {
                "input": label,
                "unit": unit,
                "metric": "owned minus rented cost per run (USD)",
                "base_input": base_values[k] * scale,
                "low_input": float(columns[k][1 + 2 * j]) * scale,
                "high_input": float(columns[k][2 + 2 * j]) * scale,
                "base": base,
                "low": low,
                "high": high,
                "swing": abs(high - low),
            }
        )
    rows.sort(key=lambda r: -r["swing"])
    return rows[:SENSITIVITY_TOP]
