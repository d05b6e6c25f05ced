"""Place whole runs on owned capacity, for every candidate owned size at once.

One pass over the runs in their placement order (``schedule_runs``: the most GPU-hours first, so that a
small early run never keeps a larger later one off the owned GPUs); inside it numpy works over the
candidate sizes and the run's hours together, so the cost grows as runs x (run hours + wait) x sizes in
vectorised arithmetic, never as a Python loop over hours or sizes. A run goes on owned GPUs when enough
of them are free for its whole duration, starting at its requested hour or up to ``max_wait`` hours
later (the earliest such start); otherwise it is rented at its requested hour. A size then keeps the
placement of a smaller one when that put more GPU-hours on owned GPUs (``_best_smaller``). Runs are
never split between owned and rented GPUs. Measured usage (divisible demand) then fills whatever owned
GPUs are free hour by hour, and the rest of it is rented.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from advisor.advice.fleet.demand import HOURS, Runs, occupancy, wait_hours


@dataclass(frozen=True)
class Placement:
    """Where the runs went for each candidate owned size (axis 0 of every 2-D array)."""

    owned_gpus: NDArray[np.int64]  # (S,)
    on_owned: NDArray[np.bool_]  # (S, R) run placed on owned GPUs
    wait_hours: NDArray[np.int32]  # (S, R) hours the run waited for owned GPUs (0 when rented)
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


def _window(load: NDArray[np.int32], first: int, start: int, length: int) -> NDArray[np.int32]:
    """load[start:start+length, first:] on the cyclic year (hours x sizes; a view unless it wraps)."""
    end = start + length
    if end <= HOURS:
        return load[start:end, first:]
    return np.concatenate([load[start:, first:], load[: end - HOURS, first:]], axis=0)


def _occupy(
    load: NDArray[np.int32], columns: slice | NDArray[np.int64], start: int, slots: int, need: int | NDArray[np.int32]
) -> None:
    """Add ``need`` GPUs (a number, or one per column) to ``slots`` hours of the columns from ``start`` (cyclic)."""
    end = start + slots
    if end <= HOURS:
        load[start:end, columns] += need
    else:
        load[start:, columns] += need
        load[: end - HOURS, columns] += need


def _later(
    window: NDArray[np.int32], room: NDArray[np.int64], slots: int, wait: int
) -> tuple[NDArray[np.bool_], NDArray[np.int64]]:
    """For sizes (columns) that cannot start the run now: whether some start 1..wait hours later has
    room for ``slots`` consecutive hours, and the earliest such delay."""
    bad = np.zeros((window.shape[0] + 1, window.shape[1]), dtype=np.int32)
    np.cumsum(window > room, axis=0, out=bad[1:])
    fits = bad[slots : slots + wait + 1] == bad[: wait + 1]
    return fits.any(axis=0), np.argmax(fits, axis=0)


def _best_smaller(gpu_hours: NDArray[np.float64]) -> NDArray[np.int64]:
    """Per size, the size at or below it whose placement put the most GPU-hours on owned GPUs (itself on ties): a
    placement that fits fewer owned GPUs fits more, and a greedy pass may pack a larger size worse than a smaller
    one. Taking the best of the smaller sizes keeps more owned GPUs never placing fewer GPU-hours."""
    best = np.maximum.accumulate(gpu_hours) if gpu_hours.size else gpu_hours
    index = np.arange(gpu_hours.size, dtype=np.int64)
    src: NDArray[np.int64] = np.maximum.accumulate(np.where(gpu_hours >= best, index, 0)) if gpu_hours.size else index
    return src


def place(*, runs: Runs, owned_gpus: NDArray[np.int64], usage: NDArray[np.float64] | None = None) -> Placement:
    """Simulate the year for every owned size in ``owned_gpus`` (ascending; see the module docstring)."""
    sizes = np.asarray(owned_gpus, dtype=np.int64)
    if np.any(np.diff(sizes) < 0):
        raise ValueError("owned_gpus must be ascending")
    n_sizes, n_runs = sizes.size, len(runs)
    # Hours x sizes: a run's window is a block of contiguous rows, its sizes a suffix of the columns.
    load = np.zeros((HOURS, n_sizes), dtype=np.int32)
    owned = np.zeros((n_runs, n_sizes), dtype=bool)  # run-major while placing: each run writes one row
    waited = np.zeros((n_runs, n_sizes), dtype=np.int32)
    gpus, slot_list, starts = runs.gpus.tolist(), runs.slots.tolist(), runs.start.tolist()
    waits = wait_hours(runs).tolist()
    firsts = np.searchsorted(sizes, runs.gpus, side="left").tolist()  # the sizes that can hold each run at all
    # GPUs that may already be busy for a run still to fit, per distinct run size (a handful).
    rooms = {need: sizes[first:] - need for need, first in set(zip(gpus, firsts, strict=True))}
    # The loop is the plan's hot path (one pass per run, most runs short): per-run work is kept to a few
    # numpy calls on views of the load; a run that fits only some sizes adds a 0/need row over the window.
    for r in range(n_runs):
        first = firsts[r]
        if first == n_sizes:
            continue
        need, slots, start, wait = gpus[r], slot_list[r], starts[r], waits[r]
        room = rooms[need]
        end = start + slots
        window = load[start:end, first:] if end <= HOURS else _window(load, first, start, slots)
        fits = window.max(axis=0) <= room
        everywhere = bool(fits.all())
        owned[r, first:] = fits
        add = need if everywhere else fits.astype(np.int32) * need
        if end <= HOURS:
            window += add  # a view of the load
        else:
            _occupy(load, slice(first, None), start, slots, add)
        if not wait or everywhere:
            continue
        blocked = np.flatnonzero(~fits)
        window = _window(load, first, start, slots + wait)[:, blocked]
        ok, delay = _later(window, room[blocked], slots, wait)
        for d in np.unique(delay[ok]):  # few distinct delays
            columns = first + blocked[ok & (delay == d)]
            _occupy(load, columns, (start + int(d)) % HOURS, slots, need)
            owned[r, columns] = True
            waited[r, columns] = int(d)
    src = _best_smaller(owned.T.astype(float) @ (runs.hours * runs.gpus))
    on_owned, waited = owned[:, src].T.copy(), waited[:, src].T.copy()
    owned_busy = load[:, src].T.astype(float)
    gpu_hours = on_owned.astype(float) @ (runs.hours * runs.gpus)
    usage_rented = None
    if usage is not None:
        on_owned_usage = np.minimum(np.maximum(sizes[:, None] - owned_busy, 0.0), usage[None, :])
        owned_busy = owned_busy + on_owned_usage
        gpu_hours = gpu_hours + on_owned_usage.sum(axis=1)
        usage_rented = usage[None, :] - on_owned_usage
    return Placement(sizes, on_owned, waited, owned_busy, gpu_hours, usage_rented)


def rented_series(
    *, runs: Runs, rented: NDArray[np.bool_], slots: NDArray[np.int64] | None = None, used: bool = False
) -> NDArray[np.float64]:
    """(S, 8760) GPUs rented in each hour by the runs marked ``rented`` (S, R), at their requested starts: the GPUs
    held at once, or with ``used`` the GPU-hours used in the hour (a run's last partial hour by its share).
    ``slots`` overrides the hours each run holds (spot runs take longer)."""
    held = runs.slots if slots is None else slots
    exact = runs.hours if used and slots is None else None
    out = np.zeros((rented.shape[0], HOURS))
    for s in range(rented.shape[0]):  # one difference-array pass per size; the runs are vectorised inside
        pick = rented[s]
        if pick.any():
            hours = None if exact is None else exact[pick]
            out[s] = occupancy(
                start=runs.start[pick], slots=held[pick], gpus=runs.gpus[pick].astype(float), hours=hours
            )
    return out
