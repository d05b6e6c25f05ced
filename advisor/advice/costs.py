"""The cost model shared by the base case, the Monte Carlo and the sensitivity: cost per run renting
and owning, owned USD per GPU-hour and break-even, broadcast over every argument."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from advisor import economics as ec
from advisor.advice.ownership import Hardware
from advisor.advice.recommendation import scenario_runs_judged
from advisor.cash_flow import purchase_usd
from advisor.scenario import Scenario
from estimator.prediction import step_floored_tokens_per_s


def implied_utilization(*, runs_per_year: float, run_hours: Any) -> np.ndarray:
    """The fraction of the year the runs keep a cluster busy: min(1, runs_per_year x run_hours / 8760); 0 where
    the run time is unknown (the size does not fit), so nothing downstream divides by it unnoticed."""
    busy = ec.busy_share(runs_per_year=runs_per_year, run_hours=run_hours)
    return np.where(np.isfinite(busy), np.minimum(busy, 1.0), 0.0)


def rent_level(*, s: Scenario, overrides: Mapping[str, Any] | None = None) -> Any:
    """The factor that levelizes an on-demand or spot price over the ownership horizon (the scenario's yearly
    price decline, discounted at its rate over its years; 1 without a decline). ``overrides``: years,
    discount_rate."""
    o = overrides or {}
    return ec.levelized_rent_usd_per_gpu_hour(
        usd_per_gpu_hour=1.0,
        decline_per_year=s.rent.price_decline_per_year,
        discount_rate=o.get("discount_rate", s.buy.discount_rate),
        years=o.get("years", s.buy.years),
    )


def ownership_costs(
    *, s: Scenario, nodes: Any, hw: Hardware, overrides: Mapping[str, Any] | None = None, spans_nodes: bool = True
) -> dict[str, np.ndarray]:
    """What owning ``nodes`` nodes costs, broadcast over ``nodes`` and the overrides: ``capex`` (the fabric only
    when the cluster spans nodes), ``yearly_fixed`` (paid whether busy or not: capex annuity, colocation,
    support, staff, software, idle energy) and ``variable`` (the energy of a busy GPU-hour over idle).
    ``overrides``: capex_per_node, power_usd_per_kwh, pue, colo_usd_per_kw_month, support_fraction_per_year,
    discount_rate, years, residual_fraction, staff_usd_per_year. ``spans_nodes``: the work crosses nodes
    (cash_flow.carries_fabric; a training cluster does, the default)."""
    o = overrides or {}
    b = s.buy
    n_nodes = np.asarray(nodes, dtype=float)
    per_node = np.asarray(o.get("capex_per_node", hw.capex_per_node), dtype=float)
    capex = purchase_usd(
        nodes=n_nodes, usd_per_node=per_node, fabric_per_node=hw.fabric_per_node, spans_nodes=spans_nodes
    )
    pue = o.get("pue", b.pue)
    kwh = o.get("power_usd_per_kwh", b.power_usd_per_kwh)
    gpn = s.network.gpus_per_node
    fixed = ec.yearly_fixed_cost_usd(
        capex_usd=capex,
        years=o.get("years", b.years),
        discount_rate=o.get("discount_rate", b.discount_rate),
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
    return {"capex": capex, "yearly_fixed": fixed, "variable": np.asarray(variable, dtype=float)}


def tokens_per_step(s: Scenario) -> float:
    """Tokens one optimizer step of the scenario's training run processes: global_batch sequences of seq_len."""
    return float(s.workload.global_batch or 0) * float(s.workload.model.seq_len or 0)


def costs(
    *,
    s: Scenario,
    gpus: Any,
    nodes: Any,
    tokens_per_s: Any,
    rent_price: Any,
    term_years: Any,
    spot_lost: Any,
    floating: Any,
    break_even_price: Any,
    hw: Hardware | None,
    overrides: Mapping[str, Any] | None = None,
    break_even_committed: Any = False,
) -> dict[str, np.ndarray]:
    """Cost per run renting and owning, owned $/GPU-hour and break-even, broadcast over every argument.

    Utilization: the scenario's, or (``s.utilization`` None) implied per size by ``implied_utilization``.
    ``overrides`` replaces scenario inputs (sensitivity): utilization, tokens, capex_per_node,
    power_usd_per_kwh, pue, colo_usd_per_kw_month, support_fraction_per_year, discount_rate,
    years, residual_fraction, staff_usd_per_year, rent_factor, throughput_factor. ``term_years``: the reserved
    term's years where the price is a term's (billed every hour), 0 elsewhere. ``break_even_committed``: where
    the break-even price is a reserved term's (billed every hour), economics.break_even_against_term."""
    o = dict(overrides or {})
    level = rent_level(s=s, overrides=o)
    rent_factor = np.asarray(o.get("rent_factor", 1.0), dtype=float)
    # A throughput draw or sensitivity end faster than the step floor runs at the floor, as the prediction does.
    tps = step_floored_tokens_per_s(
        tokens_per_s=np.asarray(tokens_per_s, dtype=float) * np.asarray(o.get("throughput_factor", 1.0), dtype=float),
        tokens_per_step=tokens_per_step(s),
    )
    tokens = float(s.workload.tokens or 0.0) * np.asarray(o.get("tokens_factor", 1.0), dtype=float)
    run_hours = ec.run_hours(tokens=tokens, tokens_per_s=tps, tokens_per_step=tokens_per_step(s))
    given_u = o.get("utilization", s.utilization)
    u = (
        implied_utilization(runs_per_year=float(s.workload.runs_per_year or 0.0), run_hours=run_hours)
        if given_u is None
        else np.minimum(np.asarray(given_u, dtype=float), 1.0)
    )
    # A term is billed every hour: where the runs need more than one cluster-year, every side-by-side term is paid
    # in full, not only the run hours of a cluster capped at busy all year; below one run a year, the terms bought
    # for the run where that is cheaper (economics.term_utilization).
    reserved = np.asarray(term_years, dtype=float) > 0
    term_u = (
        ec.term_utilization(
            runs_per_year=float(s.workload.runs_per_year or 0.0), run_hours=run_hours, term_years=term_years
        )
        if given_u is None
        else u
    )
    price = np.asarray(rent_price, dtype=float) * rent_factor * np.where(floating, level, 1.0)
    rent_rate = np.where(
        reserved, ec.committed_usd_per_busy_gpu_hour(usd_per_gpu_hour=price, utilization=term_u), price
    )
    rent_hours = ec.spot_wall_hours(run_hours=run_hours, lost_fraction=spot_lost)
    out = {
        "run_hours": run_hours,
        "rent_hours": rent_hours,
        "rent_rate": rent_rate,
        "rent_usd_per_run": ec.usd_per_run(gpus=gpus, run_hours=rent_hours, usd_per_gpu_hour=rent_rate),
        "level": level,
        "utilization": np.broadcast_arrays(u, run_hours)[0],
    }
    if hw is None:
        return out
    owning = ownership_costs(s=s, nodes=nodes, hw=hw, overrides=o)
    fixed, variable = owning["yearly_fixed"], owning["variable"]
    owned = ec.owned_usd_per_gpu_hour(
        yearly_fixed_usd=fixed, gpus=gpus, utilization=u, variable_usd_per_gpu_hour=variable
    )
    # Levelized like the rent it stands for: a reserved term's price does not decline over the term (a regression
    # probe: the term's break-even used the declining price while its cost did not).
    be_price = np.asarray(break_even_price, dtype=float) * rent_factor * np.where(break_even_committed, 1.0, level)
    out.update(
        capex=owning["capex"],
        yearly_fixed=fixed,
        yearly_fixed_per_gpu=np.broadcast_arrays(fixed / np.asarray(gpus, dtype=float), owned)[0],
        break_even_price=np.broadcast_arrays(be_price, owned)[0],  # the price break-even is measured against
        variable=variable,
        owned_rate=owned,
        own_usd_per_run=ec.usd_per_run(gpus=gpus, run_hours=run_hours, usd_per_gpu_hour=owned),
        break_even=ec.break_even_for_market(
            yearly_fixed_usd=fixed,
            gpus=gpus,
            price_usd_per_gpu_hour=be_price,
            variable_usd_per_gpu_hour=variable,
            committed=break_even_committed,
        ),
    )
    runs = scenario_runs_judged(s)
    if runs is not None:
        # The own option where one cluster cannot finish the year's runs: own it, rent the rest (buy.overflow). Its
        # band and sensitivity move the owned and the rented runs together (a hostile probe, F1: both described the
        # owned runs alone, $9,569,931 a run, beside an own option priced at $10,747,456).
        out["own_with_overflow_usd_per_run"] = ec.own_with_overflow(
            runs_per_year=runs,
            run_hours=run_hours,
            gpus=gpus,
            yearly_fixed_usd=fixed,
            variable_usd_per_gpu_hour=variable,
            rent_usd_per_run=out["rent_usd_per_run"],
        )[3]
    return out


def cumulative_document(
    *,
    gpus: int | None,
    months: int,
    rent_usd_per_month: float,
    rent_decline_per_year: float,
    capex_usd: float,
    own_usd_per_month: float,
    residual_usd: float,
    rent_committed_usd_per_month: float = 0.0,
) -> dict[str, Any]:
    """The Advice's ``cumulative_cost``: renting and owning paid month by month over the horizon, and the month
    owning becomes the cheaper (training and inference alike). ``rent_committed_usd_per_month``: rent on a reserved
    term besides ``rent_usd_per_month``, whose price does not decline (an inference base)."""
    rent_cum, own_cum = ec.cumulative_cost_by_month(
        months=months,
        rent_usd_per_month=rent_usd_per_month,
        rent_decline_per_year=rent_decline_per_year,
        capex_usd=capex_usd,
        own_usd_per_month=own_usd_per_month,
        residual_usd=residual_usd,
    )
    rent_cum = rent_cum + rent_committed_usd_per_month * np.arange(months + 1, dtype=np.float64)
    return {
        "gpus": gpus,
        "months": list(range(months + 1)),
        "rent_usd": rent_cum,
        "buy_usd": own_cum,
        "crossover_month": ec.crossover_month(rent_cumulative_usd=rent_cum, own_cumulative_usd=own_cum),
    }
