"""``fleet_plan(document) -> Fleet Plan JSON``: the one door the CLI, the API and the page go through
(``advisor.fleet.service`` adds the user's calibration).

Parse (``advisor.advice.fleet.document``), price the tiers and resolve the jobs through the advice pipeline
(``advisor.advice.fleet.pricing``), plan (``advisor.advice.fleet.plan``), and add what the pipeline knows: the
normalized input, the prices and when they were observed, and the price warnings.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

import numpy as np
from django.conf import settings
from django.utils import timezone

from advisor import formatting as fmt
from advisor.advice.documents import json_safe
from advisor.advice.fleet.demand import HOURS, Job, Runs, placement_hours, requested_demand, schedule_runs
from advisor.advice.fleet.document import FleetInput, parse_fleet, with_usage_csv
from advisor.advice.fleet.plan import (
    RUN_STEPS,
    WAIT_STEPS,
    FleetPlan,
    TierPrices,
    cost_spread,
    plan_fleet,
    plan_work,
    rent_units,
)
from advisor.advice.fleet.pricing import PricedBase, fleet_spans_nodes, resolve_job, tier_prices
from advisor.advice.offers import offers_dates, quoted_offers
from advisor.advice.training import calibration_coverage
from advisor.advice.uncertainty import MC_PRICE_ALTERNATIVES, MC_SAMPLES, MC_SEED, QUANTILES
from advisor.scenario import ScenarioError
from estimator.calibrate import Calibration, ThroughputBand, band_log_factors, fit_warnings, load_default
from estimator.specs import get_gpu
from pricing import selectors

# 2: reserved terms per line (TierPrices.commitment), weighed against the price the hours left are billed at.
FLEET_PLAN_VERSION: Final[int] = 2
HELIOS_ATTRIBUTION: Final[str] = (
    "GPU demand profile derived from the Helios trace (SenseTime; Earth cluster, May 2020), published with Hu et "
    'al., "Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU Datacenters", SC \'21, '
    "https://doi.org/10.1145/3458817.3476223 - data from github.com/S-Lab-System-Group/HeliosData and "
    "github.com/S-Lab-System-Group/HeliosArtifact (c) NTU S-Lab, licensed CC BY 4.0 "
    "(https://creativecommons.org/licenses/by/4.0/). Changed: summed over 16 virtual clusters, averaged per hour, "
    "outage hours left out. Not endorsed by the authors."
)


def _prices_document(priced: PricedBase) -> dict[str, Any]:
    p = priced.prices
    return {
        "gpus_per_node": p.gpus_per_node,
        "owned_usd_per_year_one_node": p.owned_one_node_usd_per_year,
        "owned_usd_per_year_per_node": p.owned_per_node_usd_per_year,
        "owned_usd_per_year_base": p.owned_base_usd_per_year,
        "owned_variable_usd_per_gpu_hour": p.owned_variable_usd_per_gpu_hour,
        "on_demand_usd_per_gpu_hour": p.on_demand_usd_per_gpu_hour,
        "spot_usd_per_gpu_hour": p.spot_usd_per_gpu_hour,
        "reserved_usd_per_gpu_hour": dict(p.reserved_usd_per_gpu_hour),
        "offers": priced.offers,
        "hardware_quote": priced.hardware_quote,
        "owned_scale_out_fabric": priced.spans_nodes,
        "owned_fabric": priced.fabric_words,
    }


def _finite(value: Any) -> Any:
    """JSON-safe: an infinite cost (a tier that cannot be priced) becomes null, and so does NaN (inf - inf of an
    overflowing annuity gave NaN costs that made the JSON renderer raise and the fleet page print "$nan")."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def predicted_by(
    *, fleet: FleetInput, calibration: Calibration | None
) -> dict[str | None, tuple[Calibration, str | None]]:
    """Per workload.stack of the fleet's predicted (training) jobs, the calibration that predicts them on the fleet's
    GPU (``Calibration.scoped``: a user's outside its runs' families and stacks is its base) and the note saying so."""
    stacks = {
        job.scenario.workload.stack
        for job in fleet.jobs
        if job.scenario is not None and job.scenario.workload.kind == "training"
    }
    cal = calibration or load_default()
    family = get_gpu(fleet.base.gpu).family
    return {s: cal.scoped(family=family, stack=s) for s in sorted(stacks, key=str)}


def throughput_band(*, fleet: FleetInput, calibration: Calibration | None) -> ThroughputBand | None:
    """The tokens/s band of the fleet's predicted (training) jobs, as each job's Advice states it for its own
    workload.stack, from the calibration that predicts it: one draw moves them all, so jobs of different stacks
    take the widest of their bands. None without a predicted job."""
    family = get_gpu(fleet.base.gpu).family
    bands = [
        ThroughputBand.of(used.interval(stack=s, known_stack=s is not None, family=family))
        for s, (used, _) in predicted_by(fleet=fleet, calibration=calibration).items()
    ]
    return max(bands, key=lambda b: b.p90_multiplier / b.p10_multiplier, default=None)


def _calibration_warnings(fleet: FleetInput, calibration: Calibration | None) -> list[str]:
    """What the fit of each calibration that predicted a job says against its use (a reviewer: a calibration 882%
    off its own runs tripled a job's hours with no word in the plan), and where a user's calibration left jobs to
    its base: its fit, coverage and band do not apply to them (the base's band is the plan's)."""
    if calibration is None:
        return []
    out: list[str] = []
    by_stack = predicted_by(fleet=fleet, calibration=calibration)
    for stack, (used, note) in by_stack.items():
        out.extend(fit_warnings(name=used.name, report=used.report))
        if note:
            which = "the jobs naming no stack" if stack is None else f"the jobs of stack {stack!r}"
            out.append(f"For {which} on {fleet.base.gpu}: {note}.")
    for job in fleet.jobs:
        # Per job, as the planner says it of the same scenario: whose run hours are extrapolated (a first-time user:
        # 8B runs at 8-128 GPUs set a 70B job's hours on 512 GPUs and the plan never said so).
        if job.scenario is not None and job.scenario.workload.kind == "training" and job.gpus is not None:
            used = by_stack[job.scenario.workload.stack][0]
            notes = calibration_coverage(calibration=used, scenario=job.scenario, gpus=[job.gpus])
            out.extend(f"'{job.name}': {w}" for w in notes)
    return out


def partial_server_warnings(fleet: FleetInput) -> list[str]:
    """Inference jobs given GPUs that do not fill whole servers (replicas of their TP): renting bills those GPUs,
    owning buys whole servers, as the job's own advice's owned option does (``inference`` rounds the peak up)."""
    gpn = fleet.base.network.gpus_per_node
    out = []
    for job in fleet.jobs:
        serving = job.scenario is not None and job.scenario.workload.kind == "inference"
        if serving and job.gpus is not None and job.gpus % gpn:
            servers = -(-job.gpus // gpn)
            out.append(
                f"'{job.name}' holds {job.gpus:,} GPUs, replicas that do not fill whole {gpn}-GPU servers: renting "
                f"bills its {job.gpus:,} GPUs; owned GPUs are bought in whole servers ({servers * gpn:,} GPUs in "
                f"{servers:,} server{'' if servers == 1 else 's'} for it alone), as its advice's owned option "
                "rounds up."
            )
    return out


def _uncertainty(
    priced: PricedBase, jobs: list[Job], predicted: list[bool], plan: FleetPlan, band: ThroughputBand | None
) -> dict[str, Any]:
    """P10/P50/P90 of the yearly cost and of the owned size under the advice's price and throughput spread:
    the year is re-simulated at the P10 and P90 throughput of the calibration for predicted run hours
    (``predicted``: per job)."""
    sizes = plan.options.owned_gpus.tolist()
    factors, options = [1.0], [plan.options]
    if band is not None and band.p90_multiplier > band.p10_multiplier:
        # The P10 of throughput is the P90 of run hours and the other way round.
        for multiplier in (band.p10_multiplier, band.p90_multiplier):
            factor = 1.0 / multiplier
            scaled = [
                replace(job, run_hours=min(job.run_hours * factor, float(HOURS))) if p else job
                for job, p in zip(jobs, predicted, strict=True)
            ]
            again = plan_fleet(jobs=scaled, prices=plan.prices, usage=plan.usage, owned_gpus=sizes)
            factors.append(factor)
            options.append(again.options.only(sizes))
    spread = cost_spread(
        options=options,
        hours_factors=factors,
        price_factors=priced.price_alternatives,
        throughput_log_errors=np.zeros(MC_SAMPLES)
        if band is None
        else band_log_factors(
            p10_multiplier=band.p10_multiplier,
            p90_multiplier=band.p90_multiplier,
            samples=MC_SAMPLES,
            rng=np.random.default_rng(MC_SEED + 1),  # its own stream: the prices keep theirs (seed)
        ),
        seed=MC_SEED,
        quantiles=QUANTILES,
    )
    sigma = 0.0 if band is None else band.log_sigma
    return {
        **spread,
        "throughput_log_sigma": sigma,
        "throughput_p10_multiplier": 1.0 if band is None else band.p10_multiplier,
        "throughput_p90_multiplier": 1.0 if band is None else band.p90_multiplier,
        "price_alternatives": MC_PRICE_ALTERNATIVES,
    }


def within_budget(*, fleet: FleetInput) -> None:
    """Each job given as a workload costs one run of the advice pipeline: count them before running any."""
    limit = settings.FLEET_MAX_WORKLOAD_JOBS
    priced_jobs = sum(job.scenario is not None for job in fleet.jobs)
    if priced_jobs > limit:
        message = (
            f"at most {limit:,} jobs given as a workload in one plan (FLEET_MAX_WORKLOAD_JOBS), each is one run of "
            f"the estimator; got {priced_jobs:,}. Give gpus and hours for the others."
        )
        raise ScenarioError([{"pointer": "/jobs", "message": message}])


def placement_within_budget(*, fleet: FleetInput, parts: list[tuple[Job, ...]]) -> None:
    """Count the plan's work before any of it (the API, the page and the command all plan through here). Placing a
    run looks at every hour it holds and every hour it may wait (FLEET_MAX_PLACEMENT_HOURS: the run count alone
    does not bound the work), for each candidate owned size, and the sizes grow with the peak
    (FLEET_MAX_PLAN_STEPS: ``PlanWork``; a hostile probe's 5.9M-GPU peak simulated 7,768 sizes for 98 s).
    ``parts``: per input job, its Jobs (``resolve_parts``), so the work is counted per input job."""
    limit = settings.FLEET_MAX_PLACEMENT_HOURS
    jobs = [j for lines in parts for j in lines]
    runs = schedule_runs(jobs)
    owner = np.repeat(np.arange(len(parts)), [len(lines) for lines in parts])
    per_job = np.bincount(owner[runs.job], weights=placement_hours(runs), minlength=len(parts))
    work = int(per_job.sum())
    if work > limit:
        worst = int(np.argmax(per_job))
        message = (
            f"at most {limit:,} hours of runs to place in one plan (FLEET_MAX_PLACEMENT_HOURS): each run counts its "
            f"hours plus its max_wait_days in hours, at most a year; got {work:,}, the most /jobs/{worst} "
            f"({sum(j.runs_per_year for j in parts[worst]):,} runs, {int(per_job[worst]):,} hours). Give fewer "
            "runs_per_year or a "
            "shorter max_wait_days, or many small runs as measured usage (usage.csv)."
        )
        raise ScenarioError([{"pointer": "/jobs", "message": message}])
    plan_steps_within_budget(fleet=fleet, runs=runs)


def plan_steps_within_budget(*, fleet: FleetInput, runs: Runs) -> None:
    """FLEET_MAX_PLAN_STEPS: the candidate owned sizes times what each simulates (``PlanWork``), three years over
    when predicted jobs are simulated again at their P10 and P90 throughput (``_uncertainty``)."""
    limit = settings.FLEET_MAX_PLAN_STEPS
    usage = fleet.usage.usage.hourly if fleet.usage else None
    peak = float(requested_demand(runs, usage, whole_hours=True).max(initial=0.0))
    gpn = fleet.base.network.gpus_per_node
    work = plan_work(runs=runs, peak_gpus=peak, gpn=gpn, given=fleet.owned_gpus)
    years = 3 if any(_predicted(fleet)) else 1
    steps = years * work.steps
    if steps <= limit:
        return
    message = (
        f"at most {limit:,} simulation steps in one plan (FLEET_MAX_PLAN_STEPS); got {steps:,}: {work.sizes:,} "
        f"candidate owned sizes (more for a higher peak: {peak:,.0f} GPUs at once), each simulating the "
        f"{work.run_hours:,} hours the runs hold, {WAIT_STEPS} x the {work.wait_hours:,} hours they may wait, "
        f"{RUN_STEPS} x the {work.runs:,} runs, the year's {HOURS:,} hours and the peak's {work.peak_nodes:,} nodes "
        f"of {gpn} GPUs"
        + (", over 3 years (the plan, and its predicted jobs at P10 and P90 throughput)" if years > 1 else "")
        + ". Give fewer GPUs at once (a lower peak), fewer runs_per_year or a shorter max_wait_days, or the "
        "owned_gpus sizes to compare."
    )
    raise ScenarioError([{"pointer": "/jobs", "message": message}])


def _predicted(fleet: FleetInput) -> list[bool]:
    """Per job: its run hours are predicted (a training workload), so the uncertainty simulates it again."""
    return [j.scenario is not None and j.scenario.workload.kind == "training" for j in fleet.jobs]


def resolve_parts(*, fleet: FleetInput, calibration: Calibration | None = None) -> list[tuple[Job, ...]]:
    """Per input job, the core's jobs of a validated input (one, or a service's base and peak hours), run hours
    from the advice pipeline for workload jobs. Raises ScenarioError naming the job's field when a workload cannot
    run (does not fit, or a run outlasts a year)."""
    return [resolve_job(job, index=i, calibration=calibration) for i, job in enumerate(fleet.jobs)]


def resolve_jobs(*, fleet: FleetInput, calibration: Calibration | None = None) -> list[Job]:
    """The core's jobs of a validated input, every input job's in turn (``resolve_parts``)."""
    return [job for lines in resolve_parts(fleet=fleet, calibration=calibration) for job in lines]


def validate_fleet(
    *, document: Any, calibration: Calibration | None = None, defaults: Mapping[str, float] | None = None
) -> FleetInput:
    """What may be saved: a valid Fleet Plan input whose every job can run (the checks ``fleet_plan`` makes
    before planning, so a saved fleet never answers its plan with a conflict). Raises ScenarioError."""
    fleet = parse_fleet(document, defaults=defaults)
    within_budget(fleet=fleet)
    placement_within_budget(fleet=fleet, parts=resolve_parts(fleet=fleet, calibration=calibration))
    return fleet


def require_a_price(*, prices: TierPrices, gpu: str) -> None:
    """ScenarioError naming the manual quotes when neither renting nor owning ``gpu`` has a price: every option
    would cost infinitely much, and their differences (the savings) would be NaN."""
    rentable = prices.floating() is not None or prices.spot_usd_per_gpu_hour is not None
    if rentable or math.isfinite(prices.owned_one_node_usd_per_year):
        return
    message = (
        f"no price for {gpu}: no rental offer and no hardware quote; give rent.usd_per_gpu_hour (price per "
        "GPU-hour) or buy.capex_usd (all-in price of one node), or both"
    )
    raise ScenarioError([{"pointer": "/rent/usd_per_gpu_hour", "message": message}])


def _name_line_offers(doc: dict[str, Any], priced: PricedBase, units: list[int]) -> None:
    """Each job line's offers (``rent_offers``: what its rented hours are priced at), and a reason naming the lines
    priced below the node's offer (probe "pages" F7: the plan claimed the cheapest offer and priced a one-GPU
    service at the 8-GPU node's)."""
    cheaper: dict[str, list[str]] = {}
    for line, unit in zip(doc["jobs"], units, strict=True):
        line["rent_offers"] = priced.offers_of(unit)
        for market, offer in line["rent_offers"].items():
            if offer is not priced.offers.get(market):
                words = (
                    f"{market.replace('_', ' ')} {offer['provider']} {offer['instance'] or ''} "
                    f"({fmt.count(offer['gpu_count'], 'GPU')}) at ${offer['usd_per_used_gpu_hour']:,.2f}"
                )
                cheaper.setdefault(words, []).append(line["name"])
    for words, names in cheaper.items():
        named = ", ".join(dict.fromkeys(names))
        # A term is billed every hour of the year for the instances committed, not per rented hour.
        what = "Commitments for" if words.startswith("reserved") else "Rented hours of"
        doc["recommendation"]["reasons"].append(
            f"{what} {named} are priced per GPU-hour at {words}: the cheapest offer that holds each of its "
            "instances' GPUs (a replica, or a run up to a node), cheaper than the node's offer the tier is priced at."
        )


def _price_dates(
    doc: dict[str, Any], fleet: FleetInput, now: dt.datetime, warnings: list[str]
) -> tuple[str | None, dict[str, Any]]:
    """(prices_as_of, price_freshness) of the offers the plan quotes (the tiers' and each line's ``rent_offers``),
    by the Advice's rule (``offers.price_dates``): its undated offers counted, named and warned of in ``warnings``
    (an auditor: the fleet printed the snapshot's compile date as "Prices as of" with no word that every offer it
    used was undated, where scenario advice warns "N of the N offers quoted carry no observation date")."""
    freshness: dict[str, Any] = json_safe(selectors.price_freshness(gpu=fleet.base.gpu))
    quoted = quoted_offers([{"rent": doc["tier_prices"]["offers"]}, *({"rent": j["rent_offers"]} for j in doc["jobs"])])
    prices_as_of, freshness["kind"] = offers_dates(fleet.base, quoted, freshness, now, warnings)
    return prices_as_of, freshness


def plan_for_input(
    *, fleet: FleetInput, calibration: Calibration | None = None, now: dt.datetime | None = None
) -> dict[str, Any]:
    """The Fleet Plan JSON of a validated input. Raises ScenarioError when a job's workload cannot run or the
    plan is over the work budget (checked before any work)."""
    within_budget(fleet=fleet)
    parts = resolve_parts(fleet=fleet, calibration=calibration)
    placement_within_budget(fleet=fleet, parts=parts)
    jobs = [job for lines in parts for job in lines]
    predicted = [p for p, lines in zip(_predicted(fleet), parts, strict=True) for _ in lines]
    usage = fleet.usage.usage if fleet.usage else None
    peak = requested_demand(schedule_runs(jobs), usage.hourly if usage else None, whole_hours=True).max(initial=0.0)
    spans = fleet_spans_nodes(jobs=jobs, gpus_per_node=fleet.base.network.gpus_per_node, usage=usage is not None)
    gpn = fleet.base.network.gpus_per_node
    units = rent_units(gpus=[j.gpus for j in jobs], unit_gpus=[j.unit_gpus for j in jobs], gpus_per_node=gpn)
    priced = tier_prices(
        base=fleet.base, now=now, peak_gpus=math.ceil(peak), spans_nodes=spans, units=sorted(set(units.tolist()))
    )
    require_a_price(prices=priced.prices, gpu=fleet.base.gpu)
    plan = plan_fleet(jobs=jobs, prices=priced.prices, usage=usage, owned_gpus=fleet.owned_gpus)
    doc = plan.to_dict()
    _name_line_offers(doc, priced, units.tolist())
    doc["uncertainty"] = _uncertainty(
        priced, jobs, predicted, plan, throughput_band(fleet=fleet, calibration=calibration)
    )
    warnings = [*priced.warnings, *doc.pop("warnings")]
    warnings.extend(_calibration_warnings(fleet, calibration))
    warnings.extend(partial_server_warnings(fleet))
    if fleet.usage is not None and fleet.usage.has_pending:
        warnings.append(
            f"gpus_pending (mean {fleet.usage.pending_mean:,.1f} GPUs queued) is not counted as demand: queued work "
            "runs later, so adding it would double-count; it is an upper bound."
        )
    now = now or timezone.now()
    doc["tier_prices"] = _prices_document(priced)
    prices_as_of, freshness = _price_dates(doc, fleet, now, warnings)
    out: dict[str, Any] = _finite(
        {
            "fleet_plan_version": FLEET_PLAN_VERSION,
            "generated_at": now.isoformat(),
            "fleet": fleet.to_dict(),
            "gpu": fleet.base.gpu,
            **doc,
            "prices_as_of": prices_as_of,
            "price_freshness": freshness,
            "warnings": list(dict.fromkeys(warnings)),
        }
    )
    return out


def fleet_plan(
    *,
    document: Any,
    usage_csv: str | None = None,
    calibration: Calibration | None = None,
    defaults: Mapping[str, float] | None = None,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """Validate a Fleet Plan input (decoded JSON) and plan it. Raises ScenarioError naming each bad field."""
    if usage_csv is not None:
        document = with_usage_csv(document, usage_csv)
    return plan_for_input(fleet=parse_fleet(document, defaults=defaults), calibration=calibration, now=now)
