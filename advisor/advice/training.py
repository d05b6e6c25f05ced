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
  Break-even is against the on-demand price (elastic, billed when used; cost-model.md 4.1), or
  the manual quote; without an on-demand offer, against the cheapest market.
- Recommendation: the size at the knee of the scaling curve: the largest size such that every
  step up from the previous fitting size keeps its marginal scaling efficiency (speed-up gained
  / GPUs added) at or above ``KNEE_MARGINAL_EFFICIENCY``; rent or buy by the lower cost per run
  at the scenario's utilization.
- Uncertainty: ``MC_SAMPLES`` draws (fixed seed, so the same scenario gives the same advice) of
  the throughput error (log-normal with the calibration's held-out log sigma) times the rental
  price (uniform over the ``MC_PRICE_ALTERNATIVES`` cheapest eligible offers of the chosen market:
  the cheapest may have no capacity)
  -> P10/P50/P90 of run hours, cost per run and break-even.
- Sensitivity: each input moved -20% and +20% (utilization capped at 1), the change of
  "owned minus rented cost per run" at the recommended size; the six largest swings.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from django.utils import timezone

from advisor import economics as ec
from advisor.advice.costs import costs
from advisor.advice.documents import (
    ADVICE_VERSION,
    assumptions_used,
    calibration_document,
    fraction,
    inf_if_not_finite,
    iso,
    json_safe,
    money,
    n_gpus,
    num,
    pct,
)
from advisor.advice.offers import market_prices, offer_document, oldest_price_date
from advisor.advice.ownership import hardware
from advisor.advice.recommendation import KNEE_MARGINAL_EFFICIENCY, cheapest_size, knee_index
from advisor.advice.uncertainty import (
    MC_PRICE_ALTERNATIVES,
    MC_SAMPLES,
    MC_SEED,
    QUANTILES,
    sensitivity_rows,
)
from advisor.scenario import Scenario, ScenarioError, ownership_defaults, parse_scenario
from estimator import predict
from estimator.calibrate import Calibration, load_default
from estimator.specs import get_gpu
from estimator.workload import Cluster, TrainingJob, WorkloadError
from pricing import selectors
from pricing.models import FLOATING_MARKETS, MARKET_PHRASES, RESERVED_MARKETS


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

    def to_dict(self) -> dict[str, Any]:
        return json_safe(
            {
                "advice_version": ADVICE_VERSION,
                "kind": self.scenario.workload.kind,
                "generated_at": iso(self.generated_at),
                "scenario": self.scenario.to_dict(),
                "gpu": self.gpu,
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
            }
        )


# --- JSON helpers ------------------------------------------------------------------------------


# --- inputs ------------------------------------------------------------------------------------


# --- the cost model shared by the base case, the Monte Carlo and the sensitivity ----------------


# --- the pipeline ------------------------------------------------------------------------------


_WORKLOAD_POINTERS: Final[Mapping[str, str]] = {
    **{k: f"/workload/model/{k}" for k in ("params_b", "seq_len", "layers", "hidden", "heads", "ffn_hidden", "vocab")},
    **{
        k: f"/workload/parallelism/{k}"
        for k in ("strategy", "tp", "pp", "cp", "micro_batch", "activation_checkpointing")
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
        params_b=w.model.params_b,
        seq_len=w.model.seq_len,
        global_batch=w.global_batch,
        precision=w.precision,
        layers=w.model.layers,
        hidden=w.model.hidden,
        heads=w.model.heads,
        ffn_hidden=w.model.ffn_hidden,
        vocab=w.model.vocab,
        strategy=None if par.strategy == "auto" else par.strategy,
        tp=par.tp,
        pp=par.pp,
        cp=par.cp,
        micro_batch=par.micro_batch,
        activation_checkpointing=par.activation_checkpointing,
    )


def advise(
    scenario: Scenario | Mapping[str, Any],
    *,
    calibration: Calibration | None = None,
    now: dt.datetime | None = None,
) -> Advice:
    """Turn a Scenario (object or JSON document) into an Advice. Raises ScenarioError for bad input.

    Inference scenarios are answered by ``advisor.inference_advice.advise_inference`` wrapped in an
    ``InferenceAdvice`` with the same ``to_dict()``; ``calibration`` there is used only when it is an
    inference calibration."""
    s = scenario if isinstance(scenario, Scenario) else parse_scenario(scenario)
    if s.workload.kind == "inference":
        # Serving has its own model and document (advisor.inference_advice); the same to_dict() renders it.
        from advisor.advice.inference import InferenceAdvice, advise_inference

        return InferenceAdvice(advise_inference(s, now=now, calibration=calibration))  # type: ignore[return-value]
    calibration = calibration or load_default()
    now = now or timezone.now()
    warnings: list[str] = []
    w = s.workload
    assert w.parallelism is not None and w.tokens is not None and w.global_batch is not None
    spec = get_gpu(s.gpu)
    try:
        job = _training_job(s)
        cluster = Cluster(gpu=spec, gpus_per_node=s.network.gpus_per_node, inter_node_gbps=s.network.inter_node_gbps)
    except WorkloadError as exc:  # the parser checks these rules too; this keeps any estimator rule a 4xx
        raise ScenarioError([{"pointer": _WORKLOAD_POINTERS.get(exc.field, "/workload"), "message": str(exc)}]) from exc
    sizes = np.array(s.cluster_sizes, dtype=np.int64)
    with_one = sizes if 1 in s.cluster_sizes else np.concatenate([[1], sizes])
    p = predict(job, cluster, with_one, calibration)
    keep = slice(0, None) if 1 in s.cluster_sizes else slice(1, None)
    fits_one = bool(p.fits_memory[0]) if with_one[0] == 1 else False
    gpus, nodes = p.gpus[keep], p.nodes[keep]
    tps = p.tokens_per_s[keep]
    feasible = p.fits_memory[keep] & np.isfinite(tps) & (tps > 0)

    # Prices and hardware.
    market = market_prices(s, gpus)
    hw = hardware(s, warnings)
    spot_lost = ec.spot_lost_fraction(
        nodes=nodes,
        interruptions_per_node_hour=s.rent.spot.interruptions_per_node_hour,
        checkpoint_s=s.rent.spot.checkpoint_s,
        restart_s=s.rent.spot.restart_s,
    )
    frame = market.offers
    markets = list(market.rows)
    used_price: dict[str, np.ndarray] = {}
    for m, rows in market.rows.items():
        table = market.per_used_gpu_hour[m]
        used_price[m] = np.where(rows >= 0, np.min(table, axis=0) if table.size else np.inf, np.inf)
    # Every market at once: axis 0 is the market, axis 1 the size.
    column = np.array(markets, dtype=object)[:, None]
    all_markets = costs(
        s=s,
        gpus=gpus,
        nodes=nodes,
        tokens_per_s=tps,
        rent_price=np.array([used_price[m] for m in markets]).reshape(len(markets), len(gpus)),
        reserved=np.isin(column, list(RESERVED_MARKETS)),
        spot_lost=np.where(column == "spot", spot_lost, 0.0),
        floating=np.isin(column, list(FLOATING_MARKETS)),
        break_even_price=np.inf,
        hw=None,
    )
    by_market_costs = {
        m: {
            k: np.broadcast_to(all_markets[k], (len(markets), len(gpus)))[j]
            for k in ("rent_rate", "rent_hours", "rent_usd_per_run")
        }
        for j, m in enumerate(markets)
    }
    # Headline market per size: the lowest cost per run.
    per_run = inf_if_not_finite(all_markets["rent_usd_per_run"]).reshape(len(markets), len(gpus))
    headline = np.argmin(per_run, axis=0) if markets else np.zeros(len(gpus), dtype=int)
    has_rent = np.isfinite(per_run[headline, np.arange(len(gpus))]) if markets else np.zeros(len(gpus), bool)
    # Break-even against on-demand (or the manual quote), else the cheapest market's price.
    if "on_demand" in used_price and np.isfinite(used_price["on_demand"]).any():
        be_price = used_price["on_demand"].copy()
        be_market = np.where(np.isfinite(be_price), "on_demand", "").astype(object)
    else:
        be_price = np.full(len(gpus), np.inf)
        be_market = np.full(len(gpus), "", dtype=object)
    for i in range(len(gpus)):
        if not np.isfinite(be_price[i]) and markets and has_rent[i]:
            m = markets[headline[i]]
            be_price[i] = used_price[m][i]
            be_market[i] = m
    head_price = np.array([used_price[markets[h]][i] if markets else np.inf for i, h in enumerate(headline)])
    head_reserved = np.array([markets[h] in RESERVED_MARKETS if markets else False for h in headline])
    head_spot = np.array([markets[h] == "spot" if markets else False for h in headline])
    head_floating = np.array([markets[h] in FLOATING_MARKETS if markets else False for h in headline])
    base = costs(
        s=s,
        gpus=gpus,
        nodes=nodes,
        tokens_per_s=tps,
        rent_price=head_price,
        reserved=head_reserved,
        spot_lost=np.where(head_spot, spot_lost, 0.0),
        floating=head_floating,
        break_even_price=be_price,
        hw=hw,
    )

    # Monte Carlo: throughput error x price spread of each size's headline market.
    rng = np.random.default_rng(MC_SEED)
    throughput = np.exp(rng.normal(0.0, p.interval_log_sigma, size=(MC_SAMPLES, 1)))
    draws = rng.random(size=(MC_SAMPLES, len(gpus)))
    sampled_price = np.empty((MC_SAMPLES, len(gpus)))
    for i in range(len(gpus)):
        if not markets:
            sampled_price[:, i] = np.inf
            continue
        table = market.per_used_gpu_hour[markets[headline[i]]][:, i]
        finite = np.sort(table[np.isfinite(table)])[:MC_PRICE_ALTERNATIVES]
        sampled_price[:, i] = finite[(draws[:, i] * finite.size).astype(int)] if finite.size else np.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(np.isfinite(head_price) & (head_price > 0), sampled_price / head_price, 1.0)
    mc = costs(
        s=s,
        gpus=gpus,
        nodes=nodes,
        tokens_per_s=tps,
        rent_price=head_price * factor,
        reserved=head_reserved,
        spot_lost=np.where(head_spot, spot_lost, 0.0),
        floating=head_floating,
        break_even_price=be_price * factor,
        hw=hw,
        overrides={"throughput_factor": throughput},
    )

    sampled = ["run_hours", "rent_usd_per_run", *(["own_usd_per_run", "break_even"] if hw else [])]
    stacked = np.stack(np.broadcast_arrays(*(inf_if_not_finite(mc[k]) for k in sampled)))
    with np.errstate(invalid="ignore"):
        quantiles = dict(zip(sampled, np.quantile(stacked, QUANTILES, axis=1).swapaxes(0, 1), strict=True))
    run_q, rent_q = quantiles["run_hours"], quantiles["rent_usd_per_run"]
    own_q, be_q = quantiles.get("own_usd_per_run"), quantiles.get("break_even")
    columns = {c: frame[c].to_numpy() for c in frame.columns}

    # Per-size documents.
    size_docs: list[dict[str, Any]] = []
    labels = {
        "strategy": p.strategy[keep],
        "tp": p.tp[keep],
        "pp": p.pp[keep],
        "cp": p.cp[keep],
        "micro_batch": p.micro_batch[keep],
        "activation_checkpointing": p.activation_checkpointing[keep],
    }
    for i, n in enumerate(gpus):
        ok = bool(feasible[i])
        layout = {k: (v[i].item() if hasattr(v[i], "item") else v[i]) for k, v in labels.items()}
        layout = {k: (None if (isinstance(v, int) and v < 0) or v == "" else v) for k, v in layout.items()}
        by_market: dict[str, Any] = {}
        for m in markets:
            row = int(market.rows[m][i])
            cost = by_market_costs[m]
            if row < 0 or not ok:
                by_market[m] = None
                continue
            by_market[m] = {
                "offer": offer_document({c: v[row] for c, v in columns.items()}, float(used_price[m][i])),
                "usd_per_busy_gpu_hour": num(cost["rent_rate"][i]),
                "wall_hours": num(cost["rent_hours"][i]),
                "usd_per_run": num(cost["rent_usd_per_run"][i]),
            }
            if m == "spot":
                by_market[m]["lost_fraction"] = float(spot_lost[i])
        head = markets[headline[i]] if markets and has_rent[i] and ok else None
        rent_doc = {
            "market": head,
            "offer": by_market[head]["offer"] if head else None,
            "usd_per_run": num(base["rent_usd_per_run"][i]) if head else None,
            "usd_per_run_p10": num(rent_q[0][i]) if head else None,
            "usd_per_run_p50": num(rent_q[1][i]) if head else None,
            "usd_per_run_p90": num(rent_q[2][i]) if head else None,
            "by_market": by_market,
        }
        if hw is not None:
            be = float(base["break_even"][i])
            be_ok = ok and math.isfinite(be) and be <= 1.0
            buy_doc: dict[str, Any] = {
                "capex_usd": float(base["capex"][i]),
                "usd_per_year": float(base["yearly_fixed"][i]),
                "variable_usd_per_busy_gpu_hour": float(base["variable"]),
                "usd_per_gpu_hour_at_utilization": num(base["owned_rate"][i]),
                "usd_per_run": num(base["own_usd_per_run"][i]) if ok else None,
                "usd_per_run_p10": num(own_q[0][i]) if ok and own_q is not None else None,
                "usd_per_run_p50": num(own_q[1][i]) if ok and own_q is not None else None,
                "usd_per_run_p90": num(own_q[2][i]) if ok and own_q is not None else None,
                "break_even_against": {"market": be_market[i] or None, "usd_per_gpu_hour": num(be_price[i])},
                "break_even_utilization": be if be_ok else None,
                "break_even_hours_per_year": be * ec.HOURS_PER_YEAR if be_ok else None,
                "break_even_utilization_p10": fraction(be_q[0][i]) if be_q is not None and ok else None,
                "break_even_utilization_p50": fraction(be_q[1][i]) if be_q is not None and ok else None,
                "break_even_utilization_p90": fraction(be_q[2][i]) if be_q is not None and ok else None,
                "breaks_even": bool(be_ok),
            }
        else:
            buy_doc = {
                "capex_usd": None,
                "usd_per_year": None,
                "usd_per_gpu_hour_at_utilization": None,
                "usd_per_run": None,
                "break_even_utilization": None,
                "break_even_hours_per_year": None,
                "breaks_even": False,
            }
        size_docs.append(
            {
                "gpus": int(n),
                "nodes": int(nodes[i]),
                "layout": layout,
                "fits_memory": bool(p.fits_memory[keep][i]),
                "memory_per_gpu_gb": num(p.memory_per_gpu_gb[keep][i]),
                "step_time_s": num(p.step_time_s[keep][i]) if ok else None,
                "tokens_per_s": num(tps[i]) if ok else None,
                "mfu": num(p.mfu[keep][i]) if ok else None,
                "scaling_efficiency": num(p.scaling_efficiency[keep][i]) if ok else None,
                "run_hours": num(base["run_hours"][i]) if ok else None,
                "run_hours_p10": num(run_q[0][i]) if ok else None,
                "run_hours_p50": num(run_q[1][i]) if ok else None,
                "run_hours_p90": num(run_q[2][i]) if ok else None,
                "rent": rent_doc,
                "buy": buy_doc,
            }
        )

    # Recommendation.
    knee, beyond, beyond_eff = knee_index(gpus, tps, feasible)
    reasons: list[str] = []
    action: str | None = None
    rec_gpus: int | None = None
    if knee is None:
        reasons.append(
            f"The model fits on none of the candidate sizes ({', '.join(map(str, s.cluster_sizes))} GPUs of "
            f"{spec.memory_gb:g} GB); try more GPUs or a layout with more sharding."
        )
        warnings.append("The model fits on no candidate cluster size.")
    else:
        rec_gpus = int(gpus[knee])
        doc = size_docs[knee]
        eff = doc["scaling_efficiency"]
        if beyond is not None:
            reasons.append(
                f"{n_gpus(rec_gpus)} is the knee of the scaling curve: going to {int(gpus[beyond])} would deliver "
                f"only {pct(beyond_eff)} of the ideal speed-up, below the {pct(KNEE_MARGINAL_EFFICIENCY)} threshold."
            )
        elif knee == int(np.flatnonzero(feasible)[-1]) and np.count_nonzero(feasible) > 1:
            reasons.append(
                f"{n_gpus(rec_gpus)}, the largest candidate, still scales at {pct(eff)} per-GPU efficiency; "
                f"every step up kept at least {pct(KNEE_MARGINAL_EFFICIENCY)} of the ideal speed-up."
            )
        else:
            reasons.append(f"{n_gpus(rec_gpus)} is the only candidate size that holds the model.")
        if doc["run_hours"] is not None:
            busy = w.runs_per_year * doc["run_hours"] / ec.HOURS_PER_YEAR  # type: ignore[operator]
            reasons.append(
                f"One run of {w.tokens:.3g} tokens takes {doc['run_hours']:,.0f} hours "
                f"(P10-P90 {doc['run_hours_p10']:,.0f}-{doc['run_hours_p90']:,.0f}); {w.runs_per_year:g} runs a year "
                f"keep the cluster busy {pct(busy)} of the year."
            )
            if busy > s.utilization:
                warnings.append(
                    f"{w.runs_per_year:g} runs a year need {pct(busy)} of the year on {n_gpus(rec_gpus)}, more than "
                    f"the {pct(s.utilization)} utilization assumed for owning (/utilization)."
                )
            if busy > 1:
                warnings.append(
                    f"{w.runs_per_year:g} runs a year of {doc['run_hours']:,.0f} hours on {n_gpus(rec_gpus)} need "
                    "more than a year of cluster time."
                )
        rent_run = doc["rent"]["usd_per_run"]
        own_run = doc["buy"]["usd_per_run"]
        if rent_run is not None and (own_run is None or rent_run <= own_run):
            action = "rent"
        elif own_run is not None:
            action = "buy"
        offer = doc["rent"]["offer"]
        if offer is not None:
            where = f"{offer['provider']} {offer['instance'] or ''} {offer['region'] or ''}".split()
            reasons.append(
                f"Renting {MARKET_PHRASES[doc['rent']['market']]} ({' '.join(where)}) costs {money(rent_run)} a run "
                f"at {money(offer['usd_per_used_gpu_hour'])} per GPU-hour."
            )
        if own_run is not None:
            be = doc["buy"]["break_even_utilization"]
            raw_be = float(base["break_even"][knee])
            if be is not None:
                hours = doc["buy"]["break_even_hours_per_year"]
                be_words = f"break-even is {pct(be)} utilization ({hours:,.0f} hours a year)"
            elif math.isfinite(raw_be):
                be_words = f"break-even would need {pct(raw_be)} utilization, more than the whole year"
            else:
                be_words = "the rental price does not even cover the owned energy cost, so owning never breaks even"
            reasons.append(
                f"At {pct(s.utilization)} utilization an owned GPU-hour costs "
                f"{money(doc['buy']['usd_per_gpu_hour_at_utilization'])} and a run {money(own_run)}; {be_words}."
            )
            if be is None or s.utilization < be:
                warnings.append(
                    f"Utilization {pct(s.utilization)} is below break-even "
                    f"({'never' if be is None else pct(be)}) on {n_gpus(rec_gpus)}: owning costs more than renting."
                )
        cheapest = cheapest_size(size_docs)
        if cheapest is not None and cheapest[0] != rec_gpus:
            n_cheap, usd_cheap, how = cheapest
            reasons.append(
                f"If the run time does not matter, {n_gpus(n_cheap)} is the cheapest per run "
                f"({money(usd_cheap)} {how}) but takes longer or scales worse."
            )
        if action is None:
            reasons.append("Neither renting nor owning could be priced: no offers and no hardware quote.")
        else:
            reasons.append(f"Recommendation: {action} {n_gpus(rec_gpus)}.")
    recommendation = {
        "action": action,
        "gpus": rec_gpus,
        "reasons": reasons,
        "knee_threshold": KNEE_MARGINAL_EFFICIENCY,
    }

    # Warnings about the inputs and the predictions.
    if fits_one:
        warnings.append(
            f"The model fits on one {spec.id} ({num(p.memory_per_gpu_gb[0]):.0f} GB of {spec.memory_gb:g} GB): "
            "you may not need a cluster at all."
        )
    gpn = s.network.gpus_per_node
    single = np.flatnonzero(feasible & (gpus <= gpn))
    multi = np.flatnonzero(feasible & (gpus > gpn))
    if single.size and multi.size:
        a, b = int(single[-1]), int(multi[0])
        step = (tps[b] / tps[a]) / (gpus[b] / gpus[a])
        if step < KNEE_MARGINAL_EFFICIENCY:
            warnings.append(
                f"The fabric between nodes ({s.network.inter_node_gbps:g} Gb/s per node) is the bottleneck: going "
                f"from {n_gpus(gpus[a])} in one node to {int(gpus[b])} across nodes delivers {pct(step)} of the "
                "ideal speed-up."
            )
    freshness = json_safe(selectors.price_freshness(gpu=s.gpu))
    if s.rent.usd_per_gpu_hour is None:
        if frame.empty:
            warnings.append(
                f"No rental offers for {s.gpu}"
                + (f" from {', '.join(s.rent.providers)}" if s.rent.providers else "")
                + f" in {', '.join(s.rent.markets)}: the rent side is not priced (give /rent/usd_per_gpu_hour)."
            )
        used_rows = [d["rent"]["offer"] for d in size_docs if d["rent"]["offer"]]
        if any(o["is_snapshot"] for o in used_rows):
            warnings.append(
                f"Prices come from the bundled snapshot (compiled {freshness.get('snapshot_compiled_on')}), "
                "not a live feed."
            )
        elif any(o["stale"] for o in used_rows):
            warnings.append(f"Some prices are older than {freshness.get('stale_after_hours')} hours (stale).")
    if "spot" in markets and (spot_lost >= 1).any():
        too_big = int(gpus[np.flatnonzero(spot_lost >= 1)[0]])
        warnings.append(f"Spot is not usable from {n_gpus(too_big)}: interruptions come faster than restarts.")
    prices_as_of, freshness["kind"] = oldest_price_date(s, size_docs, freshness, now)

    # Cumulative cost, NPV and sensitivity at the recommended size.
    cumulative = npv = None
    sensitivity: list[dict[str, Any]] = []
    if rec_gpus is not None and hw is not None and size_docs[knee]["rent"]["offer"] is not None:  # type: ignore[index]
        i = knee
        assert i is not None
        busy_per_year = gpus[i] * ec.HOURS_PER_YEAR * s.utilization
        running = (
            ec.yearly_running_cost_usd(
                capex_usd=base["capex"][i],
                contracted_kw=nodes[i] * hw.load_kw_per_node,
                colo_usd_per_kw_month=s.buy.colo_usd_per_kw_month,
                support_fraction_per_year=s.buy.support_fraction_per_year,
                staff_usd_per_year=s.buy.staff_usd_per_year,
                software_usd_per_year=s.buy.software_usd_per_gpu_year * nodes[i] * gpn,
                idle_kw=nodes[i] * hw.idle_kw_per_node,
                pue=s.buy.pue,
                power_usd_per_kwh=s.buy.power_usd_per_kwh,
            )
            + float(base["variable"]) * busy_per_year
        )
        rent_rate_now = float(head_price[i]) * (
            1.0 / s.utilization if head_reserved[i] else 1.0
        )  # before levelizing: the chart applies the yearly decline month by month
        if head_spot[i]:
            rent_rate_now /= max(1e-12, 1.0 - float(spot_lost[i]))
        rent_per_year = rent_rate_now * busy_per_year
        months = max(1, round(s.buy.years * ec.MONTHS_PER_YEAR))
        residual = float(base["capex"][i]) * s.buy.residual_fraction
        decline = s.rent.price_decline_per_year if head_floating[i] else 0.0
        rent_cum, own_cum = ec.cumulative_cost_by_month(
            months=months,
            rent_usd_per_month=rent_per_year / ec.MONTHS_PER_YEAR,
            rent_decline_per_year=decline,
            capex_usd=float(base["capex"][i]),
            own_usd_per_month=float(running) / ec.MONTHS_PER_YEAR,
            residual_usd=residual,
        )
        cumulative = {
            "gpus": rec_gpus,
            "months": list(range(months + 1)),
            "rent_usd": rent_cum,
            "buy_usd": own_cum,
            "crossover_month": ec.crossover_month(rent_cumulative_usd=rent_cum, own_cumulative_usd=own_cum),
            "utilization": s.utilization,
            "rent_market": markets[headline[i]],
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
        sensitivity = sensitivity_rows(
            s=s,
            i=i,
            gpus=gpus,
            nodes=nodes,
            tps=tps,
            head_price=head_price,
            head_reserved=head_reserved,
            head_spot=head_spot,
            head_floating=head_floating,
            spot_lost=spot_lost,
            be_price=be_price,
            hw=hw,
        )

    assumptions = assumptions_used(s)
    return Advice(
        scenario=s,
        generated_at=now,
        gpu={
            "id": spec.id,
            "name": spec.name,
            "memory_gb": spec.memory_gb,
            "peak_tflops": spec.peak_tflops.get(w.precision),
            "precision": w.precision,
            "source": spec.source,
        },
        sizes=tuple(size_docs),
        recommendation=recommendation,
        prices_as_of=prices_as_of,
        price_freshness=freshness,
        hardware_quote=hw.document if hw else None,
        calibration=calibration_document(calibration),
        warnings=tuple(dict.fromkeys(warnings)),
        cumulative_cost=cumulative,
        npv=npv,
        sensitivity=tuple(sensitivity),
        uncertainty={
            "samples": MC_SAMPLES,
            "quantiles": list(QUANTILES),
            "seed": MC_SEED,
            "throughput_log_sigma": p.interval_log_sigma,
            "price_alternatives": MC_PRICE_ALTERNATIVES,
            "method": "throughput log-normal (calibration held-out log error) x rental price uniform over the "
            "cheapest eligible offers of the chosen market",
        },
        assumptions=tuple(assumptions),
    )


__all__ = ["Advice", "ScenarioError", "advise", "ownership_defaults"]
