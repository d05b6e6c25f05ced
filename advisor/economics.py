"""Rent-vs-buy economics: pure functions on numbers and numpy arrays (no Django, no I/O).

Every function takes keyword-only arguments that broadcast against each other, so one call
evaluates many cluster sizes, utilizations or Monte Carlo samples at once. Money is USD,
power kW, energy kWh, time hours unless a name says otherwise, fractions are 0..1.

Conventions (see ../shared/reference/cost-model.md section 4 and DESIGN.md):

- Yearly fixed cost of owning ``A`` = capex as an annuity over ``years`` at ``discount_rate``
  less the discounted residual value (``capex * CRF - residual * r / ((1 + r)^n - 1)``; with
  ``r = 0`` it is ``(capex - residual) / years``), plus fixed running costs: colocation billed
  on contracted kW (peak, billed whether busy or not), support as a fraction of capex,
  staff, software, and the energy the cluster draws while idle (all year).
- Variable cost of a busy GPU-hour ``v`` = (load kW - idle kW per GPU) * PUE * $/kWh.
- Owned $ per busy GPU-hour at utilization ``u`` = ``A / (N * 8760 * u) + v``.
- Break-even utilization ``u* = A / (N * 8760 * (r - v))`` (DESIGN.md); infinite when the
  rental price does not exceed the variable cost (buying never pays). A value above 1 means
  the cluster cannot break even even when busy all year.
- Reserved terms are paid whether used or not: per busy GPU-hour they cost ``price / u``; break-even against a rent
  billed partly every hour (a term, an always-on base) is ``break_even_with_committed_rent``.
- Spot: the job checkpoints at the Young/Daly interval ``T = sqrt(2 C M)`` where the job's
  mean time between interruptions ``M`` shrinks as ``1 / nodes``; the fraction of wall time
  lost is ``C / T + (T / 2 + R) / M`` (checkpoint stalls, half an interval of lost work and
  the restart time per interruption), and the wall time is ``run / (1 - lost)``.
- An expected yearly decline ``d`` of rental prices makes renting later cheaper: year t (1..n) pays
  ``(1 - d)^(t-1)`` of today's price, in the levelized price, the present cost and the month-by-month cash
  alike; the levelized rental price is the constant price with the same present value over the horizon.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from core import units

HOURS_PER_YEAR = float(units.HOURS_PER_YEAR)  # 365 days x 24 h; the convention of DESIGN.md's break-even definition.
MONTHS_PER_YEAR = 12
HOURS_PER_MONTH = HOURS_PER_YEAR / MONTHS_PER_YEAR  # 730
SECONDS_PER_HOUR = 3600.0

Array = NDArray[np.float64]


def _f(x: ArrayLike) -> Array:
    return np.asarray(x, dtype=np.float64)


def _quiet() -> Any:
    return np.errstate(divide="ignore", invalid="ignore", over="ignore")


def capital_recovery_factor(*, discount_rate: ArrayLike, years: ArrayLike) -> Array:
    """Yearly payment per dollar borrowed over ``years`` at ``discount_rate``: r / (1 - (1+r)^-n); 1/n at r = 0."""
    r, n = _f(discount_rate), _f(years)
    with _quiet():
        discounted = -np.expm1(-n * np.log1p(r))  # 1 - (1+r)^-n, accurate for small r
        crf = np.where(np.abs(r) < 1e-12, 1.0 / n, r / discounted)
    return crf


def present_value_factor(*, discount_rate: ArrayLike, years: ArrayLike) -> Array:
    """(1 + r)^-n: today's value of one dollar received after ``years``."""
    return np.exp(-_f(years) * np.log1p(_f(discount_rate)))


def yearly_fixed_cost_usd(
    *,
    capex_usd: ArrayLike,
    years: ArrayLike,
    discount_rate: ArrayLike,
    residual_fraction: ArrayLike,
    contracted_kw: ArrayLike,
    colo_usd_per_kw_month: ArrayLike,
    support_fraction_per_year: ArrayLike,
    staff_usd_per_year: ArrayLike,
    software_usd_per_year: ArrayLike,
    idle_kw: ArrayLike,
    pue: ArrayLike,
    power_usd_per_kwh: ArrayLike,
) -> Array:
    """``A``: the yearly cost of owning whether the cluster is busy or not (USD/year)."""
    capex = _f(capex_usd)
    residual = capex * _f(residual_fraction)
    capital = (capex - residual * present_value_factor(discount_rate=discount_rate, years=years)) * (
        capital_recovery_factor(discount_rate=discount_rate, years=years)
    )
    colocation = _f(contracted_kw) * _f(colo_usd_per_kw_month) * MONTHS_PER_YEAR
    support = capex * _f(support_fraction_per_year)
    idle_energy = _f(idle_kw) * _f(pue) * HOURS_PER_YEAR * _f(power_usd_per_kwh)
    return capital + colocation + support + _f(staff_usd_per_year) + _f(software_usd_per_year) + idle_energy


def yearly_running_cost_usd(
    *,
    capex_usd: ArrayLike,
    contracted_kw: ArrayLike,
    colo_usd_per_kw_month: ArrayLike,
    support_fraction_per_year: ArrayLike,
    staff_usd_per_year: ArrayLike,
    software_usd_per_year: ArrayLike,
    idle_kw: ArrayLike,
    pue: ArrayLike,
    power_usd_per_kwh: ArrayLike,
) -> Array:
    """The cash part of ``A`` without the capital: what owning costs each year in running costs (USD/year)."""
    return yearly_fixed_cost_usd(
        capex_usd=capex_usd,
        years=1.0,
        discount_rate=0.0,
        residual_fraction=1.0,  # capital term cancels: (capex - capex) / 1
        contracted_kw=contracted_kw,
        colo_usd_per_kw_month=colo_usd_per_kw_month,
        support_fraction_per_year=support_fraction_per_year,
        staff_usd_per_year=staff_usd_per_year,
        software_usd_per_year=software_usd_per_year,
        idle_kw=idle_kw,
        pue=pue,
        power_usd_per_kwh=power_usd_per_kwh,
    )


def variable_usd_per_gpu_hour(
    *, load_kw_per_gpu: ArrayLike, idle_kw_per_gpu: ArrayLike, pue: ArrayLike, power_usd_per_kwh: ArrayLike
) -> Array:
    """``v``: the energy a busy GPU-hour adds over idling, at the facility (PUE), in USD."""
    extra_kw = np.maximum(_f(load_kw_per_gpu) - _f(idle_kw_per_gpu), 0.0)
    return extra_kw * _f(pue) * _f(power_usd_per_kwh)


def owned_usd_per_gpu_hour(
    *, yearly_fixed_usd: ArrayLike, gpus: ArrayLike, utilization: ArrayLike, variable_usd_per_gpu_hour: ArrayLike
) -> Array:
    """Owned cost per busy (delivered) GPU-hour at ``utilization``; infinite at zero utilization."""
    busy_hours = _f(gpus) * HOURS_PER_YEAR * _f(utilization)
    with _quiet():
        fixed_share = np.where(busy_hours > 0, _f(yearly_fixed_usd) / busy_hours, np.inf)
    return fixed_share + _f(variable_usd_per_gpu_hour)


def owned_usd_per_year(
    *, yearly_fixed_usd: ArrayLike, variable_usd_per_gpu_hour: ArrayLike, busy_gpu_hours_per_year: ArrayLike
) -> Array:
    """The whole yearly cost of owning at a utilization: ``A + v x busy GPU-hours`` (the fixed cost and the energy the
    busy hours add), the ``buy.usd_per_year`` of training and inference advice alike."""
    return _f(yearly_fixed_usd) + _f(variable_usd_per_gpu_hour) * _f(busy_gpu_hours_per_year)


def break_even_utilization(
    *,
    yearly_fixed_usd: ArrayLike,
    gpus: ArrayLike,
    rent_usd_per_gpu_hour: ArrayLike,
    variable_usd_per_gpu_hour: ArrayLike,
) -> Array:
    """``u* = A / (N * 8760 * (r - v))``; ``inf`` where ``r <= v`` (owning never breaks even) or there is no price
    (``r`` infinite: a market without an offer answered 0, "break-even is 0% utilization", a regression probe)."""
    margin = _f(rent_usd_per_gpu_hour) - _f(variable_usd_per_gpu_hour)
    denominator = _f(gpus) * HOURS_PER_YEAR * margin
    with _quiet():
        return np.where((denominator > 0) & np.isfinite(denominator), _f(yearly_fixed_usd) / denominator, np.inf)


def owned_cost_curve(
    *,
    utilization: float,
    usd_per_gpu_hour_at_utilization: float | None,
    fixed_usd_per_gpu_year: float | None = None,
    variable_usd_per_busy_gpu_hour: float | None = None,
    break_even_utilization: float | None = None,
    rent_usd_per_gpu_hour: float | None = None,
    yearly_fixed_usd: float | None = None,
    gpus: float | None = None,
) -> tuple[float, float] | None:
    """(F, v) of the owned cost per busy GPU-hour ``c(u) = F / u + v`` an Advice's size states, F in USD per GPU-hour
    of the year (``fixed_usd_per_gpu_year / 8760``); None where owning is not priced (``c(utilization)`` unknown).

    Documents issued before ``fixed_usd_per_gpu_year`` (2026-12-05) are read back: from ``c(utilization)`` and
    ``v``; without ``v``, from ``c(utilization)`` and the break-even ``c(u*) = r`` against the rental price ``r``;
    else from the yearly fixed cost ``A`` over ``gpus``."""
    c0 = usd_per_gpu_hour_at_utilization
    if c0 is None or not utilization:
        return None
    v = variable_usd_per_busy_gpu_hour
    if fixed_usd_per_gpu_year is not None and v is not None:
        return fixed_usd_per_gpu_year / HOURS_PER_YEAR, float(v)
    if v is not None and c0 > v:
        return (c0 - v) * utilization, float(v)
    u_star, r = break_even_utilization, rent_usd_per_gpu_hour
    if u_star is not None and r is not None and math.isfinite(u_star) and abs(utilization - u_star) > 1e-6:
        v = (c0 * utilization - r * u_star) / (utilization - u_star)
        f = (c0 - v) * utilization
        if f > 0 and v >= 0:
            return f, v
    if yearly_fixed_usd and gpus:
        f = yearly_fixed_usd / (gpus * HOURS_PER_YEAR)
        return f, max(c0 - f / utilization, 0.0)
    return None


def break_even_against_term(
    *,
    yearly_fixed_usd: ArrayLike,
    gpus: ArrayLike,
    term_usd_per_gpu_hour: ArrayLike,
    variable_usd_per_gpu_hour: ArrayLike,
) -> Array:
    """Break-even utilization against a term billed every hour, used or not (a reserved commitment): ``0`` where
    owning costs no more per hour even fully busy (``A / (N * 8760) + v <= r``: owning is cheaper at any
    utilization), ``inf`` otherwise. The term costs the same at every utilization, so the on-demand formula (which
    assumes rent is paid only while busy) does not apply; against a term, the hourly prices decide (reference
    cost-model.md 4.1: utilization break-even is "the wrong tool" against reserved capacity). Between ``A / (N *
    8760)`` and that plus ``v`` owning is cheaper only below ``(r - A / (N * 8760)) / v``; reported as ``inf``
    (not at full use): the costs per run at the given utilization compare the two there. No offer (an infinite
    price): ``inf``."""
    return break_even_with_committed_rent(
        yearly_fixed_usd=yearly_fixed_usd,
        gpus=gpus,
        committed_usd_per_year=_f(term_usd_per_gpu_hour) * _f(gpus) * HOURS_PER_YEAR,
        rent_usd_per_gpu_hour=0.0,
        variable_usd_per_gpu_hour=variable_usd_per_gpu_hour,
    )


def break_even_with_committed_rent(
    *,
    yearly_fixed_usd: ArrayLike,
    gpus: ArrayLike,
    committed_usd_per_year: ArrayLike,
    rent_usd_per_gpu_hour: ArrayLike,
    variable_usd_per_gpu_hour: ArrayLike,
) -> Array:
    """Break-even utilization against a rent with a part billed every hour used or not (``C`` a year: a reserved
    term, an always-on base) and a part billed per busy GPU-hour (``r``, of the ``N`` owned GPUs' busy hours).

    Owning costs ``A + v N 8760 u``, renting ``C + r N 8760 u``. Where ``r > v``: ``u* = max(0, (A - C) / (N 8760
    (r - v)))``, DESIGN.md's formula when ``C = 0``. Otherwise (a term alone: ``r = 0``) the hourly prices decide
    (reference cost-model.md 4.1): ``0`` where owning fully busy costs no more (``A + v N 8760 <= C + r N 8760``:
    owning is cheaper at any utilization), ``inf`` otherwise (owning is cheaper at most below some utilization, not
    a break-even). No price (infinite): ``inf``."""
    a, c, r, v = (
        _f(yearly_fixed_usd),
        _f(committed_usd_per_year),
        _f(rent_usd_per_gpu_hour),
        _f(variable_usd_per_gpu_hour),
    )
    hours = _f(gpus) * HOURS_PER_YEAR
    priced = np.isfinite(c) & np.isfinite(r) & (hours > 0)
    with _quiet():
        threshold = np.maximum((a - c) / (hours * (r - v)), 0.0)
        fully_busy_cheaper = a + v * hours <= c + r * hours
        return np.where(priced & (r > v), threshold, np.where(priced & (r <= v) & fully_busy_cheaper, 0.0, np.inf))


def break_even_for_market(
    *,
    yearly_fixed_usd: ArrayLike,
    gpus: ArrayLike,
    price_usd_per_gpu_hour: ArrayLike,
    variable_usd_per_gpu_hour: ArrayLike,
    committed: ArrayLike,
) -> Array:
    """Break-even utilization against a price billed while used (``break_even_utilization``) or, where
    ``committed``, a term billed every hour (``break_even_against_term``)."""
    figures = {
        "yearly_fixed_usd": yearly_fixed_usd,
        "gpus": gpus,
        "variable_usd_per_gpu_hour": variable_usd_per_gpu_hour,
    }
    return np.where(
        np.asarray(committed, dtype=bool),
        break_even_against_term(term_usd_per_gpu_hour=price_usd_per_gpu_hour, **figures),
        break_even_utilization(rent_usd_per_gpu_hour=price_usd_per_gpu_hour, **figures),
    )


def break_even_hours_per_year(
    *,
    yearly_fixed_usd: ArrayLike,
    gpus: ArrayLike,
    rent_usd_per_gpu_hour: ArrayLike,
    variable_usd_per_gpu_hour: ArrayLike,
) -> Array:
    """Busy hours per year (of each GPU) at which owning matches renting: ``u* * 8760``."""
    return (
        break_even_utilization(
            yearly_fixed_usd=yearly_fixed_usd,
            gpus=gpus,
            rent_usd_per_gpu_hour=rent_usd_per_gpu_hour,
            variable_usd_per_gpu_hour=variable_usd_per_gpu_hour,
        )
        * HOURS_PER_YEAR
    )


def run_hours(*, tokens: ArrayLike, tokens_per_s: ArrayLike, tokens_per_step: ArrayLike) -> Array:
    """Wall hours of one training run: whole optimizer steps, ceil(tokens / tokens per step) x step time, the step
    time tokens per step / tokens per second (a hostile probe, F11: 1 token took 24 us against a 0.099 s step; a run
    of real size moves by under one step). Inf or nan where the throughput is 0 or unknown."""
    per_step, total = _f(tokens_per_step), _f(tokens)
    with _quiet():
        # Whole token counts divide exactly (floor division of floats is exact below 2**53 tokens): a relative
        # tolerance on the quotient dropped the part-filled last step from about a million steps on (a reviewer:
        # 1e9 steps + 1 token gave 999,999,999.9999999 steps). Other counts: the tolerance keeps an exact multiple
        # of the step's tokens from rounding into one more step.
        integral = (total == np.round(total)) & (per_step == np.round(per_step)) & (per_step > 0)
        exact = -np.floor_divide(-total, np.where(integral, per_step, 1.0))
        steps = np.where(integral, exact, np.ceil(total / per_step * (1 - 1e-12)))
        return np.maximum(steps, 1.0) * per_step / _f(tokens_per_s) / SECONDS_PER_HOUR


def busy_share(*, runs_per_year: ArrayLike, run_hours: ArrayLike) -> Array:
    """The share of the year the runs keep one cluster busy: runs_per_year x run_hours / 8760, unclamped (above 1
    where one cluster cannot run them all)."""
    with _quiet():
        return _f(runs_per_year) * _f(run_hours) / HOURS_PER_YEAR


def usd_per_run(*, gpus: ArrayLike, run_hours: ArrayLike, usd_per_gpu_hour: ArrayLike) -> Array:
    """Cost of one run: GPUs x wall hours x price per busy GPU-hour (USD)."""
    return _f(gpus) * _f(run_hours) * _f(usd_per_gpu_hour)


def own_with_overflow(
    *,
    runs_per_year: ArrayLike,
    run_hours: ArrayLike,
    gpus: ArrayLike,
    yearly_fixed_usd: ArrayLike,
    variable_usd_per_gpu_hour: ArrayLike,
    rent_usd_per_run: ArrayLike,
) -> tuple[Array, Array, Array, Array]:
    """Owning one cluster and renting the runs it cannot finish in a year: ``(owned runs, rented runs, USD a year,
    USD a run)``.

    The owned cluster does ``min(runs, 8760 / run_hours)`` runs a year, fractional: runs_per_year is a rate
    everywhere else too (the utilization it implies is runs x run_hours / 8760, and 0.5 runs a year is allowed), so
    a run the cluster starts in one year and finishes in the next counts in both. Owning costs ``A + v x`` the busy
    GPU-hours of those runs (``owned_usd_per_year``); the other runs are rented at ``rent_usd_per_run`` each. The
    cost a run is the year's cost over all the runs (an outsider's probe: 64 owned H100s finish 19.4 of 25 runs of
    451.5 h; with the other 5.6 rented at $85,243 the year costs $1,779,434, against $2,131,067 renting all 25, where
    owning was dropped as unable to finish them). NaN where the run time or the runs are not positive."""
    runs, hours = _f(runs_per_year), _f(run_hours)
    ok = np.isfinite(hours) & (hours > 0) & np.isfinite(runs) & (runs > 0)
    with _quiet():
        owned = np.where(ok, np.minimum(runs, HOURS_PER_YEAR / hours), np.nan)
        rented = runs - owned
        usd_per_year = owned_usd_per_year(
            yearly_fixed_usd=yearly_fixed_usd,
            variable_usd_per_gpu_hour=variable_usd_per_gpu_hour,
            busy_gpu_hours_per_year=_f(gpus) * owned * hours,
        ) + rented * _f(rent_usd_per_run)
        return owned, rented, usd_per_year, usd_per_year / runs


def side_by_side_clusters(*, runs_per_year: ArrayLike, run_hours: ArrayLike) -> Array:
    """The clusters the year's runs go on side by side, each run whole on one cluster: a cluster-year holds
    floor(8760 / run_hours) whole runs (a run longer than a year holds a cluster ceil(run_hours / 8760) whole years),
    so ceil(runs_per_year x cluster-years per run) clusters, at least 1. 1 where the run time is unknown."""
    hours, runs = _f(run_hours), _f(runs_per_year)
    ok = np.isfinite(hours) & (hours > 0) & (runs > 0)
    h = np.where(ok, hours, 1.0)
    # The tolerances keep an exact fit (2 runs of 4,380 h) from rounding into one more cluster.
    per_cluster_year = np.floor(HOURS_PER_YEAR / h * (1 + 1e-12))
    years_per_run = np.where(per_cluster_year >= 1, 1 / np.maximum(per_cluster_year, 1), np.ceil(h / HOURS_PER_YEAR))
    return np.where(ok, np.maximum(np.ceil(runs * years_per_run * (1 - 1e-12)), 1.0), 1.0)


def reserved_terms(
    *, runs_per_year: ArrayLike, run_hours: ArrayLike, term_years: ArrayLike = 1.0
) -> tuple[Array, NDArray[np.bool_]]:
    """The terms a reserved rental bills, the cheaper of two ways to hold them: ``(terms, for_each_run)``.

    - held every year: the side-by-side clusters the year's runs need (``side_by_side_clusters``), each a term
      billed every hour, busy runs_per_year x run_hours / (clusters x 8760) of it (an outsider's probe: capping the
      busy share at 1 billed only the run hours of 4 one-year terms, understating the rent per run by 49%);
    - ``for_each_run``: ceil(run_hours / T) whole terms of ``term_years`` bought for each run alone, T the term's
      hours (a review probe: at 0.5 runs a year a 1-year term held every year billed 2 terms a run, at 0.1 ten,
      where the run needs one, and flipped the advice to buy).

    The busier way is the cheaper per busy hour: below one run a year buying for the run, unless a longer term held
    continuously costs less (a 3-year term at 0.5 runs a year: 2 years a run, not 3). Held every year (1 cluster)
    where the run time is unknown."""
    hours, runs = _f(run_hours), _f(runs_per_year)
    ok = np.isfinite(hours) & (hours > 0) & (runs > 0)
    clusters = side_by_side_clusters(runs_per_year=runs, run_hours=hours)
    term = _f(term_years) * HOURS_PER_YEAR
    with _quiet():
        # The tolerance keeps a run of exactly one term from rounding into two.
        per_run = np.where(term > 0, np.maximum(np.ceil(hours / term * (1 - 1e-12)), 1.0), np.inf)
        held_busy = runs * hours / (clusters * HOURS_PER_YEAR)
        for_each_run = ok & (hours / (per_run * term) > held_busy)
    return _f(np.where(for_each_run, per_run, clusters)), np.asarray(for_each_run, dtype=bool)


def term_utilization(*, runs_per_year: ArrayLike, run_hours: ArrayLike, term_years: ArrayLike = 1.0) -> Array:
    """The busy share of the reserved terms a run is billed (``reserved_terms``): runs_per_year x run_hours /
    (clusters x 8760) where they are held every year, run_hours / (terms x term hours) where bought for each run. 0
    where the run time is unknown, as costs.implied_utilization."""
    hours, runs = _f(run_hours), _f(runs_per_year)
    ok = np.isfinite(hours) & (hours > 0) & (runs > 0)
    terms, for_each_run = reserved_terms(runs_per_year=runs, run_hours=hours, term_years=term_years)
    with _quiet():
        held = runs * hours / (terms * HOURS_PER_YEAR)
        bought = hours / (terms * _f(term_years) * HOURS_PER_YEAR)
        return np.where(ok, np.where(for_each_run, bought, held), 0.0)


def committed_usd_per_busy_gpu_hour(*, usd_per_gpu_hour: ArrayLike, utilization: ArrayLike) -> Array:
    """A reserved term is billed every hour whether used or not: per busy GPU-hour it costs price / u."""
    u = _f(utilization)
    with _quiet():
        return np.where(u > 0, _f(usd_per_gpu_hour) / u, np.inf)


def spot_lost_fraction(
    *,
    nodes: ArrayLike,
    interruptions_per_node_hour: ArrayLike,
    checkpoint_s: ArrayLike,
    restart_s: ArrayLike,
) -> Array:
    """Fraction of spot wall time lost to checkpoints, recomputed work and restarts (Young/Daly, first order).

    The job is interrupted when any node is, so its mean time between interruptions is
    ``1 / (rate * nodes)`` hours; it checkpoints every ``sqrt(2 C M)``. Capped at 1 (no progress)."""
    rate = _f(interruptions_per_node_hour) * _f(nodes)  # per job-hour
    c = _f(checkpoint_s) / SECONDS_PER_HOUR
    r = _f(restart_s) / SECONDS_PER_HOUR
    with _quiet():
        mtbf = np.where(rate > 0, 1.0 / rate, np.inf)
        interval = np.sqrt(2.0 * c * mtbf)
        stalls = np.where(interval > 0, c / interval, 0.0)
        lost = np.where(np.isfinite(mtbf), stalls + (interval / 2.0 + r) / mtbf, 0.0)
    return np.clip(np.nan_to_num(lost, nan=1.0, posinf=1.0), 0.0, 1.0)


def spot_wall_hours(*, run_hours: ArrayLike, lost_fraction: ArrayLike) -> Array:
    """Wall hours a run needs on spot capacity: ``run / (1 - lost)``; infinite when nothing is left."""
    remaining = 1.0 - _f(lost_fraction)
    with _quiet():
        return np.where(remaining > 0, _f(run_hours) / remaining, np.inf)


def levelized_rent_usd_per_gpu_hour(
    *, usd_per_gpu_hour: ArrayLike, decline_per_year: ArrayLike, discount_rate: ArrayLike, years: ArrayLike
) -> Array:
    """The constant rental price with the same present value as today's price falling ``d`` a year.

    Year t (1..n) pays ``r0 (1-d)^(t-1)``, discounted by ``(1+i)^-t``. Equals ``r0`` when ``d = 0``."""
    r0, d, i, n = np.broadcast_arrays(_f(usd_per_gpu_hour), _f(decline_per_year), _f(discount_rate), _f(years))
    horizon = int(np.ceil(np.max(n))) if n.size else 0
    t = np.arange(1, horizon + 1, dtype=np.float64).reshape((-1,) + (1,) * n.ndim)
    in_horizon = t <= n
    discount = np.exp(-t * np.log1p(i)) * in_horizon
    decline = np.exp((t - 1.0) * np.log1p(-np.minimum(d, 1.0 - 1e-12)))
    with _quiet():
        ratio = (decline * discount).sum(axis=0) / discount.sum(axis=0)
    return r0 * np.where(np.isfinite(ratio), ratio, 1.0)


def cumulative_cost_by_month(
    *,
    months: int,
    rent_usd_per_month: ArrayLike,
    rent_decline_per_year: ArrayLike,
    capex_usd: ArrayLike,
    own_usd_per_month: ArrayLike,
    residual_usd: ArrayLike,
) -> tuple[Array, Array]:
    """Undiscounted cumulative cash spent renting and owning at the end of months 0..``months``.

    Renting pays the month's rent, falling ``rent_decline_per_year`` once a year (months 1-12 at today's price,
    13-24 at ``(1 - d)``, ...): the same yearly steps as ``levelized_rent_usd_per_gpu_hour`` and
    ``npv_rent_and_own_usd``, so each year's rent discounted at the year's end adds up to the present cost the
    Advice states (a monthly step made a proposal's cash table 9.5% below the API's present cost at 20%/year).
    Owning pays the capex at month 0, then its running costs, and gets the residual value back when sold at the
    last month."""
    m = np.arange(months + 1, dtype=np.float64)
    year_index = np.floor((m[1:] - 1.0) / MONTHS_PER_YEAR)
    price_factor = np.exp(year_index * np.log1p(-np.minimum(_f(rent_decline_per_year), 1.0)))
    rent = np.concatenate([[0.0], np.cumsum(_f(rent_usd_per_month) * price_factor)])
    own = _f(capex_usd) + _f(own_usd_per_month) * m
    own[-1] -= float(_f(residual_usd))
    return rent, own


def crossover_month(*, rent_cumulative_usd: ArrayLike, own_cumulative_usd: ArrayLike) -> int | None:
    """First month (>= 1) by which renting has cost at least as much as owning; None if never in the horizon."""
    rent, own = _f(rent_cumulative_usd), _f(own_cumulative_usd)
    hits = np.nonzero(rent[1:] >= own[1:])[0]
    return int(hits[0]) + 1 if hits.size else None


def present_cost_usd(*, usd_per_year: ArrayLike, discount_rate: ArrayLike, years: ArrayLike) -> Array:
    """Present value of a constant yearly payment at each year's end over ``years`` (an annuity)."""
    crf = capital_recovery_factor(discount_rate=discount_rate, years=years)
    return _f(usd_per_year) / crf


def npv_rent_and_own_usd(
    *,
    rent_usd_per_year: ArrayLike,
    rent_decline_per_year: ArrayLike,
    capex_usd: ArrayLike,
    own_running_usd_per_year: ArrayLike,
    residual_usd: ArrayLike,
    discount_rate: ArrayLike,
    years: ArrayLike,
) -> tuple[Array, Array]:
    """Present cost (positive USD, i.e. minus the NPV) of renting and of owning over the horizon.

    Own: ``capex + sum_t running / (1+i)^t - residual / (1+i)^n``. Rent: ``sum_t rent_t / (1+i)^t``
    with ``rent_t = rent (1-d)^(t-1)``, i.e. the levelized price times the annuity factor."""
    levelized = levelized_rent_usd_per_gpu_hour(
        usd_per_gpu_hour=rent_usd_per_year,
        decline_per_year=rent_decline_per_year,
        discount_rate=discount_rate,
        years=years,
    )
    rent = present_cost_usd(usd_per_year=levelized, discount_rate=discount_rate, years=years)
    own = (
        _f(capex_usd)
        + present_cost_usd(usd_per_year=own_running_usd_per_year, discount_rate=discount_rate, years=years)
        - _f(residual_usd) * present_value_factor(discount_rate=discount_rate, years=years)
    )
    return rent, own
