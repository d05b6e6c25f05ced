"""Renting a serving deployment in whole instances: a provider rents an instance of ``gpu_count`` GPUs, never a
part of one, so a replica of ``tp`` GPUs on an 8-GPU instance pays for the whole instance (an outsider's check:
7 one-GPU B200 replicas were billed at $44/7 per GPU-hour, $14,945/month, where the only offer is one 8-GPU instance
at $44/hour, $32,120/month for the base alone).

An instance holds ``floor(gpu_count / tp)`` replicas. A replica larger than the instance (a mixture of experts over
nodes: DeepSeek-V3 fp8 at TP 16 on 8-GPU H100 instances) rents ``tp / gpu_count`` whole instances where
``gpu_count`` divides ``tp`` and the instance is a whole scale-up node (at least its NVLink domain's GPUs), billed
together: the table rents it as one unit of ``tp`` GPUs at that many instances' price, one replica a unit, as a
manual quote is rented (an offer whose ``gpu_count`` does not divide ``tp`` cannot hold it).

Renting follows the traffic: ``k`` base instances billed all month hold ``k x q_base`` replicas; the replicas needed
above that at each 5-minute step run on ``ceil(above / q_burst)`` burst instances, billed while needed. ``k`` is the
cheapest count that holds the replicas needed all day (the floor never goes on the burst market, which may be spot);
every count between that and the peak's is tried when there are no more of them than profile steps, else the counts
at which a step's need is just held (exact when ``q_burst`` divides ``q_base``, and within one burst instance's
rounding otherwise).

Everything is vectorised over deployments (rows) and the day's steps (columns); the caller loops only over the few
pairs of instance sizes (replicas per instance) the offers have."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd


def time_average(values: np.ndarray, share: Any) -> Any:
    """Average over the last axis, weighted by ``share`` (None or equal shares: the plain mean, which keeps exact
    values exact: a weighted sum turned 0.375 into 0.3749999999999995 and '38% busy' into '37%')."""
    weights = None if share is None else np.asarray(share, dtype=np.float64)
    if weights is None or np.all(weights == weights[0]):
        return values.mean(axis=-1)
    return values @ weights


def _base_counts(n: np.ndarray, q_base: np.ndarray) -> np.ndarray:
    """Candidate base instance counts per row (rows, steps): every count from the floor's to the peak's when they
    are no more than the steps, else the count that just holds each step's need."""
    steps = n.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        corners = np.ceil(n / q_base[:, None] - 1e-9)
    low, high = corners.min(axis=1), corners.max(axis=1)
    every = np.minimum(low[:, None] + np.arange(steps)[None, :], high[:, None])
    return np.asarray(np.where((high - low < steps)[:, None], every, corners))


def _level_weights(n: np.ndarray, share: Any) -> tuple[np.ndarray, np.ndarray, bool]:
    """(distinct levels (L,), per row the weight of each level (rows, L): steps counted when the shares are equal,
    else shares of the day; whether they are equal)."""
    values, where = np.unique(n, return_inverse=True)
    steps = n.shape[1]
    equal = bool(share is None or np.all(np.asarray(share) == np.asarray(share).ravel()[0]))
    step_weight = np.ones(steps) if equal else np.asarray(share, dtype=np.float64)
    cell = np.arange(n.shape[0])[:, None] * values.size + where.reshape(n.shape)
    weights = np.bincount(cell.ravel(), np.tile(step_weight, n.shape[0]), minlength=n.shape[0] * values.size)
    return values, weights.reshape(n.shape[0], values.size), equal


def day_level_shares(*, needed: Any, share: Any) -> tuple[np.ndarray, np.ndarray]:
    """The day's needs as the distinct levels the rows take (L,) and each level's share of the day per row
    (rows, L), summing to 1: the levels ``whole_instance_split`` bills the day at (a fleet plan lays them on its
    year, ``advisor.advice.fleet.pricing``)."""
    n = np.asarray(needed, dtype=np.float64)
    values, weights, equal = _level_weights(n, share)
    return values, weights / n.shape[1] if equal else weights


def _day_levels(n: np.ndarray, share: Any) -> tuple[np.ndarray, Any]:
    """The day's needs as the distinct levels the rows take, with each level's share of the day per row, and the
    time average over them: (levels (1, L) or (rows, steps), average of (rows, candidates, L) -> (rows, candidates)).
    Replicas needed are whole numbers that take a few dozen values over 288 steps, so the (rows, candidates, steps)
    bill shrinks to (rows, candidates, levels): the bench's 70B service took 2.5x longer to advise before this. Equal
    shares count steps (integers) and divide once, so exact averages stay exact, as time_average keeps them."""
    values, weights, equal = _level_weights(n, share)
    steps = n.shape[1]
    if values.size >= steps:  # as many levels as steps: nothing to gain
        return n, lambda x: time_average(x, share)

    def average(x: np.ndarray) -> np.ndarray:
        total: np.ndarray = (x * weights[:, None, :]).sum(axis=-1)
        return total / steps if equal else total

    return values[None, :], average


def whole_instance_split(
    *,
    needed: Any,
    share: Any,
    base_usd_per_hour: Any,
    base_replicas_per_instance: Any,
    burst_usd_per_hour: Any,
    burst_replicas_per_instance: Any,
    day: tuple[np.ndarray, Any] | None = None,
) -> dict[str, np.ndarray]:
    """The cheapest base/burst split of each row's replicas over the day, in whole instances.

    ``needed``: (rows, steps) replicas needed; ``share``: each step's share of the day (None: equal); prices per
    instance-hour (inf: no such offer) and replicas per instance (>= 1) per row. Returns per row: ``base_instances``,
    ``base_replicas`` (replicas the base holds, at most the peak's), ``burst_instances_mean``, ``burst_mean`` (replicas
    on burst instances, time-averaged), ``base_used`` / ``burst_used`` (replica-hours an hour each part serves) and
    ``usd_per_hour``; nan / inf where a row needs infinitely many replicas or has no base price."""
    n = np.asarray(needed, dtype=np.float64)
    finite = np.isfinite(n).all(axis=1)
    n = np.where(np.isfinite(n), n, 0.0)
    q_b = np.maximum(np.asarray(base_replicas_per_instance, dtype=np.float64), 1.0)
    q_r = np.maximum(np.asarray(burst_replicas_per_instance, dtype=np.float64), 1.0)
    p_b = np.asarray(base_usd_per_hour, dtype=np.float64)
    p_r = np.asarray(burst_usd_per_hour, dtype=np.float64)
    k = _base_counts(n, q_b)  # (rows, candidates)
    held = k * q_b[:, None]
    levels, average = day if day is not None else _day_levels(n, share)
    above = np.maximum(levels[:, None, :] - held[:, :, None], 0.0)  # (rows, candidates, levels)
    burst_instances = average(np.ceil(above / q_r[:, None, None] - 1e-9))
    with np.errstate(invalid="ignore"):
        cost = k * p_b[:, None] + np.where(burst_instances > 0, burst_instances * p_r[:, None], 0.0)
    cost = np.where(np.isnan(cost), np.inf, cost)
    best = np.argmin(cost, axis=1)
    rows = np.arange(n.shape[0])
    burst_mean = average(above[rows, best][:, None, :])[:, 0]
    served = time_average(n, share)
    ok = finite & np.isfinite(cost[rows, best])
    return {
        "base_instances": np.where(ok, k[rows, best], np.nan),
        "base_replicas": np.where(ok, np.minimum(held[rows, best], n.max(axis=1)), np.nan),
        "burst_instances_mean": np.where(ok, burst_instances[rows, best], np.nan),
        "burst_mean": np.where(ok, burst_mean, np.nan),
        "base_used": np.where(ok, served - burst_mean, np.nan),
        "burst_used": np.where(ok, burst_mean, np.nan),
        "usd_per_hour": np.where(ok, cost[rows, best], np.inf),
    }


@dataclass(frozen=True)
class InstanceTable:
    """Each offer (rows of ``frame``) as it serves each deployment (columns): replicas per instance (0: the offer
    cannot hold a replica or supply the peak) and the price per instance-hour. A manual quote (per GPU-hour) is
    rented one replica at a time. Where a replica spans ``instances_per_unit`` > 1 whole instances of the offer, the
    table's "instance" is that unit: ``gpus_per_instance`` and ``usd_per_hour`` are the unit's (tp GPUs, the
    instances' price together), and the documents divide them back (``instances`` counts the offer's instances)."""

    frame: pd.DataFrame
    replicas_per_instance: np.ndarray  # (offers, deployments)
    usd_per_hour: np.ndarray  # (offers, deployments)
    gpus_per_instance: np.ndarray  # (offers, deployments)
    instances_per_unit: np.ndarray  # (offers, deployments): the offer's instances one replica rents (1: it fits one)

    @classmethod
    def build(
        cls,
        frame: pd.DataFrame,
        *,
        tps: Sequence[int],
        peak_replicas: np.ndarray,
        manual: bool,
        scale_up: int = 0,
    ) -> InstanceTable:
        """``scale_up``: the GPUs of one scale-up (NVLink) domain the sizing assumes; a replica of more GPUs than that
        spans nodes and rents whole instances of at least that many GPUs (a node each, never 16 one-GPU instances
        with no NVLink between them); 0: no replica spans instances."""
        tp = np.asarray(tps, dtype=np.float64)[None, :]
        count = frame["gpu_count"].to_numpy(dtype=float)[:, None]
        hourly = frame["usd_per_hour"].to_numpy(dtype=float)[:, None]
        if manual:  # the quote is per GPU-hour: an "instance" is one replica's GPUs
            count = np.broadcast_to(tp, (len(frame), tp.shape[1]))
            hourly = hourly * tp
        # A replica of more GPUs than the instance rents tp / gpu_count whole instances where that is a whole number:
        # one unit of tp GPUs at that many instances' price (as a quote: one replica a unit).
        with np.errstate(divide="ignore", invalid="ignore"):
            per = tp / count
        whole = (count > 0) & (per > 1) & (np.abs(per - np.round(per)) < 1e-9)
        spans = whole & (scale_up > 0) & (tp > scale_up) & (count >= scale_up)
        units = np.where(spans, np.round(per), 1.0)
        count = count * units
        hourly = hourly * units
        q = np.floor(count / tp + 1e-9) * np.ones_like(tp)
        # As training's offers: an offer supplies a deployment only where the provider's sourced cap holds the
        # instances its peak needs (a hostile probe: 483,118 H100s at a one-GPU offer whose cap is 1); an unknown cap
        # does not exclude it (capacity_warning says so).
        peak = np.where(np.isfinite(peak_replicas), peak_replicas, 1.0)[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            peak_gpus = np.ceil(peak / q) * count
        capacity = frame["max_gpus"].to_numpy(dtype=float)[:, None]
        usable = (q >= 1) & (hourly > 0) & np.isfinite(hourly) & (manual | ~(capacity < peak_gpus))
        return cls(
            frame=frame,
            replicas_per_instance=np.where(usable, q, 0.0),
            usd_per_hour=np.where(usable, hourly * np.ones_like(tp), np.inf),
            gpus_per_instance=count * np.ones_like(tp),
            instances_per_unit=units * np.ones_like(tp),
        )

    def instances(self, units: Any, row: int, i: int) -> Any:
        """The offer's instances that ``units`` of the table's instances are, for deployment ``i`` at ``row``."""
        return units * self.instances_per_unit[row, i] if row >= 0 else units

    def rows_of(self, markets: Sequence[str]) -> np.ndarray:
        return np.flatnonzero(self.frame["market"].isin(list(markets)).to_numpy())

    def options(self, markets: Sequence[str]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per instance size (replicas per instance), the cheapest offer among ``markets`` for each deployment:
        a list of (row or -1, price per instance-hour, replicas per instance), each of shape (deployments,). On a tie
        the market listed first wins (on-demand before a term: it commits to nothing)."""
        order = {m: i for i, m in enumerate(markets)}
        rows = self.rows_of(markets)
        rows = rows[np.argsort([order[m] for m in self.frame["market"].to_numpy()[rows]], kind="stable")]
        out = []
        for size in np.unique(self.replicas_per_instance[rows]) if rows.size else []:
            if size < 1:
                continue
            price = np.where(self.replicas_per_instance[rows] == size, self.usd_per_hour[rows], np.inf)
            pick = np.argmin(price, axis=0)
            value = price[pick, np.arange(price.shape[1])]
            out.append((np.where(np.isfinite(value), rows[pick], -1), value, np.full(price.shape[1], size)))
        return out

    def alone(self, market: str, *, needed: np.ndarray, share: Any, all_month: bool) -> tuple[np.ndarray, np.ndarray]:
        """The cheapest offer of ``market`` renting each deployment's whole need by itself, billed while needed (a
        term: all month at the peak's instances): (row or -1, USD per hour) per deployment."""
        rows = self.rows_of([market])
        size = needed.shape[0]
        if not rows.size:
            return np.full(size, -1), np.full(size, np.inf)
        n = np.where(np.isfinite(needed), needed, np.inf)
        q = self.replicas_per_instance[rows][:, :, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            instances = np.where(q >= 1, np.ceil(n[None, :, :] / q - 1e-9), np.inf)
        count = instances.max(axis=2) if all_month else time_average(instances, share)
        with np.errstate(invalid="ignore"):
            bill = np.where(np.isfinite(count), count * self.usd_per_hour[rows], np.inf)
        pick = np.argmin(bill, axis=0)
        value = bill[pick, np.arange(size)]
        return np.where(np.isfinite(value), rows[pick], -1), value


def cheapest_split(
    table: InstanceTable,
    *,
    needed: np.ndarray,
    share: Any,
    base_options: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    burst_options: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> dict[str, np.ndarray]:
    """The cheapest whole-instance split over every pair of a base and a burst instance size, per deployment, with
    the offer rows it uses (``base_row``, ``burst_row``; -1: none)."""
    size = needed.shape[0]
    none = (np.full(size, -1), np.full(size, np.inf), np.ones(size))
    best: dict[str, np.ndarray] | None = None
    # The day's levels are the same for every pair of instance sizes: found once.
    day = _day_levels(np.where(np.isfinite(needed), needed, 0.0), share)
    for base_row, base_price, base_q in base_options or [none]:
        for burst_row, burst_price, burst_q in burst_options or [none]:
            split = whole_instance_split(
                needed=needed,
                share=share,
                base_usd_per_hour=base_price,
                base_replicas_per_instance=base_q,
                burst_usd_per_hour=burst_price,
                burst_replicas_per_instance=burst_q,
                day=day,
            )
            split["base_row"] = np.where(np.isfinite(split["usd_per_hour"]), base_row, -1)
            used_burst = np.isfinite(split["usd_per_hour"]) & (split["burst_instances_mean"] > 0)
            split["burst_row"] = np.where(used_burst, burst_row, -1)
            if best is None:
                best = split
                continue
            better = split["usd_per_hour"] < best["usd_per_hour"]
            best = {key: np.where(better, split[key], best[key]) for key in best}
    assert best is not None
    return best
