"""Inference advice: size a serving deployment for a traffic and latency target, then rent vs buy.

``advise_inference(scenario, *, now=None) -> dict`` returns the inference Advice JSON of DESIGN.md (the same
top-level document as training advice, ``kind: "inference"``). How each number is made (money USD, months of
730 hours = 8760 / 12, fractions 0..1):

- Per tensor-parallel degree (1, 2, 4, 8 up to ``network.gpus_per_node``, or up to the NVLink domain where it spans
  servers: GB200 NVL72, estimator.inference.tensor_parallel_degrees): ``estimator.inference.size_deployments``
  gives one replica's best operating point under the TTFT/TPOT targets (batch, output tokens/s, requests/s) and
  the replicas for the peak and the mean request rate. ``gpus = tp x peak replicas``.
- Traffic over a day: only the mean and the peak are known, so the rate follows a daily sinusoid
  ``mean + (peak - mean) sin(2 pi t / 24 h)`` sampled every 5 minutes, or, when the mean is below half the peak,
  a sharper spike ``peak ((1 + sin) / 2)^k`` with the same mean (an assumption: no traffic trace is given);
  replicas needed at each moment = ceil(rate / replica requests/s), at least one.
- Renting follows the traffic in whole instances (advisor.advice.instances): an instance of ``gpu_count`` GPUs
  holds ``floor(gpu_count / tp)`` replicas and is billed whole; a replica of more GPUs (a mixture of experts over
  nodes, TP 16 or 32) rents ``tp / gpu_count`` whole instances of at least a node's GPUs where ``gpu_count``
  divides ``tp``. A base of ``k`` instances on the cheapest of the
  reserved terms and on-demand is billed all month; the replicas needed above what it holds run on
  ``ceil(above / replicas per instance)`` instances of the cheaper of on-demand and spot at each 5-minute step,
  billed while needed. The base holds at least the replicas needed all day (never spot); above that, ``k`` and
  the two offers minimize the monthly bill over the day's profile (the newsvendor rule in whole instances). A
  manual quote (per GPU-hour) is rented one replica at a time.
- Owning is sized for the peak: the servers ``ownership.owned_nodes`` counts (ceil(gpus / gpus_per_node), in whole
  NVL72 racks for GB200) at the hardware quote (or the manual ``buy.capex_usd``); replicas within a server are
  independent, so no cluster fabric is bought, while a replica
  that spans servers (tp beyond the scale-up domain: its collectives run over the scale-out network) buys the
  quote's fabric per node, as training does once a cluster spans nodes (cash_flow.purchase_usd). Yearly fixed
  cost, energy of busy GPU-hours and break-even utilization come from ``advisor.economics`` (DESIGN.md:
  ``u* = A / (N x 8760 x (r - v))``), with ``r`` the rent as priced per busy GPU-hour (``rent.usd_per_month``
  over the replicas' GPU-hours a month; ``break_even_against`` names its markets), so ``breaks_even`` holds
  exactly where owning costs less. Busy GPU-hours = the replicas the traffic needs at each moment x tp.
  ``buy.usd_per_year`` = A + v x busy GPU-hours a year (``fixed_usd_per_year`` = A,
  ``variable_usd_per_busy_gpu_hour`` = v); ``buy.usd_per_month`` = that / 12.
- A yearly rental price decline (``rent.price_decline_per_year``) levelizes the on-demand and spot parts of the
  monthly bill over the horizon (``costs.rent_level``, the factor training and the fleet plan use; a reserved term
  as quoted): ``rent.usd_per_month`` is that levelized bill, which break-even, ``breaks_even`` and the
  recommendation compare, and ``usd_per_month_today`` today's, which the cash outlook pays the first year.
- Cost per million output tokens = monthly cost / output tokens served in a month at the mean rate
  (requests/s x output tokens x 730 x 3600); it carries the prompt (prefill) work too. The size entry's
  ``usd_per_million_output_tokens`` is the cheaper of renting and owning; ``rent`` and ``buy`` carry each.
- Recommendation: among deployments that fit and meet the latency targets, the cheapest monthly option (rent or
  buy) and its GPU count; ``"none"`` when none meets them, with ``closest`` and ``relax`` (advisor.advice.unmet).
"""

from __future__ import annotations

import copy
import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Final

import numpy as np
import pandas as pd
from django.utils import timezone
from scipy.optimize import brentq
from scipy.special import gammaln

from advisor import economics as ec
from advisor import formatting as fmt
from advisor.advice.costs import cumulative_document, rent_level
from advisor.advice.documents import (
    ADVICE_VERSION,
    assumptions_used,
    gpu_document,
    json_document,
    json_safe,
    latency_error_words,
    levelized_words,
    model_document,
    money,
    n_gpus,
    num,
    pct,
    ratio_text,
    recommended_size,
)
from advisor.advice.instances import (
    InstanceTable,
    cheapest_split,
    day_level_shares,
    time_average,
    whole_instance_split,
)
from advisor.advice.offers import (
    capacity_warning,
    freshness_warnings,
    offer_document,
    price_dates,
    quoted_offers,
    rental_offers,
)
from advisor.advice.ownership import Hardware, hardware, owned_nodes
from advisor.advice.recommendation import mark_cheapest
from advisor.advice.unmet import closest_deployment, closest_document, relax_options
from advisor.cash_flow import carries_fabric, fabric_words, purchase_usd
from advisor.scenario import (
    Latency,
    Scenario,
    ScenarioError,
    catalog_prices_for_other_gpus,
    parse_scenario,
    scenario_for_gpu,
    serving_engine_on,
    serving_engine_problem,
)
from estimator import inference as inf
from estimator.bounds import MAX_GPUS
from estimator.inference.notes import (
    ServingCoverage,
    default_engine_reason,
    gpu_name,
    kv_capacity_warning,
    serving_coverage,
    uncalibrated_serving_warnings,
)
from estimator.specs import get_gpu
from pricing import selectors
from pricing.models import FLOATING_MARKETS, MARKET_PHRASES, RESERVED_MARKETS

HOURS_PER_MONTH: Final[float] = ec.HOURS_PER_MONTH  # 730
PROFILE_STEPS: Final[int] = 288  # 5-minute steps over a day


# A daily spike whose standard deviation is under one 5-minute step is sampled on a finer window around it (an
# outsider's probe: peak 50 and mean 0.01 requests/s put the whole spike inside one step, so the served mean came
# out 0.17). Sampled at one sd or finer, a Gaussian's sum is exact to ~1e-8. The window spans this many sds each
# side (the mass beyond is below 1e-8).
SPIKE_WINDOW_SIGMAS: Final[float] = 6.0


def _spike_exponent(ratio: float) -> float:
    """k such that ((1 + sin) / 2)^k averages ``ratio`` over a period (0 < ratio <= 1/2).

    The average is Gamma(k + 1/2) / (sqrt(pi) Gamma(k + 1)): 1/2 at k = 1, ~ 1 / sqrt(pi k) for large k."""
    if ratio < 1e-6:  # the asymptote, exact to O(1/k) there, where the root bracket ends
        return 1.0 / (math.pi * ratio * ratio)

    def gap(k: float) -> float:
        return math.exp(gammaln(k + 0.5) - gammaln(k + 1.0)) / math.sqrt(math.pi) - ratio

    return float(brentq(gap, 1.0, 1e13))


@dataclass(frozen=True)
class DailyTraffic:
    """Request rate samples over one day [requests/s] and each sample's share of the day (the shares sum to 1)."""

    rate: np.ndarray
    share: np.ndarray

    def average(self, values: Any) -> Any:
        """Time average of ``values`` over their last axis (one column per sample)."""
        return time_average(np.asarray(values, dtype=np.float64), self.share)

    def mean(self) -> float:
        return float(self.average(self.rate))


def traffic_profile(
    *, peak_requests_per_s: float, mean_requests_per_s: float, steps: int = PROFILE_STEPS
) -> DailyTraffic:
    """Request rate over one day with the given peak and mean.

    A sinusoid ``mean + (peak - mean) sin`` when the mean is at least half the peak (trough ``2 mean - peak``);
    otherwise a sharper daily spike ``peak ((1 + sin) / 2)^k`` with ``k`` chosen so the mean matches. A spike
    whose sd is under one step is sampled on a window of ``steps - 1`` points around it (the spike is
    ~ a Gaussian of sd 1 / (pi sqrt(2k)) of a day) plus one sample for the rest of the day, so the mean holds for
    any peak/mean ratio in the same number of samples."""
    uniform = np.full(steps, 1.0 / steps)
    t = np.arange(steps, dtype=np.float64) / steps
    if mean_requests_per_s <= 0:
        return DailyTraffic(rate=np.zeros(steps), share=uniform)
    if mean_requests_per_s >= peak_requests_per_s / 2:
        wave = np.sin(2.0 * np.pi * t)
        return DailyTraffic(
            rate=mean_requests_per_s + (peak_requests_per_s - mean_requests_per_s) * wave, share=uniform
        )
    k = _spike_exponent(mean_requests_per_s / peak_requests_per_s)
    sigma = 1.0 / (math.pi * math.sqrt(2.0 * k))  # of a day
    if sigma * steps >= 1.0:
        wave = np.sin(2.0 * np.pi * t)
        return DailyTraffic(rate=peak_requests_per_s * ((1.0 + wave) / 2.0) ** k, share=uniform)
    # (1 + sin(2 pi t)) / 2 = cos^2(pi (t - 1/4)): points around the peak at t = 1/4, the middle one on it.
    half_window = SPIKE_WINDOW_SIGMAS * sigma
    offsets = np.linspace(-half_window, half_window, steps - 1)
    shape = np.exp(k * np.log1p(-(np.sin(np.pi * offsets) ** 2)))  # cos^2k; log1p keeps tiny offsets exact
    width = 2.0 * half_window / (steps - 2)
    rest = 1.0 - width * (steps - 1)
    rate = np.append(peak_requests_per_s * shape, 0.0)
    share = np.append(np.full(steps - 1, width), rest)
    return DailyTraffic(rate=rate, share=share)


def replicas_over_time(*, rate: Any, replica_requests_per_s: Any) -> Any:
    """Replicas needed at each moment (rows: deployments, columns: time), at least one; inf where a replica
    serves nothing."""
    r = np.asarray(replica_requests_per_s, dtype=np.float64)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.ceil(np.asarray(rate, dtype=np.float64)[None, :] / r - 1e-9)
    return np.where(r > 0, np.maximum(need, 1.0), np.inf)


def replica_day_levels(*, s: Scenario, replica_requests_per_s: float) -> tuple[np.ndarray, np.ndarray]:
    """The replicas a deployment serving ``s``'s traffic needs over its day, as the advice bills them: the distinct
    levels (replicas, ascending) and each one's share of the day (summing to 1), from the same daily profile and
    replica counts ``advise_inference`` rents (``traffic_profile``, ``replicas_over_time``,
    ``instances.day_level_shares``)."""
    traffic = s.workload.traffic
    assert traffic is not None
    day = traffic_profile(
        peak_requests_per_s=traffic.peak_requests_per_s, mean_requests_per_s=traffic.mean_requests_per_s
    )
    needed = replicas_over_time(rate=day.rate, replica_requests_per_s=[replica_requests_per_s])
    levels, shares = day_level_shares(needed=needed, share=day.share)
    return levels, shares[0]


def elastic_monthly_replica_hours(
    *, needed: Any, base_price: Any, burst_price: Any, share: Any = None
) -> dict[str, Any]:
    """Split each deployment's replicas into a base billed all month and an elastic burst billed while needed, one
    replica at a time (a manual quote per GPU-hour; offers of whole instances: instances.whole_instance_split).

    ``needed``: (deployments, time) replicas over the day; ``share``: each time sample's share of the day
    (DailyTraffic.share; None = equal); prices per replica-hour (inf = market unavailable).
    The base holds at least the replicas needed all day (the floor is never put on the burst market, which may be
    spot); above it, a replica joins the base when it is needed at least ``base / burst price`` of the time
    (the newsvendor rule). Returns the base, the mean burst replicas and the bill per hour."""
    n = np.asarray(needed, dtype=np.float64)
    ones = np.ones(n.shape[0])
    split = whole_instance_split(
        needed=n,
        share=share,
        base_usd_per_hour=np.asarray(base_price, dtype=np.float64) * ones,
        base_replicas_per_instance=ones,
        burst_usd_per_hour=np.asarray(burst_price, dtype=np.float64) * ones,
        burst_replicas_per_instance=ones,
    )
    return {"base": split["base_instances"], "burst_mean": split["burst_mean"], "usd_per_hour": split["usd_per_hour"]}


def _deployments(
    s: Scenario,
    model: inf.ServedModel,
    cal: inf.InferenceCalibration,
    *,
    gpu: str | None = None,
    precision: str | None = None,
    tps: list[int] | None = None,
    targets: tuple[float, float] | None = None,
) -> list[Any]:
    """The estimator's deployment per TP degree that fits the scale-up domain (the scenario's GPU and precision
    unless given), for the scenario's serving engine on that GPU (``serving_engine_on``: a suggested GPU it does not
    run on takes its own default); its input errors become ScenarioErrors."""
    w = s.workload
    traffic, latency = w.traffic, w.latency
    assert traffic is not None and latency is not None
    gpn = s.network.gpus_per_node
    try:
        return list(
            inf.size_deployments(
                model=model,
                gpu=gpu or s.gpu,
                precision=precision or w.precision,
                input_tokens=traffic.input_tokens,
                output_tokens=traffic.output_tokens,
                peak_requests_per_s=traffic.peak_requests_per_s,
                mean_requests_per_s=traffic.mean_requests_per_s,
                ttft_p95_s=targets[0] if targets else latency.ttft_p95_s,
                tpot_p95_s=targets[1] if targets else latency.tpot_p95_s,
                tps=tps or replica_sizes(model, gpu or s.gpu, gpus_per_node=gpn),
                calibration=cal,
                stack=serving_engine_on(w.serving_engine, gpu or s.gpu),
                gpus_per_node=gpn,
                inter_node_gbps=s.network.inter_node_gbps,
            )
        )
    except inf.InferenceError as exc:
        where = {"precision": "/workload/precision"}.get(exc.field, f"/workload/{exc.field}")
        raise ScenarioError([{"pointer": where, "message": str(exc)}]) from None


def replica_sizes(model: inf.ServedModel, gpu: str, *, gpus_per_node: int) -> list[int]:
    """The estimator's replica sizes on ``gpu`` with ``gpus_per_node`` GPUs a node (inf.parallel_degrees): TP up to
    the scale-up link, and for a mixture of experts groups across nodes with expert parallelism (DeepSeek-V3 does not
    fit one node of 80 GB GPUs; the advice tried TP 1-8 only and answered "use a larger GPU")."""
    scale_up = inf.scale_up_gpus(inf.serving_gpu(gpu), gpus_per_node)
    return inf.parallel_degrees(model=model, scale_up=scale_up)


def served_model(s: Scenario) -> inf.ServedModel:
    """The catalog model (MoE and attention layout included) or the scenario's checked geometry, all of it: a
    mixture of experts given by params_b, layers, hidden, experts and active_experts was sized as a dense model of
    params_b (an outsider's check: 28 A100s where the catalog id takes 18, while the Advice said 13.5B active)."""
    m = s.workload.model
    if m.name:
        return inf.ServedModel.from_catalog(m.name)
    return inf.ServedModel.from_params(
        # Weights and FLOPs of a dense geometry the user gave are the parameters it holds, as training counts them
        # and as model.assumed says (a serving lead's probe: Llama 2 7B's shape labelled 7.7B was sized on 7.7B).
        params_b=m.work_params_b or m.params_b,
        layers=m.layers,
        hidden=m.hidden,
        heads=m.heads,
        kv_heads=m.kv_heads,
        ffn_hidden=m.ffn_hidden,
        vocab=m.vocab,
        experts=m.experts,
        active_experts=m.active_experts,
    )


def kv_capacity_warnings(s: Scenario, deployments: Sequence[inf.Deployment], rec_j: int | None) -> list[str]:
    """The recommended deployment's warning where its KV cache, not the engine's batch cap, holds few requests
    (estimator.inference.notes.kv_capacity_warning, the one estimate_inference's note states): an outsider's probe
    served Qwen3-32B on one H100 under vLLM with room for about 8 requests, where vLLM preempts and recomputes and
    the measured throughput was 0.6x the model's. Empty without a recommendation."""
    if rec_j is None:
        return []
    d = deployments[rec_j]
    stack = inf.serving_stack(serving_engine_on(s.workload.serving_engine, s.gpu))
    cap, _ = stack.batch_limits(inf.serving_gpu(s.gpu))
    warning = kv_capacity_warning(requests=d.max_batch, concurrency=d.batch, engine_cap=cap, stack=stack)
    return [] if warning is None else [f"TP {d.tp}: {warning[0].upper()}{warning[1:]}."]


@dataclass(frozen=True)
class _RentPlan:
    """Renting each deployment in whole instances: a base on the cheapest of the reserved terms and on-demand (spot
    when neither is offered) plus an elastic burst on the cheapest floating market (advisor.advice.instances)."""

    table: InstanceTable
    split: dict[str, np.ndarray]  # instances.cheapest_split, with base_row / burst_row
    base_market: np.ndarray
    burst_market: np.ndarray
    alone: dict[str, tuple[np.ndarray, np.ndarray]]  # market -> (row, USD/hour) renting it all on that market
    used_gpu_hours: np.ndarray  # GPU-hours the replicas are busy, an hour of the day on average
    rent_month_today: np.ndarray  # the bill a month at today's prices [USD/month]
    base_month_today: np.ndarray  # its base's part, billed every hour used or not [USD/month]
    committed_month: np.ndarray  # the base's part on a reserved term, whose price does not decline [USD/month]
    level: float  # costs.rent_level: levelizes on-demand and spot prices over the horizon (1 without a decline)
    base: np.ndarray  # base replicas (nan where the deployment does not qualify)

    @property
    def rent_month(self) -> np.ndarray:
        """The bill a month levelized over the horizon (``rent.price_decline_per_year``): on-demand and spot parts
        at ``level`` x today's price, a reserved term's as quoted, like training's costs per run [USD/month]."""
        return np.asarray(self.committed_month + (self.rent_month_today - self.committed_month) * self.level)

    @property
    def base_month(self) -> np.ndarray:
        """The base's part of ``rent_month`` (levelized likewise), billed every hour used or not [USD/month]."""
        return np.asarray(self.committed_month + (self.base_month_today - self.committed_month) * self.level)

    @property
    def frame(self) -> pd.DataFrame:
        return self.table.frame

    def used_price(self, market: str) -> np.ndarray:
        """Per deployment, USD per busy GPU-hour renting it all on ``market`` (inf: no offer)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.alone[market][0] >= 0, self.alone[market][1] / self.used_gpu_hours, np.inf)


def _market_of(table: InstanceTable, rows: np.ndarray) -> np.ndarray:
    markets = table.frame["market"].to_numpy()
    return np.asarray([markets[r] if r >= 0 else None for r in rows], dtype=object)


def _rent_plan(
    s: Scenario,
    tps: list[int],
    peak_replicas: np.ndarray,
    ok: np.ndarray,
    needed: Any,
    share: Any,
    warnings: list[str],
    *,
    offers: pd.DataFrame,
) -> _RentPlan:
    """``offers``: rental_offers(s), read once per advice (the capacity band prices two more plans from them)."""
    tp = np.asarray(tps, dtype=np.float64)
    table = InstanceTable.build(
        offers,
        tps=tps,
        peak_replicas=peak_replicas,
        manual=s.rent.usd_per_gpu_hour is not None,
        scale_up=inf.scale_up_gpus(inf.serving_gpu(s.gpu), s.network.gpus_per_node),
    )
    priced = s.rent.priced_markets
    # The base is billed all month on whichever is cheaper, a reserved term or on-demand (an outsider's probe: a
    # term dearer than on-demand was taken, so allowing more markets raised the bill; on a tie, on-demand, which
    # commits to nothing); spot only as the last resort.
    base_options = table.options([m for m in ("on_demand", *RESERVED_MARKETS) if m in priced])
    spot_options = table.options(["spot"] if "spot" in priced else [])
    no_base = ~np.any([np.isfinite(price) for _, price, _ in base_options], axis=0) if base_options else True
    base_options += [(row, np.where(no_base, price, np.inf), q) for row, price, q in spot_options]
    burst_options = table.options([m for m in FLOATING_MARKETS if m in priced])
    split = cheapest_split(table, needed=needed, share=share, base_options=base_options, burst_options=burst_options)
    base_market = _market_of(table, split["base_row"])
    if any(m == "spot" for m, g in zip(base_market, ok, strict=True) if g):
        warnings.append("Only spot offers are available: the whole deployment, its base included, runs on spot.")
    finite = np.isfinite(needed).all(axis=1)
    used = np.where(finite, time_average(np.where(np.isfinite(needed), needed, 0.0), share), np.nan) * tp
    alone = {m: table.alone(m, needed=needed, share=share, all_month=m in RESERVED_MARKETS) for m in priced}
    base_row = split["base_row"]
    prices = table.usd_per_hour
    base_price = prices[np.maximum(base_row, 0), np.arange(len(tps))] if prices.shape[0] else np.zeros(len(tps))
    base_hourly = np.where(base_row >= 0, split["base_instances"] * base_price, 0.0)
    return _RentPlan(
        table=table,
        split=split,
        base_market=base_market,
        burst_market=_market_of(table, split["burst_row"]),
        alone=alone,
        used_gpu_hours=used,
        rent_month_today=split["usd_per_hour"] * HOURS_PER_MONTH,
        base_month_today=np.where(np.isfinite(base_hourly), base_hourly * HOURS_PER_MONTH, 0.0),
        committed_month=np.where(
            np.isin(base_market, list(RESERVED_MARKETS)) & np.isfinite(base_hourly), base_hourly * HOURS_PER_MONTH, 0.0
        ),
        level=float(rent_level(s=s)),
        base=np.where(ok, split["base_replicas"], np.nan),
    )


def _own_costs(
    s: Scenario,
    hw: Hardware,
    nodes: np.ndarray,
    owned_gpus: np.ndarray,
    busy_gpu_hours_year: np.ndarray,
    plan: _RentPlan,
    tp: np.ndarray,
) -> dict[str, Any]:
    """Owning the peak deployment in whole servers: capex (the fabric where a replica spans servers), fixed and
    variable costs, utilization, and break-even against the rent as priced per busy GPU-hour (``rent_rate``, the r
    printed as break_even_against): DESIGN.md's u* = A / (N x 8760 x (r - v)), the function training uses (a
    finance probe could not reproduce a u* that counted the base as committed: L40S 18 GPUs 86% where the printed r
    gives 71%). ``committed_break_even`` keeps that other view, the base billed every hour used or not and only the
    burst per busy GPU-hour (economics.break_even_with_committed_rent: an earlier probe found owning cheaper at any
    utilization against a reserved base), under its own name."""
    gpn = s.network.gpus_per_node
    b = s.buy
    spans = tp > inf.scale_up_gpus(inf.serving_gpu(s.gpu), gpn)  # collectives over the scale-out network
    capex = purchase_usd(
        nodes=nodes, usd_per_node=hw.capex_per_node, fabric_per_node=hw.fabric_per_node, spans_nodes=spans
    )
    fixed = ec.yearly_fixed_cost_usd(
        capex_usd=capex,
        years=b.years,
        discount_rate=b.discount_rate,
        residual_fraction=b.residual_fraction,
        contracted_kw=nodes * hw.load_kw_per_node,
        colo_usd_per_kw_month=b.colo_usd_per_kw_month,
        support_fraction_per_year=b.support_fraction_per_year,
        staff_usd_per_year=b.staff_usd_per_year,
        software_usd_per_year=b.software_usd_per_gpu_year * owned_gpus,
        idle_kw=nodes * hw.idle_kw_per_node,
        pue=b.pue,
        power_usd_per_kwh=b.power_usd_per_kwh,
    )
    variable = ec.variable_usd_per_gpu_hour(
        load_kw_per_gpu=hw.load_kw_per_node / gpn,
        idle_kw_per_gpu=hw.idle_kw_per_node / gpn,
        pue=b.pue,
        power_usd_per_kwh=b.power_usd_per_kwh,
    )
    utilization = busy_gpu_hours_year / (owned_gpus * ec.HOURS_PER_YEAR)
    # One yearly cost behind both buy.usd_per_year and buy.usd_per_month (a finance probe: the year was the fixed part
    # only, $489,906, while the month x 12 was $512,279 with the busy hours' energy).
    year = ec.owned_usd_per_year(
        yearly_fixed_usd=fixed, variable_usd_per_gpu_hour=variable, busy_gpu_hours_per_year=busy_gpu_hours_year
    )
    rent_rate = plan.rent_month * ec.MONTHS_PER_YEAR / busy_gpu_hours_year
    return {
        "capex": capex,
        "fabric": carries_fabric(nodes=nodes, spans_nodes=spans),
        "fixed": fixed,
        "variable": variable,
        "year": year,
        "month": year / ec.MONTHS_PER_YEAR,
        "utilization": utilization,
        "rate": ec.owned_usd_per_gpu_hour(
            yearly_fixed_usd=fixed, gpus=owned_gpus, utilization=utilization, variable_usd_per_gpu_hour=variable
        ),
        "rent_rate": rent_rate,
        "break_even": ec.break_even_utilization(
            yearly_fixed_usd=fixed, gpus=owned_gpus, rent_usd_per_gpu_hour=rent_rate, variable_usd_per_gpu_hour=variable
        ),
        "committed_break_even": ec.break_even_with_committed_rent(
            yearly_fixed_usd=fixed,
            gpus=owned_gpus,
            committed_usd_per_year=plan.base_month * ec.MONTHS_PER_YEAR,
            rent_usd_per_gpu_hour=(plan.rent_month - plan.base_month) * ec.MONTHS_PER_YEAR / busy_gpu_hours_year,
            variable_usd_per_gpu_hour=variable,
        ),
    }


def _ownership(
    s: Scenario,
    hw: Hardware | None,
    gpus: np.ndarray,
    needed: np.ndarray,
    tp: np.ndarray,
    day: DailyTraffic,
    plan: _RentPlan,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
    """Owning each deployment's peak in whole servers: (servers, GPUs owned, busy GPU-hours a year, _own_costs or {}
    without a hardware quote)."""
    gpn = s.network.gpus_per_node
    nodes = np.where(
        np.isfinite(gpus), owned_nodes(np.where(np.isfinite(gpus), gpus, 0), gpu=s.gpu, gpus_per_node=gpn), np.nan
    )
    owned_gpus = nodes * gpn
    busy_gpu_hours_year = (
        np.where(np.isfinite(needed).all(axis=1), day.average(np.where(np.isfinite(needed), needed, 0.0)), np.nan)
        * tp
        * ec.HOURS_PER_YEAR
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        own = _own_costs(s, hw, nodes, owned_gpus, busy_gpu_hours_year, plan, tp) if hw is not None else {}
    return nodes, owned_gpus, busy_gpu_hours_year, own


CAPACITY_BAND_SOURCE: Final[str] = (
    "P10 and P90 of a replica's measured over predicted capacity: the serving calibration's held-out errors of "
    "output tokens/s, each model's rows predicted by a fit without that model"
)


def _priced_at(
    s: Scenario,
    tps: list[int],
    ok: np.ndarray,
    day: DailyTraffic,
    hw: Hardware | None,
    replica_rps: np.ndarray,
    tokens_per_month: float,
    offers: pd.DataFrame,
) -> tuple[np.ndarray, np.ndarray]:
    """Per deployment, were each replica to serve ``replica_rps``: the GPUs the peak needs and the cheaper of
    renting and owning per million output tokens (nan where neither is priced), by the same plans as the sizes."""
    traffic = s.workload.traffic
    assert traffic is not None
    tp = np.asarray(tps, dtype=np.float64)
    peak = inf.replicas_for(requests_per_s=traffic.peak_requests_per_s, replica_requests_per_s=replica_rps)
    needed = replicas_over_time(rate=day.rate, replica_requests_per_s=replica_rps)
    plan = _rent_plan(s, tps, peak, ok, needed, day.share, [], offers=offers)
    gpus = tp * peak
    own = _ownership(s, hw, gpus, needed, tp, day, plan)[3]
    rent = np.where(np.isfinite(plan.rent_month), plan.rent_month, np.inf)
    month = np.minimum(rent, own["month"]) if own else rent
    return gpus, np.where(np.isfinite(month), month / tokens_per_month * 1e6, np.nan)


def _priced_one(
    s: Scenario,
    tp: int,
    day: DailyTraffic,
    hw: Hardware | None,
    replica_rps: float,
    tokens_per_month: float,
    offers: pd.DataFrame,
) -> tuple[float, float]:
    """``_priced_at`` of one TP degree: (GPUs the peak needs, cost per million output tokens)."""
    gpus, usd = _priced_at(
        s, [tp], np.ones(1, dtype=np.bool_), day, hw, np.asarray([replica_rps]), tokens_per_month, offers
    )
    return float(gpus[0]), float(usd[0])


def _add_capacity_bands(
    s: Scenario,
    size_docs: list[dict[str, Any]],
    cal: inf.InferenceCalibration,
    ok: np.ndarray,
    day: DailyTraffic,
    hw: Hardware | None,
    tokens_per_month: float,
    offers: pd.DataFrame,
    coverage: ServingCoverage,
) -> None:
    """``capacity_band`` of each size that meets the targets (None elsewhere, and everywhere when the calibration
    keeps no held-out errors): a replica's requests/s at the P10 and P90 of inf.capacity_band, and the GPUs the peak
    needs and the cost per million output tokens were every replica to serve that; ``covers_deployment``: whether
    those errors were measured on the scenario's GPU at its precision and on its engine (``coverage``)."""
    band = inf.capacity_band(cal)
    for doc in size_docs:
        doc["capacity_band"] = None
    if band is None or not ok.any():
        return
    tps = [doc["tp"] for doc in size_docs]
    rps = np.asarray([doc["replica_requests_per_s"] for doc in size_docs], dtype=np.float64)
    ends = {
        q: _priced_at(s, tps, ok, day, hw, rps * band[f"{q}_multiplier"], tokens_per_month, offers)
        for q in ("p10", "p90")
    }
    for i, doc in enumerate(size_docs):
        if not ok[i]:
            continue
        priced = doc["usd_per_million_output_tokens"] is not None
        doc["capacity_band"] = {
            "source": CAPACITY_BAND_SOURCE,
            "covers_deployment": coverage.covers_deployment,
            **{f"replica_requests_per_s_{q}": float(rps[i] * band[f"{q}_multiplier"]) for q in ends},
            **{f"gpus_at_{q}": _finite_int(float(ends[q][0][i])) for q in ends},
            **{f"usd_per_million_output_tokens_at_{q}": num(ends[q][1][i]) if priced else None for q in ends},
        }


def _capacity_band_reason(doc: Mapping[str, Any], coverage: ServingCoverage) -> str:
    """ "1 chance in 10 the deployment needs 4 GPUs or more at the peak rather than 3 ...": the recommended size's
    band in words (an outsider's probe: GPUs and costs were stated with no uncertainty at all); without its
    probabilities where the band does not cover the deployment (_uncovered_capacity_band_reason)."""
    band = doc["capacity_band"]
    if not band["covers_deployment"]:
        return _uncovered_capacity_band_reason(doc, coverage)
    p10, p90 = band["replica_requests_per_s_p10"], band["replica_requests_per_s_p90"]
    low, high = band["usd_per_million_output_tokens_at_p10"], band["usd_per_million_output_tokens_at_p90"]
    why = (
        f"the serving model's error on models it was not fitted on puts a replica's capacity between {p10:.3g} and "
        f"{p90:.3g} requests/s (P10-P90) rather than {doc['replica_requests_per_s']:.3g}"
    )
    if band["gpus_at_p10"] is None or band["gpus_at_p10"] <= doc["gpus"]:
        return f"The {n_gpus(doc['gpus'])} still serve the peak at a replica's P10 capacity: {why}."
    cost = (
        ""
        if low is None
        else f", at {money(low)} rather than {money(doc['usd_per_million_output_tokens'])} per million output tokens"
    )
    return (
        f"1 chance in 10 the deployment needs {n_gpus(band['gpus_at_p10'])} or more at the peak rather than "
        f"{doc['gpus']:,}{cost}: {why}; at the P90 {n_gpus(band['gpus_at_p90'])}"
        + ("" if high is None else f" and {money(high)} per million")
        + " would do."
    )


def _span(low: str, high: str) -> str:
    """ "8-16", or "8" where both ends read the same."""
    return low if low == high else f"{low}-{high}"


def _uncovered_capacity_band_reason(doc: Mapping[str, Any], coverage: ServingCoverage) -> str:
    """The band's GPU counts and costs with no probability: its held-out errors were measured on other GPUs,
    precisions or engines. A serving lead's probe: on Oracle OCI's published MI300X + vLLM table (Llama 3.1 405B
    FP8 TP 8, 2024-10-10) all 9 points fell at 0.57-0.77x the predicted capacity, below the P10 of 0.78x that "1
    chance in 10 the deployment needs 16 GPUs or more" rested on."""
    band = doc["capacity_band"]
    fewest, most = band["gpus_at_p90"], band["gpus_at_p10"]
    cheapest, dearest = band["usd_per_million_output_tokens_at_p90"], band["usd_per_million_output_tokens_at_p10"]
    ends = [
        *([] if fewest is None or most is None else [f"{_span(f'{fewest:,}', f'{most:,}')} GPUs at the peak"]),
        *(
            []
            if cheapest is None or dearest is None
            else [f"{_span(money(cheapest), money(dearest))} per million output tokens"]
        ),
    ]
    return (
        "The serving model's error on models it was not fitted on puts a replica at "
        f"{band['replica_requests_per_s_p10']:.3g}-{band['replica_requests_per_s_p90']:.3g} requests/s rather than "
        f"{doc['replica_requests_per_s']:.3g}" + (f" ({', '.join(ends)})" if ends else "") + ", "
        f"but that error was measured on {coverage.measured_on()}; it does not cover {coverage.engine} at "
        f"{coverage.precision.upper()} on {gpu_name(coverage.gpu)}, says nothing about how likely either end is "
        "here, and the real capacity can fall outside it: benchmark a replica before committing."
    )


# With one output token a request has no second token, so no time per output token: the model's 0 s read as an
# instant decode beside the target (a serving lead's probe: "TPOT of 0 s (targets 1 s / 0.05 s)").
NO_TPOT: Final = "no TPOT: one output token"


def tpot_words(text: str, *, output_tokens: float) -> str:
    """A TPOT figure as its caller words it ("TPOT of 0.05 s", "TPOT 50 ms"), or NO_TPOT where a request has one
    output token: the one rule for every place that prints one (reasons, the web page and the PDF)."""
    return text if output_tokens > 1 else NO_TPOT


LATENCY_RATIO_KEYS: Final[tuple[str, ...]] = ("ttft_ratio_p10", "ttft_ratio_p90", "tpot_ratio_p10", "tpot_ratio_p90")


def _add_latency_band(
    s: Scenario,
    model: inf.ServedModel,
    cal: inf.InferenceCalibration,
    size_docs: list[dict[str, Any]],
    j: int,
    priced_at: Callable[[int, float], tuple[float, float]],
) -> None:
    """``latency_band`` of size ``j``, the recommended one (None on every other size, and on it without the latency
    check's ratios): its TP sized again at the targets over the P10 and the P90 of measured / modelled latency,
    priced by the same plans (only the recommended TP: two sizings of every TP doubled the advice's time). An
    outsider's probe, left alone twice: a 70B service on L40S met a 50 ms p95 TPOT by keeping 170 replicas of 8 GPUs
    nearly idle (1,360 GPUs), with nothing said of what the model's own latency error makes of that count. A second
    probe: the first band used the check's pass marks (35% / 20%) as if they were its error, and scaled the wrong way
    (real = modelled x ratio: a target T is met where the modelled latency is below T / ratio)."""
    check = cal.latency_check
    latency = s.workload.latency
    for doc in size_docs:
        doc["latency_band"] = None
    if not check or latency is None or any(check.get(key) is None for key in LATENCY_RATIO_KEYS):
        return
    doc = size_docs[j]
    tp = int(doc["tp"])
    band: dict[str, Any] = {
        "source": str(check["source"]),
        **{key: float(check[key]) for key in LATENCY_RATIO_KEYS},
        "covers_deployment": s.gpu in (check.get("gpus") or ())
        and s.workload.precision in (check.get("precisions") or ())
        and serving_engine_on(s.workload.serving_engine, s.gpu) in (check.get("engines") or ()),
    }
    for end, quantile in (("lower", "p10"), ("higher", "p90")):
        targets = (
            latency.ttft_p95_s / band[f"ttft_ratio_{quantile}"],
            latency.tpot_p95_s / band[f"tpot_ratio_{quantile}"],
        )
        at_tp = [d for d in _deployments(s, model, cal, tps=[tp], targets=targets) if d.tp == tp]
        gpus = usd = None
        if at_tp and at_tp[0].fits_memory and at_tp[0].meets_latency:
            rps = at_tp[0].replica_requests_per_s
            if rps == doc["replica_requests_per_s"]:  # the same capacity: the size's own figures, not priced again
                gpus, usd = doc["gpus"], doc["usd_per_million_output_tokens"]
            else:
                priced_gpus, priced_usd = priced_at(tp, rps)
                gpus, usd = _finite_int(priced_gpus), num(priced_usd)
        band[f"gpus_if_latency_{end}"] = gpus
        band[f"usd_per_million_output_tokens_if_latency_{end}"] = (
            usd if gpus is not None and doc["usd_per_million_output_tokens"] is not None else None
        )
    doc["latency_band"] = band


# A GPU count that halves within the latency error hinges on the targets rather than on the traffic.
FRAGILE_GPU_RATIO: Final[float] = 2.0


def _latency_band_reason(doc: Mapping[str, Any]) -> str:
    """ "Within the serving model's latency error (...): were the real latencies at its low end, 496 GPUs would meet
    the targets ...; at its high end, ..." for the recommended size."""
    band = doc["latency_band"]
    lower, higher = band["gpus_if_latency_lower"], band["gpus_if_latency_higher"]
    error = f"the serving model's latency error ({latency_error_words(band)})"
    if lower == higher == doc["gpus"]:
        return f"The {n_gpus(doc['gpus'])} meet the latency targets at either end of {error}."

    def cost(key: str) -> str:
        usd = band[f"usd_per_million_output_tokens_if_latency_{key}"]
        return "" if usd is None else f" at {money(usd)} per million output tokens"

    tp = doc["tp"]
    low = (
        f"the same {n_gpus(lower)} would be needed"
        if lower == doc["gpus"]
        else f"{n_gpus(lower)} at TP {tp}{cost('lower')} would meet the targets rather than {doc['gpus']:,}"
        if lower is not None
        else f"no TP {tp} deployment on this GPU would meet the targets"
    )
    high = (
        f"no TP {tp} deployment on this GPU would meet the targets"
        if higher is None
        else "the same GPUs would still meet them"
        if higher == doc["gpus"]
        else f"{n_gpus(higher)} at TP {tp}{cost('higher')} would be needed"
    )
    # Both ends keep the recommended TP (a serving re-check: at the tightened targets another TP served for less).
    return (
        f"Within {error}: were the real latencies at its low end, {low}; at its high end, {high} (both ends sized at "
        f"TP {tp}; another TP may serve an end for less)."
    )


def fragile_latency_warning(doc: Mapping[str, Any]) -> str | None:
    """A warning where the recommended GPU count at least halves within the latency error (the targets, not the
    traffic, decide the size); None otherwise."""
    band = doc.get("latency_band")
    lower = None if band is None else band["gpus_if_latency_lower"]
    if band is None or not lower or doc["gpus"] < FRAGILE_GPU_RATIO * lower:
        return None
    return (
        f"The GPU count hinges on the latency targets: {n_gpus(doc['gpus'])} meet them by keeping each replica at "
        f"{doc['replica_requests_per_s']:.3g} requests/s, while {n_gpus(lower)} would do were the real TTFT and TPOT "
        f"{ratio_text(band['ttft_ratio_p10'])} and {ratio_text(band['tpot_ratio_p10'])} the modelled, the low "
        "end of the model's error on published latency. Load-test a replica at the targets before buying or "
        "reserving, or relax the targets (/workload/latency)."
    )


def _state_bands(
    doc: Mapping[str, Any],
    recommendation: dict[str, Any],
    reasons: list[str],
    warnings: list[str],
    coverage: ServingCoverage,
) -> None:
    """The recommended size's capacity and latency bands in the recommendation, with what they mean in words."""
    if doc.get("capacity_band") is not None:
        recommendation["capacity_band"] = doc["capacity_band"]
        reasons.append(_capacity_band_reason(doc, coverage))
    if doc.get("latency_band") is not None:
        recommendation["latency_band"] = doc["latency_band"]
        reasons.append(_latency_band_reason(doc))
        if (fragile := fragile_latency_warning(doc)) is not None:
            warnings.append(fragile)


def _role_offer(plan: _RentPlan, i: int, role: str, tp: int) -> dict[str, Any] | None:
    """The offer the base or the burst of deployment ``i`` rents, with what a GPU-hour its replicas use costs there
    (the instances billed over the replica GPU-hours they serve)."""
    row = int(plan.split[f"{role}_row"][i])
    if row < 0:
        return None
    instances = plan.split["base_instances" if role == "base" else "burst_instances_mean"][i]
    bill = float(instances * plan.table.usd_per_hour[row, i])
    used = float(plan.split[f"{role}_used"][i]) * tp
    return _instance_offer(plan, row, i, bill / used if used > 0 else math.inf)


def _instance_offer(plan: _RentPlan, row: int, i: int, used_price: float) -> dict[str, Any]:
    """The offer as deployment ``i`` rents it: its gpu_count and usd_per_hour are one instance's, so that the
    instances times usd_per_hour is the bill. A manual quote is per GPU-hour and rented one replica of tp GPUs at a
    time (an outsider's check: the quote's one GPU at $2.50 made that identity give $5,367 for a $10,735 rent)."""
    doc = offer_document(plan.frame.iloc[row], used_price)
    per = float(plan.table.instances_per_unit[row, i])  # a replica over several instances: one instance's figures
    doc["gpu_count"] = float(plan.table.gpus_per_instance[row, i]) / per
    doc["usd_per_hour"] = float(plan.table.usd_per_hour[row, i]) / per
    return doc


def _rent_document(
    s: Scenario, i: int, tp: int, good: bool, plan: _RentPlan, tokens_per_month: float
) -> dict[str, Any]:
    rent_month, base, split = plan.rent_month, plan.base, plan.split
    rent_ok = good and math.isfinite(float(rent_month[i]))
    base_offer = _role_offer(plan, i, "base", tp) if rent_ok else None
    burst_offer = _role_offer(plan, i, "burst", tp) if rent_ok else None
    by_market = {}
    for m in s.rent.priced_markets:
        row = int(plan.alone[m][0][i])
        by_market[m] = _instance_offer(plan, row, i, float(plan.used_price(m)[i])) if good and row >= 0 else None
    return {
        "offer": burst_offer or base_offer,
        "usd_per_month": num(rent_month[i]) if rent_ok else None,
        "usd_per_month_today": num(plan.rent_month_today[i]) if rent_ok else None,
        "usd_per_million_output_tokens": num(rent_month[i] / tokens_per_month * 1e6) if rent_ok else None,
        "base_replicas": int(base[i]) if rent_ok else None,
        "base_market": plan.base_market[i] if rent_ok and base[i] > 0 else None,
        "base_instances": int(plan.table.instances(split["base_instances"][i], int(split["base_row"][i]), i))
        if rent_ok
        else None,
        "base_offer": base_offer,
        "burst_replicas_mean": num(split["burst_mean"][i]) if rent_ok else None,
        "burst_market": plan.burst_market[i] if rent_ok and split["burst_instances_mean"][i] > 0 else None,
        "burst_instances_mean": (
            num(plan.table.instances(split["burst_instances_mean"][i], int(split["burst_row"][i]), i))
            if rent_ok
            else None
        ),
        "burst_offer": burst_offer,
        "by_market": by_market,
    }


def _buy_document(
    i: int,
    own: Mapping[str, Any],
    owned_gpus: np.ndarray,
    nodes: np.ndarray,
    be_markets: list[str],
    tokens_per_month: float,
    rent_month: np.ndarray,
) -> dict[str, Any]:
    be = float(own["break_even"][i])
    be_ok = math.isfinite(be) and be <= 1.0
    committed = float(own["committed_break_even"][i])
    return {
        "gpus_owned": int(owned_gpus[i]),
        "nodes": int(nodes[i]),
        "capex_usd": num(own["capex"][i]),
        "fabric": fabric_words(
            carried=bool(own["fabric"][i]),
            why="a replica spans servers" if own["fabric"][i] else "each replica fits in one server",
        ),
        "usd_per_year": num(own["year"][i]),
        "usd_per_month": num(own["month"][i]),
        "fixed_usd_per_year": num(own["fixed"][i]),
        "fixed_usd_per_gpu_year": num(own["fixed"][i] / owned_gpus[i]) if owned_gpus[i] else None,
        "variable_usd_per_busy_gpu_hour": num(own["variable"]),
        "utilization": num(own["utilization"][i]),
        "usd_per_gpu_hour_at_utilization": num(own["rate"][i]),
        "usd_per_million_output_tokens": num(own["month"][i] / tokens_per_month * 1e6),
        "break_even_against": {
            "market": be_markets[0] if len(be_markets) == 1 else None,
            "markets": be_markets,
            "usd_per_gpu_hour": num(own["rent_rate"][i]),
        },
        "break_even_utilization": be if be_ok else None,
        "break_even_hours_per_year": be * ec.HOURS_PER_YEAR if be_ok else None,
        "break_even_utilization_with_committed_base": (
            committed if math.isfinite(committed) and committed <= 1.0 else None
        ),
        # Owning costs no more than the rent as priced (u >= u* wherever u* is a break-even).
        "breaks_even": bool(math.isfinite(float(own["rent_rate"][i])) and own["month"][i] <= rent_month[i]),
    }


def _finite_int(x: float) -> int | None:
    return int(x) if math.isfinite(x) else None


def _size_document(
    d: Any,
    i: int,
    good: bool,
    gpus: np.ndarray,
    nodes: np.ndarray,
    rent_doc: dict[str, Any],
    buy_doc: dict[str, Any],
    tokens_per_month: float,
) -> dict[str, Any]:
    options = [x for x in (rent_doc["usd_per_month"], buy_doc["usd_per_month"]) if x is not None]
    return {
        "gpus": _finite_int(gpus[i]),
        "nodes": _finite_int(nodes[i]),
        "tp": d.tp,
        "replicas": _finite_int(d.replicas_peak),
        "replicas_mean": _finite_int(d.replicas_mean),
        "fits_memory": d.fits_memory,
        "meets_latency": d.meets_latency,
        "weights_gb_per_gpu": d.weights_gb_per_gpu,
        "memory_per_gpu_gb": d.memory.held_gb,
        "memory_budget_per_gpu": asdict(d.memory),
        "batch": d.batch,
        "max_batch": d.max_batch,
        "ttft_s": num(d.ttft_s),
        "tpot_s": num(d.tpot_s),
        "batch_at_peak": num(d.batch_at_peak) if good else None,
        "ttft_s_at_peak": num(d.ttft_at_peak_s) if good else None,
        "tpot_s_at_peak": num(d.tpot_at_peak_s) if good else None,
        "replica_output_tokens_per_s": d.replica_output_tokens_per_s,
        "replica_requests_per_s": d.replica_requests_per_s,
        "requests_per_s_per_gpu": d.replica_requests_per_s / d.tp,
        "output_tokens_per_s": num(d.replica_output_tokens_per_s * d.replicas_peak) if good else None,
        "rent": rent_doc,
        "buy": buy_doc,
        "usd_per_million_output_tokens": min(options) / tokens_per_month * 1e6 if options else None,
    }


def _unmet_reasons(
    s: Scenario, deployments: list[Any], memory_gb: float, reasons: list[str], warnings: list[str]
) -> None:
    traffic, latency = s.workload.traffic, s.workload.latency
    assert traffic is not None and latency is not None
    fits = [d for d in deployments if d.fits_memory]
    if not fits:
        tokens = traffic.input_tokens + traffic.output_tokens
        largest = max(d.tp for d in deployments)
        reasons.append(
            f"The model {inf.does_not_fit_text(tp=largest, memory_gb=memory_gb, tokens=tokens)}; use a larger GPU or "
            "lower precision."
        )
    else:
        fastest = min(fits, key=lambda d: d.tpot_s)
        reasons.append(
            f"No deployment meets TTFT {fmt.duration_s(latency.ttft_p95_s)} and TPOT "
            f"{fmt.duration_s(latency.tpot_p95_s)}: the fastest (TP {fastest.tp}) reaches "
            f"{fmt.duration_s(fastest.ttft_s)} and "
            f"{tpot_words(f'{fmt.duration_s(fastest.tpot_s)} per token', output_tokens=traffic.output_tokens)} "
            "at batch 1."
        )
    warnings.append("No deployment meets the latency targets on this GPU.")


def _relaxed_scenario(s: Scenario, entry: Mapping[str, Any]) -> Scenario:
    """The scenario with the one change a relax entry names (no GPU comparison: only its own price is wanted)."""
    w = s.workload
    change = entry["change"]
    if change == "gpu":
        return scenario_for_gpu(catalog_prices_for_other_gpus(s)[0], entry["gpu"])
    if change == "latency_targets":
        w = replace(w, latency=Latency(ttft_p95_s=entry["ttft_p95_s"], tpot_p95_s=entry["tpot_p95_s"]))
    elif change == "precision":
        w = replace(w, precision=entry["precision"])
    network = s.network
    if change == "tensor_parallel":
        network = replace(network, gpus_per_node=get_gpu(s.gpu).gpus_per_node)
    return replace(s, workload=w, network=network, compare_gpus=())


def _priced_relaxation(
    s: Scenario, entry: dict[str, Any], *, cal: inf.InferenceCalibration, now: dt.datetime
) -> dict[str, Any]:
    """A relax entry with what that change costs: the deployment (GPUs, TP, latencies), action and monthly cost the
    advice recommends with it (an outsider's check: FP8, an MI300X, a B200 and a looser TTFT were offered with no
    GPU count or cost, while they needed 120, 296, 24 and 416 GPUs); null where it does not meet the targets or is
    not priced."""
    priced: dict[str, Any] = {"gpus": None, "action": None, "usd_per_month": None}
    if not entry["meets_latency"]:
        return {**entry, **priced}
    try:
        doc = advise_inference(_relaxed_scenario(s, entry), now=now, calibration=cal)
    except ScenarioError:
        return {**entry, **priced}
    rec = doc["recommendation"]
    size = recommended_size(doc)
    if size is None:
        return {**entry, **priced}
    # The TP and latencies are the recommended deployment's too, not the one the check first found meeting the
    # targets (an outsider's check: TP 4 beside TP 8 x 10's 80 GPUs and cost; TP 4 needs 4,384).
    priced.update(gpus=size["gpus"], tp=size["tp"], ttft_s=size["ttft_s"], tpot_s=size["tpot_s"])
    if rec["action"] in ("rent", "buy"):
        priced.update(action=rec["action"], usd_per_month=size[rec["action"]]["usd_per_month"])
    return {**entry, **priced}


def _relaxation_text(entry: Mapping[str, Any]) -> str:
    """ "serve FP8 weights (120 GPUs, rent $56,770/month)"."""
    if entry["gpus"] is None:
        return str(entry["text"])
    cost = f", {entry['action']} {money(entry['usd_per_month'])}/month" if entry["action"] else ", not priced"
    return f"{entry['text']} ({n_gpus(entry['gpus'])}{cost})"


def _why_not(entry: Mapping[str, Any], *, output_tokens: float) -> str:
    """Why one checked change misses the targets: it fits no memory, or the latency its nearest deployment reaches."""
    if entry["change"] == "gpu" and "gpu" not in entry:
        return str(entry["text"])  # "no faster GPU in the catalog meets the targets either"
    if entry["tp"] is None:
        return f"{entry['text']}: no deployment fits in memory"
    parts = [] if entry["ttft_s"] is None else [f"TTFT {fmt.duration_s(entry['ttft_s'])}"]
    if entry["tpot_s"] is not None:
        parts.append(tpot_words(f"TPOT {fmt.duration_s(entry['tpot_s'])}", output_tokens=output_tokens))
    reached = " and ".join(parts)
    return f"{entry['text']}: the nearest (TP {entry['tp']}) reaches {reached or 'no finite latency'}"


def _nothing_meets_text(relax: Sequence[Mapping[str, Any]], *, output_tokens: float) -> str:
    """ "Nothing checked meets the targets: serve FP8 weights: no deployment fits in memory; ..." """
    if not relax:
        return "Nothing checked meets the targets: no other precision, node or GPU was left to check."
    why = (_why_not(r, output_tokens=output_tokens) for r in relax)
    return "Nothing checked meets the targets: " + "; ".join(why) + "."


def _unmet(
    s: Scenario,
    model: inf.ServedModel,
    cal: inf.InferenceCalibration,
    deployments: list[Any],
    reasons: list[str],
    now: dt.datetime,
) -> dict[str, Any]:
    """``closest`` (the deployment nearest the targets, with the latency it reaches) and ``relax`` (what would meet
    them, each checked by sizing again); the first relaxation that meets the targets closes the reasons."""
    latency = s.workload.latency
    assert latency is not None
    targets = {"ttft_target": latency.ttft_p95_s, "tpot_target": latency.tpot_p95_s}
    near = closest_deployment(deployments, **targets)

    def size(
        *, gpu: str, precision: str, tps: list[int] | None, targets: tuple[float, float] | None = None
    ) -> list[Any]:
        return _deployments(s, model, cal, gpu=gpu, precision=precision, tps=tps, targets=targets)

    relax = [_priced_relaxation(s, r, cal=cal, now=now) for r in relax_options(s, model=model, closest=near, size=size)]
    meeting = [_relaxation_text(r) for r in relax if r["meets_latency"] and r["change"] != "latency_targets"]
    if meeting:
        reasons.append("What would meet the targets: " + "; or ".join(meeting) + ".")
    elif any(r["meets_latency"] for r in relax):
        reasons.append("Only looser latency targets meet them on the GPUs and precisions checked.")
    else:
        # No looser target either (an outsider's probe: a model and KV cache that fit no GPU were told "only looser
        # latency targets meet them" with none offered): say so, with each change's own reason.
        assert s.workload.traffic is not None
        reasons.append(_nothing_meets_text(relax, output_tokens=s.workload.traffic.output_tokens))
    return {"closest": closest_document(near, **targets) if near is not None else None, "relax": relax}


def _about(x: float) -> str:
    """A mean count as said in a sentence: whole above 10 (54), two figures below (2.5, 0.31)."""
    return f"{x:.0f}" if x >= 10 else f"{x:.2g}"


def _counted(x: float, word: str) -> str:
    """ "1 replica", "0.65 replicas", "242 replicas": a mean count in plain figures, the noun agreeing with them."""
    figure = _about(x)
    return f"{figure} {word if figure == '1' else word + 's'}"


def _rent_reason(doc: Mapping[str, Any], *, scenario: Mapping[str, Any] | None = None) -> str:
    """ "Renting costs $14,313/month levelized over 5 years at an 8% discount rate from $24,521/month today, falling
    30% a year (...)": the levelized bill the decision compares, with today's where a price decline makes them
    differ."""
    rent = doc["rent"]
    cost = f"{money(rent['usd_per_month'])}/month"
    today = rent.get("usd_per_month_today")
    if scenario is not None and today is not None and not math.isclose(today, rent["usd_per_month"], rel_tol=1e-9):
        cost = levelized_words(levelized=cost, today=f"{money(today)}/month", scenario=scenario)
    return (
        f"Renting costs {cost} ({_rent_plan_words(rent)}): "
        f"{money(rent['usd_per_million_output_tokens'])} per million output tokens."
    )


def _rent_plan_words(rent: Mapping[str, Any]) -> str:
    """What the rent bills, as the reasons and the compare_gpus rows say it: "1 on-demand instance of 8 GPUs all
    month, holding 1 replica; plus 0.97 spot replicas on average on 0.97 instances of 1 GPU, with the traffic" (an
    outsider's check read "plus 2.4e+02 spot replicas" and "plus 1 spot replicas")."""
    base_offer, burst_offer = rent.get("base_offer") or {}, rent.get("burst_offer") or {}
    base_words = MARKET_PHRASES.get(rent["base_market"] or "", "")
    if not rent["base_replicas"]:
        base_txt = "no base"
    elif base_offer.get("provider") == "manual quote":
        base_txt = f"{fmt.count(rent['base_replicas'], 'replica')} at your quote all month"
    else:
        base_txt = (
            f"{_counted(rent['base_instances'], f'{base_words} instance')} of {n_gpus(base_offer['gpu_count'])} "
            f"all month, holding {fmt.count(rent['base_replicas'], 'replica')}"
        )
    burst_txt = ""
    if rent["burst_market"]:
        burst_words = MARKET_PHRASES.get(rent["burst_market"], "")
        if burst_offer.get("provider") == "manual quote":
            burst_txt = f"; plus {_counted(rent['burst_replicas_mean'], 'replica')} on average at your quote"
        else:
            burst_txt = (
                f"; plus {_counted(rent['burst_replicas_mean'], f'{burst_words} replica')} on average on "
                f"{_counted(rent['burst_instances_mean'], 'instance')} of {n_gpus(burst_offer['gpu_count'])}"
            )
        burst_txt += ", with the traffic"
    return base_txt + burst_txt


def _rented_gpus_at_peak(doc: Mapping[str, Any]) -> float:
    """The GPUs the rent holds at the peak: the base instances' and the whole burst instances the replicas above
    them need (advisor.advice.instances: an instance of g GPUs holds floor(g / tp) replicas; a replica of more GPUs
    than that rents tp / g whole instances, tp GPUs)."""
    rent = doc["rent"]
    base_offer, burst_offer = rent.get("base_offer") or {}, rent.get("burst_offer") or {}
    gpus = (rent.get("base_instances") or 0) * base_offer.get("gpu_count", 0)
    above = doc["replicas"] - (rent.get("base_replicas") or 0)
    count = burst_offer.get("gpu_count", 0)
    per_instance = count // doc["tp"]
    if above > 0 and per_instance > 0:
        gpus += math.ceil(above / per_instance) * count
    elif above > 0 and count > 0:
        gpus += above * doc["tp"]
    return float(gpus)


def _rented_instances_note(doc: Mapping[str, Any]) -> str | None:
    """ "rented as 1 on-demand instance of 8 GPUs all month, holding 1 replica: 8 GPUs billed at the peak for a
    deployment of 1 GPU" where renting whole instances holds more GPUs than the deployment uses (an outsider's probe:
    a compared B200 read "1 GPU (TP 1), $32,120", an 8-GPU instance's bill, with nothing saying 7 GPUs sit idle);
    None where the rent fills what it holds or is not priced."""
    if doc["rent"]["usd_per_month"] is None or doc["gpus"] is None:
        return None
    rented = _rented_gpus_at_peak(doc)
    if rented <= doc["gpus"]:
        return None
    return (
        f"rented as {_rent_plan_words(doc['rent'])}: {n_gpus(rented)} billed at the peak for a deployment of "
        f"{n_gpus(doc['gpus'])}"
    )


def _chosen_reasons(
    s: Scenario,
    doc: Mapping[str, Any],
    action: str,
    reasons: list[str],
    warnings: list[str],
) -> None:
    traffic, latency = s.workload.traffic, s.workload.latency
    assert traffic is not None and latency is not None
    # At the peak each replica carries peak / replicas, not its sized capacity (an outsider's probe: the capacity's
    # 125 requests in flight were quoted "at the peak", where Little's law gives fewer).
    share = traffic.peak_requests_per_s / doc["replicas"]
    targets = f"targets {latency.ttft_p95_s:g} s / {latency.tpot_p95_s:g} s"
    ttft, tpot, batch = doc["ttft_s_at_peak"], doc["tpot_s_at_peak"], doc["batch_at_peak"]
    # A figure the sizing could not compute (None) is left unsaid, never formatted (an outsider's probe: a 500).
    at_peak = (
        f"at a p95 TTFT of {ttft:.3g} s and {tpot_words(f'TPOT of {tpot:.3g} s', output_tokens=traffic.output_tokens)} "
        f"({targets}), about {_about(batch)} requests in flight per replica"
        if None not in (ttft, tpot, batch)
        else f"within the {targets}"
    )
    reasons.append(
        f"TP {doc['tp']} x {fmt.count(doc['replicas'], 'replica')} = {n_gpus(doc['gpus'])} serves the peak of "
        f"{traffic.peak_requests_per_s:g} requests/s ({share:.3g} per replica) {at_peak}; each replica "
        f"is sized to take up to {doc['replica_requests_per_s']:.3g} requests/s within the targets "
        f"({doc['requests_per_s_per_gpu']:.3g} per GPU at {traffic.input_tokens:,} prompt and "
        f"{traffic.output_tokens:,} output tokens)."
    )
    if (spans := spans_nodes_reason(s, doc["tp"])) is not None:
        reasons.append(spans)
    rent_m, buy_m = doc["rent"]["usd_per_month"], doc["buy"]["usd_per_month"]
    if rent_m is not None:
        reasons.append(_rent_reason(doc, scenario=s.to_dict()))
    if buy_m is not None:
        be = doc["buy"]["break_even_utilization"]
        reasons.append(
            f"Owning {doc['buy']['gpus_owned']:,} GPUs sized for the peak costs {money(buy_m)}/month "
            f"({money(doc['buy']['usd_per_million_output_tokens'])} per million output tokens); the traffic keeps "
            f"them {pct(doc['buy']['utilization'])} busy against a break-even of "
            + (
                # The committed-base view is 0 only where owning costs less at the traffic's utilization too, so u* is
                # then at most that utilization (both views meet the rent at the actual point).
                f"{pct(be)} against the rent per busy GPU-hour; the rent's base is billed every hour used or not, "
                "and owning costs no more than that base and its burst at any utilization, so owning is cheaper "
                "however busy the GPUs are."
                if be is not None and doc["buy"].get("break_even_utilization_with_committed_base") == 0
                else f"{pct(be)}."
                if be is not None
                else "more than 100% (owning never pays at this price)."
                if rent_m is not None
                # No rent priced: nothing to break even against (a hostile probe read "never pays" there).
                else "none: renting is not priced, so there is nothing to break even against."
            )
        )
    # The recommended deployment's burst (a finance probe: another row's spot burst put this on a decision that used
    # none); every row's rent.burst_market says which market it bursts on.
    if action == "rent" and doc["rent"]["burst_market"] == "spot":
        warnings.append(
            "Spot capacity serves part of the peak: it can be reclaimed at short notice, so requests on it may "
            "need retries; remove spot from /rent/markets to price on-demand instead."
        )


def ignored_input_warnings(s: Scenario, tps: Sequence[int]) -> list[str]:
    """Inputs the user gave that a serving plan does not use (an outsider's probe: they were taken and silently had
    no effect): /cluster_sizes and /utilization always, /network/inter_node_gbps where no replica leaves its node."""
    out = []
    ignored = [field for field in ("/cluster_sizes", "/utilization") if field not in s.defaults_used]
    if ignored:
        out.append(
            f"{' and '.join(ignored)} do not apply to inference and were ignored: the traffic and the latency targets "
            "size each deployment, and the traffic sets how busy owned GPUs are."
        )
    if "/network/inter_node_gbps" not in s.defaults_used and all(spans_nodes_reason(s, tp) is None for tp in tps):
        out.append(
            f"/network/inter_node_gbps ({fmt.plain(s.network.inter_node_gbps)} Gb/s) was not used: every deployment "
            "considered keeps its replica inside one node, where tensor-parallel collectives run over NVLink or PCIe, "
            "and replicas do not talk to each other."
        )
    return out


def spans_nodes_reason(s: Scenario, tp: int) -> str | None:
    """ "Each TP 16 replica spans 2 nodes of 8 GPUs: its tensor-parallel collectives run over the scale-out network at
    3,200 Gb/s per node (...), not NVLink." where a replica leaves the scale-up domain (a probe: "TP 16" said nothing
    of the servers it spans or the network it was sized on); None within it."""
    gpn = s.network.gpus_per_node
    if tp <= inf.scale_up_gpus(inf.serving_gpu(s.gpu), gpn):
        return None
    source = "the GPU's typical server" if "/network/inter_node_gbps" in s.defaults_used else "given"
    return (
        f"Each TP {tp} replica spans {math.ceil(tp / gpn)} nodes of {n_gpus(gpn)}: its tensor-parallel collectives "
        f"run over the scale-out network at {fmt.plain(s.network.inter_node_gbps)} Gb/s per node "
        f"(/network/inter_node_gbps, {source}), not NVLink."
    )


def _recommend(
    s: Scenario,
    deployments: list[Any],
    ok: np.ndarray,
    size_docs: list[dict[str, Any]],
    memory_gb: float,
    warnings: list[str],
) -> tuple[str, int | None, list[str]]:
    """The cheapest monthly option among deployments that fit and meet the targets: (action, its index in the
    sizes, reasons); action "none" when no deployment meets them (``_unmet`` then says what comes nearest), or when
    one does but neither renting nor buying is priced (the index: that deployment's)."""
    reasons: list[str] = []
    candidates = [
        (cost, j, kind)
        for j, doc in enumerate(size_docs)
        if ok[j]
        for kind, cost in (("rent", doc["rent"]["usd_per_month"]), ("buy", doc["buy"]["usd_per_month"]))
        if cost is not None
    ]
    if not ok.any():
        _unmet_reasons(s, deployments, memory_gb, reasons, warnings)
        return "none", None, reasons
    if not candidates:
        j = int(np.argmax(ok))
        rec_gpus = size_docs[j]["gpus"]
        reasons.append(
            f"TP {deployments[j].tp} x {fmt.count(size_docs[j]['replicas'], 'replica')} = {n_gpus(rec_gpus)} meets the "
            "targets, but "
            "neither renting nor buying is priced: give /rent/usd_per_gpu_hour or /buy/capex_usd."
        )
        return "none", j, reasons
    _, j, action = min(candidates, key=lambda c: c[0])
    # The other way to pay at its cheapest, over every deployment that meets the targets (an outsider's probe:
    # "rent is cheaper by $7,112/month" was against owning the rent winner's layout, where owning TP 2 x 3 on one
    # server came within $444).
    other = min((c for c in candidates if c[2] != action), key=lambda c: c[0], default=None)
    _chosen_reasons(s, size_docs[j], action, reasons, warnings)
    if other is not None:
        reasons.append(_margin_reason(action=action, chosen=size_docs[j], other=size_docs[other[1]], cost=other[0]))
    return action, j, reasons


def _margin_reason(*, action: str, chosen: Mapping[str, Any], other: Mapping[str, Any], cost: float) -> str:
    """How much cheaper the chosen option is than the other way to pay at its cheapest deployment."""
    margin = money(cost - chosen[action]["usd_per_month"])
    if other is chosen:
        return f"{action.capitalize()} is cheaper by {margin}/month."
    way = "owning" if action == "rent" else "renting"
    gpus = other["buy"]["gpus_owned"] if action == "rent" else other["gpus"]
    return (
        f"{action.capitalize()} is cheaper by {margin}/month than the cheapest way of {way} that meets the targets: "
        f"TP {other['tp']} x {fmt.count(other['replicas'], 'replica')} ({n_gpus(gpus)}) at {money(cost)}/month."
    )


def _prices_as_of(
    s: Scenario,
    frame: pd.DataFrame,
    size_docs: list[dict[str, Any]],
    freshness: dict[str, Any],
    now: dt.datetime,
    warnings: list[str],
) -> str | None:
    """The date of the oldest price used; warns when nothing is offered, or the prices quoted are the snapshot's or
    stale."""
    if s.rent.usd_per_gpu_hour is None:
        if frame.empty:
            # The markets asked for (a hostile probe: "No rental offers for b200" while on-demand ones exist).
            warnings.append(
                f"No rental offers for {s.gpu} in {', '.join(s.rent.priced_markets)}: the rent side is not priced "
                "(add markets to /rent/markets or give /rent/usd_per_gpu_hour)."
            )
        else:
            warnings.extend(freshness_warnings(quoted_offers(size_docs), freshness))
    prices_as_of, freshness["kind"] = price_dates(s, size_docs, freshness, now, warnings)
    return prices_as_of


def _outlook(
    s: Scenario,
    doc: Mapping[str, Any],
    j: int,
    plan: _RentPlan,
    hw: Hardware,
    own: Mapping[str, Any],
    nodes: np.ndarray,
    owned_gpus: np.ndarray,
    busy_gpu_hours_year: np.ndarray,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Cumulative cash by month and present cost of renting and owning deployment ``j``."""
    rec_gpus = doc["gpus"]
    b = s.buy
    months = max(1, round(b.years * ec.MONTHS_PER_YEAR))
    running_year = float(
        ec.yearly_running_cost_usd(
            capex_usd=own["capex"][j],
            contracted_kw=nodes[j] * hw.load_kw_per_node,
            colo_usd_per_kw_month=b.colo_usd_per_kw_month,
            support_fraction_per_year=b.support_fraction_per_year,
            staff_usd_per_year=b.staff_usd_per_year,
            software_usd_per_year=b.software_usd_per_gpu_year * owned_gpus[j],
            idle_kw=nodes[j] * hw.idle_kw_per_node,
            pue=b.pue,
            power_usd_per_kwh=b.power_usd_per_kwh,
        )
        + own["variable"] * busy_gpu_hours_year[j]
    )  # cash each year: running costs and the energy of busy GPU-hours
    residual = float(own["capex"][j]) * b.residual_fraction
    # Cash at today's prices, the on-demand and spot part falling each year and a reserved term's not; the present
    # cost is the levelized rent's, the same figure (a finance probe: the NPV levelized while the decision did not).
    committed = float(plan.committed_month[j])
    cumulative = cumulative_document(
        gpus=rec_gpus,
        months=months,
        rent_usd_per_month=float(plan.rent_month_today[j]) - committed,
        rent_committed_usd_per_month=committed,
        rent_decline_per_year=s.rent.price_decline_per_year,
        capex_usd=float(own["capex"][j]),
        own_usd_per_month=running_year / ec.MONTHS_PER_YEAR,
        residual_usd=residual,
    )
    rent_pv, own_pv = ec.npv_rent_and_own_usd(
        rent_usd_per_year=float(plan.rent_month[j]) * ec.MONTHS_PER_YEAR,
        rent_decline_per_year=0.0,  # levelized already
        capex_usd=float(own["capex"][j]),
        own_running_usd_per_year=running_year,
        residual_usd=residual,
        discount_rate=b.discount_rate,
        years=b.years,
    )
    # The buy figures are for whole owned servers, more GPUs than the deployment rents where the peak does not fill
    # them (an outsider's check: npv.gpus 10 beside the present cost of 16 owned GPUs).
    cumulative["gpus_owned"] = int(owned_gpus[j])
    cumulative["tp"] = doc["tp"]
    npv = {
        "gpus": rec_gpus,
        "tp": doc["tp"],
        "gpus_owned": int(owned_gpus[j]),
        "discount_rate": b.discount_rate,
        "years": b.years,
        "rent_present_cost_usd": float(rent_pv),
        "buy_present_cost_usd": float(own_pv),
    }
    return cumulative, npv


def advise_inference(
    scenario: Scenario | Mapping[str, Any],
    *,
    now: dt.datetime | None = None,
    calibration: inf.InferenceCalibration | object | None = None,
    explain_unmet: bool = True,
) -> dict[str, Any]:
    """The inference Advice JSON for a Scenario (object or normalized document). Raises ScenarioError.
    ``explain_unmet=False`` leaves out what would meet unreachable targets (``closest``, ``relax``): a compare_gpus
    row reads only the recommended size, and explaining each compared GPU (every relaxation sized and priced again)
    took a hostile probe's 8 compared GPUs to 5.8 s."""
    s = scenario if isinstance(scenario, Scenario) else parse_scenario(scenario)
    w = s.workload
    if w.kind != "inference" or w.traffic is None or w.latency is None:
        raise ScenarioError([{"pointer": "/workload/kind", "message": "advise_inference needs kind inference"}])
    now = now or timezone.now()
    # A training Calibration (what advise() callers hold) does not apply to serving: use the shipped one.
    cal = calibration if isinstance(calibration, inf.InferenceCalibration) else inf.default_calibration()
    warnings: list[str] = []
    traffic = w.traffic
    spec = get_gpu(s.gpu)
    model = served_model(s)
    deployments = _deployments(s, model, cal)
    if model.latent_kv and any(d.tp > 1 for d in deployments):
        scale_up = inf.scale_up_gpus(inf.serving_gpu(s.gpu), s.network.gpus_per_node)
        warnings.append(attention_dp_warning(spans_nodes=any(d.tp > scale_up for d in deployments)))
    tps = [d.tp for d in deployments]
    k = len(deployments)
    tp = np.asarray(tps, dtype=np.float64)
    ok = np.asarray([d.fits_memory and d.meets_latency for d in deployments])
    replica_rps = np.asarray([d.replica_requests_per_s for d in deployments])
    peak_replicas = np.asarray([d.replicas_peak for d in deployments])
    gpus = tp * peak_replicas

    # Traffic over the day and the replicas it needs.
    day = traffic_profile(
        peak_requests_per_s=traffic.peak_requests_per_s, mean_requests_per_s=traffic.mean_requests_per_s
    )
    served_mean = day.mean()
    needed = replicas_over_time(rate=day.rate, replica_requests_per_s=replica_rps)
    tokens_per_month = served_mean * traffic.output_tokens * HOURS_PER_MONTH * ec.SECONDS_PER_HOUR

    offers = rental_offers(s).reset_index(drop=True)
    plan = _rent_plan(s, tps, peak_replicas, ok, needed, day.share, warnings, offers=offers)

    # Owning: the peak deployment in whole servers.
    hw = hardware(s, warnings)
    nodes, owned_gpus, busy_gpu_hours_year, own = _ownership(s, hw, gpus, needed, tp, day, plan)
    # Break-even against the rent as priced, per busy GPU-hour (its base, burst and whole instances): owning then
    # breaks even exactly where it costs less than that rent (an outsider's check: TP 8 "broke even" against
    # on-demand at 69% busy while the rent with a spot burst, $19,940/month, was below owning's $22,268).
    be_markets = [list(dict.fromkeys(m for m in (plan.base_market[i], plan.burst_market[i]) if m)) for i in range(k)]

    size_docs: list[dict[str, Any]] = []
    for i, d in enumerate(deployments):
        good = bool(ok[i])
        rent_doc = _rent_document(s, i, d.tp, good, plan, tokens_per_month)
        buy_doc = (
            _buy_document(i, own, owned_gpus, nodes, be_markets[i], tokens_per_month, plan.rent_month)
            if own and good
            else {"usd_per_month": None, "break_even_utilization": None, "usd_per_million_output_tokens": None}
        )
        size_docs.append(_size_document(d, i, good, gpus, nodes, rent_doc, buy_doc, tokens_per_month))
        if d.fits_memory and model.heads % d.tp:
            warnings.append(
                f"TP {d.tp} does not divide the {model.heads} attention heads (derived from params_b unless given): "
                "serving engines need it; give the model's architecture (/workload/model/heads)."
            )
    coverage = serving_coverage(
        gpu=s.gpu, precision=s.workload.precision, engine=serving_engine_on(s.workload.serving_engine, s.gpu)
    )
    _add_capacity_bands(s, size_docs, cal, ok, day, hw, tokens_per_month, offers, coverage)

    action, rec_j, reasons = _recommend(s, deployments, ok, size_docs, spec.memory_gb, warnings)
    if rec_j is not None and ok[rec_j] and explain_unmet:  # a compare_gpus row reads no band (two more sizings)
        _add_latency_band(
            s,
            model,
            cal,
            size_docs,
            rec_j,
            lambda tp, rps: _priced_one(s, tp, day, hw, rps, tokens_per_month, offers),
        )
    recommendation: dict[str, Any] = {
        "action": action,
        "gpus": None if rec_j is None else size_docs[rec_j]["gpus"],
        "tp": None if rec_j is None else size_docs[rec_j]["tp"],
        "reasons": reasons,
    }
    warnings.extend(kv_share_warnings(deployments, rec_j, cal))
    warnings.extend(kv_capacity_warnings(s, deployments, rec_j))
    if rec_j is not None:
        _state_bands(size_docs[rec_j], recommendation, reasons, warnings, coverage)
    if action == "buy" and rec_j is not None:  # what is bought: whole servers, more GPUs than the deployment uses
        recommendation.update(gpus_owned=size_docs[rec_j]["buy"]["gpus_owned"], nodes=size_docs[rec_j]["buy"]["nodes"])
    if action == "none" and not ok.any() and explain_unmet:  # no deployment meets the targets (not: one does but
        # nothing is priced)
        recommendation.update(_unmet(s, model, cal, deployments, reasons, now))
    warnings.append(latency_accuracy_warning(cal.latency_check))
    warnings.extend(uncalibrated_serving_warnings(coverage))
    warnings.extend(ignored_input_warnings(s, tps))
    if (capacity := capacity_warning(size_docs)) is not None:
        warnings.append(capacity)
    beyond = sorted({int(d["gpus"]) for d in size_docs if d["gpus"] is not None and d["gpus"] > MAX_GPUS})
    if beyond:
        warnings.append(
            f"The peak traffic needs {', '.join(f'{n:,}' for n in beyond)} GPUs at some layouts, more than the "
            f"{MAX_GPUS:,} GPUs of any rentable capacity the advisor prices or a training cluster it sizes: check the "
            "traffic (/workload/traffic/peak_requests_per_s) or plan the service in parts."
        )
    reserved = [m for m in RESERVED_MARKETS if m in plan.alone and (plan.alone[m][0] >= 0).any()]
    on_demand = "on_demand" in plan.alone and (plan.alone["on_demand"][0] >= 0).any()
    if not reserved and on_demand and s.rent.usd_per_gpu_hour is None and not plan.frame.empty:
        # Spot-only plans say so in their own warning; reserved offers a provider's cap excludes are not "none"
        # (hostile probes: both read "No reserved offers").
        listed = plan.frame["market"].isin(list(RESERVED_MARKETS)).any()
        warnings.append(
            "No reserved offer can supply the peak's instances at once (their providers' sourced capacity caps): "
            "the base capacity is priced on demand."
            if listed
            else "No reserved offers: the base capacity is priced on demand."
        )

    freshness = json_safe(selectors.price_freshness(gpu=s.gpu))
    prices_as_of = _prices_as_of(s, plan.frame, size_docs, freshness, now, warnings)

    # Cumulative cash and present cost at the recommendation.
    cumulative = npv = None
    if rec_j is not None and hw is not None and action in ("rent", "buy"):
        doc = size_docs[rec_j]
        if doc["rent"]["usd_per_month"] is not None and doc["buy"]["usd_per_month"] is not None:
            cumulative, npv = _outlook(s, doc, rec_j, plan, hw, own, nodes, owned_gpus, busy_gpu_hours_year)

    return json_document(
        {
            "advice_version": ADVICE_VERSION,
            "kind": "inference",
            "generated_at": now,
            "scenario": s.to_dict(),
            "gpu": gpu_document(s.gpu, w.precision, serving=True),
            "model": {
                **model_document(s),
                "params_b": s.workload.model.params_b,  # the given size; what is served is active_params_b
                "active_params_b": model.active_params_b,
                "layers": model.layers,
                "hidden": model.hidden,
                "heads": model.heads,
                "kv_heads": model.kv_heads,
            },
            "traffic_profile": {
                "shape": (
                    "daily sinusoid between 2 x mean - peak and peak (a sharper daily spike when the mean is below "
                    "half the peak), 5-minute steps"
                ),
                "served_mean_requests_per_s": served_mean,
                "output_tokens_per_month": tokens_per_month,
            },
            "sizes": size_docs,
            "recommendation": recommendation,
            "prices_as_of": prices_as_of,
            "price_freshness": freshness,
            "hardware_quote": hw.document if hw else None,
            "calibration": {
                "name": cal.name,
                "runs": cal.runs,
                "loo_mape": cal.loo_mape,
                "baseline_loo_mape": cal.baseline_loo_mape,
                "source": cal.source,
            },
            "warnings": list(dict.fromkeys(warnings)),
            "cumulative_cost": cumulative,
            "npv": npv,
            "sensitivity": [],
            "uncertainty": {
                "method": "leave-one-out error of output tokens/s on the TensorRT-LLM tables; latency_check: the "
                "serving model's TTFT and TPOT against published latency measurements it was never fitted on",
                "loo_mape": cal.loo_mape,
                "latency_check": None if cal.latency_check is None else dict(cal.latency_check),
            },
            "assumptions": [*assumptions_used(s), *serving_assumptions(s)],
            "alternatives": mark_cheapest(
                _alternatives(s, size_docs, recommendation, now=now, calibration=calibration),
                monthly=True,
                runs_per_year=1.0,
            ),
        }
    )


def _engine_choice(s: Scenario) -> str:
    """Whether /workload/serving_engine was given or defaulted, and why the default is what it is."""
    engine = s.workload.serving_engine
    if "/workload/serving_engine" not in s.defaults_used:
        return f"given (/workload/serving_engine {engine})"
    return f"defaulted (/workload/serving_engine left out): {default_engine_reason(s.gpu)}"


# The words by which a part of a serving-stack row's source names the setting it supports (the engines' own option
# names, and "same/memory settings as <engine>" where a row borrows another's).
SERVING_SOURCE_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "kv_fraction": (
        "free_gpu_memory_fraction",
        "gpu_memory_utilization",
        "mem_fraction_static",
        "memory settings as",
        "same settings as",
    ),
    "kv_output_reserved": ("kv_output_reserved",),
    "max_batch": ("max_batch", "max_num_seqs", "batch cap", "same settings as"),
    "max_num_tokens": ("max_num_tokens", "max_num_batched_tokens", "chunked_prefill_size", "same settings as"),
    "runtime_gb": ("runtime_gb", "memory settings as", "same settings as"),
}


def _source_parts(text: str) -> list[str]:
    """A source cell's parts: split at the semicolons outside brackets; a part whose brackets hold several
    semicolon-separated items gives one part per item, led by the words before the bracket ("TensorRT-LLM docs (a;
    b)" -> "TensorRT-LLM docs: a", "TensorRT-LLM docs: b")."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == ";" and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    out = []
    for piece in filter(None, parts):
        head, bracket, rest = piece.partition(" (")
        inner = rest.removesuffix(")")
        if bracket and rest.endswith(")") and ";" in inner and "(" not in inner:
            out += [f"{head}: {item.strip()}" for item in inner.split(";") if item.strip()]
        else:
            out.append(piece)
    return out


def serving_source_part(engine: str, source: str, setting: str) -> str:
    """The parts of a serving-stack row's source that name ``setting`` (SERVING_SOURCE_KEYS), an outsider's probe:
    every /serving value repeated the whole row's source. Where no part names it, the whole source, saying so."""
    keys = SERVING_SOURCE_KEYS.get(setting, ())
    parts = [p for p in _source_parts(source) if any(key in p for key in keys)]
    if parts:
        return f"serving_stacks.csv {engine}: {'; '.join(parts)}"
    return f"serving_stacks.csv {engine} (no part of its source names {setting}; the whole row's): {source}"


def serving_assumptions(s: Scenario) -> list[dict[str, Any]]:
    """What the sizing and the monthly figures rest on: the serving engine (/workload/serving_engine, given or
    defaulted) with its memory and batching settings (estimator/data/inference/serving_stacks.csv), and the 730-hour
    month."""
    engine = inf.serving_stack(s.workload.serving_engine)
    source = f"serving_stacks.csv {engine.name}: {engine.source}"
    max_batch, max_num_tokens = engine.batch_limits(inf.serving_gpu(s.gpu))  # the engine's defaults on this GPU
    kv_of = "of the GPU memory" if engine.kv_of_total else "of the memory left after weights, activations and runtime"

    def part(setting: str) -> str:
        return serving_source_part(engine.name, engine.source, setting)

    rows = [
        ("/serving/engine", engine.name, "serving engine", f"{_engine_choice(s)}; {source}"),
        ("/serving/kv_fraction", engine.kv_fraction, f"fraction {kv_of}", part("kv_fraction")),
        (
            "/serving/kv_output_reserved",
            engine.kv_output_reserved,
            "fraction of a request's output KV held",
            part("kv_output_reserved"),
        ),
        ("/serving/max_batch", max_batch, "requests per replica", part("max_batch")),
        (
            "/serving/max_num_tokens",
            max_num_tokens,
            "tokens per engine step (activation buffers)",
            part("max_num_tokens"),
        ),
        (
            "/serving/runtime_gb",
            engine.runtime_bytes(ranks=1, request_slots=max_batch, vocab=served_model(s).vocab) / 1e9,
            "GB per GPU"
            + (f" on one GPU, {engine.runtime_tp_gb:g} GB more on each GPU of a group" if engine.runtime_tp_gb else ""),
            part("runtime_gb")
            + (
                f"; sampler run of {max_batch:,} requests x the model's vocabulary"
                if engine.sampler_bytes_per_logit
                else ""
            ),
        ),
        (
            "/serving/arrivals",
            "poisson",
            "load model",
            "requests arrive at random (Poisson) at the traffic's rate, an open loop (estimator.inference.latency): "
            "ttft_s, tpot_s and batch are at that rate; estimate_inference's concurrency is a closed loop of clients "
            "that start together with identical requests, whose p95 TTFT at the same requests in flight is higher",
        ),
        ("/calendar/hours_per_month", HOURS_PER_MONTH, "hours", "8760 hours a year / 12 (advisor.economics)"),
    ]
    return [{"pointer": p, "value": v, "unit": u, "source": src} for p, v, u, src in rows]


def kv_share_warnings(
    deployments: Sequence[inf.Deployment], rec_j: int | None, cal: inf.InferenceCalibration
) -> list[str]:
    """The recommended deployment's warning where its weights leave it a KV-cache share of GPU memory at which the
    calibration's held-out rows (those as tight: inf.held_out_at_kv_share) were predicted worse than its rows overall
    (median absolute error): rows at a 10-20% share (70B fp8 at TP 1 on H100 among them) were over-predicted a median
    +17%, P90 94%, while rows at 40-100% erred 15%. Empty without a recommendation, or where the calibration keeps no
    shares."""
    if rec_j is None:
        return []
    d = deployments[rec_j]
    errors = inf.held_out_at_kv_share(cal, d.kv_share)
    if errors is None:
        return []
    ratio = np.expm1(errors)  # predicted / measured - 1
    overall = float(np.median(np.abs(np.expm1(cal.held_out_log_errors))))
    if float(np.median(np.abs(ratio))) <= overall:
        return []
    median = float(np.median(ratio))
    over = median > 0
    p90 = float(np.quantile(np.abs(ratio), 0.9))
    return [
        f"TP {d.tp} leaves {fmt.percent(d.kv_share)} of GPU memory for the KV cache; on the calibration's held-out "
        f"rows with as little (n {len(errors)}) throughput was {'over' if over else 'under'}-predicted by a median "
        f"{fmt.percent(abs(median))} (P90 {fmt.percent(p90)}): expect {'fewer' if over else 'more'} requests per GPU "
        "than stated."
    ]


def latency_accuracy_warning(check: Mapping[str, Any] | None) -> str:
    """What the p95 latencies rest on, and how close the serving model came to published latency it never saw
    (the calibration's latency_check, estimator.inference.checks)."""
    text = (
        "p95 TTFT and TPOT come from a queueing model of the serving engine (the calibration tables publish "
        "throughput only)"
    )
    if not check:
        return text + "; this calibration carries no check against measured latency."
    return (
        f"{text}; against {check['points']} published latency measurements it was never fitted on, mean TTFT was "
        f"within {fmt.percent(check['ttft_within'])} at {fmt.percent(check['ttft_share_within'])} of them (median "
        f"error {fmt.percent(check['ttft_median_ape'])}) and TPOT within {fmt.percent(check['tpot_within'])} at "
        f"{fmt.percent(check['tpot_share_within'])} (median {fmt.percent(check['tpot_median_ape'])}): leave margin "
        "below a TTFT target."
    )


def attention_dp_warning(*, spans_nodes: bool = False) -> str:
    """Why a multi-head-latent-attention model is sized with tensor-parallel attention, and what that leaves out;
    ``spans_nodes``: some replicas leave the scale-up domain, where the published table (single-node groups) says
    nothing and the tensor-parallel layout crosses the scale-out network."""
    across = (
        " Replicas spanning nodes are modelled as tensor parallel over the scale-out network (every all-reduce "
        "crosses it), which likely under-states what an expert-parallel deployment across those nodes achieves; the "
        "ranges above were measured on single-node groups (TP 4 and 8)."
    )
    return (
        "Multi-head latent attention (MLA) under tensor parallelism keeps every request's compressed KV on every GPU "
        "of the group, so these deployments hold up to tp times fewer requests than engines serving it with "
        "attention data parallelism and expert-parallel experts (TensorRT-LLM's DEP, SGLang --enable-dp-attention). "
        "The sizing keeps the tensor-parallel layout: on TensorRT-LLM's published DeepSeek-R1 DEP table it predicts "
        "0.4-0.9x the measured throughput (more GPUs than needed), where the DEP layout predicts 1.2-1.8x "
        "(fewer than needed); estimate_inference takes attention_dp to compare the two."
    ) + (across if spans_nodes else "")


def _alternative_row(
    gpu: str, size_docs: list[Mapping[str, Any]], recommendation: Mapping[str, Any] | None
) -> dict[str, Any]:
    """``{gpu, gpus, tp, rent_usd_per_month, buy_usd_per_month, usd_per_million_output_tokens, meets_latency,
    fits_memory}`` at the recommended deployment (nulls and meets_latency false when none meets the targets)."""
    advice = {"kind": "inference", "sizes": size_docs, "recommendation": recommendation}
    doc = recommended_size(advice) if recommendation else None
    row = {
        "gpu": gpu,
        "gpus": doc["gpus"] if doc else None,
        "tp": doc["tp"] if doc else None,
        "rent_usd_per_month": doc["rent"]["usd_per_month"] if doc else None,
        "buy_usd_per_month": doc["buy"]["usd_per_month"] if doc else None,
        "usd_per_million_output_tokens": doc["usd_per_million_output_tokens"] if doc else None,
        "meets_latency": doc is not None,
        "fits_memory": any(d["fits_memory"] for d in size_docs),
    }
    if doc is not None and (note := _rented_instances_note(doc)) is not None:
        row["pricing_note"] = note
    if doc is None and recommendation and recommendation.get("reasons"):
        # No deployment on this GPU: why, as for a GPU the scenario cannot run on (an outsider's probe: an L40S with
        # gpus null for a 70B RAG service carried no reason). The first reason says why; the rest what would help.
        row["not_compared"] = str(recommendation["reasons"][0])
    return row


def _alternatives(
    s: Scenario,
    size_docs: list[dict[str, Any]],
    recommendation: Mapping[str, Any],
    *,
    now: dt.datetime,
    calibration: Any,
) -> list[dict[str, Any]]:
    """With ``compare_gpus``: the plan's GPU, then each other GPU at its recommended deployment, from the same
    pipeline run on that GPU; a GPU the scenario cannot run on is listed with the reason."""
    if not s.compare_gpus:
        return []
    rows = [_alternative_row(s.gpu, list(size_docs), recommendation)]
    # The plan's manual quotes are for its own GPU: the others are priced at their catalog offers and quotes.
    catalog_priced, note = catalog_prices_for_other_gpus(s)
    for gpu in s.compare_gpus:
        if gpu == s.gpu:
            continue
        try:
            other = advise_inference(
                scenario_for_gpu(catalog_priced, gpu), now=now, calibration=calibration, explain_unmet=False
            )
        except ScenarioError as exc:
            rows.append({**_alternative_row(gpu, [], None), "not_compared": str(exc)})
            continue
        row = _alternative_row(gpu, other["sizes"], other["recommendation"])
        notes = [n for n in (note, row.get("pricing_note"), _engine_note(s, gpu)) if n]
        rows.append({**row, "pricing_note": "; ".join(notes) if notes else None})
    return rows


def _engine_note(s: Scenario, gpu: str) -> str | None:
    """Where another GPU is sized with another engine than the plan's (one it does not run on), which and why."""
    engine = s.workload.serving_engine
    other = serving_engine_on(engine, gpu)
    if engine is None or other == engine:
        return None
    return f"sized for {other}: {serving_engine_problem(engine, gpu)}"


@dataclass(frozen=True)
class InferenceAdvice:
    """The inference Advice document behind the same ``to_dict()`` the renderers call on training advice."""

    document: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return "inference"

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(dict(self.document))


__all__ = [
    "InferenceAdvice",
    "advise_inference",
    "elastic_monthly_replica_hours",
    "replicas_over_time",
    "traffic_profile",
]
