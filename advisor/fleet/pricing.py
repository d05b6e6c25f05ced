"""The fleet's tier prices and run hours, from the advice pipeline (not a second copy of it).

One ``advise()`` call on the fleet's base Scenario (its gpu, network, rent and buy, with the probe
workload of ``advisor.fleet.document``) at one, two and three nodes gives, per size, the yearly fixed
cost of ownership (``buy.usd_per_year``: capex annuity, fabric when the cluster spans nodes, colo,
support, staff, software, idle energy), the energy of a busy GPU-hour and each market's price per used
GPU-hour of whole-node instances. Owned cost is linear in nodes beyond one (the fabric starts at two
nodes, staff is paid once), so the three sizes give it for every size. A job given as a training
workload takes its run hours from ``advise()`` at its size (the same number the Advice shows); an
inference workload is sized by the inference path and serves all year.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Final

import numpy as np

from advisor.advice import advise
from advisor.advice.offers import rental_offers
from advisor.advice.uncertainty import MC_PRICE_ALTERNATIVES
from advisor.fleet.demand import HOURS, Job
from advisor.fleet.document import JobSpec, job_scenario
from advisor.fleet.plan import RESERVED, TierPrices
from advisor.scenario import Scenario, ScenarioError
from estimator.calibrate import Calibration

PROBE_NODES: Final[tuple[int, ...]] = (1, 2, 3)
# Advice warnings about prices and hardware carry over to the plan; the rest are about the probe workload.
PRICE_WARNINGS: Final[tuple[str, ...]] = (
    "Prices",
    "Some prices",
    "No rental offers",
    "No hardware quote",
    "The hardware",
)


@dataclass(frozen=True)
class PricedBase:
    prices: TierPrices
    prices_as_of: str | None
    warnings: tuple[str, ...]
    hardware_quote: Any
    offers: dict[str, Any]  # market -> the offer document the tier is priced at
    throughput_log_sigma: float | None


def tier_prices(*, base: Scenario, calibration: Calibration | None = None) -> PricedBase:
    gpn = base.network.gpus_per_node
    advice = advise(replace(base, cluster_sizes=tuple(n * gpn for n in PROBE_NODES)), calibration=calibration)
    doc = advice.to_dict()
    sizes = doc["sizes"]
    fixed = [s["buy"]["usd_per_year"] for s in sizes]
    if None in fixed:
        one = per_node = multi_base = math.inf
    else:
        one, per_node = fixed[0], fixed[2] - fixed[1]
        multi_base = fixed[1] - 2 * per_node
    markets = sizes[0]["rent"]["by_market"]
    floating = {m: markets[m]["usd_per_busy_gpu_hour"] for m in ("on_demand", "spot") if markets.get(m)}
    reserved = {m: markets[m]["offer"]["usd_per_used_gpu_hour"] for m in RESERVED if markets.get(m)}
    spot = base.rent.spot
    prices = TierPrices(
        gpus_per_node=gpn,
        owned_one_node_usd_per_year=one,
        owned_per_node_usd_per_year=per_node,
        owned_base_usd_per_year=multi_base,
        owned_variable_usd_per_gpu_hour=sizes[0]["buy"].get("variable_usd_per_busy_gpu_hour") or 0.0,
        on_demand_usd_per_gpu_hour=floating.get("on_demand"),
        spot_usd_per_gpu_hour=floating.get("spot"),
        reserved_usd_per_gpu_hour=reserved,
        spot_interruptions_per_node_hour=spot.interruptions_per_node_hour,
        spot_checkpoint_s=spot.checkpoint_s,
        spot_restart_s=spot.restart_s,
    )
    return PricedBase(
        prices=prices,
        prices_as_of=doc["prices_as_of"],
        warnings=tuple(w for w in doc["warnings"] if w.startswith(PRICE_WARNINGS)),
        hardware_quote=doc["hardware_quote"],
        offers={m: markets[m]["offer"] for m in markets if markets.get(m)},
        throughput_log_sigma=(doc.get("uncertainty") or {}).get("throughput_log_sigma"),
    )


def _inference_size(job: JobSpec, where: str, calibration: Calibration | None) -> int:
    assert job.scenario is not None
    rec = advise(job.scenario, calibration=calibration).to_dict()["recommendation"]
    if not rec.get("gpus"):
        raise ScenarioError([{"pointer": f"{where}/workload", "message": "no deployment meets its latency targets"}])
    return int(rec["gpus"])


def resolve_job(job: JobSpec, *, index: int, calibration: Calibration | None = None) -> Job:
    """The core's Job: hours given, or from the advice pipeline at the job's size."""
    where = f"/jobs/{index}"
    wait = round(job.max_wait_days * 24)
    common = {"name": job.name, "max_wait_hours": wait, "interruptible": job.interruptible}
    if job.scenario is None:
        assert job.gpus is not None and job.hours is not None
        return Job(gpus=job.gpus, run_hours=job.hours, runs_per_year=job.runs_per_year, months=job.months, **common)
    if job.scenario.workload.kind == "inference":
        gpus = job.gpus or _inference_size(job, where, calibration)
        return Job(gpus=gpus, run_hours=float(HOURS), runs_per_year=1, **common)
    assert job.gpus is not None
    size = advise(job_scenario(job, job.gpus), calibration=calibration).to_dict()["sizes"][0]
    hours = size["run_hours"]
    if hours is None:
        raise ScenarioError(
            [{"pointer": f"{where}/gpus", "message": f"the model does not fit in the memory of {job.gpus} GPUs"}]
        )
    if hours > HOURS:
        raise ScenarioError(
            [
                {
                    "pointer": f"{where}/workload",
                    "message": f"one run takes {hours:,.0f} hours on {job.gpus} GPUs: a run must fit in a year "
                    f"({HOURS:,} hours); use more GPUs or fewer tokens",
                }
            ]
        )
    return Job(gpus=job.gpus, run_hours=float(hours), runs_per_year=job.runs_per_year, months=job.months, **common)


def price_alternatives(*, base: Scenario) -> dict[str, list[float]]:
    """Per market, the cheapest few offers' prices per used GPU-hour of a one-node cluster as factors of the
    cheapest (the advice's price spread: the cheapest offer may have no capacity). Offers come from the
    pipeline's ``rental_offers``; a one-node cluster rents whole-node instances (or the manual quote)."""
    gpn = base.network.gpus_per_node
    frame = rental_offers(base)
    if frame.empty:
        return {}
    count = frame["gpu_count"].to_numpy(dtype=float)
    manual = base.rent.usd_per_gpu_hour is not None
    with np.errstate(divide="ignore", invalid="ignore"):
        used = frame["usd_per_hour"].to_numpy(dtype=float) * np.ceil(gpn / count) / gpn
    eligible = ((count >= gpn) | manual) & np.isfinite(used) & (used > 0)
    out = {}
    markets = frame["market"].to_numpy()
    for market in base.rent.markets:
        prices = np.sort(used[eligible & (markets == market)])[:MC_PRICE_ALTERNATIVES]
        if prices.size:
            out[market] = (prices / prices[0]).tolist()
    return out
