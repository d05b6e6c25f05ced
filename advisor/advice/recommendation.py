"""Which size to take and why: the knee of the scaling curve, rent or buy at that size, the cheapest size
per run, and the reasons and warnings that say so."""

from __future__ import annotations

import itertools
import math
from collections.abc import Container, Mapping, Sequence
from typing import Any, Final, Literal

import numpy as np

from advisor import economics as ec
from advisor import formatting as fmt
from advisor.advice.documents import money, n_gpus, pct, rent_rate_words
from advisor.cash_flow import (
    RUNS_POINTER,
    UTILIZATION_POINTER,
    buy_at_stated_runs,
    buy_at_stated_runs_words,
    runs_origin,
    utilization_basis,
)
from advisor.cash_flow import defaulted_sources as advice_defaults
from advisor.scenario import DEFAULTS, Scenario
from pricing.models import MARKET_PHRASES, RESERVED_MARKETS, TERM_YEARS

# Given utilization this many times what the stated runs need is flagged: other work must fill the cluster.
UTILIZATION_ABOVE_RUNS_FACTOR: Final[float] = 2.0
# A step up in cluster size is worth taking while it keeps a scaling efficiency of at least 80% per doubling of GPUs
# (product rule, stated in every recommendation; Amdahl-style "parallel efficiency >= 0.8" is the usual HPC
# strong-scaling acceptance threshold: a doubling must run at least 1.6x as fast). See step_efficiency.
KNEE_MARGINAL_EFFICIENCY: Final[float] = 0.8


def step_efficiency(*, gpus_from: float, tps_from: float, gpus_to: float, tps_to: float) -> float:
    """Scaling efficiency of a step up, per doubling of GPUs: speed-up ** (ln 2 / ln GPU ratio) / 2. On a doubling it
    is the usual parallel efficiency (speed-up / 2); a smaller or larger step is judged as the doublings it makes up,
    so two steps that each keep 80% make one that keeps 80%, and a step that adds GPUs and no speed reads 50% whatever
    its size (an outsider's probe: 64 -> 72 GPUs at the same throughput read 1.0 / 1.125 = 89% as speed-up over GPU
    ratio, and passed the knee). 1 is ideal."""
    doublings = math.log2(gpus_to / gpus_from)
    return float((tps_to / tps_from) ** (1.0 / doublings) / 2.0)


def knee_index(
    *, gpus: np.ndarray, tps: np.ndarray, feasible: np.ndarray
) -> tuple[int | None, int | None, float | None]:
    """(index of the knee size, index of the next fitting size, that step's efficiency per doubling of GPUs)."""
    idx = np.flatnonzero(feasible)
    if not idx.size:
        return None, None, None
    knee = int(idx[0])
    for prev, nxt in itertools.pairwise(idx):
        marginal = step_efficiency(
            gpus_from=float(gpus[prev]), tps_from=float(tps[prev]), gpus_to=float(gpus[nxt]), tps_to=float(tps[nxt])
        )
        if not marginal >= KNEE_MARGINAL_EFFICIENCY:
            return knee, int(nxt), float(marginal)
        knee = int(nxt)
    return knee, None, None


# Why a training recommendation has no action (recommendation.none_reason): no candidate size holds the model; the
# chosen size runs but no option that would finish the year's runs is priced (neither renting nor owning, or owning
# cannot finish them alone and renting the rest is not priced); an option is priced but no size finishes the year's
# runs, owned or rented (a run is longer than the year).
NoneReason = Literal["no_fit", "not_priced", "runs_unfinished"]


def judged_runs_per_year(*, runs_per_year: float | None, defaulted: Container[str]) -> float | None:
    """The runs a year ``finishes_runs`` judges a size on: the stated /workload/runs_per_year, None where it was left
    out (``defaulted``: the pointers of the defaults used). Left out, its default stands in for the words only: the
    utilization is then given or defaulted (scenario._utilization) and no cost uses the runs, so judging a size on
    them marked an owned cost priced at 60% as not a cost of the runs and skipped it (an outsider's probe, s_norpy)."""
    return None if runs_per_year is None or RUNS_POINTER in defaulted else float(runs_per_year)


def scenario_runs_judged(s: Scenario) -> float | None:
    """``judged_runs_per_year`` of a Scenario."""
    return judged_runs_per_year(runs_per_year=s.workload.runs_per_year, defaulted=s.defaults_used)


def advice_runs_judged(advice: Mapping[str, Any]) -> float | None:
    """``judged_runs_per_year`` of an Advice document (its normalized scenario and the defaults it says it used)."""
    runs = ((advice.get("scenario") or {}).get("workload") or {}).get("runs_per_year")
    return judged_runs_per_year(runs_per_year=runs, defaulted=advice_defaults(advice=advice))


def finishes_runs(*, run_hours: float | None, runs_per_year: float | None, owned: bool) -> bool:
    """Whether a size can finish the year's runs: owned, one cluster runs them all within the year; rented, clusters
    run side by side, so each run must finish within the year (within its own years when fewer than one a year).
    ``runs_per_year``: ``judged_runs_per_year``; None (left out): no runs to judge, so any size with a run time
    finishes (the costs price a run at the given or default utilization)."""
    if run_hours is None:
        return False
    if runs_per_year is None:
        return True
    per_year = runs_per_year if owned else min(runs_per_year, 1.0)
    return run_hours * per_year <= ec.HOURS_PER_YEAR


def owns_with_overflow(doc: Mapping[str, Any], *, runs_per_year: float | None) -> bool:
    """Whether a size's own option is owning it and renting the runs it cannot finish (buy.overflow,
    economics.own_with_overflow): one owned cluster does not finish the year's runs and the Advice priced the
    overflow (documents issued before 2026-12-06 have none: there owning such a size is no option)."""
    return bool((doc.get("buy") or {}).get("overflow")) and not finishes_runs(
        run_hours=doc.get("run_hours"), runs_per_year=runs_per_year, owned=True
    )


def own_option_usd_per_run(doc: Mapping[str, Any], *, runs_per_year: float | None) -> float | None:
    """The own option's cost per run at a size, the one every comparison and rendering uses: buy.usd_per_run where one
    owned cluster finishes the year's runs; where it does not, owning it and renting the rest (buy.overflow.usd_per_run;
    a finance probe, F2: owning was dropped and renting all 25 runs at $2.13M a year recommended over owning 64 GPUs
    and renting 5.6 runs at $1.78M); None where neither is priced."""
    buy = doc.get("buy") or {}
    if owns_with_overflow(doc, runs_per_year=runs_per_year):
        return float(buy["overflow"]["usd_per_run"])
    if finishes_runs(run_hours=doc.get("run_hours"), runs_per_year=runs_per_year, owned=True):
        return buy.get("usd_per_run")
    return None


def _options(doc: Mapping[str, Any], *, runs_per_year: float | None) -> list[tuple[float, str]]:
    """(USD per run, "rent"/"buy") of each priced option at a size: renting where each run finishes within the
    year on clusters side by side, owning where one cluster finishes the runs or with the rest rented
    (``own_option_usd_per_run``)."""
    options: list[tuple[float, str]] = []
    rent = doc["rent"]["usd_per_run"]
    if rent is not None and finishes_runs(run_hours=doc["run_hours"], runs_per_year=runs_per_year, owned=False):
        options.append((rent, "rent"))
    own = own_option_usd_per_run(doc, runs_per_year=runs_per_year)
    if own is not None:
        options.append((own, "buy"))
    return options


def overflow_words(doc: Mapping[str, Any], *, runs_per_year: float) -> str:
    """The own-plus-overflow option in words: "owning 64 GPUs finishes 19.4 of the 25 runs a year; the other 5.6 are
    rented at $85,243 a run: $1,779,434 a year against $2,131,067 renting all ($71,177 a run against $85,243)"."""
    overflow, rent_run = doc["buy"]["overflow"], doc["rent"]["usd_per_run"]
    return (
        f"owning {n_gpus(doc['gpus'])} finishes {fmt.runs(overflow['owned_runs'])} of the {runs_per_year:g} runs a "
        f"year; the other {fmt.runs(overflow['rented_runs'])} are rented at "
        f"{money(overflow['rented_usd_per_run'])} a run: "
        f"{money(overflow['usd_per_year'])} a year against {money(runs_per_year * rent_run)} renting all "
        f"({money(overflow['usd_per_run'])} a run against {money(rent_run)})"
    )


def _spot_loss_words(doc: Mapping[str, Any]) -> str:
    """On spot, what makes the cost per run re-add: the GPUs times the wall hours, which include the run time spot
    interruptions lose (an outsider's probe: 32 x 44.89 h x $1.25 = $1,796 against $1,812 printed)."""
    spot = (doc["rent"].get("by_market") or {}).get("spot") or {}
    if doc["rent"].get("market") != "spot" or spot.get("wall_hours") is None:
        return ""
    return (
        f": {n_gpus(doc['gpus'])} x {spot['wall_hours']:,.2f} hours, the run's {doc['run_hours']:,.2f} hours and "
        f"{fmt.percent(spot.get('lost_fraction') or 0.0, digits=1)} of the run time lost to interruptions"
    )


def _side_by_side(*, run_hours: float, runs_per_year: float | None, gpus: int) -> str:
    """The words a rented size needs when one cluster cannot run the year's runs (finishes_runs owned): the runs go
    on clusters side by side (an outsider's probe read "64 GPUs is the cheapest" as one cluster of 64 for 6 runs of
    8,110 hours)."""
    if runs_per_year is None or finishes_runs(run_hours=run_hours, runs_per_year=runs_per_year, owned=True):
        return ""
    # As many clusters as a reserved term is billed for (economics.side_by_side_clusters): each holds the whole runs
    # that fit in its year, not one run each.
    clusters = int(ec.side_by_side_clusters(runs_per_year=runs_per_year, run_hours=run_hours))
    return (
        f", {runs_per_year:g} runs side by side on {clusters} clusters of {n_gpus(gpus)}: one cluster would need "
        f"{fmt.hours(run_hours * runs_per_year)} a year"
    )


def cheapest_size(size_docs: list[dict[str, Any]], *, runs_per_year: float | None) -> tuple[int, float, str] | None:
    """(GPUs, USD, "rented"/"owned") of the lowest cost per run over every size and both options, counting only the
    options that finish the year's runs (``finishes_runs``; an outsider's probe: 64 owned GPUs were offered as the
    cheapest for 2 runs a year of 340 days each)."""

    def words(d: Mapping[str, Any], side: str) -> str:
        if side == "rent":
            return "rented"
        return "owned, the rest of the runs rented" if owns_with_overflow(d, runs_per_year=runs_per_year) else "owned"

    options = [
        (usd, d["gpus"], words(d, side)) for d in size_docs for usd, side in _options(d, runs_per_year=runs_per_year)
    ]
    if not options:
        return None
    usd, n, how = min(options)
    return n, usd, how


def alternative_compared_usd(
    alternative: Mapping[str, Any], *, monthly: bool, runs_per_year: float | None
) -> float | None:
    """The cost a compared GPU is ranked by: the lower of renting and owning (per month for inference, per run for
    training), counting for training only the options that finish the year's runs (``finishes_runs``: an outsider's
    probe found an A100 needing 18,018 h of one cluster a year marked the cheapest), owning with the rest rented where
    one cluster cannot (``buy_overflow_usd_per_run``); None where none is priced."""
    rent, buy = (
        (alternative.get("rent_usd_per_month"), alternative.get("buy_usd_per_month"))
        if monthly
        else (alternative.get("rent_usd_per_run"), alternative.get("buy_usd_per_run"))
    )
    costs = [c for c in (rent, buy) if c is not None]
    run_hours = alternative.get("run_hours")
    if (
        not monthly
        and alternative.get("gpus")
        and not finishes_runs(run_hours=run_hours, runs_per_year=runs_per_year, owned=True)
    ):
        rented = finishes_runs(run_hours=run_hours, runs_per_year=runs_per_year, owned=False)
        # Owning there rents the runs the cluster cannot finish (buy.overflow), as the plan's own recommendation
        # compares it (a hostile probe, F1: only renting was counted).
        overflow = alternative.get("buy_overflow_usd_per_run")
        costs = [c for c in (rent if rented else None, overflow) if c is not None]
    return min(costs) if costs else None


def cheapest_alternative(
    alternatives: Sequence[Mapping[str, Any]], *, monthly: bool, runs_per_year: float | None
) -> int | None:
    """The index of the cheapest compared GPU by ``alternative_compared_usd`` (the first of equals); None where
    none is priced."""
    priced = [
        (usd, i)
        for i, a in enumerate(alternatives)
        if (usd := alternative_compared_usd(a, monthly=monthly, runs_per_year=runs_per_year)) is not None
    ]
    return min(priced)[1] if priced else None


def mark_cheapest(
    alternatives: list[dict[str, Any]], *, monthly: bool, runs_per_year: float | None
) -> list[dict[str, Any]]:
    """The alternatives, each with ``cheapest``: whether it is the one ``cheapest_alternative`` picks."""
    pick = cheapest_alternative(alternatives, monthly=monthly, runs_per_year=runs_per_year)
    return [{**a, "cheapest": i == pick} for i, a in enumerate(alternatives)]


def cheapest_marks(advice: Mapping[str, Any]) -> list[bool]:
    """Per alternative of an Advice document, whether it is the cheapest: as the document states it, and for a
    document issued before ``cheapest`` was (2026-12-05) by the same rule (``cheapest_alternative``)."""
    alternatives = list(advice.get("alternatives") or [])
    if all("cheapest" in a for a in alternatives):
        return [bool(a["cheapest"]) for a in alternatives]
    runs = advice_runs_judged(advice)
    pick = cheapest_alternative(alternatives, monthly=advice.get("kind") == "inference", runs_per_year=runs)
    return [i == pick for i in range(len(alternatives))]


def _step_words(*, gpus: np.ndarray, tps: np.ndarray, lo: int, hi: int) -> str:
    """A step up in the real figures: speed-up against GPUs, per-GPU throughput, efficiency per doubling."""
    eff = step_efficiency(
        gpus_from=float(gpus[lo]), tps_from=float(tps[lo]), gpus_to=float(gpus[hi]), tps_to=float(tps[hi])
    )
    return (
        f"{fmt.plain(int(gpus[lo]))} -> {fmt.plain(int(gpus[hi]))} GPUs runs {tps[hi] / tps[lo]:.2f}x as fast on "
        f"{gpus[hi] / gpus[lo]:.2f}x "
        f"the GPUs ({pct((tps[hi] / gpus[hi]) / (tps[lo] / gpus[lo]))} of the per-GPU throughput): "
        f"{pct(eff)} scaling efficiency per doubling of GPUs"
    )


def _knee_reason(*, gpus: np.ndarray, tps: np.ndarray, feasible: np.ndarray, knee: int, beyond: int | None) -> str:
    rec_gpus = int(gpus[knee])
    kept = np.flatnonzero(feasible)
    if beyond is not None:
        return (
            f"{n_gpus(rec_gpus)} is the knee of the scaling curve: going to {int(gpus[beyond])}, "
            f"{_step_words(gpus=gpus, tps=tps, lo=knee, hi=beyond)}, below the {pct(KNEE_MARGINAL_EFFICIENCY)} "
            "threshold."
        )
    if knee == int(kept[-1]) and kept.size > 1:
        step = _step_words(gpus=gpus, tps=tps, lo=int(kept[-2]), hi=knee)
        return (
            f"{n_gpus(rec_gpus)}, the largest candidate, still scales: {step}; "
            f"every step up kept at least {pct(KNEE_MARGINAL_EFFICIENCY)}."
        )
    if len(gpus) == 1:
        return f"{n_gpus(rec_gpus)} is the only size asked for (/cluster_sizes)."
    return (
        f"{n_gpus(rec_gpus)} is the only candidate size that runs the job on all of its GPUs (the others do not hold "
        "the model, or run a smaller size's job with GPUs idle)."
    )


def defaulted_sources(s: Scenario) -> dict[str, str]:
    """{pointer: source} of the scenario's defaults that have one here (``cash_flow.utilization_basis`` reads them)."""
    return {where: DEFAULTS[where].source for where in s.defaults_used if where in DEFAULTS}


def utilization_remedy(*, defaulted: Mapping[str, str]) -> str:
    """How to price the runs alone, the way that works: leaving /utilization out implies it from the runs only when
    /workload/runs_per_year is given (scenario._utilization); with neither given the default stands in either way
    (an outsider's probe: "leave /utilization out" was said where it already was)."""
    if UTILIZATION_POINTER in defaulted:
        return (
            "give /workload/runs_per_year to price your own runs alone, or /utilization for how busy all the work "
            "will keep the cluster"
        )
    if RUNS_POINTER in defaulted:
        return "give /workload/runs_per_year and leave /utilization out to price the runs alone"
    return "leave /utilization out to price the runs alone"


def _run_time_reasons(
    s: Scenario, doc: Mapping[str, Any], rec_gpus: int, reasons: list[str], warnings: list[str]
) -> None:
    w = s.workload
    if doc["run_hours"] is None:
        return
    busy = float(ec.busy_share(runs_per_year=w.runs_per_year or 0.0, run_hours=doc["run_hours"]))
    runs = fmt.runs_a_year(w.runs_per_year)
    defaulted = defaulted_sources(s)
    basis = utilization_basis(utilization=s.utilization, runs_per_year=w.runs_per_year, defaulted=defaulted)
    pointer = "/utilization" if basis == "given" else f"/utilization not given; {basis}"
    reasons.append(
        f"One run of {fmt.tokens(w.tokens)} takes {fmt.hours(doc['run_hours'])} "
        f"(P10-P90 {fmt.hours_number(doc['run_hours_p10'])}-{fmt.hours_number(doc['run_hours_p90'])}); at {runs} the "
        "cluster is busy "
        f"{pct(busy)} of the year."
    )
    if s.utilization is not None and busy > s.utilization:
        warnings.append(
            f"At {runs} the cluster of {n_gpus(rec_gpus)} is busy {pct(busy)} of the year, more than the "
            f"{pct(s.utilization)} utilization assumed for owning ({pointer})."
        )
    elif s.utilization is not None and busy * UTILIZATION_ABOVE_RUNS_FACTOR < s.utilization:
        # An outsider's probe: 70% given against 6% the runs need, unremarked, while owning's cost per run and the
        # proposal's first-year amount assume the cluster is that busy.
        warnings.append(
            f"The {pct(s.utilization)} utilization assumed for owning ({pointer}) is more than "
            f"{UTILIZATION_ABOVE_RUNS_FACTOR:g} times the {pct(busy)} of the year the runs need on {n_gpus(rec_gpus)} "
            f"({runs if RUNS_POINTER not in defaulted else 'the default ' + runs}): "
            f"owning is priced as if other work filled the rest; {utilization_remedy(defaulted=defaulted)}."
        )
    if busy > 1:
        warnings.append(
            f"At {runs} of {doc['run_hours']:,.0f} hours each, {n_gpus(rec_gpus)} would need more than a year of "
            "cluster time."
        )


def _term_bought_for_each_run(s: Scenario, doc: Mapping[str, Any], *, market: str) -> bool:
    """Whether the size's cost on the reserved ``market`` bills terms bought for each run rather than held every year
    (economics.reserved_terms; only where the utilization follows from the stated runs)."""
    runs, hours = scenario_runs_judged(s), doc["run_hours"]
    if s.utilization is not None or runs is None or not hours or market not in TERM_YEARS:
        return False
    return bool(ec.reserved_terms(runs_per_year=runs, run_hours=hours, term_years=TERM_YEARS[market])[1])


def _own_reasons(
    s: Scenario, doc: Mapping[str, Any], raw_be: float, rec_gpus: int, reasons: list[str], warnings: list[str]
) -> None:
    be = doc["buy"]["break_even_utilization"]
    market = doc["buy"]["break_even_against"]["market"] or ""
    against = MARKET_PHRASES.get(market, "the rental price")
    term = market in RESERVED_MARKETS
    priced = bool(market) and doc["buy"]["break_even_against"]["usd_per_gpu_hour"] is not None
    if not priced:  # no rental price at this size: nothing to break even against (a hostile probe read "never")
        be_words = "renting is not priced at this size, so there is no break-even to compare"
    elif term and be is not None and _term_bought_for_each_run(s, doc, market=market):
        # A term bought for the run alone is not held all year (economics.reserved_terms): "cheaper at any
        # utilization" contradicted the rent recommended on the costs per run (0.5 runs a year, review2 F1).
        be_words = (
            f"even fully busy, owning costs less per GPU-hour than renting {against} held all year, but at "
            f"{fmt.runs_a_year(s.workload.runs_per_year)} each run rents a term of its own, so the costs per run decide"
        )
    elif term:  # billed every hour (economics.break_even_against_term): the hourly prices decide, not utilization
        be_words = (
            f"even fully busy, owning costs less per GPU-hour than renting {against}, a term billed every hour "
            "used or not, so owning is cheaper at any utilization"
            if be is not None
            else f"fully busy, owning costs more per GPU-hour than renting {against} (a term billed every hour)"
        )
    elif be is not None:
        hours = doc["buy"]["break_even_hours_per_year"]
        be_words = f"break-even is {pct(be)} utilization ({hours:,.0f} hours a year) against renting {against}"
    elif math.isfinite(raw_be):
        be_words = (
            f"break-even would need {pct(raw_be)} utilization, more than the whole year, against renting {against}"
        )
    else:
        be_words = (
            f"renting {against} does not even cover the owned energy cost, so owning never breaks even against it"
        )
    u = doc["buy"]["utilization"]
    basis = utilization_basis(
        utilization=s.utilization, runs_per_year=s.workload.runs_per_year, defaulted=defaulted_sources(s)
    )
    reasons.append(
        f"At {pct(u)} utilization ({basis}) an owned GPU-hour costs "
        # Rounded as the table rounds it (an outsider's probe: "$4.542511" beside the table's "$4.54/GPU-h").
        f"{money(doc['buy']['usd_per_gpu_hour_at_utilization'])} and a run {money(doc['buy']['usd_per_run'])}; "
        f"{be_words}{chosen_market_break_even(doc, against=market)}."
    )
    rent_run, own_run = doc["rent"]["usd_per_run"], doc["buy"]["usd_per_run"]
    if not priced:
        return
    if term:
        if rent_run is not None and own_run is not None and own_run > rent_run:
            warnings.append(
                f"At {pct(u)} utilization owning costs more than renting {against} on {n_gpus(rec_gpus)} "
                f"({money(own_run)} against {money(rent_run)} a run)."
            )
    elif be is None:
        warnings.append(
            f"Owning {n_gpus(rec_gpus)} never breaks even against renting {against} at this price: it costs more "
            "than renting even busy the whole year."
        )
    elif u < be:
        warnings.append(
            f"Utilization {pct(u)} is below break-even against renting {against} ({pct(be)}) on "
            f"{n_gpus(rec_gpus)}: owning costs more than renting."
        )


def chosen_market_break_even(doc: Mapping[str, Any], *, against: str) -> str:
    """The break-even against the market the size rents on, where that is not the market break-even is measured
    against (an outsider's probe: the 405B plan rented spot while its summary gave break-even against on-demand
    only, and that owning never breaks even against spot appeared nowhere). "" when they are the same."""
    chosen = doc["rent"]["market"]
    if not chosen or chosen == against or doc["rent"]["by_market"].get(chosen) is None:
        return ""
    by_market = doc["buy"].get("break_even_by_market") or {}
    u_star = by_market.get(chosen)
    phrase = MARKET_PHRASES.get(chosen, chosen)
    if chosen in RESERVED_MARKETS:  # a term billed every hour: the hourly prices decide (cost-model.md 4.1)
        verdict = "owning is cheaper at any utilization" if u_star is not None else "owning costs more fully busy"
        return f"; against renting {phrase}, the market chosen, {verdict}"
    if u_star is None:
        return f"; against renting {phrase}, the market chosen, owning never breaks even within the year"
    return f"; against renting {phrase}, the market chosen, break-even is {pct(u_star)} utilization"


def _per_run_comparison(doc: Mapping[str, Any], *, runs_per_year: float | None) -> str:
    """Both costs per run the choice was made on, at the size's utilization (``own_option_usd_per_run``)."""
    rent_run, own_run = doc["rent"]["usd_per_run"], own_option_usd_per_run(doc, runs_per_year=runs_per_year)
    if rent_run is None or own_run is None:
        return ""
    if owns_with_overflow(doc, runs_per_year=runs_per_year):
        return f" ({money(rent_run)} a run renting all against {money(own_run)} owning and renting the rest)"
    return f" ({money(rent_run)} a run renting against {money(own_run)} owning at {pct(doc['buy']['utilization'])})"


def _action(doc: Mapping[str, Any], *, runs_per_year: float | None) -> str | None:
    """Rent or buy by the lower cost per run (rent on a tie) among the options that finish the year's runs; None when
    none does or neither is priced."""
    options = _options(doc, runs_per_year=runs_per_year)
    return min(options, key=lambda o: (o[0], o[1] != "rent"))[1] if options else None


def _finishing_size(
    size_docs: list[dict[str, Any]], *, whole: np.ndarray, knee: int, runs_per_year: float | None
) -> int:
    """The knee when an option there finishes the year's runs, else the smallest larger size (running on all its
    GPUs) where one does, else the knee (its action is then none)."""
    for i in [knee, *(int(j) for j in np.flatnonzero(whole) if j > knee)]:
        if _action(size_docs[i], runs_per_year=runs_per_year) is not None:
            return i
    return knee


def fastest_candidate(size_docs: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The candidate size with the shortest run: among the sizes that run (a run time) on all of their GPUs, or, where
    none does, among all that run (``recommend``'s candidates); None where none runs."""
    running = [d for d in size_docs if d.get("run_hours") is not None]
    whole = [d for d in running if int(d.get("gpus_used") or 0) >= int(d["gpus"])]
    return min(whole or running, key=lambda d: float(d["run_hours"]), default=None)


def _unfinished_reason(s: Scenario, size_docs: list[dict[str, Any]]) -> str:
    fastest = fastest_candidate(size_docs) or {}
    runs = fmt.runs_a_year(s.workload.runs_per_year)
    return (
        f"No candidate size finishes {runs}: the fastest, {n_gpus(fastest['gpus'])}, takes "
        f"{fmt.hours(fastest['run_hours'])} a run, owned or rented. Give larger /cluster_sizes, fewer /workload/tokens "
        "or fewer /workload/runs_per_year."
    )


def _overflow_unpriced(doc: Mapping[str, Any], *, runs_per_year: float) -> bool:
    """Owning is priced but does not finish the runs, and a rented run would finish within the year but renting is
    not priced: the runs the owned cluster cannot do cannot be priced (a hostile review, F2: this read "no size
    finishes ... owned or rented")."""
    return (
        doc["rent"]["usd_per_run"] is None
        and doc["buy"]["usd_per_run"] is not None
        and finishes_runs(run_hours=doc["run_hours"], runs_per_year=runs_per_year, owned=False)
    )


def _overflow_unpriced_reason(doc: Mapping[str, Any], *, runs_per_year: float) -> str:
    owned_runs = ec.HOURS_PER_YEAR / float(doc["run_hours"])
    return (
        f"Owning {n_gpus(doc['gpus'])} finishes {fmt.runs(owned_runs)} of the {runs_per_year:g} runs a year; the "
        f"other {fmt.runs(runs_per_year - owned_runs)} cannot be priced: renting is not priced at this size (no "
        "offer in the markets asked for). Give /rent/usd_per_gpu_hour or other /rent/markets, larger "
        "/cluster_sizes, or fewer /workload/runs_per_year."
    )


def _buy_on_assumed_utilization(
    s: Scenario, doc: Mapping[str, Any], action: str, reasons: list[str], warnings: list[str]
) -> None:
    """A buy that the stated runs alone would not make: said in the reasons and warned about."""
    if action != "buy":
        return
    verdict = buy_at_stated_runs(size=doc, runs_per_year=s.workload.runs_per_year, given_utilization=s.utilization)
    if verdict is None:
        return
    defaulted = defaulted_sources(s)
    words = buy_at_stated_runs_words(verdict=verdict, defaulted=defaulted)
    reasons.append(f"Owning wins only at the utilization assumed: {words}.")
    remedy = f"; or {utilization_remedy(defaulted=defaulted)}" if RUNS_POINTER in defaulted else ""
    warnings.append(
        f"Buying depends on utilization the {runs_origin(defaulted=defaulted)} runs do not reach: {words}. Confirm "
        f"that other work will keep the cluster {pct(verdict['utilization'])} busy, or rent{remedy}."
    )


def _chosen_size_reasons(
    *,
    s: Scenario,
    size_docs: list[dict[str, Any]],
    knee: int,
    raw_break_even: Any,
    reasons: list[str],
    warnings: list[str],
) -> tuple[str, NoneReason | None]:
    """(action, none_reason) at the chosen size, its reasons and warnings added."""
    doc = size_docs[knee]
    rec_gpus = doc["gpus"]
    _run_time_reasons(s, doc, rec_gpus, reasons, warnings)
    runs_per_year = scenario_runs_judged(s)
    action = _action(doc, runs_per_year=runs_per_year)
    offer = doc["rent"]["offer"]
    if offer is not None:
        where = f"{offer['provider']} {offer['instance'] or ''} {offer['region'] or ''}".split()
        reasons.append(
            f"Renting {MARKET_PHRASES[doc['rent']['market']]} ({' '.join(where)}) costs "
            f"{money(doc['rent']['usd_per_run'])} a run at {rent_rate_words(doc, scenario=s.to_dict())}"
            f"{_spot_loss_words(doc)}."
        )
    if doc["buy"]["usd_per_run"] is not None:
        _own_reasons(s, doc, float(raw_break_even[knee]), rec_gpus, reasons, warnings)
    cheapest = cheapest_size(size_docs, runs_per_year=runs_per_year)
    if cheapest is not None and cheapest[0] != rec_gpus:
        n_cheap, usd_cheap, how = cheapest
        cheap_hours = next(d["run_hours"] for d in size_docs if d["gpus"] == n_cheap)
        # Owned with the rest rented (buy.overflow), one cluster runs what it can: no clusters side by side.
        side_by_side = (
            _side_by_side(run_hours=cheap_hours, runs_per_year=runs_per_year, gpus=n_cheap) if how == "rented" else ""
        )
        reasons.append(
            f"If the run time does not matter, {n_gpus(n_cheap)} is the cheapest per run "
            f"({money(usd_cheap)} {how}{side_by_side}); a run takes {fmt.hours(cheap_hours)} there against "
            f"{fmt.hours(doc['run_hours'])} on {n_gpus(rec_gpus)}."
        )
    if action is None and runs_per_year is not None and _overflow_unpriced(doc, runs_per_year=runs_per_year):
        reasons.append(_overflow_unpriced_reason(doc, runs_per_year=runs_per_year))
        return "none", "not_priced"
    if action is None and (doc["rent"]["usd_per_run"] is not None or doc["buy"]["usd_per_run"] is not None):
        reasons.append(_unfinished_reason(s, size_docs))
        return "none", "runs_unfinished"
    if action is None:
        reasons.append("Neither renting nor owning could be priced: no offers and no hardware quote.")
        return "none", "not_priced"
    if runs_per_year is not None and owns_with_overflow(doc, runs_per_year=runs_per_year):
        words = overflow_words(doc, runs_per_year=runs_per_year)
        reasons.append(f"{words[:1].upper()}{words[1:]}.")
    elif (
        doc["buy"]["usd_per_run"] is not None
        and action == "rent"
        and len(_options(doc, runs_per_year=runs_per_year)) == 1
    ):
        reasons.append(
            f"Owning {n_gpus(rec_gpus)} cannot finish {fmt.runs_a_year(s.workload.runs_per_year)} within the year, "
            "so only renting (clusters side by side) counts."
        )
    reasons.append(
        f"Recommendation: {action} {n_gpus(rec_gpus)}{_per_run_comparison(doc, runs_per_year=runs_per_year)}."
    )
    _buy_on_assumed_utilization(s, doc, action, reasons, warnings)
    return action, None


def idle_sizes_reason(*, gpus: np.ndarray, gpus_used: np.ndarray, feasible: np.ndarray, run_hours: list[Any]) -> str:
    """Every fitting size runs its job on fewer GPUs than it pays for: which, on how many, for how long."""
    idx = np.flatnonzero(feasible)
    runs = "; ".join(
        f"{n_gpus(int(gpus[i]))} run on {fmt.plain(int(gpus_used[i]))} ({fmt.hours(run_hours[i])} a run)" for i in idx
    )
    return (
        f"No candidate size runs its job on all of its GPUs: {runs}. The advice takes the best of them as they run, "
        "paying for the GPUs that sit idle; the checked changes below would run a size on all of its GPUs."
    )


def recommend(
    *,
    s: Scenario,
    memory_gb: float,
    gpus: np.ndarray,
    gpus_used: np.ndarray,
    tokens_per_s: np.ndarray,
    feasible: np.ndarray,
    size_docs: list[dict[str, Any]],
    raw_break_even: Any,
    warnings: list[str],
) -> tuple[dict[str, Any], int | None]:
    """The recommendation document (action, gpus, reasons) and the index of the chosen size; adds warnings.
    Action "none" (gpus null) when the model fits on no candidate size.

    ``raw_break_even``: break-even utilization per size before capping (read only when owning is priced).
    ``gpus_used``: the GPUs each size's job runs on; a size that leaves some idle (it runs a smaller size's job) is
    never the knee while another size runs on all of its own (an outsider's probe: "rent 72" whose job ran on 64).
    When every fitting size leaves GPUs idle (a GB200 NVL72 rack with a power-of-two batch runs on 64), the best of
    them as they run is taken, idle GPUs paid for, and the reasons say so."""
    whole = feasible & (gpus_used >= gpus)
    candidates = whole if whole.any() else feasible
    knee, beyond, _ = knee_index(gpus=gpus, tps=tokens_per_s, feasible=candidates)
    reasons: list[str] = []
    # DESIGN.md: action rent|buy|none; "none" when no candidate size can run the job (as inference answers when no
    # deployment meets its targets), and when the chosen size runs but can be priced neither rented nor owned (gpus:
    # that size).
    action: str | None = "none"
    rec_gpus: int | None = None
    none_reason: NoneReason | None = "no_fit"
    if knee is None:
        reasons.append(
            f"The model fits on none of the candidate sizes ({', '.join(map(str, s.cluster_sizes))} GPUs of "
            f"{memory_gb:g} GB); try more GPUs or a layout with more sharding."
        )
        warnings.append("The model fits on no candidate cluster size.")
    else:
        rec_gpus = int(gpus[knee])
        if not whole.any():
            run_hours = [d["run_hours"] for d in size_docs]
            reasons.append(idle_sizes_reason(gpus=gpus, gpus_used=gpus_used, feasible=feasible, run_hours=run_hours))
        reasons.append(_knee_reason(gpus=gpus, tps=tokens_per_s, feasible=candidates, knee=knee, beyond=beyond))
        if whole.any() and (
            idle := [f"{n_gpus(int(gpus[i]))} on {int(gpus_used[i])}" for i in np.flatnonzero(feasible & ~whole)]
        ):
            reasons.append(
                f"Not candidates: {'; '.join(idle)}; those sizes run a smaller size's job and leave the rest of "
                "their GPUs idle, paid for all the same."
            )
        chosen = _finishing_size(size_docs, whole=candidates, knee=knee, runs_per_year=scenario_runs_judged(s))
        if chosen != knee:
            reasons.append(
                f"{n_gpus(rec_gpus)} cannot finish {fmt.runs_a_year(s.workload.runs_per_year)} within the year "
                f"({fmt.hours(size_docs[knee]['run_hours'])} a run), so the advice takes the smallest larger size that "
                f"does, {n_gpus(int(gpus[chosen]))}, past the knee."
            )
            knee, rec_gpus = chosen, int(gpus[chosen])
        action, none_reason = _chosen_size_reasons(
            s=s,
            size_docs=size_docs,
            knee=knee,
            raw_break_even=raw_break_even,
            reasons=reasons,
            warnings=warnings,
        )
    recommendation = {
        "action": action,
        "gpus": rec_gpus,
        "reasons": reasons,
        "knee_threshold": KNEE_MARGINAL_EFFICIENCY,
        "none_reason": none_reason,
    }
    return recommendation, knee
