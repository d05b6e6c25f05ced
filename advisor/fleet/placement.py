"""Place whole runs on owned capacity, for every candidate owned size at once.

One pass over the runs in their scheduling order (an event loop over runs, as a first-come
scheduler would see them); inside it numpy works over the candidate sizes and the run's hours
together, so the cost grows as runs x (run hours + wait) x sizes in vectorised arithmetic, never as a
Python loop over hours or sizes. A run goes on owned GPUs when enough of them are free for its whole
duration, starting at its requested hour or up to ``max_wait`` hours later (the earliest such
start); otherwise it is rented at its requested hour. Runs are never split between owned and rented
GPUs. Measured usage (divisible demand) then fills whatever owned GPUs are free hour by hour, and
the rest of it is rented.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from advisor.fleet.demand import HOURS, Runs, occupancy


@dataclass(frozen=True)
class Placement:
    """Where the runs went for each candidate owned size (axis 0 of every 2-D array)."""

    owned_gpus: NDArray[np.int64]  # (S,)
    on_owned: NDArray[np.bool_]  # (S, R) run placed on owned GPUs
    wait_hours: NDArray[np.int64]  # (S, R) hours the run waited for owned GPUs (0 when rented)
    owned_busy: NDArray[np.float64]  # (S, 8760) owned GPUs busy, runs and usage
    owned_gpu_hours: NDArray[np.float64]  # (S,) busy owned GPU-hours (exact run hours, plus usage)
    usage_rented: NDArray[np.float64] | None  # (S, 8760) measured usage that did not fit on owned GPUs

    def merged(self, other: Placement) -> Placement:
        """This placement and another over different sizes, as one (sizes ascending)."""
        sizes = np.concatenate([self.owned_gpus, other.owned_gpus])
        order = np.argsort(sizes, kind="stable")

        def join(a: NDArray[Any] | None, b: NDArray[Any] | None) -> NDArray[Any] | None:
            return None if a is None or b is None else np.concatenate([a, b])[order]

        return Placement(
            sizes[order],
            join(self.on_owned, other.on_owned),  # type: ignore[arg-type]
            join(self.wait_hours, other.wait_hours),  # type: ignore[arg-type]
            join(self.owned_busy, other.owned_busy),  # type: ignore[arg-type]
            join(self.owned_gpu_hours, other.owned_gpu_hours),  # type: ignore[arg-type]
            join(self.usage_rented, other.usage_rented),
        )


def _earliest_fit(
    free: NDArray[np.int32], need: int, slots: int, wait: int
) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """For each row of ``free`` (GPUs free over the run's window of slots + wait hours): whether some
    start 0..wait has ``need`` GPUs free for ``slots`` consecutive hours, and the earliest such start."""
    short = free < need
    now = ~short[:, :slots].any(axis=1)
    delay = np.zeros(free.shape[0], dtype=np.int64)
    later = np.flatnonzero(~now)
    if wait == 0 or not later.size:
        return now, delay
    bad = np.zeros((later.size, free.shape[1] + 1), dtype=np.int32)
    np.cumsum(short[later], axis=1, out=bad[:, 1:])
    fits = bad[:, slots : slots + wait + 1] == bad[:, : wait + 1]
    now[later] = fits.any(axis=1)
    delay[later] = np.argmax(fits, axis=1)
    return now, delay


def _window(busy: NDArray[np.int32], first: int, start: int, length: int) -> NDArray[np.int32]:
    """busy[first:, start:start+length] on the cyclic year (a view unless the window wraps)."""
    end = start + length
    if end <= HOURS:
        return busy[first:, start:end]
    return np.concatenate([busy[first:, start:], busy[first:, : end - HOURS]], axis=1)


def _occupy(busy: NDArray[np.int32], rows: NDArray[np.int64], start: int, slots: int, need: int) -> None:
    end = start + slots
    if end <= HOURS:
        busy[rows, start:end] += need
    else:
        busy[rows, start:] += need
        busy[rows, : end - HOURS] += need


def place(*, runs: Runs, owned_gpus: NDArray[np.int64], usage: NDArray[np.float64] | None = None) -> Placement:
    """Simulate the year for every owned size in ``owned_gpus`` (ascending; see the module docstring)."""
    sizes = np.asarray(owned_gpus, dtype=np.int64)
    if np.any(np.diff(sizes) < 0):
        raise ValueError("owned_gpus must be ascending")
    n_sizes, n_runs = sizes.size, len(runs)
    busy = np.zeros((n_sizes, HOURS), dtype=np.int32)
    on_owned = np.zeros((n_sizes, n_runs), dtype=bool)
    waited = np.zeros((n_sizes, n_runs), dtype=np.int64)
    for r in range(n_runs):
        need = int(runs.gpus[r])
        first = int(np.searchsorted(sizes, need))  # sizes are ascending: the ones that can hold the run
        if first == n_sizes:
            continue
        slots, start = int(runs.slots[r]), int(runs.start[r])
        wait = int(min(runs.max_wait[r], HOURS - slots))
        free = sizes[first:, None].astype(np.int32) - _window(busy, first, start, slots + wait)
        fits, delay = _earliest_fit(free, need, slots, wait)
        rows = first + np.flatnonzero(fits)
        if not rows.size:
            continue
        delay = delay[fits]
        for d in np.unique(delay):  # usually one delay (0) for all sizes
            _occupy(busy, rows[delay == d], (start + int(d)) % HOURS, slots, need)
        on_owned[rows, r] = True
        waited[rows, r] = delay
    owned_busy = busy.astype(float)
    gpu_hours = on_owned.astype(float) @ (runs.hours * runs.gpus)
    usage_rented = None
    if usage is not None:
        on_owned_usage = np.minimum(np.maximum(sizes[:, None] - owned_busy, 0.0), usage[None, :])
        owned_busy = owned_busy + on_owned_usage
        gpu_hours = gpu_hours + on_owned_usage.sum(axis=1)
        usage_rented = usage[None, :] - on_owned_usage
    return Placement(sizes, on_owned, waited, owned_busy, gpu_hours, usage_rented)


def rented_series(
    *, runs: Runs, rented: NDArray[np.bool_], slots: NDArray[np.int64] | None = None
) -> NDArray[np.float64]:
    """(S, 8760) GPUs rented in each hour by the runs marked ``rented`` (S, R), at their requested starts.
    ``slots`` overrides the hours each run holds (spot runs take longer)."""
    held = runs.slots if slots is None else slots
    out = np.zeros((rented.shape[0], HOURS))
    for s in range(rented.shape[0]):  # one difference-array pass per size; the runs are vectorised inside
        pick = rented[s]
        if pick.any():
            out[s] = occupancy(start=runs.start[pick], slots=held[pick], gpus=runs.gpus[pick].astype(float))
    return out
