"""The year's GPU demand, hour by hour: jobs' runs placed on the calendar and measured usage resampled.

The year is the DESIGN.md convention of 8760 hours (365 days, ``advisor.economics.HOURS_PER_YEAR``)
and is treated as a steady state that repeats: a run that starts in December and outlasts the year
wraps into January of the same plan (next year's January looks like this year's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from advisor.economics import HOURS_PER_YEAR as _HOURS

HOURS: Final[int] = int(_HOURS)
# Days per month of a 365-day year (the 8760-hour convention has no 29 February).
MONTH_DAYS: Final[tuple[int, ...]] = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
MONTH_START_HOUR: Final[NDArray[np.int64]] = np.concatenate([[0], np.cumsum(MONTH_DAYS)[:-1]]).astype(np.int64) * 24
# A gap between usage samples longer than this many typical intervals is missing data, not demand.
MAX_GAP_INTERVALS: Final[float] = 2.0
# An hour counts as observed when at least this fraction of it is covered by usage samples.
MIN_HOUR_COVERAGE: Final[float] = 0.5


@dataclass(frozen=True)
class Job:
    """One line of the job mix: ``runs_per_year`` runs of ``gpus`` GPUs for ``run_hours`` wall-clock hours."""

    name: str
    gpus: int
    run_hours: float
    runs_per_year: int = 1
    months: tuple[int, ...] = ()  # 1..12: the months runs start in; empty = spread evenly over the year
    max_wait_hours: int = 0  # how long a run may wait for owned capacity before it is rented
    interruptible: bool = False  # may run on spot when rented
    # A line of a job the input gives as one (a service's hours above its base, ``fleet.pricing``): shown after its
    # job's name, which it keeps, so the plan still reads as one job.
    part: str = ""
    # The calibration block of the advice its run hours come from (a scenario job; None for gpus and hours given):
    # the plan names it per line, as the advice does (a finance probe: the fleet's hours named no calibration).
    calibration: Mapping[str, Any] | None = field(default=None, compare=False)
    # Whether one run's work crosses nodes (a multi-node training run, an inference replica wider than a server):
    # the owned cluster then buys the scale-out fabric (advisor.cash_flow.carries_fabric). None: gpus > one node.
    spans_nodes: bool | None = None
    # GPUs one rented instance must hold together: a service's replica (its TP), whose replicas rent apart; 0: the
    # run's GPUs up to a node (a run's GPUs work together). What a rented line is priced at (``plan.rent_units``).
    unit_gpus: int = 0

    @property
    def label(self) -> str:
        """The name the plan shows: the job's, with the part it is of that job."""
        return f"{self.name} ({self.part})" if self.part else self.name


@dataclass(frozen=True)
class Runs:
    """Every run of the mix, one entry per run (arrays of equal length), in placement order."""

    job: NDArray[np.int64]  # index into the job list
    start: NDArray[np.int64]  # requested start hour of the year
    hours: NDArray[np.float64]  # wall-clock hours of the run (exact)
    slots: NDArray[np.int64]  # whole hours the run occupies on the hourly grid (ceil of hours)
    gpus: NDArray[np.int64]
    max_wait: NDArray[np.int64]  # hours
    interruptible: NDArray[np.bool_]
    unit_gpus: NDArray[np.int64]  # the job's unit_gpus (0: its GPUs up to a node)

    def __len__(self) -> int:
        return int(self.job.size)


def run_starts(job: Job) -> NDArray[np.int64]:
    """Requested start hours of a job's runs: in the given months (the k-th of c runs in a month starts
    k/c of the way into it) or spread evenly over the year, the first at hour 0."""
    n = job.runs_per_year
    if not job.months:
        return (np.arange(n, dtype=np.int64) * HOURS) // n
    months = np.asarray(job.months, dtype=np.int64) - 1
    which = months[np.arange(n) % months.size]
    # Runs counted by month value, so that a month listed twice holds more runs spread over it (an outsider's probe:
    # [3, 3] put two runs at the same hour).
    _, group, per_value = np.unique(which, return_inverse=True, return_counts=True)
    order = np.argsort(group, kind="stable")
    nth = np.empty(n, dtype=np.int64)
    nth[order] = np.arange(n) - np.repeat(np.cumsum(per_value) - per_value, per_value)
    per_month = per_value[group]
    month_hours = np.asarray(MONTH_DAYS, dtype=np.int64)[which] * 24
    return MONTH_START_HOUR[which] + (nth * month_hours) // per_month


def schedule_runs(jobs: list[Job] | tuple[Job, ...]) -> Runs:
    """All runs of all jobs in placement order: the larger run (GPU-hours) first, then by requested start. Not
    first come, first served: a capacity planner's probe found a short 4-GPU job (4,000 GPU-hours) holding the owned
    node at hour 0 push an 8,000-hour 8-GPU run (64,000 GPU-hours) to rent, own 0 at $204,000 a year where own 8
    costs $143,113, and adding a job lowered the cost. Runs that bring the owned GPUs the most GPU-hours claim them
    first; smaller runs take what is left (or wait for it, up to their max_wait)."""
    if not jobs:
        empty = np.zeros(0, dtype=np.int64)
        return Runs(empty, empty, np.zeros(0), empty, empty, empty, np.zeros(0, dtype=bool), empty)
    counts = np.array([j.runs_per_year for j in jobs], dtype=np.int64)
    job = np.repeat(np.arange(len(jobs), dtype=np.int64), counts)
    start = np.concatenate([run_starts(j) for j in jobs]) % HOURS
    hours = np.repeat(np.array([j.run_hours for j in jobs], dtype=float), counts)
    gpus = np.repeat(np.array([j.gpus for j in jobs], dtype=np.int64), counts)
    order = np.lexsort((start, -(hours * gpus)))
    return Runs(
        job=job[order],
        start=start[order],
        hours=hours[order],
        slots=np.ceil(hours[order] - 1e-9).astype(np.int64).clip(1, HOURS),
        gpus=gpus[order],
        max_wait=np.repeat(np.array([j.max_wait_hours for j in jobs], dtype=np.int64), counts)[order],
        interruptible=np.repeat(np.array([j.interruptible for j in jobs], dtype=bool), counts)[order],
        unit_gpus=np.repeat(np.array([j.unit_gpus for j in jobs], dtype=np.int64), counts)[order],
    )


def wait_hours(runs: Runs) -> NDArray[np.int64]:
    """Hours each run may wait for owned capacity: its max_wait, but never so long that it would end past a year."""
    return np.minimum(runs.max_wait, HOURS - runs.slots)


def placement_hours(runs: Runs) -> NDArray[np.int64]:
    """Hours of the year placing each run looks at: the hours it holds, and those it may wait. Placement's work
    grows with their sum (times the candidate owned sizes), not with the number of runs alone."""
    return runs.slots + wait_hours(runs)


def occupancy(
    *,
    start: NDArray[np.int64],
    slots: NDArray[np.int64],
    gpus: NDArray[np.float64],
    hours: NDArray[np.float64] | None = None,
) -> NDArray[np.float64]:
    """GPUs busy in each hour of the (cyclic) year when run i holds ``gpus[i]`` from ``start[i]`` for
    ``slots[i]`` hours. With ``hours`` (each run's exact hours), its last slot counts only the share of the hour it
    runs, so the series sums to the exact GPU-hours (a 0.1-hour run is 0.1 x its GPUs in its hour, not all of
    them). Difference arrays: no loop over hours."""
    diff = np.zeros(2 * HOURS + 1)
    np.add.at(diff, start, gpus)
    np.add.at(diff, start + slots, -gpus)
    if hours is not None:
        unused = gpus * np.clip(slots - np.asarray(hours, dtype=float), 0.0, 1.0)
        np.add.at(diff, start + slots - 1, -unused)
        np.add.at(diff, start + slots, unused)
    series = np.cumsum(diff)[: 2 * HOURS]
    return series[:HOURS] + series[HOURS:]


def requested_demand(
    runs: Runs, usage: NDArray[np.float64] | None = None, *, whole_hours: bool = False
) -> NDArray[np.float64]:
    """GPUs wanted in each hour when every run starts when it asks to (plus measured usage): mean GPUs over each
    hour (a run's last, partial hour counted by its share), or with ``whole_hours`` the GPUs held at once in the
    hour (what capacity must hold: the peak)."""
    exact = None if whole_hours else runs.hours
    series = occupancy(start=runs.start, slots=runs.slots, gpus=runs.gpus.astype(float), hours=exact)
    return series if usage is None else series + usage


def gpu_hours_above(
    series: NDArray[np.float64], levels: NDArray[np.float64], *, weights: NDArray[np.float64] | None = None
) -> NDArray[np.float64]:
    """GPU-hours of the year above each level: sum over hours of weight x max(series - level, 0) (sorted suffix
    sums); ``weights``: the share of each hour the GPUs above the level are used (1 when not given)."""
    order = np.argsort(series, kind="stable")
    ordered = series[order]
    w = np.ones_like(ordered) if weights is None else np.asarray(weights, dtype=float)[order]
    weighted = np.concatenate([np.cumsum((w * ordered)[::-1])[::-1], [0.0]])
    weight = np.concatenate([np.cumsum(w[::-1])[::-1], [0.0]])
    lv = np.asarray(levels, dtype=float)
    idx = np.searchsorted(ordered, lv, side="right")
    above: NDArray[np.float64] = weighted[idx] - lv * weight[idx]
    return above


def load_duration(series: NDArray[np.float64], levels: NDArray[np.float64]) -> NDArray[np.float64]:
    """Hours of the year with demand at or above each level."""
    ordered = np.sort(series)
    return (ordered.size - np.searchsorted(ordered, np.asarray(levels, dtype=float) - 1e-9, side="left")).astype(float)


@dataclass(frozen=True)
class Usage:
    """Measured demand resampled to the plan's year, and what was done to it."""

    hourly: NDArray[np.float64]  # 8760 values, GPUs busy (growth applied)
    observed_hours: int  # hours of the series with data
    span_hours: float  # first sample to the last plus the interval it holds (the span the one-hour rule counts)
    missing_hours: int  # hours inside the span without data (gaps)
    repeated: bool  # fewer observed hours than a year: the observed hours were repeated to fill it
    growth: float
    start_hour: int = 0  # hour of the (365-day) year the first sample falls in, UTC
    leap_day_hours: int = 0  # observed hours of 29 February, laid on 28 February (the plan year has 365 days)
    older_hours: int = 0  # observed hours left out because a later one fell on the same calendar hour
    copies: tuple[int, int] = (1, 1)  # fewest and most times an observed hour counts in the year (series repeated)
    week_filled_hours: int = 0  # hours not observed that took the same hour of a nearby week


def _calendar_hours(first: float, n: int) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """(Hour of the 365-day year (0..8759, UTC), whether it is of 29 February) of hours ``first + k`` (hours since
    1970-01-01T00:00Z), k < n. The plan year has no 29 February: its 24 hours are laid on 28 February, and later
    hours of a leap year move back a day (a hostile-input review: 29 February's hours were thrown away, and usage
    all on that day planned "own 0 GPUs, $0 a year")."""
    stamps = np.datetime64(0, "h") + (np.floor(first) + np.arange(n)).astype("timedelta64[h]")
    years = stamps.astype("datetime64[Y]")
    hour = (stamps - years.astype("datetime64[h]")).astype(np.int64)
    year = years.astype(np.int64) + 1970
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    feb29 = int(MONTH_START_HOUR[2])  # a leap year's 29 February starts where a common year's March does
    late = leap & (hour >= feb29)
    out: NDArray[np.int64] = hour - 24 * late
    return out, late & (hour < feb29 + 24)


WEEK: Final[int] = 168


def _fill_from_weeks(known: NDArray[np.bool_], year: NDArray[np.float64]) -> int:
    """In place, each hour not observed takes the same hour of the week from the nearest observed week (earlier
    first; at most half a year away, cyclic): a July-start export across a leap year misses 30 June, which should look
    like the June around it, not like the series' start. Returns the hours filled."""
    todo = np.flatnonzero(~known)
    filled = 0
    for k in range(1, HOURS // (2 * WEEK) + 1):
        if not todo.size:
            break
        for shift in (-k * WEEK, k * WEEK):
            source = (todo + shift) % HOURS
            ok = known[source]
            year[todo[ok]] = year[source[ok]]
            known[todo[ok]] = True
            filled += int(np.count_nonzero(ok))
            todo = todo[~ok]
    return filled


def _fill_year(known: NDArray[np.bool_], year: NDArray[np.float64], start: int) -> tuple[int, int, int]:
    """Fill, in place, the hours of the year the series did not observe. Observed more than half the year: from the
    same hour of a nearby week (``_fill_from_weeks``). Otherwise the series repeated in time order from the hour after
    its last observed one: whole copies, then one part copy whose hours are spread evenly over the series (np.resize
    counted the first hours of a 715-hour series 13 times and the rest 12: a probe's month of usage lost 0.28% of its
    GPU-hours). (Hours filled from nearby weeks, fewest and most times an observed hour counts.)"""
    order = (np.arange(HOURS) + start) % HOURS  # calendar hours in time order from the first sample
    seen = known[order]
    series = year[order][seen]
    m, u = series.size, HOURS - series.size
    if not u:
        return 0, 1, 1
    if u <= m:
        weeks = _fill_from_weeks(known, year)
        if known.all():
            return weeks, 1, 1
        seen = known[order]
    # The holes in time order after the observed hours: those after the last observed hour first, then wrapping.
    after = np.arange(HOURS) > int(np.flatnonzero(seen)[-1])
    holes = np.concatenate([order[~seen & after], order[~seen & ~after]])
    whole, part = divmod(holes.size, m)
    spread = (np.arange(part, dtype=np.int64) * m + m // 2) // max(part, 1)
    year[holes] = series[np.concatenate([np.tile(np.arange(m, dtype=np.int64), whole), spread])]
    return 0, 1 + whole, 1 + whole + (1 if part else 0)


def hourly_usage(
    *, hours: NDArray[np.float64], gpus: NDArray[np.float64], growth: float = 1.0, first_hour: float = 0.0
) -> Usage:
    """Resample a demand series given at any interval to hourly means, and lay it on the calendar year.

    ``hours``: sample times in hours from the first sample (increasing); ``first_hour``: the first sample's time in
    hours since 1970-01-01T00:00Z (UTC; 0, the default, is 1 January); ``gpus``: GPUs busy from
    that sample until the next. Each sample holds for its interval, except that an interval longer
    than MAX_GAP_INTERVALS typical (median) intervals is a gap (an outage, dropped rows): the sample
    holds for one typical interval and the rest is missing. Hours covered less than
    MIN_HOUR_COVERAGE are missing. Each observed hour goes on its calendar hour of the plan year (July data in July,
    as jobs' months are): a series longer than a year keeps the latest observation of each calendar hour, 29 February
    is laid on 28 February (where both were observed, 29 February is the later), and the calendar hours not observed
    are filled from nearby weeks or the series repeated (``_fill_year``); the shape of demand, scaled by ``growth``."""
    t = np.asarray(hours, dtype=float)
    v = np.asarray(gpus, dtype=float)
    step = float(np.median(np.diff(t))) if t.size > 1 else 1.0
    gaps = np.append(np.diff(t), step)
    held = np.where(gaps > MAX_GAP_INTERVALS * step, step, gaps)
    # Integral of demand and of coverage: piecewise linear between these knots, flat across gaps.
    knots = np.ravel(np.column_stack([t, t + held]))
    area = np.ravel(np.column_stack([np.zeros_like(v), v * held]))
    covered = np.ravel(np.column_stack([np.zeros_like(held), held]))
    cum_area, cum_cover = np.cumsum(area), np.cumsum(covered)
    edges = np.arange(0.0, np.floor(t[-1] + held[-1]) + 1.0)
    if edges.size < 2:
        edges = np.array([0.0, 1.0])
    a, c = np.interp(edges, knots, cum_area), np.interp(edges, knots, cum_cover)
    cover = np.diff(c)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.diff(a) / cover
    seen = cover >= MIN_HOUR_COVERAGE
    if not seen.any():
        mean, seen = np.full(mean.size, float(np.mean(v))), np.ones(mean.size, dtype=bool)
    calendar, leap = _calendar_hours(first_hour, mean.size)
    # The latest observation of each calendar hour: the first of each in the reversed series. Every observed hour has
    # a calendar hour (29 February's is 28 February's), so the year always holds at least one.
    hit, latest = np.unique(calendar[seen][::-1], return_index=True)
    year = np.zeros(HOURS)
    year[hit] = mean[seen][::-1][latest]
    known = np.zeros(HOURS, dtype=bool)
    known[hit] = True
    start = int(calendar[seen][0])
    weeks, *copies = _fill_year(known, year, start)
    return Usage(
        hourly=year * growth,
        observed_hours=int(np.count_nonzero(seen)),
        span_hours=float(t[-1] - t[0] + held[-1]),
        missing_hours=int(np.count_nonzero(~seen)),
        repeated=bool(hit.size < HOURS),
        growth=float(growth),
        start_hour=start,
        leap_day_hours=int(np.count_nonzero(seen & leap)),
        older_hours=int(np.count_nonzero(seen)) - int(hit.size),
        copies=(copies[0], copies[1]),
        week_filled_hours=weeks,
    )
