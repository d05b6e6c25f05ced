"""The advice pipeline: ``advise(scenario) -> Advice``, the one place that combines the estimator's
predictions, the price catalog (or the user's quotes), the hardware quote and the economics.

The web page, the API and the PDF render ``Advice.to_dict()`` (the Advice JSON of DESIGN.md,
shape of ``tests/fixtures/advice_training_example.json``, schema ``advisor/schemas/advice.schema.json``).

How each number is made (money USD, times hours unless named, fractions 0..1):

- Per candidate size: ``estimator.predict`` gives memory, step time, tokens/s, MFU, scaling
  efficiency and the chosen layout; ``run_hours = tokens / tokens_per_s / 3600``.
- Renting: every current offer of the GPU (``pricing.selectors.offers_frame``, filtered by the
  scenario's providers and markets) is priced per *used* GPU-hour for each size: a size rents
  ``ceil(gpus / gpu_count)`` instances; a job spanning nodes only uses instances that hold a whole
  node (``gpu_count >= gpus_per_node``), since single-GPU VMs do not make a training cluster. The
  cheapest offer per market is kept (``rent.by_market``). On-demand and spot prices are levelized
  over the horizon when ``rent.price_decline_per_year`` is set; reserved terms are paid whether
  used or not (price / utilization per busy GPU-hour); spot runs take longer by the Young/Daly
  loss (``economics.spot_lost_fraction``). ``rent.offer`` is the market with the lowest cost per
  run. A manual ``rent.usd_per_gpu_hour`` replaces the catalog (an on-demand style price).
- Owning: ``nodes`` servers at the hardware quote (``pricing.selectors.hardware_quote``, plus the
  quote's fabric cost per node when the cluster spans nodes) or the manual ``buy.capex_usd`` per
  node; power from the quote (load and idle kW); economics per ``advisor.economics``.
  ``buy.usd_per_year`` = A + v x busy GPU-hours a year at the utilization (``economics.owned_usd_per_year``, as
  inference's), ``buy.fixed_usd_per_year`` = A.
  Break-even is against the on-demand price (elastic, billed when used; cost-model.md 4.1), or
  the manual quote; without an on-demand offer, against the cheapest market.
- Recommendation: the size at the knee of the scaling curve: the largest size such that every
  step up from the previous fitting size keeps its scaling efficiency per doubling of GPUs
  (``recommendation.step_efficiency``: speed-up / 2 on a doubling) at or above
  ``KNEE_MARGINAL_EFFICIENCY``; rent or buy by the lower cost per run
  at the scenario's utilization.
- Uncertainty: ``MC_SAMPLES`` draws (fixed seed, so the same scenario gives the same advice) of
  the throughput error (the prediction's own P10-P90 band, estimator.calibrate.band_log_factors) -> P10/P50/P90 of run
  hours and cost per run (rented: at the quoted price, so the quoted cost lies inside its band);
  break-even also draws the rental price (uniform over the ``MC_PRICE_ALTERNATIVES`` cheapest
  eligible offers of the market break-even is measured against: the cheapest may have no capacity).
- Sensitivity: each input moved -20% and +20% (utilization capped at 1), the change of
  "owned minus rented cost per run" at the recommended size; the six largest swings.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

import numpy as np
from django.utils import timezone

from advisor import economics as ec
from advisor import formatting as fmt
from advisor.advice.costs import cumulative_document, tokens_per_step
from advisor.advice.documents import (
    ADVICE_VERSION,
    assumptions_used,
    calibration_document,
    fraction,
    gpu_document,
    iso,
    json_document,
    json_safe,
    model_document,
    n_gpus,
    num,
    pct,
)
from advisor.advice.offers import (
    RentPricing,
    break_even_by_market,
    capacity_warning,
    offer_document,
    price_dates,
    price_rent,
    price_warnings,
    quoted_offers,
)
from advisor.advice.ownership import Hardware, hardware, owned_nodes
from advisor.advice.recommendation import (
    KNEE_MARGINAL_EFFICIENCY,
    finishes_runs,
    mark_cheapest,
    recommend,
    scenario_runs_judged,
    step_efficiency,
)
from advisor.advice.uncertainty import monte_carlo_quantiles, sensitivity_rows, uncertainty_document
from advisor.advice.unmet import MAX_BIGGER_GPUS, gpus_above
from advisor.scenario import (
    Model,
    Scenario,
    ScenarioError,
    catalog_prices_for_other_gpus,
    ownership_defaults,
    parse_scenario,
    scenario_for_gpu,
)
from estimator import predict
from estimator.bounds import MAX_GPUS
from estimator.calibrate import (
    Calibration,
    ThroughputBand,
    coverage_warnings,
    fit_warnings,
    load_default,
    stale_calibration_warning,
)
from estimator.model import AC_FULL, CHECKPOINT_LABELS
from estimator.specs import get_gpu
from estimator.workload import Cluster, TrainingJob, WorkloadError
from pricing import selectors


@dataclass(frozen=True)
class Advice:
    """The answer to a Scenario; ``to_dict()`` is the Advice JSON (JSON-safe: no NaN or infinity)."""

    scenario: Scenario
    generated_at: dt.datetime
    gpu: Mapping[str, Any]
    sizes: tuple[Mapping[str, Any], ...]
    recommendation: Mapping[str, Any]
    prices_as_of: str | None
    price_freshness: Mapping[str, Any]
    hardware_quote: Mapping[str, Any] | None
    calibration: Mapping[str, Any]
    warnings: tuple[str, ...]
    cumulative_cost: Mapping[str, Any] | None
    npv: Mapping[str, Any] | None
    sensitivity: tuple[Mapping[str, Any], ...]
    uncertainty: Mapping[str, Any]
    assumptions: tuple[Mapping[str, Any], ...] = field(default=())
    alternatives: tuple[Mapping[str, Any], ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return json_document(
            {
                "advice_version": ADVICE_VERSION,
                "kind": self.scenario.workload.kind,
                "generated_at": iso(self.generated_at),
                "scenario": self.scenario.to_dict(),
                "gpu": self.gpu,
                "model": model_document(self.scenario),
                "sizes": list(self.sizes),
                "recommendation": self.recommendation,
                "prices_as_of": self.prices_as_of,
                "price_freshness": self.price_freshness,
                "hardware_quote": self.hardware_quote,
                "calibration": self.calibration,
                "warnings": list(self.warnings),
                "cumulative_cost": self.cumulative_cost,
                "npv": self.npv,
                "sensitivity": list(self.sensitivity),
                "uncertainty": self.uncertainty,
                "assumptions": list(self.assumptions),
                "alternatives": list(self.alternatives),
            }
        )


# --- JSON helpers ------------------------------------------------------------------------------


# --- inputs ------------------------------------------------------------------------------------


# --- the cost model shared by the base case, the Monte Carlo and the sensitivity ----------------


# --- the pipeline ------------------------------------------------------------------------------


_WORKLOAD_POINTERS: Final[Mapping[str, str]] = {
    **{
        k: f"/workload/model/{k}"
        for k in ("params_b", "seq_len", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab")
    },
    **{
        k: f"/workload/parallelism/{k}"
        for k in ("strategy", "tp", "pp", "cp", "micro_batch", "activation_checkpointing", "virtual_pipeline")
    },
    "global_batch": "/workload/global_batch",
    "precision": "/workload/precision",
    "gpus_per_node": "/network/gpus_per_node",
    "inter_node_gbps": "/network/inter_node_gbps",
}


def _training_job(s: Scenario) -> TrainingJob:
    """The estimator's job for a training scenario; open layout fields (strategy "auto", nulls) are searched."""
    w = s.workload
    par = w.parallelism
    assert par is not None and w.global_batch is not None
    return TrainingJob(
        # The geometry's own count when the user gave it (an outsider's probe: 13B on an 11.34B geometry ran 12% long).
        params_b=w.model.work_params_b or w.model.params_b,
        # The geometry's active count (router included) may sit a little above a given params_b (within the 15% the
        # Scenario allows): never more than all of them (a hostile probe got a 400 naming active_params_b).
        active_params_b=min(w.model.active_params_b, w.model.params_b) if w.model.experts else None,
        seq_len=w.model.seq_len,
        global_batch=w.global_batch,
        precision=w.precision,
        layers=w.model.layers,
        hidden=w.model.hidden,
        heads=w.model.heads,
        # Megatron-Core splits the key/value heads over the tensor-parallel ranks: tp must divide them (an outsider's
        # probe: tp 8 was recommended for 4 KV heads).
        kv_heads=w.model.kv_heads,
        # Activation memory is what the FFN width sizes here: a mixture of experts stores its active experts' (a
        # regression probe: Mixtral's activations were counted for one expert of the two a token uses).
        ffn_hidden=w.model.token_ffn_hidden if w.model.experts and w.model.token_ffn_hidden else w.model.ffn_hidden,
        vocab=w.model.vocab,
        # Latent attention is wider than hidden (DeepSeek-V3: 20,480 beside 7168): its FLOPs, time and Q/K/V memory (an
        # outsider's probe back-solved 232.7 GFLOP/token where the hand count is 252.7). 0: hidden.
        attention_width=w.model.attention_width or None,
        strategy=None if par.strategy == "auto" else par.strategy,
        tp=par.tp,
        pp=par.pp,
        cp=par.cp,
        micro_batch=par.micro_batch,
        activation_checkpointing=par.activation_checkpointing,
        virtual_pipeline=par.virtual_pipeline,
        stack=w.stack,
    )


@dataclass(frozen=True)
class SizePredictions:
    """The estimator at the candidate sizes, and its 1-GPU check (a prediction of its own unless 1 is listed)."""

    prediction: Any  # estimator.Prediction over the listed sizes only: its notes speak of sizes the user sees
    keep: slice
    gpus: np.ndarray
    nodes: np.ndarray
    tokens_per_s: np.ndarray
    feasible: np.ndarray
    fits_one: bool
    gpus_used: np.ndarray  # the GPUs each size's job runs on (fewer where it runs a smaller size's job)
    one_gpu_gb: float = float("nan")  # GB per GPU of the 1-GPU layout the check found (NaN where none)
    one_gpu_recomputes: bool = False  # whether that layout takes full activation recomputation

    def at(self, column: str) -> np.ndarray:
        """A prediction column at the candidate sizes."""
        return np.asarray(getattr(self.prediction, column))[self.keep]


def predict_sizes(s: Scenario, calibration: Calibration) -> SizePredictions:
    spec = get_gpu(s.gpu)
    try:
        job = _training_job(s)
        cluster = Cluster(gpu=spec, gpus_per_node=s.network.gpus_per_node, inter_node_gbps=s.network.inter_node_gbps)
    except WorkloadError as exc:  # the parser checks these rules too; this keeps any estimator rule a 4xx
        raise ScenarioError([{"pointer": _WORKLOAD_POINTERS.get(exc.field, "/workload"), "message": str(exc)}]) from exc
    sizes = np.array(s.cluster_sizes, dtype=np.int64)
    p = predict(job, cluster, sizes, calibration)
    # The "fits on one GPU" check is its own prediction: run beside the listed sizes, its notes ("full activation
    # recomputation taken ... at 1 GPUs") spoke of a size nobody listed (a new user's probe, F5). A size's answer does
    # not depend on the other sizes asked (estimator.prediction.reference_sizes), so the listed ones are unchanged.
    one = p if 1 in s.cluster_sizes else predict(job, cluster, np.array([1]), calibration)
    at = int(np.flatnonzero(one.gpus == 1)[0])
    keep = slice(0, None)
    tps = p.tokens_per_s
    feasible = p.fits_memory & np.isfinite(tps) & (tps > 0)
    used = p.gpus if p.gpus_used is None else p.gpus_used
    return SizePredictions(
        p,
        keep,
        p.gpus,
        p.nodes,
        tps,
        feasible,
        bool(one.fits_memory[at]),
        np.asarray(used),
        one_gpu_gb=float(one.memory_per_gpu_gb[at]),
        one_gpu_recomputes=str(one.activation_checkpointing[at]) == CHECKPOINT_LABELS[AC_FULL],
    )


_LAYOUT_COLUMNS: Final[tuple[str, ...]] = (
    "strategy",
    "tp",
    "pp",
    "cp",
    "micro_batch",
    "activation_checkpointing",
    "virtual_pipeline",
)


def _layout(sizes: SizePredictions, i: int) -> dict[str, Any]:
    """The layout chosen at size ``i``; the estimator's "not set" markers (-1, "") become null."""
    layout = {}
    for k in _LAYOUT_COLUMNS:
        v = sizes.at(k)[i]
        v = v.item() if hasattr(v, "item") else v
        layout[k] = None if (isinstance(v, int) and v < 0) or v == "" else v
    # The estimator labels checkpointing "true"/"false"/"selective"; the Scenario takes true/false/"selective",
    # so a size's layout can be fed back as workload.parallelism.
    checkpointing = layout["activation_checkpointing"]
    layout["activation_checkpointing"] = _CHECKPOINTING.get(checkpointing, checkpointing)
    return layout


_CHECKPOINTING: Final[Mapping[Any, bool]] = {"true": True, "false": False}


def _rent_document(
    i: int,
    ok: bool,
    rent: RentPricing,
    base: Mapping[str, np.ndarray],
    rent_q: np.ndarray,
    columns: Mapping[str, np.ndarray],
) -> dict[str, Any]:
    by_market: dict[str, Any] = {}
    for m in rent.markets:
        row = int(rent.market.rows[m][i])
        cost = rent.by_market_costs[m]
        if row < 0 or not ok:
            by_market[m] = None
            continue
        by_market[m] = {
            "offer": offer_document({c: v[row] for c, v in columns.items()}, float(rent.used_price[m][i])),
            "usd_per_busy_gpu_hour": num(cost["rent_rate"][i]),
            "wall_hours": num(cost["rent_hours"][i]),
            "usd_per_run": num(cost["rent_usd_per_run"][i]),
        }
        if m == "spot":
            by_market[m]["lost_fraction"] = float(rent.spot_lost[i])
    head = rent.markets[rent.headline[i]] if rent.markets and rent.has_rent[i] and ok else None
    return {
        "market": head,
        "offer": by_market[head]["offer"] if head else None,
        "usd_per_run": num(base["rent_usd_per_run"][i]) if head else None,
        "usd_per_run_p10": num(rent_q[0][i]) if head else None,
        "usd_per_run_p50": num(rent_q[1][i]) if head else None,
        "usd_per_run_p90": num(rent_q[2][i]) if head else None,
        "by_market": by_market,
    }


_UNPRICED_BUY: Final[Mapping[str, Any]] = {
    "capex_usd": None,
    "usd_per_year": None,
    "fixed_usd_per_year": None,
    "usd_per_gpu_hour_at_utilization": None,
    "usd_per_run": None,
    "break_even_utilization": None,
    "break_even_hours_per_year": None,
    "breaks_even": False,
    "utilization": None,
    "break_even_by_market": {},
}


def _buy_document(
    i: int,
    ok: bool,
    rent: RentPricing,
    base: Mapping[str, np.ndarray],
    quantiles: Mapping[str, np.ndarray],
    by_market: Mapping[str, np.ndarray],
    *,
    gpus: int,
) -> dict[str, Any]:
    own_q, be_q = quantiles.get("own_usd_per_run"), quantiles.get("break_even")
    be = float(base["break_even"][i])
    be_ok = ok and math.isfinite(be) and be <= 1.0
    u = float(base["utilization"][i])
    return {
        "capex_usd": float(base["capex"][i]),
        # The whole owned cost a year at the planned utilization, as inference's field of the same name (a finance
        # probe: it was A alone, $2,381,488 against $2,515,302 with the busy hours' energy, 7B example at 128 GPUs).
        "usd_per_year": num(
            ec.owned_usd_per_year(
                yearly_fixed_usd=base["yearly_fixed"][i],
                variable_usd_per_gpu_hour=base["variable"],
                busy_gpu_hours_per_year=gpus * ec.HOURS_PER_YEAR * u,
            )
        ),
        "fixed_usd_per_year": float(base["yearly_fixed"][i]),
        "fixed_usd_per_gpu_year": num(base["yearly_fixed_per_gpu"][i]),
        "variable_usd_per_busy_gpu_hour": float(base["variable"]),
        "usd_per_gpu_hour_at_utilization": num(base["owned_rate"][i]),
        "usd_per_run": num(base["own_usd_per_run"][i]) if ok else None,
        "usd_per_run_p10": num(own_q[0][i]) if ok and own_q is not None else None,
        "usd_per_run_p50": num(own_q[1][i]) if ok and own_q is not None else None,
        "usd_per_run_p90": num(own_q[2][i]) if ok and own_q is not None else None,
        "utilization": fraction(base["utilization"][i]),
        # The price break-even was computed against: levelized like the headline when the price declines.
        "break_even_against": {
            "market": rent.be_market[i] or None,
            "usd_per_gpu_hour": num(base["break_even_price"][i]),
        },
        "break_even_by_market": {m: fraction(u[i]) if ok and u[i] <= 1.0 else None for m, u in by_market.items()},
        "break_even_utilization": be if be_ok else None,
        "break_even_hours_per_year": be * ec.HOURS_PER_YEAR if be_ok else None,
        "break_even_utilization_p10": fraction(be_q[0][i]) if be_q is not None and ok else None,
        "break_even_utilization_p50": fraction(be_q[1][i]) if be_q is not None and ok else None,
        "break_even_utilization_p90": fraction(be_q[2][i]) if be_q is not None and ok else None,
        # As inference's: owning at the planned utilization costs no more than renting (not merely "u* exists").
        "breaks_even": bool(be_ok and math.isfinite(u) and u >= be),
    }


def _fit_document(run_hours: float | None, *, s: Scenario) -> dict[str, Any]:
    """Whether one owned cluster finishes the year's runs (recommendation.finishes_runs, the rule the reasons skip
    sizes by) and the runs a year it can do, so that every rendering marks an owned cost per run that assumes more
    than a year of the cluster (an outsider's probe: 64 GPUs at $1.21M a run for 4 runs of 340 days, unmarked)."""
    if run_hours is None or not run_hours > 0:
        return {"finishes_runs": None, "runs_per_year_fit": None}
    runs = scenario_runs_judged(s)
    return {
        # Null where runs_per_year was left out: no cost uses it (recommendation.judged_runs_per_year).
        "finishes_runs": None if runs is None else finishes_runs(run_hours=run_hours, runs_per_year=runs, owned=True),
        "runs_per_year_fit": ec.HOURS_PER_YEAR / run_hours,
    }


def _band(band: Sequence[float] | None) -> list[float | None]:
    """P10/P50/P90 as document numbers; three nulls where there is no band."""
    return [None, None, None] if band is None else [num(v) for v in band]


def _overflow_document(
    buy: Mapping[str, Any],
    *,
    rent_usd_per_run: float | None,
    run_hours: float | None,
    s: Scenario,
    gpus: int,
    band: Sequence[float] | None,
) -> dict[str, Any] | None:
    """Owning a size that cannot finish the year's runs and renting the runs it cannot do (economics.own_with_overflow:
    the own option there, finance probe F2); None where it finishes them, or renting or owning is not priced."""
    runs = scenario_runs_judged(s)
    figures = (
        rent_usd_per_run,
        run_hours,
        runs,
        buy.get("fixed_usd_per_year"),
        buy.get("variable_usd_per_busy_gpu_hour"),
    )
    if buy.get("finishes_runs") is not False or rent_usd_per_run is None or run_hours is None or runs is None:
        return None
    # The rented runs must each finish within the year, as renting's own (a run longer than a year has no overflow).
    if any(f is None for f in figures) or not finishes_runs(run_hours=run_hours, runs_per_year=runs, owned=False):
        return None
    owned, rented, usd_per_year, usd_per_run = ec.own_with_overflow(
        runs_per_year=runs,
        run_hours=run_hours,
        gpus=gpus,
        yearly_fixed_usd=buy["fixed_usd_per_year"],
        variable_usd_per_gpu_hour=buy["variable_usd_per_busy_gpu_hour"],
        rent_usd_per_run=rent_usd_per_run,
    )
    return {
        "owned_runs": float(owned),
        "rented_runs": float(rented),
        "rented_usd_per_run": rent_usd_per_run,
        "usd_per_year": float(usd_per_year),
        "usd_per_run": float(usd_per_run),
        # P10/P50/P90 of the mix over the run time's draws (owned and rented runs move together), as buy's band.
        **dict(zip(("usd_per_run_p10", "usd_per_run_p50", "usd_per_run_p90"), _band(band), strict=True)),
    }


def _size_documents(
    *,
    s: Scenario,
    sizes: SizePredictions,
    rent: RentPricing,
    base: Mapping[str, np.ndarray],
    quantiles: Mapping[str, np.ndarray],
    hw: Hardware | None,
) -> list[dict[str, Any]]:
    frame = rent.market.offers
    columns = {c: frame[c].to_numpy() for c in frame.columns}
    run_q = quantiles["run_hours"]
    by_market = break_even_by_market(s=s, rent=rent, base=base, gpus=sizes.gpus) if hw is not None else {}
    size_docs: list[dict[str, Any]] = []
    for i, n in enumerate(sizes.gpus):
        ok = bool(sizes.feasible[i])
        rent_doc = _rent_document(i, ok, rent, base, quantiles["rent_usd_per_run"], columns)
        buy_doc = (
            _buy_document(i, ok, rent, base, quantiles, by_market, gpus=int(n))
            if hw is not None
            else dict(_UNPRICED_BUY)
        )
        buy_doc.update(_fit_document(num(base["run_hours"][i]) if ok else None, s=s))
        mix_q = quantiles.get("own_with_overflow_usd_per_run")
        buy_doc["overflow"] = _overflow_document(
            buy_doc,
            rent_usd_per_run=rent_doc["usd_per_run"],
            run_hours=num(base["run_hours"][i]),
            s=s,
            gpus=int(n),
            band=[float(q[i]) for q in mix_q] if mix_q is not None else None,
        )
        size_docs.append(
            {
                "gpus": int(n),
                "gpus_used": int(sizes.gpus_used[i]),
                "nodes": int(sizes.nodes[i]),
                "layout": _layout(sizes, i),
                "fits_memory": bool(sizes.at("fits_memory")[i]),
                "memory_per_gpu_gb": num(sizes.at("memory_per_gpu_gb")[i]),
                "step_time_s": num(sizes.at("step_time_s")[i]) if ok else None,
                "tokens_per_s": num(sizes.tokens_per_s[i]) if ok else None,
                "mfu": num(sizes.at("mfu")[i]) if ok else None,
                "scaling_efficiency": num(sizes.at("scaling_efficiency")[i]) if ok else None,
                "run_hours": num(base["run_hours"][i]) if ok else None,
                "run_hours_p10": num(run_q[0][i]) if ok else None,
                "run_hours_p50": num(run_q[1][i]) if ok else None,
                "run_hours_p90": num(run_q[2][i]) if ok else None,
                "rent": rent_doc,
                "buy": buy_doc,
            }
        )
    return size_docs


MORE_GPUS_DOUBLINGS: Final[int] = 12  # no fit: sizes tried beyond the largest candidate (x2 each, up to x4096)


def _sizes_to_try(s: Scenario) -> list[int]:
    """The scenario's sizes, doublings of its largest and whole nodes doubling, as the Scenario accepts them (at most
    one node, or whole nodes: a regression probe got '12 GPUs hold it' for 8-GPU nodes, a size it then refused)."""
    gpn, top = s.network.gpus_per_node, max(s.cluster_sizes)
    doublings = [top * 2**k for k in range(1, MORE_GPUS_DOUBLINGS + 1)] + [
        gpn * 2**k for k in range(MORE_GPUS_DOUBLINGS)
    ]
    allowed = (n for n in {*s.cluster_sizes, *doublings} if n <= MAX_GPUS and (n <= gpn or n % gpn == 0))
    return sorted(allowed)


def _smallest_fit(s: Scenario, calibration: Calibration, sizes: Sequence[int]) -> tuple[int, float] | None:
    """The fewest of ``sizes`` GPUs that hold the job, with its memory per GPU [GB], or None."""
    spec = get_gpu(s.gpu)
    cluster = Cluster(gpu=spec, gpus_per_node=s.network.gpus_per_node, inter_node_gbps=s.network.inter_node_gbps)
    p = predict(_training_job(s), cluster, np.asarray(sizes, dtype=np.int64), calibration)
    fits = np.flatnonzero(p.fits_memory & np.isfinite(p.tokens_per_s))
    return (int(p.gpus[fits[0]]), float(p.memory_per_gpu_gb[fits[0]])) if fits.size else None


def no_fit_options(s: Scenario, sizes: SizePredictions, calibration: Calibration) -> dict[str, Any]:
    """No candidate size holds the model: the size that comes nearest (``closest``) and what would hold it
    (``relax``: more GPUs of this type, or a GPU with more memory), each checked by predicting again."""
    memory = np.asarray(sizes.at("memory_per_gpu_gb"), dtype=np.float64)
    nearest = int(np.nanargmin(np.where(np.isfinite(memory), memory, np.inf))) if np.isfinite(memory).any() else -1
    spec = get_gpu(s.gpu)
    closest = {
        "gpus": int(sizes.gpus[nearest]),
        "gpu": s.gpu,
        "memory_per_gpu_gb": num(memory[nearest]),
        "memory_gb": spec.memory_gb,
        "fits_memory": False,
    }
    top = max(s.cluster_sizes)
    tried = _sizes_to_try(s)
    relax: list[dict[str, Any]] = []
    larger = [n for n in tried if n > top]
    more = _smallest_fit(s, calibration, larger) if larger else None
    relax.append(
        {
            "change": "cluster_sizes",
            "text": f"{n_gpus(more[0])} of {spec.id} hold it ({more[1]:.0f} GB of {spec.capacity_text()})"
            if more
            else f"no size up to {n_gpus(tried[-1])} of {spec.id} holds it",
            "fits_memory": more is not None,
            "gpu": s.gpu,
            "gpus": more[0] if more else None,
            "memory_per_gpu_gb": more[1] if more else None,
        }
    )
    for gpu in (g.id for g in gpus_above(spec.id, word="bigger")):
        if sum(r["change"] == "gpu" for r in relax) >= MAX_BIGGER_GPUS:
            break
        try:
            # That GPU's own server and sizes: the scenario's may not suit its nodes (a hostile probe: sizes [12] on
            # 8-GPU servers were refused, and the bigger GPUs silently skipped).
            defaulted = replace(s, defaults_used=(*s.defaults_used, "/cluster_sizes", "/network/gpus_per_node"))
            other = scenario_for_gpu(defaulted, gpu)
            found = _smallest_fit(other, calibration, _sizes_to_try(other))
        except ScenarioError:  # a precision that GPU lacks
            continue
        if found:
            relax.append(
                {
                    "change": "gpu",
                    "text": f"{n_gpus(found[0])} of {gpu} ({get_gpu(gpu).memory_gb:g} GB) hold it "
                    f"({found[1]:.0f} GB per GPU)",
                    "fits_memory": True,
                    "gpu": gpu,
                    "gpus": found[0],
                    "memory_per_gpu_gb": found[1],
                }
            )
    return {"closest": closest, "relax": relax}


def _largest_whole_size(s: Scenario, calibration: Calibration) -> tuple[int, float, float] | None:
    """(GPUs, memory per GPU [GB], run hours) of the largest of the scenario's sizes whose job runs on all its GPUs."""
    spec = get_gpu(s.gpu)
    cluster = Cluster(gpu=spec, gpus_per_node=s.network.gpus_per_node, inter_node_gbps=s.network.inter_node_gbps)
    p = predict(_training_job(s), cluster, np.asarray(s.cluster_sizes, dtype=np.int64), calibration)
    used = p.gpus if p.gpus_used is None else p.gpus_used
    whole = np.flatnonzero(p.fits_memory & np.isfinite(p.tokens_per_s) & (used >= p.gpus))
    if not whole.size:
        return None
    i = int(whole[np.argmax(p.gpus[whole])])
    tokens = s.workload.tokens or 0.0
    return (
        int(p.gpus[i]),
        float(p.memory_per_gpu_gb[i]),
        float(ec.run_hours(tokens=tokens, tokens_per_s=p.tokens_per_s[i], tokens_per_step=tokens_per_step(s))),
    )


def unpriced_options(s: Scenario, sizes: SizePredictions, knee: int) -> dict[str, Any]:
    """The chosen size runs but neither renting nor owning is priced: that size (``closest``) and the two inputs that
    would price it (``relax``), as DESIGN.md's none carries (an integrator's probe: none with closest and relax
    absent)."""
    spec = get_gpu(s.gpu)
    memory = num(sizes.at("memory_per_gpu_gb")[knee])
    gpus = int(sizes.gpus[knee])
    closest = {"gpus": gpus, "gpu": s.gpu, "memory_per_gpu_gb": memory, "memory_gb": spec.memory_gb}
    same = {"fits_memory": True, "gpu": s.gpu, "gpus": gpus, "memory_per_gpu_gb": memory}
    relax = [
        {
            **same,
            "change": "rent_price",
            "text": f"with /rent/usd_per_gpu_hour given (no {s.gpu} offer in "
            f"{', '.join(s.rent.priced_markets)}), renting {n_gpus(gpus)} is priced",
        },
        {
            **same,
            "change": "buy_price",
            "text": f"with /buy/capex_usd given (no hardware quote for {s.gpu}), owning {n_gpus(gpus)} is priced",
        },
    ]
    return {"closest": {**closest, "fits_memory": True}, "relax": relax}


def idle_options(s: Scenario, sizes: SizePredictions, calibration: Calibration) -> dict[str, Any]:
    """Every fitting size leaves GPUs idle (it runs a smaller size's job): the size that uses the most (``closest``) and
    what would run the sizes on all their GPUs (``relax``: an open layout, a global batch of a power of two), each
    checked by predicting again, beside the size the job runs on."""
    w = s.workload
    assert w.parallelism is not None and w.global_batch is not None
    fitting = np.flatnonzero(sizes.feasible)
    best = int(fitting[np.argmax(sizes.gpus_used[fitting])])
    spec = get_gpu(s.gpu)
    memory = num(sizes.at("memory_per_gpu_gb")[best])
    closest = {"gpus": int(sizes.gpus[best]), "gpu": s.gpu, "memory_per_gpu_gb": memory, "memory_gb": spec.memory_gb}
    used = int(sizes.gpus_used[best])
    relax: list[dict[str, Any]] = [
        {
            "change": "cluster_sizes",
            "text": f"{n_gpus(used)} run the same job as {n_gpus(int(sizes.gpus[best]))} at the same speed",
            "fits_memory": True,
            "gpu": s.gpu,
            "gpus": used,
            "memory_per_gpu_gb": memory,
        }
    ]
    tries: list[tuple[str, str, Scenario]] = []
    par = w.parallelism
    if par.micro_batch is not None:
        tries.append(
            (
                "parallelism",
                "/workload/parallelism/micro_batch left open",
                _with(s, parallelism=replace(par, micro_batch=None)),
            )
        )
    if par.strategy != "auto" or any(v is not None for v in (par.tp, par.pp, par.cp, par.micro_batch)):
        open_layout = replace(par, strategy="auto", tp=None, pp=None, cp=None, micro_batch=None, virtual_pipeline=None)
        tries.append(("parallelism", "/workload/parallelism left to auto", _with(s, parallelism=open_layout)))
    power = 1 << max(0, int(w.global_batch - 1).bit_length())
    if power != w.global_batch:
        tries.append(("global_batch", f"/workload/global_batch {power}", _with(s, global_batch=power)))
    for change, words, changed in tries:
        found = _largest_whole_size(changed, calibration)
        if found:
            n, gb, hours = found
            relax.append(
                {
                    "change": change,
                    "text": f"with {words}, {n_gpus(n)} run on all of them ({fmt.hours(hours)} a run)",
                    "fits_memory": True,
                    "gpu": s.gpu,
                    "gpus": n,
                    "memory_per_gpu_gb": gb,
                }
            )
    return {"closest": {**closest, "fits_memory": True}, "relax": relax}


def _with(s: Scenario, **workload: Any) -> Scenario:
    """The scenario with some workload fields replaced."""
    return replace(s, workload=replace(s.workload, **workload))


def moe_training_warning(model: Model) -> str:
    """What a mixture-of-experts training prediction counts and what it leaves out."""
    return (
        f"Mixture of experts ({model.active_experts} of {model.experts} experts per token): FLOPs per token and MFU "
        f"count the {model.active_params_b:g}B active parameters, memory, gradients and optimizer states all "
        f"{model.params_b:g}B. Expert parallelism's all-to-all is not modelled and the calibration holds no "
        "mixture-of-experts run, so its held-out accuracy does not cover this model: expect the throughput to be "
        "optimistic."
    )


def calibration_coverage(*, calibration: Calibration, scenario: Scenario, gpus: Sequence[int]) -> list[str]:
    """Where a training ``scenario`` at ``gpus`` leaves the runs ``calibration`` (the one that predicts it) was fitted
    on: model size, sequence, GPU count, GPU type (``estimator.calibrate.coverage_warnings``). One rule for the
    advice and the fleet plan's jobs."""
    model = scenario.workload.model
    return coverage_warnings(
        calibration, params_b=model.params_b, num_gpus=list(gpus), seq_len=model.seq_len, gpu=scenario.gpu
    )


def _prediction_warnings(s: Scenario, sizes: SizePredictions, calibration: Calibration, warnings: list[str]) -> None:
    """What the estimator says of its own prediction (borrowed GPU family, unknown stack, MFU cap, idle GPUs, a
    user's calibration that left it to its base), where the scenario leaves the range the runs of ``calibration``
    (the one that predicted it, ``Calibration.scoped``) cover, a model that fits on one GPU, and a fabric that makes
    leaving the node scale badly."""
    warnings.extend(note[0].upper() + note[1:] + "." for note in sizes.prediction.warnings)
    stale = stale_calibration_warning(calibration)
    if stale:
        warnings.append(stale)
    warnings.extend(fit_warnings(name=calibration.name, report=calibration.report))
    w = s.workload
    warnings.extend(calibration_coverage(calibration=calibration, scenario=s, gpus=[int(n) for n in sizes.gpus]))
    if w.model.experts:
        warnings.append(moe_training_warning(w.model))
    spec = get_gpu(s.gpu)
    gpus, tps, feasible = sizes.gpus, sizes.tokens_per_s, sizes.feasible
    if sizes.fits_one:
        warnings.append(
            f"The model fits on one {spec.id} ({sizes.one_gpu_gb:.0f} GB of {spec.capacity_text()}"
            f"{', with full activation recomputation' if sizes.one_gpu_recomputes else ''}): "
            "you may not need a cluster at all."
        )
    gpn = s.network.gpus_per_node
    single = np.flatnonzero(feasible & (gpus <= gpn))
    multi = np.flatnonzero(feasible & (gpus > gpn))
    if single.size and multi.size:
        a, b = int(single[-1]), int(multi[0])
        step = step_efficiency(
            gpus_from=float(gpus[a]), tps_from=float(tps[a]), gpus_to=float(gpus[b]), tps_to=float(tps[b])
        )
        if step < KNEE_MARGINAL_EFFICIENCY:
            warnings.append(
                f"The fabric between nodes ({s.network.inter_node_gbps:g} Gb/s per node) is the bottleneck: going "
                f"from {n_gpus(gpus[a])} in one node to {int(gpus[b])} across nodes runs {tps[b] / tps[a]:.2f}x as "
                f"fast: {pct(step)} scaling efficiency per doubling of GPUs."
            )


def _price_warnings(
    s: Scenario,
    rent: RentPricing,
    gpus: np.ndarray,
    size_docs: list[dict[str, Any]],
    freshness: Mapping[str, Any],
    warnings: list[str],
    quotes_for: str | None = None,
) -> None:
    """Offers missing, from the snapshot or stale; spot unusable at some size."""
    # Every offer quoted (each size's other markets too), as prices_as_of and price_freshness.kind count them.
    used = quoted_offers(size_docs)
    any_offers = not rent.market.offers.empty
    warnings.extend(price_warnings(s, any_offers=any_offers, used=used, freshness=freshness, quotes_for=quotes_for))
    if (capacity := capacity_warning(size_docs)) is not None:
        warnings.append(capacity)
    spot_lost = rent.spot_lost
    if "spot" in rent.markets and (spot_lost >= 1).any():
        too_big = int(gpus[np.flatnonzero(spot_lost >= 1)[0]])
        warnings.append(f"Spot is not usable from {n_gpus(too_big)}: interruptions come faster than restarts.")


def _ownership_outlook(
    *,
    s: Scenario,
    i: int,
    sizes: SizePredictions,
    owned: np.ndarray,
    rent: RentPricing,
    base: Mapping[str, np.ndarray],
    hw: Hardware,
    overflow: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Cumulative cost by month and the present cost of renting and of owning the size at index ``i`` (``owned``: the
    nodes bought, ownership.owned_nodes; ``overflow``: its buy.overflow)."""
    gpus, nodes = sizes.gpus, owned
    rec_gpus = int(gpus[i])
    u = float(base["utilization"][i])
    busy_per_year = gpus[i] * ec.HOURS_PER_YEAR * u
    # Where one owned cluster cannot finish the year's runs, owning rents the rest beside it (buy.overflow) and renting
    # rents them all, so both present costs are of the stated runs (finance probe F2).
    rented_beside = 0.0
    rent_busy_per_year = busy_per_year
    if overflow is not None:
        rented_beside = overflow["rented_runs"] * overflow["rented_usd_per_run"]
        rent_busy_per_year = gpus[i] * float(base["run_hours"][i]) * float(scenario_runs_judged(s) or 0.0)
    running = (
        ec.yearly_running_cost_usd(
            capex_usd=base["capex"][i],
            contracted_kw=nodes[i] * hw.load_kw_per_node,
            colo_usd_per_kw_month=s.buy.colo_usd_per_kw_month,
            support_fraction_per_year=s.buy.support_fraction_per_year,
            staff_usd_per_year=s.buy.staff_usd_per_year,
            software_usd_per_year=s.buy.software_usd_per_gpu_year * nodes[i] * s.network.gpus_per_node,
            idle_kw=nodes[i] * hw.idle_kw_per_node,
            pue=s.buy.pue,
            power_usd_per_kwh=s.buy.power_usd_per_kwh,
        )
        + float(base["variable"]) * busy_per_year
        + rented_beside
    )
    # Before levelizing: the chart applies the yearly decline month by month. A term's price per busy hour is the
    # cost model's (the terms the runs are billed, economics.term_utilization; a term does not decline).
    rent_rate_now = float(base["rent_rate"][i]) if rent.head_term_years[i] > 0 else float(rent.head_price[i])
    if rent.head_spot[i]:
        rent_rate_now /= max(1e-12, 1.0 - float(rent.spot_lost[i]))
    rent_per_year = rent_rate_now * rent_busy_per_year
    months = max(1, round(s.buy.years * ec.MONTHS_PER_YEAR))
    residual = float(base["capex"][i]) * s.buy.residual_fraction
    decline = s.rent.price_decline_per_year if rent.head_floating[i] else 0.0
    cumulative = {
        **cumulative_document(
            gpus=rec_gpus,
            months=months,
            rent_usd_per_month=rent_per_year / ec.MONTHS_PER_YEAR,
            rent_decline_per_year=decline,
            capex_usd=float(base["capex"][i]),
            own_usd_per_month=float(running) / ec.MONTHS_PER_YEAR,
            residual_usd=residual,
        ),
        "utilization": u,
        "rent_market": rent.markets[rent.headline[i]],
    }
    rent_pv, own_pv = ec.npv_rent_and_own_usd(
        rent_usd_per_year=rent_per_year,
        rent_decline_per_year=decline,
        capex_usd=float(base["capex"][i]),
        own_running_usd_per_year=float(running),
        residual_usd=residual,
        discount_rate=s.buy.discount_rate,
        years=s.buy.years,
    )
    npv = {
        "gpus": rec_gpus,
        "discount_rate": s.buy.discount_rate,
        "years": s.buy.years,
        "rent_present_cost_usd": float(rent_pv),
        "buy_present_cost_usd": float(own_pv),
    }
    return cumulative, npv


def advise_training(
    scenario: Scenario | Mapping[str, Any],
    *,
    calibration: Calibration | None = None,
    now: dt.datetime | None = None,
    explain_no_fit: bool = True,
    quotes_for: str | None = None,
) -> Advice:
    """Turn a training Scenario (object or JSON document) into an Advice. Raises ScenarioError for bad input.
    ``explain_no_fit``: where no size fits, search what would (closest/relax); the compare_gpus rows do not need it.
    ``quotes_for``: a compare_gpus row's plan GPU, the one the scenario's manual quotes price (its warnings say so
    instead of asking for them)."""
    s = scenario if isinstance(scenario, Scenario) else parse_scenario(scenario)
    calibration = calibration or load_default()
    now = now or timezone.now()
    warnings: list[str] = []
    w = s.workload
    assert w.parallelism is not None and w.tokens is not None and w.global_batch is not None
    spec = get_gpu(s.gpu)
    sizes = predict_sizes(s, calibration)
    gpus, nodes, tps = sizes.gpus, sizes.nodes, sizes.tokens_per_s

    rent = price_rent(s=s, gpus=gpus, nodes=nodes, tokens_per_s=tps)
    # Owning buys whole purchase units (NVL72 racks), which may be more nodes than the cluster runs on.
    owned = owned_nodes(gpus, gpu=s.gpu, gpus_per_node=s.network.gpus_per_node)
    rounded = gpus[owned * s.network.gpus_per_node > gpus]
    example = int(rounded[0]) if rounded.size else None
    hw = hardware(s, warnings, today=now.date(), quotes_for=quotes_for, example_gpus=example)
    base = rent.headline_costs(s=s, gpus=gpus, nodes=owned, tokens_per_s=tps, hw=hw)
    band = ThroughputBand(
        log_sigma=sizes.prediction.interval_log_sigma,
        p10_multiplier=sizes.prediction.p10_multiplier,
        p90_multiplier=sizes.prediction.p90_multiplier,
    )
    quantiles = monte_carlo_quantiles(s=s, gpus=gpus, nodes=owned, tokens_per_s=tps, band=band, rent=rent, hw=hw)
    size_docs = _size_documents(s=s, sizes=sizes, rent=rent, base=base, quantiles=quantiles, hw=hw)
    recommendation, knee = recommend(
        s=s,
        memory_gb=spec.memory_gb,
        gpus=gpus,
        gpus_used=sizes.gpus_used,
        tokens_per_s=tps,
        feasible=sizes.feasible,
        size_docs=size_docs,
        raw_break_even=base.get("break_even"),
        warnings=warnings,
    )
    idle_everywhere = sizes.feasible.any() and not (sizes.feasible & (sizes.gpus_used >= gpus)).any()
    if explain_no_fit and idle_everywhere:
        recommendation["reasons"] += [f"Checked: {r['text']}." for r in idle_options(s, sizes, calibration)["relax"]]
    if (
        recommendation["action"] == "none"
        and knee is not None
        and size_docs[knee]["rent"]["usd_per_run"] is None
        and size_docs[knee]["buy"]["usd_per_run"] is None
    ):
        recommendation.update(unpriced_options(s, sizes, knee))
    elif explain_no_fit and recommendation["action"] == "none" and recommendation["gpus"] is None:
        recommendation.update(no_fit_options(s, sizes, calibration))
        holds = [r["text"] for r in recommendation["relax"] if r["fits_memory"]]
        recommendation["reasons"] += [f"Checked: {text}." for text in holds]
    # Outside a user's calibration's GPU families and stacks its base predicted every size (the estimator's own
    # warning says so): its runs, held-out error and coverage are the ones that apply, not the user's (a review
    # found the team's 4.0% held-out error shown for an H100 prediction whose figure is 14.6%).
    predicted_by, _ = calibration.scoped(family=spec.family, stack=w.stack)
    _prediction_warnings(s, sizes, predicted_by, warnings)
    freshness = json_safe(selectors.price_freshness(gpu=s.gpu))
    _price_warnings(s, rent, gpus, size_docs, freshness, warnings, quotes_for)
    prices_as_of, freshness["kind"] = price_dates(s, size_docs, freshness, now, warnings)

    # Cumulative cost, NPV and sensitivity at the recommended size.
    cumulative = npv = None
    sensitivity: list[dict[str, Any]] = []
    if knee is not None and hw is not None and size_docs[knee]["rent"]["offer"] is not None:
        cumulative, npv = _ownership_outlook(
            s=s,
            i=knee,
            sizes=sizes,
            owned=owned,
            rent=rent,
            base=base,
            hw=hw,
            overflow=size_docs[knee]["buy"].get("overflow"),
        )
        sensitivity = sensitivity_rows(
            s=s,
            i=knee,
            gpus=gpus,
            nodes=owned,
            tps=tps,
            head_price=rent.head_price,
            head_term_years=rent.head_term_years,
            head_spot=rent.head_spot,
            head_floating=rent.head_floating,
            spot_lost=rent.spot_lost,
            be_price=rent.be_price,
            hw=hw,
            utilization=float(base["utilization"][knee]),
            with_overflow=size_docs[knee]["buy"].get("overflow") is not None,
        )

    warnings.extend(_alternative_scope_notes(s, calibration))
    return Advice(
        scenario=s,
        generated_at=now,
        gpu=gpu_document(s.gpu, w.precision),
        sizes=tuple(size_docs),
        recommendation=recommendation,
        prices_as_of=prices_as_of,
        price_freshness=freshness,
        hardware_quote=hw.document if hw else None,
        calibration=calibration_document(predicted_by, stack=w.stack),
        warnings=tuple(dict.fromkeys(warnings)),
        cumulative_cost=cumulative,
        npv=npv,
        sensitivity=tuple(sensitivity),
        uncertainty=uncertainty_document(band=band),
        assumptions=tuple(assumptions_used(s)),
        alternatives=tuple(
            _alternatives(
                s,
                own=alternative_row(s.gpu, size_docs, knee, hardware_quote=hw.document if hw else None),
                calibration=calibration,
                now=now,
                shown=tuple(warnings),
            )
        ),
    )


def alternative_row(
    gpu: str,
    size_docs: Sequence[Mapping[str, Any]],
    knee: int | None,
    *,
    hardware_quote: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``{gpu, gpus, run_hours, rent_usd_per_run, buy_usd_per_run, break_even_utilization, fits_memory, offer,
    hardware_quote}`` at the recommended size (the knee); nulls and fits_memory false when no size holds the model.
    The offer and quote are the prices the row's costs rest on, so that the PDF and workbook can source them (an
    outsider's probe: the compared GPUs were priced at offers and quotes no price source listed)."""
    doc = size_docs[knee] if knee is not None else None
    return {
        "offer": doc["rent"]["offer"] if doc else None,
        "hardware_quote": hardware_quote if doc and doc["buy"]["usd_per_run"] is not None else None,
        "gpu": gpu,
        "gpus": doc["gpus"] if doc else None,
        "run_hours": doc["run_hours"] if doc else None,
        "rent_usd_per_run": doc["rent"]["usd_per_run"] if doc else None,
        "rent_market": doc["rent"]["market"] if doc else None,
        "buy_usd_per_run": doc["buy"]["usd_per_run"] if doc else None,
        "buy_overflow_usd_per_run": (doc["buy"].get("overflow") or {}).get("usd_per_run") if doc else None,
        "break_even_utilization": doc["buy"]["break_even_utilization"] if doc else None,
        "fits_memory": bool(doc and doc["fits_memory"]),
        "warnings": [],
    }


def _alternative_scope_notes(s: Scenario, calibration: Calibration) -> list[str]:
    """A compare_gpus row that a user's calibration has no runs of is predicted by the calibration it refines
    (``Calibration.scoped``): say so beside the plan, as the row has no warnings of its own."""
    notes = []
    for gpu in s.compare_gpus or ():
        _, note = calibration.scoped(family=get_gpu(gpu).family, stack=s.workload.stack)
        if note and gpu != s.gpu:
            notes.append(f"compare_gpus {gpu}: {note}.")
    return notes


def _alternatives(
    s: Scenario, *, own: dict[str, Any], calibration: Calibration, now: dt.datetime, shown: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """With ``compare_gpus``: the plan's own GPU, then each other GPU at its recommended size from the same pipeline
    run on that GPU, with that run's warnings the plan does not show already (``shown``: an outsider's probe found an
    uncalibrated MI300X the cheapest row with no word of its borrowed calibration). A GPU the scenario cannot run on
    (a precision it lacks) is listed with the reason."""
    if not s.compare_gpus:
        return []
    rows = [own]
    catalog_priced, note = catalog_prices_for_other_gpus(s)
    for gpu in s.compare_gpus:
        if gpu == s.gpu:
            continue
        try:
            other = advise_training(
                scenario_for_gpu(catalog_priced, gpu),
                calibration=calibration,
                now=now,
                explain_no_fit=False,
                quotes_for=s.gpu,
            )
        except ScenarioError as exc:
            rows.append({**alternative_row(gpu, [], None), "not_compared": str(exc)})
            continue
        knee = next((i for i, d in enumerate(other.sizes) if d["gpus"] == other.recommendation["gpus"]), None)
        own_warnings = [w for w in other.warnings if w not in shown]
        row = alternative_row(gpu, other.sizes, knee, hardware_quote=other.hardware_quote)
        rows.append({**row, "pricing_note": note, "warnings": own_warnings})
    return mark_cheapest(rows, monthly=False, runs_per_year=scenario_runs_judged(s))


__all__ = ["Advice", "ScenarioError", "advise_training", "ownership_defaults"]
