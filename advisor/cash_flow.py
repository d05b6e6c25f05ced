"""Yearly cash and present cost of renting and of buying, read off an Advice (pure functions, no Django).

The Advice carries the month-by-month cumulative cash of both options at the recommended size
(``cumulative_cost``, from ``economics.cumulative_cost_by_month``) and their present cost over the
horizon (``npv``, from ``economics.npv_rent_and_own_usd``). An approver reads years, not months: this
module cuts the monthly series into years and discounts each year's cash at the scenario's rate, with
the same conventions as the economics code (capex paid at month 0, running costs and rent at each
year's end, the residual value back in the last month). Over whole years the discounted years add up to the
Advice's ``npv`` exactly, with or without a rental price decline (both step the price once a year).

Everything here is derived from the stored Advice alone, so a frozen proposal's figures never move.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from advisor import economics as ec
from advisor import formatting as fmt
from advisor.economics import HOURS_PER_YEAR, MONTHS_PER_YEAR

# The stated runs' rent is said beside a rent amount when it is below the amount by more than this share (both are
# priced on the first year's basis, so only the work the utilization assumes beyond the runs moves them apart).
STATED_RUNS_TOLERANCE = 0.1
# The pointers whose defaults change what the utilization and the runs a year are said to be (Scenario.defaults_used,
# the Advice's assumptions).
UTILIZATION_POINTER: Final[str] = "/utilization"
RUNS_POINTER: Final[str] = "/workload/runs_per_year"


def defaulted_sources(*, advice: Mapping[str, Any]) -> dict[str, str]:
    """{pointer: source} of each default an Advice used, read off its ``assumptions`` (a stored document keeps them,
    so a frozen proposal says what its advice said)."""
    return {str(row.get("pointer")): str(row.get("source") or "") for row in advice.get("assumptions") or []}


def utilization_basis(*, utilization: float | None, runs_per_year: float | None, defaulted: Mapping[str, str]) -> str:
    """Where the utilization owning is priced at came from, the one definition every wording uses: "given",
    "implied by 4 runs a year" (none given: each size's share of the year its runs keep it busy), or "default: DESIGN.md
    example" with the default's source (DESIGN.md: the one used is given or implied by runs_per_year; with neither,
    the default stands in). ``defaulted``: {pointer: source} of the defaults used (an outsider's probe: a defaulted 60%
    read "(given)")."""
    if utilization is None:
        return f"implied by {fmt.runs_a_year(runs_per_year)}"
    if UTILIZATION_POINTER in defaulted:
        # The source's first clause names it; the rest of /utilization's says when the default does not apply.
        return f"default: {defaulted[UTILIZATION_POINTER].split(';')[0].strip()}"
    return "given"


def runs_origin(*, defaulted: Mapping[str, str]) -> str:
    """ "default" where /workload/runs_per_year was not given, else "stated": said before the runs a year."""
    return "default" if RUNS_POINTER in defaulted else "stated"


def carries_fabric(*, nodes: Any, spans_nodes: Any = True) -> Any:
    """THE rule for whether an owned cluster buys the scale-out fabric (InfiniBand): it has more than one node and
    the work on it crosses nodes (a training run on several nodes, an inference replica wider than one server's
    scale-up domain). Replicas that each fit in one server never talk to each other: no fabric. Every surface prices
    by it (training, the inference advice's owned option, the fleet): a finance probe found the same 32 owned H100s at
    $1,268,000 in a service's advice (no fabric) and $1,565,432 in the fleet serving the same traffic (fabric)."""
    return (np.asarray(nodes, dtype=float) > 1) & np.asarray(spans_nodes, dtype=bool)


def fabric_words(*, carried: bool, why: str) -> str:
    """The sentence each surface says beside its capex: whether it includes the fabric, and ``why`` (the work)."""
    return f"capex includes the scale-out (InfiniBand) fabric: {why}" if carried else f"no scale-out fabric: {why}"


def purchase_usd(*, nodes: Any, usd_per_node: Any, fabric_per_node: Any, spans_nodes: Any = True) -> Any:
    """What buying ``nodes`` whole nodes costs up front: each node's price, plus the network fabric per node where
    ``carries_fabric`` (``spans_nodes``: the work crosses nodes; training's cluster runs one job across them, the
    default). Broadcast over numpy arrays; advisor.advice.costs.ownership_costs prices with it."""
    n_nodes = np.asarray(nodes, dtype=float)
    fabric = np.where(carries_fabric(nodes=n_nodes, spans_nodes=spans_nodes), fabric_per_node, 0.0)
    return n_nodes * (np.asarray(usd_per_node, dtype=float) + fabric)


def fleet_purchase(*, plan: Mapping[str, Any]) -> dict[str, Any] | None:
    """The purchase a Fleet Plan asks to approve: its owned GPUs as whole nodes at the hardware quote (the fabric
    per node when they span nodes). None when it owns nothing or has no hardware quote."""
    owned = int((plan.get("recommendation") or {}).get("owned_gpus") or 0)
    prices = plan.get("tier_prices") or {}
    quote, per_node = prices.get("hardware_quote") or {}, int(prices.get("gpus_per_node") or 0)
    if owned <= 0 or per_node <= 0 or quote.get("usd") is None:
        return None
    nodes = math.ceil(owned / per_node)
    # Plans issued before the fleet said whether it buys the fabric bought it at every multi-node size.
    spans = bool(prices.get("owned_scale_out_fabric", True))
    fabric = float(quote.get("networking_usd_per_node") or 0.0) if spans else 0.0
    return {
        "gpus": owned,
        "nodes": nodes,
        "gpus_per_node": per_node,
        "usd_per_node": float(quote["usd"]),
        "fabric_per_node": fabric if nodes > 1 else 0.0,
        "usd": float(purchase_usd(nodes=nodes, usd_per_node=quote["usd"], fabric_per_node=fabric)),
    }


def _year_rows(*, rent: Sequence[float], buy: Sequence[float], discount_rate: float) -> list[dict[str, float | int]]:
    months = len(rent) - 1
    rows: list[dict[str, float | int]] = [
        {
            "year": 0,
            "rent_usd": float(rent[0]),
            "buy_usd": float(buy[0]),
            "rent_present_usd": float(rent[0]),
            "buy_present_usd": float(buy[0]),
        }
    ]
    for year in range(1, math.ceil(months / MONTHS_PER_YEAR) + 1):
        start, end = (year - 1) * MONTHS_PER_YEAR, min(year * MONTHS_PER_YEAR, months)
        factor = (1.0 + discount_rate) ** (-end / MONTHS_PER_YEAR)
        rent_cash, buy_cash = float(rent[end] - rent[start]), float(buy[end] - buy[start])
        rows.append(
            {
                "year": year,
                "rent_usd": rent_cash,
                "buy_usd": buy_cash,
                "rent_present_usd": rent_cash * factor,
                "buy_present_usd": buy_cash * factor,
            }
        )
    return rows


def yearly_totals(*, advice: Mapping[str, Any]) -> dict[str, Any] | None:
    """Cash and present cost per year (year 0 = the purchase) and over the horizon, renting vs buying.

    None when the Advice has no cash-flow series (no recommendation, or no price to compare)."""
    cumulative = advice.get("cumulative_cost") or None
    if not cumulative or not cumulative.get("rent_usd") or not cumulative.get("buy_usd"):
        return None
    buy_terms = (advice.get("scenario") or {}).get("buy") or {}
    npv = advice.get("npv") or {}
    discount_rate = float(npv.get("discount_rate", buy_terms.get("discount_rate", 0.0)))
    rows = _year_rows(rent=cumulative["rent_usd"], buy=cumulative["buy_usd"], discount_rate=discount_rate)
    total = {key: sum(float(row[key]) for row in rows) for key in rows[0] if key != "year"}
    totals = {
        "gpus": cumulative.get("gpus"),
        "discount_rate": discount_rate,
        "horizon_years": (len(cumulative["rent_usd"]) - 1) / MONTHS_PER_YEAR,
        "rent_market": cumulative.get("rent_market"),
        "years": rows,
        "total": total,
    }
    compared = "the monthly costs" if advice.get("kind") == "inference" else "the costs per run"
    return {**totals, "basis": decision_basis(totals=totals, compared=compared)}


def decision_basis(*, totals: Mapping[str, Any], compared: str = "the costs per run") -> str:
    """What the cash and present-cost columns of ``yearly_totals`` mean for the decision, in one sentence, and, when
    the undiscounted cash favours the other option than the present cost, that it does and why.

    The decision compares cost per run with owning as a yearly annuity at the discount rate: the comparison of
    present costs. The cash columns are undiscounted, so buying (paid up front) can cost less cash over the horizon
    and more in present cost (an outsider's probe: the 70B example said "Rent" under a chart and cash table where
    buying cost less, and nothing said which figures decide)."""
    rate = f"{float(totals['discount_rate']) * 100:g}%"
    total = totals["total"]
    text = (
        f"Cash columns and the cumulative chart are undiscounted; the decision compares present costs "
        f"(discounted at {rate} a year), the same comparison as {compared}."
    )
    cash_buy_cheaper = total["buy_usd"] < total["rent_usd"]
    present_buy_cheaper = total["buy_present_usd"] < total["rent_present_usd"]
    if cash_buy_cheaper != present_buy_cheaper:
        cheaper, dearer = ("buying", "renting") if cash_buy_cheaper else ("renting", "buying")
        text += (
            f" Here {cheaper} costs less cash over the horizon but more in present cost than {dearer}: buying pays "
            "its purchase up front, while renting's payments come later and count for less once discounted."
        )
    return text


def stated_runs_share(*, advice: Mapping[str, Any]) -> tuple[float, float] | None:
    """(runs a year, the share of the year they keep the recommended size busy) of a training Advice: the stated
    workload alone. None without runs_per_year or a run time."""
    runs = (((advice.get("scenario") or {}).get("workload")) or {}).get("runs_per_year")
    gpus = (advice.get("recommendation") or {}).get("gpus")
    size = next((d for d in advice.get("sizes") or [] if d.get("gpus") == gpus), None)
    hours = (size or {}).get("run_hours")
    if not runs or hours is None:
        return None
    return float(runs), float(runs) * float(hours) / HOURS_PER_YEAR


def buy_at_stated_runs(
    *, size: Mapping[str, Any], runs_per_year: float | None, given_utilization: float | None
) -> dict[str, float] | None:
    """When owning a size wins only at a given utilization above the share of the year its stated runs keep it busy:
    the runs' own share and owning's cost per run there against renting's. None when no utilization was given, the
    runs fill at least the given share, or owning still costs no more than renting at the runs' own share.

    Owned cost per busy GPU-hour is A / (N x 8760 x u) + v (economics.owned_usd_per_gpu_hour), so its fixed part at
    the runs' share b is the priced one scaled by u / b (a finance approver: a $25M buy at 80% given, where 6 runs
    keep 512 GPUs busy 72.8% against a 77% break-even, and nothing said the stated work alone would rent)."""
    buy, rent = size.get("buy") or {}, size.get("rent") or {}
    figures = (
        size.get("run_hours"),
        buy.get("usd_per_run"),
        rent.get("usd_per_run"),
        buy.get("usd_per_gpu_hour_at_utilization"),
        buy.get("variable_usd_per_busy_gpu_hour"),
        buy.get("utilization"),
    )
    if given_utilization is None or not runs_per_year or any(f is None for f in figures):
        return None
    hours, own_run, rent_run, rate, variable, priced_at = (float(f) for f in figures if f is not None)
    busy = float(runs_per_year) * hours / HOURS_PER_YEAR
    if busy <= 0 or busy >= priced_at or not rate:
        return None
    own_at_runs = own_run * ((rate - variable) * priced_at / busy + variable) / rate
    if own_at_runs <= rent_run:
        return None
    return {
        "runs_per_year": float(runs_per_year),
        "busy": busy,
        "utilization": priced_at,
        "own_usd_per_run": own_at_runs,
        "rent_usd_per_run": rent_run,
    }


def buy_at_stated_runs_words(*, verdict: Mapping[str, float], defaulted: Mapping[str, str]) -> str:
    """``buy_at_stated_runs`` in one clause, the same in the reasons, the warnings and the proposal's amount; the runs
    and the utilization said to be defaults where they are (``defaulted``: see ``utilization_basis``)."""
    runs, origin = verdict["runs_per_year"], runs_origin(defaulted=defaulted)
    basis = utilization_basis(utilization=verdict["utilization"], runs_per_year=runs, defaulted=defaulted)
    return (
        f"the {origin} {runs:g} run{'' if runs == 1 else 's'} a year keep the GPUs busy {fmt.percent(verdict['busy'])} "
        f"of the year, and at that utilization owning costs ${verdict['own_usd_per_run']:,.0f} a run against "
        f"${verdict['rent_usd_per_run']:,.0f} renting: the {origin} runs alone would rent; buying rests on the "
        f"{fmt.percent(verdict['utilization'])} utilization assumed ({basis}), filled by work not stated"
    )


def _recommended_size(advice: Mapping[str, Any]) -> Mapping[str, Any] | None:
    gpus = (advice.get("recommendation") or {}).get("gpus")
    return next((d for d in advice.get("sizes") or [] if d.get("gpus") == gpus), None)


def overflow_rent_usd_per_year(*, size: Mapping[str, Any]) -> tuple[float, str] | None:
    """(USD a year, words) of the runs an owned size rents beside it where it cannot finish the year's runs
    (buy.overflow, economics.own_with_overflow); None where it finishes them (or the document predates overflow)."""
    overflow = (size.get("buy") or {}).get("overflow")
    if not overflow or not overflow.get("rented_runs"):
        return None
    runs, per_run = float(overflow["rented_runs"]), float(overflow["rented_usd_per_run"])
    usd = runs * per_run
    return usd, (
        f"${usd:,.0f} a year renting the {fmt.runs(runs)} runs a year the owned cluster cannot finish "
        f"(${per_run:,.0f} a run)"
    )


def decision_amount(*, advice: Mapping[str, Any]) -> dict[str, Any] | None:
    """The sum an approver is asked to sign for: the purchase price when buying, the first year's
    rent when renting; with the horizon's cash total of that option beside it. None without a decision.

    Renting, the amount is what the decision compares: GPUs busy the utilization's share of the year (given, or
    implied by the runs). Where that is more than the stated runs need, ``stated_runs_usd`` is what renting them
    alone costs a year, and the label says the difference is the other work the utilization assumes (an outsider's
    probe: the 70B example asked for $18.5M "rent in the first year" where its one run a year rents for $1.7M)."""
    action = (advice.get("recommendation") or {}).get("action")
    totals = yearly_totals(advice=advice)
    if action not in ("buy", "rent") or totals is None:
        return None
    years = totals["years"]
    other = "rent" if action == "buy" else "buy"
    stated: tuple[float, float] | None = None
    overflow_rent: tuple[float, str] | None = None
    scenario = advice.get("scenario") or {}
    runs_per_year = (scenario.get("workload") or {}).get("runs_per_year")
    defaulted = defaulted_sources(advice=advice)
    if action == "buy":
        amount, label = years[0]["buy_usd"], "purchase price, paid up front"
        verdict = buy_at_stated_runs(
            size=_recommended_size(advice) or {},
            runs_per_year=runs_per_year,
            given_utilization=scenario.get("utilization"),
        )
        if verdict is not None:
            label += "; " + buy_at_stated_runs_words(verdict=verdict, defaulted=defaulted)
        overflow_rent = overflow_rent_usd_per_year(size=_recommended_size(advice) or {})
        if overflow_rent is not None:
            label += f"; plus {overflow_rent[1]}"
    else:
        amount = years[1]["rent_usd"] if len(years) > 1 else 0.0
        utilization = (advice.get("cumulative_cost") or {}).get("utilization")
        basis = utilization_basis(
            utilization=scenario.get("utilization"), runs_per_year=runs_per_year, defaulted=defaulted
        )
        label = "rent in the first year" + (
            f", GPUs busy {fmt.percent(utilization)} of the year ({basis})" if utilization is not None else ""
        )
        # Only a given (or defaulted) utilization can stand for more than the runs (an implied one is their share).
        given = scenario.get("utilization") is not None
        share = stated_runs_share(advice=advice) if given and utilization else None
        # On the amount's own basis, the first year's price: the rent scales with the busy hours (a reviewer: the
        # levelized cost per run under a price decline read as 'other work' the utilization does not assume).
        stated = (share[0], float(amount) * share[1] / float(utilization)) if share and utilization else None
        if stated is not None and stated[1] < amount * (1 - STATED_RUNS_TOLERANCE):
            one = stated[0] == 1
            label += (
                f"; the {runs_origin(defaulted=defaulted)} {stated[0]:g} run{'' if one else 's'} a year alone "
                f"rent{'s' if one else ''} for "
                f"${stated[1]:,.0f} a year, the rest is the other work that utilization assumes (owning is "
                "priced for it too)"
            )
        else:
            stated = None
    return {
        "action": action,
        "gpus": totals["gpus"],
        "usd": float(amount),
        "label": label,
        "stated_runs_usd": stated[1] if stated else None,
        # Buying with overflow, the rent a year of the runs the cluster cannot finish: the purchase alone is not the
        # own option's cash (a hostile probe, F1: the cover asked for the purchase and named no yearly rent).
        "overflow_rent_usd_per_year": overflow_rent[0] if overflow_rent else None,
        "horizon_years": totals["horizon_years"],
        "horizon_cash_usd": float(totals["total"][f"{action}_usd"]),
        "horizon_present_usd": float(totals["total"][f"{action}_present_usd"]),
        # The other option over the same horizon, for the cover (a finance approver: page 1 named no alternative).
        "other_action": other,
        "other_horizon_cash_usd": float(totals["total"][f"{other}_usd"]),
        "other_horizon_present_usd": float(totals["total"][f"{other}_present_usd"]),
        "present_saving_usd": float(totals["total"][f"{other}_present_usd"] - totals["total"][f"{action}_present_usd"]),
    }


def ownership_parts(
    *, capex_usd: float, nodes: float, gpus: float, quote: Mapping[str, Any], terms: Mapping[str, Any]
) -> dict[str, float]:
    """{part: USD a year} of the fixed cost of owning ``nodes`` servers bought for ``capex_usd`` (``quote``: the
    hardware quote, its power per server; ``terms``: the Scenario's or the Fleet Plan's /buy): capital (the capex as
    an annuity over the years at the discount rate, less the discounted residual), support, colocation, staff,
    software and idle energy, each by advisor.economics.yearly_fixed_cost_usd with the other parts at zero, so that
    they add to its A. The one breakdown the scenario's cash table and the fleet's owned tier are cut by."""
    zero: dict[str, float] = {
        "capex_usd": float(capex_usd),
        "years": float(terms.get("years") or 1.0),
        "discount_rate": 0.0,
        "residual_fraction": 1.0,  # capital term cancels: (capex - capex) / 1
        "contracted_kw": nodes * float(quote.get("power_kw") or 0.0),
        "colo_usd_per_kw_month": 0.0,
        "support_fraction_per_year": 0.0,
        "staff_usd_per_year": 0.0,
        "software_usd_per_year": 0.0,
        "idle_kw": nodes * float(quote.get("idle_power_kw") or 0.0),
        "pue": float(terms.get("pue") or 0.0),
        "power_usd_per_kwh": 0.0,
    }
    given: dict[str, dict[str, Any]] = {
        "capital": {
            "discount_rate": terms.get("discount_rate"),
            "residual_fraction": terms.get("residual_fraction"),
        },
        "support": {"support_fraction_per_year": terms.get("support_fraction_per_year")},
        "colocation": {"colo_usd_per_kw_month": terms.get("colo_usd_per_kw_month")},
        "staff": {"staff_usd_per_year": terms.get("staff_usd_per_year")},
        "software": {"software_usd_per_year": float(terms.get("software_usd_per_gpu_year") or 0.0) * gpus},
        "idle energy": {"power_usd_per_kwh": terms.get("power_usd_per_kwh")},
    }
    return {
        name: float(ec.yearly_fixed_cost_usd(**{**zero, **{k: float(v or 0.0) for k, v in part.items()}}))
        for name, part in given.items()
    }


def owning_cash_parts(*, advice: Mapping[str, Any]) -> list[tuple[str, float]] | None:
    """(part, USD a year) of the yearly cash of owning the cash table's size (training): support, colocation, staff,
    software, idle energy (``ownership_parts`` less the capital) and the energy of the busy hours; they add to a
    middle year's "Buying, cash" (an outsider's probe: $4,393,403 a year re-added only from hidden parts). None for
    serving, or without the figures."""
    cumulative = advice.get("cumulative_cost") or {}
    size = next((d for d in advice.get("sizes") or [] if d.get("gpus") == cumulative.get("gpus")), None)
    terms, quote = (advice.get("scenario") or {}).get("buy") or {}, advice.get("hardware_quote") or {}
    buy = (size or {}).get("buy") or {}
    if advice.get("kind") == "inference" or not size or not buy.get("capex_usd") or quote.get("power_kw") is None:
        return None
    nodes = float(size.get("nodes") or 0)
    per_node = float(((advice.get("scenario") or {}).get("network") or {}).get("gpus_per_node") or size["gpus"])
    # Software is paid per GPU bought: whole nodes, as advisor.advice.costs.ownership_costs counts them (a 4-GPU size
    # on an 8-GPU server pays for 8; counting 4 left the parts $20,000 short of the cash table at $5,000 a GPU-year).
    parts = ownership_parts(
        capex_usd=float(buy["capex_usd"]),
        nodes=nodes,
        gpus=nodes * per_node if nodes else float(size["gpus"]),
        quote=quote,
        terms=terms,
    )
    rows = [(name, usd) for name, usd in parts.items() if name != "capital"]
    busy = float(buy.get("variable_usd_per_busy_gpu_hour") or 0.0) * size["gpus"] * HOURS_PER_YEAR
    rows.append(("energy", busy * float(buy.get("utilization") or 0.0)))
    # Owning a size that cannot finish the year's runs rents the rest beside it (buy.overflow, finance probe F2).
    if (overflow_rent := overflow_rent_usd_per_year(size=size)) is not None:
        rows.append(("rented runs", overflow_rent[0]))
    return [(name, usd) for name, usd in rows if round(usd)]


def fleet_owned_parts(*, plan: Mapping[str, Any]) -> list[tuple[str, float]] | None:
    """(part, USD a year) of a Fleet Plan's owned tier: ``ownership_parts`` of the purchase (``fleet_purchase``)
    and the energy of its busy GPU-hours (tier_prices' energy per busy GPU-hour x the recommended option's owned
    GPU-hours); they add to the owned tier's usd_per_year (a finance reviewer rebuilt $651,128 by hand: capital
    $365,389 + colocation $73,440 + support $156,543 + energy $55,757). Parts that round to nothing are left out.
    None when the plan owns nothing, or lacks the figures (a document issued without its hardware quote)."""
    purchase = fleet_purchase(plan=plan)
    prices = plan.get("tier_prices") or {}
    quote = prices.get("hardware_quote") or {}
    owned = int((plan.get("recommendation") or {}).get("owned_gpus") or 0)
    option = next((o for o in plan.get("options") or [] if o.get("owned_gpus") == owned), None)
    variable = prices.get("owned_variable_usd_per_gpu_hour")
    if purchase is None or quote.get("power_kw") is None or option is None or variable is None:
        return None
    terms = (plan.get("fleet") or {}).get("buy") or {}
    nodes = float(purchase["nodes"])
    # Software is paid per GPU bought: whole nodes, as advisor.advice.costs.ownership_costs counts them.
    gpus = nodes * float(purchase["gpus_per_node"])
    parts = ownership_parts(capex_usd=purchase["usd"], nodes=nodes, gpus=gpus, quote=quote, terms=terms)
    busy_hours = float(((option.get("by_tier") or {}).get("owned") or {}).get("gpu_hours") or 0.0)
    rows = [*parts.items(), ("energy", float(variable) * busy_hours)]
    return [(name, usd) for name, usd in rows if round(usd)]
