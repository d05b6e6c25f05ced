"""Uncertainty and sensitivity of the training advice: Monte Carlo quantiles and the tornado of inputs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from advisor.advice.costs import costs
from advisor.advice.documents import inf_if_not_finite
from advisor.advice.models import RUN_TIME_SCOPE
from advisor.advice.offers import RentPricing
from advisor.advice.ownership import Hardware
from advisor.scenario import Scenario
from estimator.calibrate import ThroughputBand, band_log_factors

MC_SAMPLES: Final[int] = 2000


# The price spread a renter faces: the cheapest offer may have no capacity, so draws go uniformly over the
# cheapest few eligible offers of the market break-even is measured against (the cheapest included).
MC_PRICE_ALTERNATIVES: Final[int] = 5


MC_SEED: Final[int] = 20261202


QUANTILES: Final[tuple[float, float, float]] = (0.1, 0.5, 0.9)


SENSITIVITY_STEP: Final[float] = 0.2


SENSITIVITY_TOP: Final[int] = 6


# The bar that varies Hardware.capex_per_node: the server's price alone, the fabric a node unchanged (a finance probe,
# F7: labelled "capex per node ($253,600-$380,400)" beside a capex per node of $391,358 with the fabric).
SERVER_PRICE_LABEL: Final[str] = "server price per node"
# Labels documents issued before 2026-12-06 carry, read as the current one (the input they varied is the same).
FORMER_SENSITIVITY_LABELS: Final[Mapping[str, str]] = {"capex per node": SERVER_PRICE_LABEL}

# Inputs of the tornado: label, unit, scenario override key.
SENSITIVITY_INPUTS: Final[tuple[tuple[str, str, str], ...]] = (
    ("rental price", "USD/GPU-hour", "rent_factor"),
    ("throughput", "tokens/s", "throughput_factor"),
    ("utilization", "fraction", "utilization"),
    (SERVER_PRICE_LABEL, "USD", "capex_per_node"),
    ("years of ownership", "years", "years"),
    ("discount rate", "per year", "discount_rate"),
    ("residual value", "fraction of capex", "residual_fraction"),
    ("power price", "USD/kWh", "power_usd_per_kwh"),
    ("PUE", "ratio", "pue"),
    ("colocation", "USD/kW-month", "colo_usd_per_kw_month"),
    ("support", "fraction of capex/year", "support_fraction_per_year"),
    ("staff", "USD/year", "staff_usd_per_year"),
)


def sensitivity_label(row: Mapping[str, Any]) -> str:
    """The name of a sensitivity row's input, as every rendering shows it: the row's own, or for a document issued
    before a label changed, the current one (FORMER_SENSITIVITY_LABELS)."""
    label = str(row.get("input") or "")
    return FORMER_SENSITIVITY_LABELS.get(label, label)


def sensitivity_rows(
    *,
    s: Scenario,
    i: int,
    gpus: np.ndarray,
    nodes: np.ndarray,
    tps: np.ndarray,
    head_price: np.ndarray,
    head_term_years: np.ndarray,
    head_spot: np.ndarray,
    head_floating: np.ndarray,
    spot_lost: np.ndarray,
    be_price: np.ndarray,
    hw: Hardware,
    utilization: float,
    with_overflow: bool = False,
) -> list[dict[str, Any]]:
    """Owned minus rented cost per run at size ``i`` with each input at -20% and +20%, in one vectorized call.
    ``utilization``: the one used at that size (given, or implied by runs_per_year). ``with_overflow``: the size's
    own option is owning it and renting the runs it cannot finish (buy.overflow), the owned cost compared."""
    shown = {"rent_factor": float(head_price[i]), "throughput_factor": float(tps[i])}  # factors shown as values
    base_values: dict[str, float] = {
        "rent_factor": 1.0,
        "throughput_factor": 1.0,
        "utilization": utilization,
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
        term_years=head_term_years[i],
        spot_lost=spot_lost[i] if head_spot[i] else 0.0,
        floating=head_floating[i],
        break_even_price=be_price[i],
        hw=hw,
        overrides=columns,
    )
    own = out["own_with_overflow_usd_per_run"] if with_overflow else out["own_usd_per_run"]
    metric = own - out["rent_usd_per_run"]
    metric_name = f"owned{', the rest rented,' if with_overflow else ''} minus rented cost per run (USD)"
    base = float(metric[0])
    rows: list[dict[str, Any]] = []
    for j, (label, unit, k) in enumerate(SENSITIVITY_INPUTS):
        low, high = float(metric[1 + 2 * j]), float(metric[2 + 2 * j])
        if not (math.isfinite(low) and math.isfinite(high)):
            continue
        scale = shown.get(k, 1.0)
        rows.append(
            {
                "input": label,
                "unit": unit,
                "metric": metric_name,
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


def monte_carlo_quantiles(
    *,
    s: Scenario,
    gpus: np.ndarray,
    nodes: np.ndarray,
    tokens_per_s: np.ndarray,
    band: ThroughputBand,
    rent: RentPricing,
    hw: Hardware | None,
) -> dict[str, np.ndarray]:
    """Throughput error (and, for break-even, the price spread of the market it is measured against) -> (P10, P50, P90)
    per size of run hours, rented cost per run at the quoted price and, when owning is priced, owned cost per run
    and break-even. The throughput error is drawn from the prediction's own P10-P90 band (band_log_factors), so the
    run-hour band is the tokens/s band inverted and the quoted point is its median."""
    rng = np.random.default_rng(MC_SEED)
    throughput = np.exp(
        band_log_factors(
            p10_multiplier=band.p10_multiplier, p90_multiplier=band.p90_multiplier, samples=MC_SAMPLES, rng=rng
        )
    )[:, None]
    draws = rng.random(size=(MC_SAMPLES, len(gpus)))
    factor = np.ones((MC_SAMPLES, len(gpus)))
    for i in range(len(gpus)):
        # Break-even is measured against ``be_market`` (on-demand, else the headline market): its band draws over
        # that market's own offers. Drawing the headline market's (spot) and scaling the on-demand price by them
        # gave a band no on-demand offer charges (an outsider's probe: "77%, P10-P90 41% to 77%" at $2.95-2.99).
        market, price = rent.be_market[i], float(rent.be_price[i])
        if not market or not math.isfinite(price) or price <= 0:
            continue
        table = rent.market.per_used_gpu_hour[market][:, i]
        finite = np.sort(table[np.isfinite(table)])[:MC_PRICE_ALTERNATIVES]
        if finite.size:
            factor[:, i] = finite[(draws[:, i] * finite.size).astype(int)] / price
    # The rental cost band is at the price the Advice quotes (throughput error only), so the quoted cost per run
    # is its median and lies inside P10..P90; the spread over the next-cheapest offers (the quoted one may have
    # no capacity) stays in the break-even band.
    mc = rent.headline_costs(
        s=s,
        gpus=gpus,
        nodes=nodes,
        tokens_per_s=tokens_per_s,
        hw=hw,
        break_even_factor=factor,
        overrides={"throughput_factor": throughput},
    )
    owned = ["own_usd_per_run", "break_even", "own_with_overflow_usd_per_run"]
    sampled = ["run_hours", "rent_usd_per_run", *(k for k in owned if hw and k in mc)]
    stacked = np.stack(np.broadcast_arrays(*(inf_if_not_finite(mc[k]) for k in sampled)))
    with np.errstate(invalid="ignore"):
        return dict(zip(sampled, np.quantile(stacked, QUANTILES, axis=1).swapaxes(0, 1), strict=True))


def uncertainty_document(*, band: ThroughputBand) -> dict[str, Any]:
    return {
        "samples": MC_SAMPLES,
        "quantiles": list(QUANTILES),
        "seed": MC_SEED,
        "throughput_log_sigma": band.log_sigma,
        "throughput_p10_multiplier": band.p10_multiplier,
        "throughput_p90_multiplier": band.p90_multiplier,
        "price_alternatives": MC_PRICE_ALTERNATIVES,
        "method": "throughput error drawn from the prediction's P10-P90 band (measured/predicted tokens/s x "
        "throughput_p10_multiplier .. x throughput_p90_multiplier, the point its median; from the calibration's "
        "held-out errors, with the spread between software stacks when the stack is not known); rental cost per run "
        "at the quoted price; break-even also over a rental price uniform over the cheapest eligible offers of the "
        "market it is measured against (break_even_against.market). " + RUN_TIME_SCOPE,
    }
