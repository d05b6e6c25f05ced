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
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
import pandas as pd
from django.utils import timezone

from advisor import economics as ec
from advisor.scenario import Scenario, ScenarioError, ownership_defaults, parse_scenario
from estimator import predict
from estimator.calibrate import Calibration, load_default
from estimator.specs import get_gpu
from estimator.workload import Cluster, TrainingJob, WorkloadError
from pricing import selectors
from pricing.models import FLOATING_MARKETS, MARKET_PHRASES, RESERVED_MARKETS

ADVICE_VERSION: Final[int] = 1
# A step up in cluster size is worth taking while it delivers at least 80% of the ideal speed-up
# (product rule, stated in every recommendation; Amdahl-style "parallel efficiency >= 0.8" is the
# usual HPC strong-scaling acceptance threshold).
KNEE_MARGINAL_EFFICIENCY: Final[float] = 0.8
MC_SAMPLES: Final[int] = 2000
# The price spread a renter faces: the cheapest offer may have no capacity, so draws go uniformly over the
# cheapest few eligible offers of the chosen market (the cheapest included).
MC_PRICE_ALTERNATIVES: Final[int] = 5
MC_SEED: Final[int] = 20261202
QUANTILES: Final[tuple[float, float, float]] = (0.1, 0.5, 0.9)
SENSITIVITY_STEP: Final[float] = 0.2
SENSITIVITY_TOP: Final[int] = 6


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
        return _json_safe(
            {
                "advice_version": ADVICE_VERSION,
                "kind": self.scenario.workload.kind,
                "generated_at": _iso(self.generated_at),
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


def _json_safe(value: Any) -> Any:
    """Plain JSON types; non-finite floats become null (callers add a warning where it matters)."""
    if isinstance(value, Mapping):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_json_safe(v) for v in value.tolist()]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dt.datetime | dt.date):
        return _iso(value)
    if value is None or isinstance(value, str):
        return value
    return str(value)


def _iso(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        value = value.to_pydatetime()
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _num(x: Any) -> float | None:
    value = float(x)
    return value if math.isfinite(value) else None


def _inf_if_not_finite(values: Any) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    return np.where(np.isfinite(array), array, np.inf)


def _fraction(x: Any) -> float | None:
    """A fraction of the year, or None when it is not one (above 1: never reached)."""
    value = _num(x)
    return value if value is not None and 0 <= value <= 1 else None


def _money(x: Any) -> str:
    value = float(x)
    if not math.isfinite(value):
        return "n/a"
    return f"${value:,.2f}" if abs(value) < 100 else f"${value:,.0f}"


def _n_gpus(n: Any) -> str:
    return "1 GPU" if int(n) == 1 else f"{int(n)} GPUs"


def _pct(x: Any) -> str:
    value = float(x)
    return f"{value:.0%}" if math.isfinite(value) else "n/a"


# --- inputs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Hardware:
    """What owning one node costs and draws, and where the numbers come from."""

    capex_per_node: float  # USD, all in, without fabric
    fabric_per_node: float  # USD per node, only paid when the cluster spans nodes
    load_kw_per_node: float
    idle_kw_per_node: float
    document: Mapping[str, Any]


def _hardware(s: Scenario, warnings: list[str]) -> _Hardware | None:
    gpn = s.network.gpus_per_node
    spec = get_gpu(s.gpu)
    quote: Any = None
    if s.buy.server:
        from pricing.models import HardwareQuote  # a named quote: the selector answers by GPU and size only

        quote = HardwareQuote.objects.filter(gpu=s.gpu, name=s.buy.server).first()
        if quote is None:
            names = list(HardwareQuote.objects.filter(gpu=s.gpu).values_list("name", flat=True))
            raise ScenarioError(
                [
                    {
                        "pointer": "/buy/server",
                        "message": f"no hardware quote of that name for {s.gpu}; one of: {', '.join(names) or 'none'}",
                    }
                ]
            )
    else:
        quote = selectors.hardware_quote(gpu=s.gpu, gpus_per_server=gpn) or selectors.hardware_quote(gpu=s.gpu)
    if quote is not None:
        scale = gpn / int(quote.gpus_per_server)  # per-GPU share when the quote's server is another size
        if scale != 1:
            warnings.append(
                f"The hardware quote is for a {quote.gpus_per_server}-GPU server; scaled per GPU to "
                f"{gpn}-GPU nodes (/network/gpus_per_node)."
            )
        idle = quote.idle_power_kw
        doc = {
            "gpu": quote.gpu,
            "gpus_per_server": int(quote.gpus_per_server),
            "name": quote.name,
            "usd": float(quote.usd),
            "quoted_on": quote.quoted_on,
            "source": quote.source,
            "power_kw": float(quote.power_kw),
            "idle_power_kw": None if idle is None else float(idle),
            "networking_usd_per_node": float(quote.networking_usd_per_node),
            "scaled_to_gpus_per_node": gpn,
        }
        load_kw, idle_kw = float(quote.power_kw) * scale, (0.0 if idle is None else float(idle) * scale)
        fabric = float(quote.networking_usd_per_node) * scale
        capex = float(quote.usd) * scale
    else:
        load_kw, idle_kw, fabric, capex = spec.server_power_kw * gpn / spec.gpus_per_node, 0.0, 0.0, math.nan
        doc = {
            "gpu": s.gpu,
            "gpus_per_server": gpn,
            "name": None,
            "usd": None,
            "quoted_on": None,
            "source": f"power: {spec.source}",
            "power_kw": load_kw,
            "idle_power_kw": None,
            "networking_usd_per_node": 0.0,
            "scaled_to_gpus_per_node": gpn,
        }
    if s.buy.capex_usd is not None:
        capex, fabric = float(s.buy.capex_usd), 0.0  # the user's all-in node price
        doc = {**doc, "usd": capex, "source": f"manual quote (/buy/capex_usd); {doc['source']}", "manual": True}
    if not math.isfinite(capex):
        warnings.append(
            f"No hardware quote for {s.gpu} servers: the buy side is not priced. Give /buy/capex_usd "
            "(the all-in price of one node) to compare with renting."
        )
        return None
    if doc.get("idle_power_kw") is None:
        doc = {**doc, "idle_assumption": "idle draw not stated: energy is counted for busy hours only"}
    return _Hardware(capex, fabric, load_kw, idle_kw, doc)


@dataclass(frozen=True)
class _MarketPrices:
    """Per market: the cheapest eligible offer per size (index into the offer table) and all prices."""

    offers: pd.DataFrame
    per_used_gpu_hour: dict[str, np.ndarray]  # market -> (offers of that market, sizes) USD per used GPU-hour
    rows: dict[str, np.ndarray]  # market -> offer table row index of each size's cheapest (or -1)


def rental_offers(s: Scenario) -> pd.DataFrame:
    """The offers a scenario may rent: its manual quote as a one-row frame, else the catalog's for its GPU."""
    if s.rent.usd_per_gpu_hour is not None:
        return pd.DataFrame(
            [
                {
                    "provider": "manual quote",
                    "instance": None,
                    "region": None,
                    "market": "on_demand",
                    "gpu": s.gpu,
                    "gpu_count": 1.0,
                    "usd_per_hour": s.rent.usd_per_gpu_hour,
                    "usd_per_gpu_hour": s.rent.usd_per_gpu_hour,
                    "observed_at": None,
                    "source": "manual quote (/rent/usd_per_gpu_hour)",
                    "is_snapshot": False,
                    "stale": False,
                }
            ]
        )
    else:
        return selectors.offers_frame(gpu=s.gpu, providers=list(s.rent.providers) or None, markets=list(s.rent.markets))


def _offers(s: Scenario, gpus: np.ndarray) -> _MarketPrices:
    frame = rental_offers(s).reset_index(drop=True)
    gpn = s.network.gpus_per_node
    count = frame["gpu_count"].to_numpy(dtype=float)[:, None]
    hourly = frame["usd_per_hour"].to_numpy(dtype=float)[:, None]
    n = gpus.astype(float)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        instances = np.ceil(n / count)
        price = hourly * instances / n
    manual = s.rent.usd_per_gpu_hour is not None
    eligible = (count >= np.minimum(n, gpn)) | manual
    price = np.where(eligible & np.isfinite(price) & (price > 0), price, np.inf)
    per_market: dict[str, np.ndarray] = {}
    rows: dict[str, np.ndarray] = {}
    markets = frame["market"].to_numpy()
    for market in s.rent.markets:
        idx = np.flatnonzero(markets == market)
        table = price[idx]
        per_market[market] = table
        if idx.size:
            best = np.argmin(table, axis=0)
            found = np.isfinite(table[best, np.arange(n.shape[1])])
            rows[market] = np.where(found, idx[best], -1)
        else:
            rows[market] = np.full(n.shape[1], -1)
    return _MarketPrices(frame, per_market, rows)


def _offer_document(r: Mapping[str, Any], used_price: float) -> dict[str, Any]:
    """One offer of the frame (a record), with the price per GPU-hour a size actually uses."""
    return {
        "provider": r["provider"],
        "instance": r["instance"],
        "region": r["region"],
        "market": r["market"],
        "gpu_count": float(r["gpu_count"]),
        "usd_per_hour": float(r["usd_per_hour"]),
        "usd_per_gpu_hour": float(r["usd_per_gpu_hour"]),
        "usd_per_used_gpu_hour": used_price,
        "observed_at": _iso(r["observed_at"]),
        "source": r["source"],
        "is_snapshot": bool(r["is_snapshot"]),
        "stale": bool(r["stale"]),
    }


# --- the cost model shared by the base case, the Monte Carlo and the sensitivity ----------------


def _costs(
    *,
    s: Scenario,
    gpus: Any,
    nodes: Any,
    tokens_per_s: Any,
    rent_price: Any,
    reserved: Any,
    spot_lost: Any,
    floating: Any,
    break_even_price: Any,
    hw: _Hardware | None,
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, np.ndarray]:
    """Cost per run renting and owning, owned $/GPU-hour and break-even, broadcast over every argument.

    ``overrides`` replaces scenario inputs (sensitivity): utilization, tokens, capex_per_node,
    power_usd_per_kwh, pue, colo_usd_per_kw_month, support_fraction_per_year, discount_rate,
    years, residual_fraction, staff_usd_per_year, rent_factor, throughput_factor."""
    o = dict(overrides or {})
    b = s.buy
    u = np.minimum(np.asarray(o.get("utilization", s.utilization), dtype=float), 1.0)
    years = o.get("years", b.years)
    rate = o.get("discount_rate", b.discount_rate)
    level = ec.levelized_rent_usd_per_gpu_hour(
        usd_per_gpu_hour=1.0, decline_per_year=s.rent.price_decline_per_year, discount_rate=rate, years=years
    )
    rent_factor = np.asarray(o.get("rent_factor", 1.0), dtype=float)
    tps = np.asarray(tokens_per_s, dtype=float) * np.asarray(o.get("throughput_factor", 1.0), dtype=float)
    tokens = float(s.workload.tokens or 0.0) * np.asarray(o.get("tokens_factor", 1.0), dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        run_hours = tokens / tps / ec.SECONDS_PER_HOUR
    price = np.asarray(rent_price, dtype=float) * rent_factor * np.where(floating, level, 1.0)
    rent_rate = np.where(reserved, ec.committed_usd_per_busy_gpu_hour(usd_per_gpu_hour=price, utilization=u), price)
    rent_hours = ec.spot_wall_hours(run_hours=run_hours, lost_fraction=spot_lost)
    out = {
        "run_hours": run_hours,
        "rent_hours": rent_hours,
        "rent_rate": rent_rate,
        "rent_usd_per_run": ec.usd_per_run(gpus=gpus, run_hours=rent_hours, usd_per_gpu_hour=rent_rate),
        "level": level,
    }
    if hw is None:
        return out
    n_nodes = np.asarray(nodes, dtype=float)
    per_node = np.asarray(o.get("capex_per_node", hw.capex_per_node), dtype=float)
    capex = n_nodes * (per_node + np.where(n_nodes > 1, hw.fabric_per_node, 0.0))
    pue = o.get("pue", b.pue)
    kwh = o.get("power_usd_per_kwh", b.power_usd_per_kwh)
    gpn = s.network.gpus_per_node
    fixed = ec.yearly_fixed_cost_usd(
        capex_usd=capex,
        years=years,
        discount_rate=rate,
        residual_fraction=o.get("residual_fraction", b.residual_fraction),
        contracted_kw=n_nodes * hw.load_kw_per_node,
        colo_usd_per_kw_month=o.get("colo_usd_per_kw_month", b.colo_usd_per_kw_month),
        support_fraction_per_year=o.get("support_fraction_per_year", b.support_fraction_per_year),
        staff_usd_per_year=o.get("staff_usd_per_year", b.staff_usd_per_year),
        software_usd_per_year=b.software_usd_per_gpu_year * n_nodes * gpn,
        idle_kw=n_nodes * hw.idle_kw_per_node,
        pue=pue,
        power_usd_per_kwh=kwh,
    )
    variable = ec.variable_usd_per_gpu_hour(
        load_kw_per_gpu=hw.load_kw_per_node / gpn,
        idle_kw_per_gpu=hw.idle_kw_per_node / gpn,
        pue=pue,
        power_usd_per_kwh=kwh,
    )
    owned = ec.owned_usd_per_gpu_hour(
        yearly_fixed_usd=fixed, gpus=gpus, utilization=u, variable_usd_per_gpu_hour=variable
    )
    be_price = np.asarray(break_even_price, dtype=float) * rent_factor * level
    out.update(
        capex=capex,
        yearly_fixed=fixed,
        variable=variable,
        owned_rate=owned,
        own_usd_per_run=ec.usd_per_run(gpus=gpus, run_hours=run_hours, usd_per_gpu_hour=owned),
        break_even=ec.break_even_utilization(
            yearly_fixed_usd=fixed, gpus=gpus, rent_usd_per_gpu_hour=be_price, variable_usd_per_gpu_hour=variable
        ),
    )
    return out


# --- the pipeline ------------------------------------------------------------------------------


def _calibration_document(calibration: Calibration) -> dict[str, Any]:
    return {"name": calibration.name, "runs": calibration.runs, "loo_mape": calibration.loo_mape}


def _knee(gpus: np.ndarray, tps: np.ndarray, feasible: np.ndarray) -> tuple[int | None, int | None, float | None]:
    """(index of the knee size, index of the next fitting size, that step's marginal efficiency)."""
    idx = np.flatnonzero(feasible)
    if not idx.size:
        return None, None, None
    knee = int(idx[0])
    for prev, nxt in itertools.pairwise(idx):
        marginal = (tps[nxt] / tps[prev]) / (gpus[nxt] / gpus[prev])
        if not marginal >= KNEE_MARGINAL_EFFICIENCY:
            return knee, int(nxt), float(marginal)
        knee = int(nxt)
    return knee, None, None


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
    market = _offers(s, gpus)
    hw = _hardware(s, warnings)
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
    all_markets = _costs(
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
    per_run = _inf_if_not_finite(all_markets["rent_usd_per_run"]).reshape(len(markets), len(gpus))
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
    base = _costs(
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
    mc = _costs(
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
    stacked = np.stack(np.broadcast_arrays(*(_inf_if_not_finite(mc[k]) for k in sampled)))
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
                "offer": _offer_document({c: v[row] for c, v in columns.items()}, float(used_price[m][i])),
                "usd_per_busy_gpu_hour": _num(cost["rent_rate"][i]),
                "wall_hours": _num(cost["rent_hours"][i]),
                "usd_per_run": _num(cost["rent_usd_per_run"][i]),
            }
            if m == "spot":
                by_market[m]["lost_fraction"] = float(spot_lost[i])
        head = markets[headline[i]] if markets and has_rent[i] and ok else None
        rent_doc = {
            "market": head,
            "offer": by_market[head]["offer"] if head else None,
            "usd_per_run": _num(base["rent_usd_per_run"][i]) if head else None,
            "usd_per_run_p10": _num(rent_q[0][i]) if head else None,
            "usd_per_run_p50": _num(rent_q[1][i]) if head else None,
            "usd_per_run_p90": _num(rent_q[2][i]) if head else None,
            "by_market": by_market,
        }
        if hw is not None:
            be = float(base["break_even"][i])
            be_ok = ok and math.isfinite(be) and be <= 1.0
            buy_doc: dict[str, Any] = {
                "capex_usd": float(base["capex"][i]),
                "usd_per_year": float(base["yearly_fixed"][i]),
                "variable_usd_per_busy_gpu_hour": float(base["variable"]),
                "usd_per_gpu_hour_at_utilization": _num(base["owned_rate"][i]),
                "usd_per_run": _num(base["own_usd_per_run"][i]) if ok else None,
                "usd_per_run_p10": _num(own_q[0][i]) if ok and own_q is not None else None,
                "usd_per_run_p50": _num(own_q[1][i]) if ok and own_q is not None else None,
                "usd_per_run_p90": _num(own_q[2][i]) if ok and own_q is not None else None,
                "break_even_against": {"market": be_market[i] or None, "usd_per_gpu_hour": _num(be_price[i])},
                "break_even_utilization": be if be_ok else None,
                "break_even_hours_per_year": be * ec.HOURS_PER_YEAR if be_ok else None,
                "break_even_utilization_p10": _fraction(be_q[0][i]) if be_q is not None and ok else None,
                "break_even_utilization_p50": _fraction(be_q[1][i]) if be_q is not None and ok else None,
                "break_even_utilization_p90": _fraction(be_q[2][i]) if be_q is not None and ok else None,
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
                "memory_per_gpu_gb": _num(p.memory_per_gpu_gb[keep][i]),
                "step_time_s": _num(p.step_time_s[keep][i]) if ok else None,
                "tokens_per_s": _num(tps[i]) if ok else None,
                "mfu": _num(p.mfu[keep][i]) if ok else None,
                "scaling_efficiency": _num(p.scaling_efficiency[keep][i]) if ok else None,
                "run_hours": _num(base["run_hours"][i]) if ok else None,
                "run_hours_p10": _num(run_q[0][i]) if ok else None,
                "run_hours_p50": _num(run_q[1][i]) if ok else None,
                "run_hours_p90": _num(run_q[2][i]) if ok else None,
                "rent": rent_doc,
                "buy": buy_doc,
            }
        )

    # Recommendation.
    knee, beyond, beyond_eff = _knee(gpus, tps, feasible)
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
                f"{_n_gpus(rec_gpus)} is the knee of the scaling curve: going to {int(gpus[beyond])} would deliver "
                f"only {_pct(beyond_eff)} of the ideal speed-up, below the {_pct(KNEE_MARGINAL_EFFICIENCY)} threshold."
            )
        elif knee == int(np.flatnonzero(feasible)[-1]) and np.count_nonzero(feasible) > 1:
            reasons.append(
                f"{_n_gpus(rec_gpus)}, the largest candidate, still scales at {_pct(eff)} per-GPU efficiency; "
                f"every step up kept at least {_pct(KNEE_MARGINAL_EFFICIENCY)} of the ideal speed-up."
            )
        else:
            reasons.append(f"{_n_gpus(rec_gpus)} is the only candidate size that holds the model.")
        if doc["run_hours"] is not None:
            busy = w.runs_per_year * doc["run_hours"] / ec.HOURS_PER_YEAR  # type: ignore[operator]
            reasons.append(
                f"One run of {w.tokens:.3g} tokens takes {doc['run_hours']:,.0f} hours "
                f"(P10-P90 {doc['run_hours_p10']:,.0f}-{doc['run_hours_p90']:,.0f}); {w.runs_per_year:g} runs a year "
                f"keep the cluster busy {_pct(busy)} of the year."
            )
            if busy > s.utilization:
                warnings.append(
                    f"{w.runs_per_year:g} runs a year need {_pct(busy)} of the year on {_n_gpus(rec_gpus)}, more than "
                    f"the {_pct(s.utilization)} utilization assumed for owning (/utilization)."
                )
            if busy > 1:
                warnings.append(
                    f"{w.runs_per_year:g} runs a year of {doc['run_hours']:,.0f} hours on {_n_gpus(rec_gpus)} need "
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
                f"Renting {MARKET_PHRASES[doc['rent']['market']]} ({' '.join(where)}) costs {_money(rent_run)} a run "
                f"at {_money(offer['usd_per_used_gpu_hour'])} per GPU-hour."
            )
        if own_run is not None:
            be = doc["buy"]["break_even_utilization"]
            raw_be = float(base["break_even"][knee])
            if be is not None:
                hours = doc["buy"]["break_even_hours_per_year"]
                be_words = f"break-even is {_pct(be)} utilization ({hours:,.0f} hours a year)"
            elif math.isfinite(raw_be):
                be_words = f"break-even would need {_pct(raw_be)} utilization, more than the whole year"
            else:
                be_words = "the rental price does not even cover the owned energy cost, so owning never breaks even"
            reasons.append(
                f"At {_pct(s.utilization)} utilization an owned GPU-hour costs "
                f"{_money(doc['buy']['usd_per_gpu_hour_at_utilization'])} and a run {_money(own_run)}; {be_words}."
            )
            if be is None or s.utilization < be:
                warnings.append(
                    f"Utilization {_pct(s.utilization)} is below break-even "
                    f"({'never' if be is None else _pct(be)}) on {_n_gpus(rec_gpus)}: owning costs more than renting."
                )
        cheapest = _cheapest_size(size_docs)
        if cheapest is not None and cheapest[0] != rec_gpus:
            n_cheap, usd_cheap, how = cheapest
            reasons.append(
                f"If the run time does not matter, {_n_gpus(n_cheap)} is the cheapest per run "
                f"({_money(usd_cheap)} {how}) but takes longer or scales worse."
            )
        if action is None:
            reasons.append("Neither renting nor owning could be priced: no offers and no hardware quote.")
        else:
            reasons.append(f"Recommendation: {action} {_n_gpus(rec_gpus)}.")
    recommendation = {
        "action": action,
        "gpus": rec_gpus,
        "reasons": reasons,
        "knee_threshold": KNEE_MARGINAL_EFFICIENCY,
    }

    # Warnings about the inputs and the predictions.
    if fits_one:
        warnings.append(
            f"The model fits on one {spec.id} ({_num(p.memory_per_gpu_gb[0]):.0f} GB of {spec.memory_gb:g} GB): "
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
                f"from {_n_gpus(gpus[a])} in one node to {int(gpus[b])} across nodes delivers {_pct(step)} of the "
                "ideal speed-up."
            )
    freshness = _json_safe(selectors.price_freshness(gpu=s.gpu))
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
        warnings.append(f"Spot is not usable from {_n_gpus(too_big)}: interruptions come faster than restarts.")
    prices_as_of, freshness["kind"] = _prices_as_of(s, size_docs, freshness, now)

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
        sensitivity = _sensitivity(
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

    assumptions = _assumptions(s)
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
        calibration=_calibration_document(calibration),
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


def _cheapest_size(size_docs: list[dict[str, Any]]) -> tuple[int, float, str] | None:
    """(GPUs, USD, "rented"/"owned") of the lowest cost per run over every size and both options."""
    options = [
        (d[side]["usd_per_run"], d["gpus"], word)
        for d in size_docs
        for side, word in (("rent", "rented"), ("buy", "owned"))
        if d[side]["usd_per_run"] is not None
    ]
    if not options:
        return None
    usd, n, word = min(options)
    return n, usd, word


def _prices_as_of(
    s: Scenario, size_docs: list[dict[str, Any]], freshness: Mapping[str, Any], now: dt.datetime
) -> tuple[str | None, str]:
    """(date of the oldest price used, kind: manual | live | snapshot | mixed | none).

    Undated snapshot rows fall back to the snapshot's compile date (the prices are no newer than that)."""
    if s.rent.usd_per_gpu_hour is not None:
        return _iso(now.date()), "manual"
    used = [d["rent"]["offer"] for d in size_docs if d["rent"]["offer"]]
    if not used:
        return None, "none"
    snapshot = {bool(o["is_snapshot"]) for o in used}
    kind = "mixed" if len(snapshot) == 2 else "snapshot" if True in snapshot else "live"
    dated = sorted(o["observed_at"] for o in used if o["observed_at"])
    if dated:
        return dated[0][:10], kind
    return freshness.get("snapshot_compiled_on"), kind


# Inputs of the tornado: label, unit, scenario override key.
_SENSITIVITY_INPUTS: Final[tuple[tuple[str, str, str], ...]] = (
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


def _sensitivity(
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
    hw: _Hardware,
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
    keys = [k for _, _, k in _SENSITIVITY_INPUTS]
    cases = 1 + 2 * len(keys)
    columns = {k: np.full(cases, v, dtype=float) for k, v in base_values.items()}
    for j, k in enumerate(keys):
        columns[k][1 + 2 * j] = base_values[k] * (1 - SENSITIVITY_STEP)
        columns[k][2 + 2 * j] = base_values[k] * (1 + SENSITIVITY_STEP)
    columns["utilization"] = np.minimum(columns["utilization"], 1.0)
    columns["pue"] = np.maximum(columns["pue"], 1.0)
    columns["residual_fraction"] = np.minimum(columns["residual_fraction"], 1.0)
    out = _costs(
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
    for j, (label, unit, k) in enumerate(_SENSITIVITY_INPUTS):
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


def _assumptions(s: Scenario, *, catalog: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Each default the scenario relied on, with its value, unit and source."""
    from advisor.scenario import DEFAULTS

    catalog = catalog or {}
    normalized = s.to_dict()

    def value_at(where: str) -> Any:
        node: Any = normalized
        for part in where.strip("/").split("/"):
            node = node.get(part) if isinstance(node, dict) else None
        return node

    out = []
    for where in s.defaults_used:
        if where in DEFAULTS:
            d = DEFAULTS[where]
            out.append({"pointer": where, "value": value_at(where), "unit": d.unit, "source": d.source})
        elif where.startswith("/buy/"):
            if not catalog:
                catalog = selectors.ownership_defaults()
            row = catalog.get(where.removeprefix("/buy/"), {})
            out.append(
                {
                    "pointer": where,
                    "value": value_at(where),
                    "unit": row.get("unit"),
                    "source": row.get("source"),
                    "as_of": _iso(row.get("as_of")),
                }
            )
    return out


__all__ = ["Advice", "ScenarioError", "advise", "ownership_defaults"]
