"""The fleet's tier prices and run hours, from the advice pipeline's own functions (not a second copy of them).

Owning: ``advisor.advice.ownership.hardware`` (the hardware quote or the manual capex) and
``advisor.advice.costs.ownership_costs`` at one, two and three nodes give the yearly fixed cost of ownership
(capex annuity, fabric when the cluster spans nodes, colo, support, staff, software, idle energy) and the energy
of a busy GPU-hour. Owned cost is linear in nodes beyond one (the fabric starts at two nodes, staff is paid
once), so the three sizes give it for every size. Renting: ``advisor.advice.offers.offers_for_size`` at one node,
among the offers whose providers can supply the fleet's peak at once (whole-node instances, or the manual quote),
gives each market's cheapest price per used GPU-hour, on demand and
spot levelized over the horizon like the Advice (``costs.rent_level``), commitments as quoted. A job given as a
training workload takes its run hours from ``advise()`` at its size (the same number the Advice shows); an
inference workload is sized by the inference path and serves all year: its advice's base replicas all year and
the replicas above them the hours of each day its traffic needs them (``_inference_jobs``).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from django.utils import timezone

from advisor.advice import advise
from advisor.advice.costs import ownership_costs, rent_level
from advisor.advice.documents import json_safe, n_gpus
from advisor.advice.fleet.demand import HOURS, Job
from advisor.advice.fleet.document import JobSpec, job_scenario
from advisor.advice.fleet.plan import RESERVED, TierPrices
from advisor.advice.inference import replica_day_levels, spans_nodes_reason
from advisor.advice.offers import (
    SizeOffers,
    capacity_warning,
    offers_for_size,
    offers_for_sizes,
    oldest_offer_date,
    price_warnings,
    rental_offers,
)
from advisor.advice.ownership import hardware, owned_nodes, purchase_unit_gpus
from advisor.advice.uncertainty import MC_PRICE_ALTERNATIVES
from advisor.cash_flow import fabric_words
from advisor.scenario import Scenario, ScenarioError
from estimator.calibrate import Calibration
from pricing import selectors

# Node counts the owned cost is read at: one node, and two multi-node sizes for its per-node slope and base.
OWNED_COST_NODES: Final[tuple[int, ...]] = (1, 2, 3)
FLOATING: Final[tuple[str, ...]] = ("on_demand", "spot")
DAY_HOURS: Final[int] = 24  # a service's traffic repeats daily (inference.traffic_profile): its burst runs daily
PEAK_HOURS: Final[str] = "peak hours"  # the part a service's lines above its base are (Job.part)


@dataclass(frozen=True)
class PricedBase:
    prices: TierPrices
    prices_as_of: str | None
    warnings: tuple[str, ...]
    hardware_quote: Any
    offers: dict[str, Any]  # market -> the offer document the tier is priced at
    price_alternatives: dict[str, list[float]]  # market -> the cheapest few offers' prices, factors of the cheapest
    spans_nodes: bool = True  # the owned multi-node cluster buys the scale-out fabric (cash_flow.carries_fabric)
    # rent unit (plan.rent_units) -> floating market -> the offer document a line of that unit is priced at
    line_offers: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)

    def offers_of(self, unit: int) -> dict[str, Any]:
        """Per market, the offer a rented line of ``unit`` GPUs is priced at (``TierPrices.line_price``): its own
        where cheaper than the node's, else the tier's; the terms its own where it commits at its own instances
        (``TierPrices.commitment``), else the node's."""
        out = dict(self.offers)
        term = self.prices.commitment(unit)
        own_terms = term is not None and term[2] == unit != self.prices.gpus_per_node
        for market, offer in self.line_offers.get(unit, {}).items():
            node = self.offers.get(market)
            if market in RESERVED:
                if own_terms:
                    out[market] = offer
            elif node is not None and offer["usd_per_used_gpu_hour"] < node["usd_per_used_gpu_hour"]:
                out[market] = offer
        return out

    @property
    def fabric_words(self) -> str:
        """What the owned tier's capex says about the fabric, and why (the fleet's work)."""
        why = (
            "the fleet runs multi-node work (a training run or replica across servers, or measured usage)"
            if self.spans_nodes
            else "every run and replica of the fleet fits in one server"
        )
        return fabric_words(carried=self.spans_nodes, why=why)


def tier_prices(
    *,
    base: Scenario,
    now: dt.datetime | None = None,
    peak_gpus: int = 0,
    spans_nodes: bool = True,
    units: Sequence[int] = (),
) -> PricedBase:
    """The tier prices of the fleet's gpu, network, rent and buy (``base``), and where they come from. Rented
    tiers are priced per GPU-hour of a whole node at offers able to supply ``peak_gpus`` at once (the fleet's peak):
    an offer capped below it (capacity_caps.csv) cannot rent the peak (an outsider's probe: a one-node offer priced
    all 1.4 million GPU-hours of a fleet peaking at 570 GPUs). ``spans_nodes``: some of the fleet's work crosses
    nodes, so a multi-node owned cluster buys the fabric (``cash_flow.carries_fabric``, ``fleet_spans_nodes``).
    ``units``: the rent units of the fleet's lines (``plan.rent_units``): each floating market is priced at the
    cheapest offer able to hold one (and the peak at once) too, as its advice rents them (``offers_for_size``)."""
    gpn = base.network.gpus_per_node
    unit = purchase_unit_gpus(base.gpu, gpn)
    warnings: list[str] = []
    hw = hardware(base, warnings)
    if hw is None:
        one = per_node = multi_base = np.inf
        variable = 0.0
    else:
        # Per owned unit: a node, or a whole NVL72 rack of nodes (ownership.purchase_unit_gpus).
        owned_gpus = np.array(OWNED_COST_NODES) * unit
        nodes = owned_nodes(owned_gpus, gpu=base.gpu, gpus_per_node=gpn)
        owning = ownership_costs(s=base, nodes=nodes, hw=hw, spans_nodes=spans_nodes)
        fixed = owning["yearly_fixed"].tolist()
        one, per_node = fixed[0], fixed[2] - fixed[1]
        # Cents: two sums of the same terms leave a residue (-1.7e-10 where the base is nothing)
        multi_base = round(fixed[1] - 2 * per_node, 2) + 0.0  # + 0.0: no -0.0 (a regression probe)
        variable = float(owning["variable"])
    # Priced per GPU-hour of a whole node (an outsider's probe: pricing at the peak spread its rounding to whole
    # instances, 9 GPUs on two 8-GPU instances, over every rented hour), from offers able to supply the peak.
    sizes = sorted({gpn, *(int(u) for u in units)})
    by_size = offers_for_sizes(base, gpus=sizes, at_once=peak_gpus)
    markets = by_size[sizes.index(gpn)]
    level = float(rent_level(s=base))
    # Every market per line, terms too (TierPrices.commitment): a 4-GPU line reserves a 4-GPU instance as its
    # advice does (the probe "finance" F1: it was committed at the 8-GPU node's term).
    line = {u: dict(offers) for u, offers in zip(sizes, by_size, strict=True) if u != gpn}
    cheapest = {m: float(o.usd_per_used_gpu_hour[0]) for m, o in markets.items()}
    spot = base.rent.spot
    prices = TierPrices(
        gpus_per_node=gpn,
        owned_one_node_usd_per_year=one,
        owned_per_node_usd_per_year=per_node,
        owned_base_usd_per_year=multi_base,
        owned_variable_usd_per_gpu_hour=variable,
        on_demand_usd_per_gpu_hour=cheapest["on_demand"] * level if "on_demand" in cheapest else None,
        spot_usd_per_gpu_hour=cheapest["spot"] * level if "spot" in cheapest else None,
        reserved_usd_per_gpu_hour={m: cheapest[m] for m in RESERVED if m in cheapest},
        spot_interruptions_per_node_hour=spot.interruptions_per_node_hour,
        spot_checkpoint_s=spot.checkpoint_s,
        spot_restart_s=spot.restart_s,
        owned_unit_gpus=unit,
        owned_fabric=spans_nodes,
        line_usd_per_gpu_hour={
            u: {m: float(o.usd_per_used_gpu_hour[0]) * (level if m in FLOATING else 1.0) for m, o in offers.items()}
            for u, offers in line.items()
        },
    )
    used = [o.cheapest for o in markets.values()]
    # The line offers some line rents at (cheaper than the node's) are quoted too: their dates and warnings count.
    used += [
        o.cheapest
        for offers in line.values()
        for m, o in offers.items()
        if o.usd_per_used_gpu_hour[0] < cheapest.get(m, math.inf if m in RESERVED else -math.inf)
    ]
    freshness = json_safe(selectors.price_freshness(gpu=base.gpu))
    # Only when no offer can supply a node is it worth asking whether there are offers at all.
    any_offers = bool(markets) or not rental_offers(base).empty
    warnings += price_warnings(base, any_offers=any_offers, used=used, freshness=freshness)
    peak = max(gpn, peak_gpus)
    unknown = capacity_warning([{"gpus": peak, "rent": {"offer": offer}} for offer in used])
    if unknown:
        warnings.append(unknown)
    capped = [m for m in offers_for_size(base, gpus=gpn) if m not in markets]
    if capped:  # a hostile probe: one GPU-hour over a capped provider's limit left renting unpriced, unexplained
        warnings.append(
            f"No {', '.join(m.replace('_', '-') for m in capped)} offer can supply the fleet's peak of {peak:,} GPUs "
            "at once (their providers' capacity, pricing/data/capacity_caps.csv), so those markets are not priced."
        )
    return PricedBase(
        spans_nodes=spans_nodes,
        prices=prices,
        prices_as_of=oldest_offer_date(base, used, freshness, now or timezone.now())[0],
        warnings=tuple(warnings),
        hardware_quote=None if hw is None else json_safe(hw.document),
        offers={m: o.cheapest for m, o in markets.items()},
        price_alternatives=price_alternatives(markets),
        line_offers={u: {m: o.cheapest for m, o in offers.items()} for u, offers in line.items()},
    )


def _inference_jobs(spec: JobSpec, where: str, calibration: Calibration | None) -> tuple[Job, ...]:
    """A service as its advice rents it (``advisor.advice.inference``, ``instances.whole_instance_split``): the
    recommended deployment's base replicas all year, and the replicas above the base only the hours of the day the
    traffic needs them, every day. Before, the peak's GPUs all year: an outsider's probe, an 8B chat API peaking at
    4x its mean, was 175,200 GPU-hours a year in the fleet where its advice rents 49,792.

    Above the base, the day's levels (``replica_day_levels``) are stacked: the replicas between one level and the
    next run as long a day as the traffic needs the upper one (the load's duration over the day, so the GPU-hours
    and the peak are the advice's). The lines that hold the same whole hours of the plan's hourly grid are one line
    (their GPUs together, for their GPU-hour-weighted hours: GPU-hours and peak unchanged), so a service is at most
    24 daily lines (8,760 runs a year) however many replicas its peak needs. Every service's day starts at hour 0
    (its peak hours together with other services': the advice's profile puts every service's peak at one hour)."""
    assert spec.scenario is not None
    doc = advise(spec.scenario, calibration=calibration).to_dict()
    rec = doc["recommendation"]
    if not rec.get("gpus"):
        raise ScenarioError([{"pointer": f"{where}/workload", "message": unsized_reason(doc)}])
    size = next(d for d in doc["sizes"] if d["tp"] == rec["tp"] and d["gpus"] == rec["gpus"])
    tp = int(size["tp"])
    levels, shares = replica_day_levels(s=spec.scenario, replica_requests_per_s=size["replica_requests_per_s"])
    # The advice's base; the replicas needed all day where renting is not priced (no base was chosen).
    base = int(size["rent"]["base_replicas"] or levels[0])
    cal = doc["calibration"]
    spans = spans_nodes_reason(spec.scenario, tp) is not None
    all_year = _job(
        spec,
        gpus=base * tp,
        run_hours=float(HOURS),
        runs_per_year=1,
        months=(),
        calibration=cal,
        spans_nodes=spans,
        unit_gpus=tp,
    )
    above = levels > base
    if not above.any():
        return (all_year,)
    at_or_above = np.cumsum(shares[::-1])[::-1][above]  # share of the day each level above the base is needed
    step = np.diff(levels[above], prepend=base)  # replicas between it and the level below
    hours = np.minimum(at_or_above * DAY_HOURS, DAY_HOURS)
    slots, line = np.unique(np.ceil(hours - 1e-9).clip(1, DAY_HOURS), return_inverse=True)
    replicas = np.bincount(line, weights=step, minlength=slots.size)
    replica_hours = np.bincount(line, weights=step * hours, minlength=slots.size)
    days = HOURS // DAY_HOURS
    burst = [
        _job(
            spec,
            gpus=round(r) * tp,
            run_hours=float(h / r),
            runs_per_year=days,
            months=(),
            part=PEAK_HOURS,
            calibration=cal,
            spans_nodes=spans,
            unit_gpus=tp,
        )
        for r, h in zip(replicas[::-1].tolist(), replica_hours[::-1].tolist(), strict=True)
    ]
    return (all_year, *burst)


def _job(
    spec: JobSpec,
    *,
    gpus: int,
    run_hours: float,
    runs_per_year: int,
    months: tuple[int, ...],
    part: str = "",
    calibration: Mapping[str, Any] | None = None,
    spans_nodes: bool | None = None,
    unit_gpus: int = 0,
) -> Job:
    return Job(
        name=spec.name,
        gpus=gpus,
        run_hours=run_hours,
        runs_per_year=runs_per_year,
        months=months,
        max_wait_hours=round(spec.max_wait_days * 24),
        interruptible=spec.interruptible,
        part=part,
        calibration=calibration,
        spans_nodes=spans_nodes,
        unit_gpus=unit_gpus,
    )


def unsized_reason(advice: Mapping[str, Any]) -> str:
    """Why the advice sizes no deployment, in its own words (its first reason: memory, "does not fit 8 x 80 GB", or
    the latency it reaches). Before, always "no deployment meets its latency targets", also where the model did not
    fit (a hostile probe, F2)."""
    reasons = advice["recommendation"].get("reasons") or ["no deployment meets its latency targets"]
    return f"its advice sizes no deployment: {reasons[0]}"


def serves_at_gpus_check(*, gpus: int, advice: Mapping[str, Any], where: str) -> None:
    """An inference job's given ``gpus`` against its own advice's sizes (no second sizing rule): the model must fit
    in them (the smallest TP that holds it), and they must reach the fewest GPUs of a deployment that meets the
    targets at the peak, since the fleet holds them all year. A hostile probe (F2): 405B at 1,000 requests/s was
    planned on 1 GPU at $18,692 a year. Where no deployment meets the latency targets but the model fits, the given
    GPUs are the user's (nothing to compare them with). Raises ScenarioError at ``where``/gpus."""
    sizes = advice["sizes"]
    holds = [int(s["tp"]) for s in sizes if s["fits_memory"]]
    meets = [s for s in sizes if s["meets_latency"] and s["gpus"] is not None]
    if not holds:  # no count helps: the advice's own reason says what would (precision, a larger GPU)
        message = f"the model does not fit in {n_gpus(gpus)}: {unsized_reason(advice)}"
    elif gpus < min(holds):
        message = (
            f"the model does not fit in the memory of {n_gpus(gpus)}: its advice holds it at TP {min(holds)} or "
            "more; give more GPUs or leave gpus out to size it by its traffic"
        )
    elif meets and gpus < (least := min(meets, key=lambda s: s["gpus"]))["gpus"]:
        message = (
            f"{n_gpus(gpus)} fall short of the peak traffic: its advice needs TP {least['tp']} x "
            f"{least['replicas']} replicas = {n_gpus(least['gpus'])} to meet the latency targets at the peak; give "
            "more GPUs or leave gpus out to size it by its traffic"
        )
    else:
        return
    raise ScenarioError([{"pointer": f"{where}/gpus", "message": message}])


def replica_gpus_check(*, gpus: int, advice: Mapping[str, Any], gpus_per_node: int, where: str) -> None:
    """An inference job's given ``gpus`` held all year: whole nodes, or up to one node, as any job; or replicas of
    the TP its advice deploys, which need not fill whole servers (a finance probe: the advice's "TP 4 x 7 replicas =
    28 GPUs" was refused). Raises ScenarioError naming the TP otherwise."""
    if gpus <= gpus_per_node or gpus % gpus_per_node == 0:
        return
    tp = advice["recommendation"].get("tp")
    if tp and gpus % int(tp) == 0:
        return
    if tp:
        lower, upper = gpus // int(tp) * int(tp), -(-gpus // int(tp)) * int(tp)
        what = (
            f"an inference job's GPUs are replicas of the TP {tp} GPUs its advice deploys; {gpus} is not a multiple "
            f"of {tp} (give {lower} or {upper})"
        )
    else:
        what = f"its advice finds no deployment that meets its latency targets, so {gpus} GPUs are not replicas of one"
    message = f"{what}, or whole nodes ({gpus_per_node} GPUs per node), or leave gpus out to size it by its traffic"
    raise ScenarioError([{"pointer": f"{where}/gpus", "message": message}])


def resolve_job(job: JobSpec, *, index: int, calibration: Calibration | None = None) -> tuple[Job, ...]:
    """The core's Jobs of one input job: hours given, or from the advice pipeline at the job's size; a service
    sized by the inference path is its base all year and its peak hours every day (``_inference_jobs``), one given
    ``gpus`` holds them all year."""
    where = f"/jobs/{index}"
    if job.scenario is None:
        assert job.gpus is not None and job.hours is not None
        return (_job(job, gpus=job.gpus, run_hours=job.hours, runs_per_year=job.runs_per_year, months=job.months),)
    if job.scenario.workload.kind == "inference":
        if job.gpus is None:
            return _inference_jobs(job, where, calibration)
        doc = advise(job.scenario, calibration=calibration).to_dict()
        serves_at_gpus_check(gpus=job.gpus, advice=doc, where=where)
        replica_gpus_check(gpus=job.gpus, advice=doc, gpus_per_node=job.scenario.network.gpus_per_node, where=where)
        cal, tp = doc["calibration"], doc["recommendation"].get("tp")
        spans = bool(tp) and spans_nodes_reason(job.scenario, int(tp)) is not None
        return (
            _job(
                job,
                gpus=job.gpus,
                run_hours=float(HOURS),
                runs_per_year=1,
                months=(),
                calibration=cal,
                spans_nodes=spans,
                # Its replicas rent apart, as its advice rents them (no TP: the GPUs up to a node).
                unit_gpus=int(tp or 0),
            ),
        )
    assert job.gpus is not None
    doc = advise(job_scenario(job, job.gpus), calibration=calibration).to_dict()
    size = doc["sizes"][0]
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
    return (
        _job(
            job,
            gpus=job.gpus,
            run_hours=float(hours),
            runs_per_year=job.runs_per_year,
            months=job.months,
            calibration=doc["calibration"],
        ),
    )


def price_alternatives(markets: Mapping[str, SizeOffers]) -> dict[str, list[float]]:
    """Per market, the cheapest few offers' prices per used GPU-hour (of ``offers_for_size``) as factors of the
    cheapest (the advice's price spread: the cheapest offer may have no capacity)."""
    out = {}
    for market, offers in markets.items():
        prices = offers.usd_per_used_gpu_hour[:MC_PRICE_ALTERNATIVES]
        out[market] = (prices / prices[0]).tolist()
    return out


def fleet_spans_nodes(*, jobs: list[Job], gpus_per_node: int, usage: bool) -> bool:
    """Whether any of the fleet's work crosses nodes, so that its owned cluster buys the fabric: a job's run of more
    GPUs than a node (unless it is a service whose replicas each fit in one), or measured usage, whose runs are not
    known (it keeps the fabric, as before)."""
    return usage or any(j.gpus > gpus_per_node if j.spans_nodes is None else j.spans_nodes for j in jobs)
