"""The closed loop as a benchmark runs it (genai-perf / NIM benchmarking, trtllm-bench's concurrency mode): ``N``
clients all start at t = 0 with identical requests, and each sends its next request the moment the last one returns.
Whether the cohort stays together or spreads out is decided by the engine's scheduler, so it is simulated, step by
step and deterministically (vectorised over cases and over clients):

* admission, first come first served, while fewer than ``cap`` requests are in flight (the KV capacity with the
  whole request's KV reserved, as TensorRT-LLM's GUARANTEED_NO_EVICT does, capped by the engine's max batch);
* every step: one token for each request past its prompt, then prompt tokens of admitted requests in arrival order
  up to the step's token budget (``max_num_tokens``, decode tokens included), a prompt split over steps when the
  stack chunks prefill (serving_stacks.csv); the step's time is estimator.inference.model.engine_step_s of that
  token mix;
* the step that finishes a prompt returns the first token; a request returns with its last output token.

A run of steps that only decode (no prompt to schedule, no request returning) is taken as one jump: its time is
linear in the growing context, so the work is bounded by events (a few per request per round), not by tokens, and is
capped at ``MAX_EVENTS``. Past twice the batch cap a request waits for every slot that frees, so the engine sees the
same thing at any larger concurrency: ``2 x cap`` clients are simulated and the rest add their turn in the queue,
``extra clients / requests per s`` (Little's law), to every TTFT. The first round (each client's first request, all
sent at t = 0) is warm-up; means, p95 and throughput come from the next ``MEASURED_ROUNDS`` rounds. Mean TPOT is
genai-perf's inter-token latency: per request (last token - first token) / (output_tokens - 1), averaged over
requests.

The open loop as an online-serving benchmark runs it (TensorRT-LLM's "Online Serving Measurements": 500 requests at
a fixed rate): a finite number of requests, each sent once at its arrival time (Poisson from a fixed seed, or evenly
spaced) whatever the engine does, through the same scheduler; an engine with nothing to run waits for the next
arrival and a decode-only jump stops at it. Every request is measured. Past the engine's capacity the queue grows
only while requests are still being sent, so the run answers a finite TTFT (the queueing formula of an endless
stream answers infinite), and the requests/s it reports is below the send rate by the drain at the end. Only the
window of requests between the oldest unfinished one and the next to arrive takes part in a step (views of the
state), so a run costs about a few steps per request.

The benchmark's TTFT is taken at the client, from sending the request to receiving the first token, so it also holds
the serving frontend's tokenization, the first token's de-tokenization, queueing and network latency (NIM for LLM
Benchmarking Guide, "Metrics", docs.nvidia.com/nim/benchmarking/llm/latest/metrics.html). None of that is simulated:
at one client the NIM table's TTFT is within 0.2-3.4 ms of the simulated engine time for Llama 3.1 8B (and within the
model's own error for 70B), so the fixed part is a few ms per request; how it grows with load is not published.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

import numpy as np
import numpy.typing as npt

from estimator.inference.data import FloatArray, InferenceError, ServingCases
from estimator.inference.latency import LoadPoint
from estimator.inference.model import engine_step_s, max_batch, step_token_budget

WARMUP_ROUNDS: Final[int] = 1
MEASURED_ROUNDS: Final[int] = 3
MAX_EVENTS: Final[int] = 20_000  # bound on the loop; a case not done by then reports what it measured so far
TAIL_QUANTILE: Final[float] = 0.95
SATURATED_CLIENTS: Final[float] = 2.0  # clients simulated per batch slot at most (the rest only queue)
# Cases x clients one closed-loop pass holds (about 0.3 kB of state and temporaries each): the memory bound.
MAX_CELLS: Final[int] = 1 << 18
MAX_OPEN_LOOP_REQUESTS: Final[int] = 5_000  # requests one open-loop run simulates (one column each)
EVENTS_PER_REQUEST: Final[int] = 10  # open loop: loop bound per request (a run takes about 3: arrival, prefill, end)
ARRIVAL_SEED: Final[int] = 20  # fixed draws of the Poisson arrivals: the same answer on every run

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class _Clients:
    """Simulation state, one row per case and one column per client (arrays updated in place)."""

    active: npt.NDArray[np.bool_]  # the column is one of the case's clients
    admitted: npt.NDArray[np.bool_]  # its current request holds a batch slot
    prefill_left: FloatArray  # prompt tokens of the current request not yet run
    decode_left: FloatArray  # output tokens after the first still to generate
    ticket: FloatArray  # arrival order of the current request (first come first served)
    sent_at: FloatArray
    first_at: FloatArray
    done: IntArray  # requests returned
    ttft: FloatArray  # per client and round [s]; NaN until measured
    tpot: FloatArray
    in_order: bool = False  # tickets rise with the column (an open loop: each column is one request, sent in order)


@dataclass(frozen=True, slots=True)
class _Totals:
    """Per-case clock, output tokens, in-flight integral and requests returned, plus their values at the warm-up's end
    and at the end of the throughput window."""

    now: FloatArray  # rows: clock [s], output tokens, in-flight x seconds, requests returned
    warm: FloatArray
    end: FloatArray
    warmed: npt.NDArray[np.bool_]
    ended: npt.NDArray[np.bool_]


def _rank(key: FloatArray, mask: npt.NDArray[np.bool_]) -> tuple[IntArray, IntArray]:
    """(order, rank): the columns of each row sorted by ``key`` with unmasked ones last, and each column's place."""
    order = np.argsort(np.where(mask, key, np.inf), axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(key.shape[1]), key.shape), axis=1)
    return order, rank


def _admit(s: _Clients, cap: FloatArray, now: FloatArray) -> None:
    """Admit the requests that have arrived, in arrival order, while slots are free."""
    waiting = s.active & ~s.admitted & (s.sent_at <= now[:, None])
    room = cap - s.admitted.sum(axis=1)
    # Columns in ticket order need no sort: a waiting request's place is the number of waiting ones before it.
    rank = np.cumsum(waiting, axis=1) - 1 if s.in_order else _rank(s.ticket, waiting)[1]
    s.admitted[waiting & (rank < room[:, None])] = True


def _prefill_allotment(c: ServingCases, s: _Clients, decoding: npt.NDArray[np.bool_]) -> FloatArray:
    """Prompt tokens each client's request runs this step: the budget left after the decode tokens, to prompts in
    arrival order; without chunking a prompt runs whole once it fits (the first one always: an engine built for it)."""
    pending = s.admitted & (s.prefill_left > 0)
    left = np.where(pending, s.prefill_left, 0.0)
    order = None if s.in_order else _rank(s.ticket, pending)[0]
    if order is not None:
        left = np.take_along_axis(left, order, axis=1)
    before = np.cumsum(left, axis=1) - left
    budget = np.maximum(step_token_budget(c) - decoding.sum(axis=1), 0.0)[:, None]
    chunked = np.clip(budget - before, 0.0, left)
    whole = np.where((before + left <= budget) | (before == 0.0), left, 0.0)
    allot = np.where(c.chunked_prefill[:, None], chunked, whole)
    if order is None:
        return allot
    unsorted = np.zeros_like(left)
    np.put_along_axis(unsorted, order, allot, axis=1)
    return unsorted


def _record(
    c: ServingCases, s: _Clients, finished: npt.NDArray[np.bool_], now: FloatArray, *, resend: bool = True
) -> None:
    """Store the returning requests' TTFT and TPOT by round and send each client's next request (``resend``; an
    open loop's requests are sent once: a finished one leaves)."""
    rows, cols = np.nonzero(finished)
    j = s.done[rows, cols]
    keep = j < s.ttft.shape[2]
    r, k, jj = rows[keep], cols[keep], j[keep]
    s.ttft[r, k, jj] = s.first_at[r, k] - s.sent_at[r, k]
    gaps = np.maximum(c.osl[r] - 1.0, 1.0)
    s.tpot[r, k, jj] = np.where(c.osl[r] > 1.0, (now[r] - s.first_at[r, k]) / gaps, 0.0)
    s.done[finished] += 1
    if not resend:
        s.active[finished] = False
        s.admitted[finished] = False
        return
    next_ticket = s.ticket.max(axis=1, initial=0.0)[:, None] + np.cumsum(finished, axis=1)
    s.ticket[finished] = next_ticket[finished]
    s.sent_at[finished] = np.broadcast_to(now[:, None], finished.shape)[finished]
    s.prefill_left[finished] = np.broadcast_to(c.isl[:, None], finished.shape)[finished]
    s.decode_left[finished] = np.broadcast_to(c.osl[:, None] - 1.0, finished.shape)[finished]
    s.admitted[finished] = False


def _step(
    c: ServingCases, theta: Mapping[str, float], s: _Clients, cap: FloatArray, t: _Totals, *, resend: bool = True
) -> None:
    """One scheduler step, or a jump over a run of decode-only steps, for every case. An engine with nothing in
    flight waits for the next request to arrive (open loop), and a jump stops at the next arrival."""
    upcoming = np.where(s.active & (s.sent_at > t.now[0][:, None]), s.sent_at, np.inf).min(axis=1, initial=np.inf)
    idle = ~s.admitted.any(axis=1) & ~(s.active & (s.sent_at <= t.now[0][:, None])).any(axis=1)
    t.now[0] = np.where(idle & np.isfinite(upcoming), np.maximum(t.now[0], upcoming), t.now[0])
    _admit(s, cap, t.now[0])
    decoding = s.admitted & (s.prefill_left <= 0) & (s.decode_left > 0)
    allot = _prefill_allotment(c, s, decoding)
    n_dec = decoding.sum(axis=1).astype(np.float64)
    prompt = allot.sum(axis=1)
    ctx = np.where(decoding, c.isl[:, None] + c.osl[:, None] - s.decode_left, 0.0).sum(axis=1)
    # Decode-only: nothing changes until the next request returns or arrives, so take those steps at once.
    nearest = np.where(decoding, s.decode_left, np.inf).min(axis=1, initial=np.inf)
    one_step = engine_step_s(c, theta, decode=n_dec, context=ctx)
    until_arrival = np.where(
        np.isfinite(upcoming), np.ceil(np.maximum(upcoming - t.now[0], 0.0) / np.maximum(one_step, 1e-12)), np.inf
    )
    k = np.where((prompt == 0.0) & np.isfinite(nearest), np.clip(np.minimum(nearest, until_arrival), 1.0, None), 1.0)
    done_before = c.isl[:, None] - s.prefill_left
    pairs = (allot * done_before + allot**2 / 2.0).sum(axis=1)
    dt = k * engine_step_s(
        c, theta, decode=n_dec, context=ctx + n_dec * (k - 1.0) / 2.0, prefill=prompt, prefill_attention=pairs
    )
    dt = np.where((n_dec > 0) | (prompt > 0), dt, 0.0)  # nothing admitted (all slots wait for an arrival): no step
    t.now[0] += dt
    t.now[2] += s.admitted.sum(axis=1) * dt
    s.decode_left[decoding] -= np.broadcast_to(k[:, None], decoding.shape)[decoding]
    np.subtract(s.prefill_left, allot, out=s.prefill_left)
    first = (allot > 0) & (s.prefill_left <= 0)
    s.first_at[first] = np.broadcast_to(t.now[0][:, None], first.shape)[first]
    t.now[1] += n_dec * k + first.sum(axis=1)
    finished = (decoding | first) & (s.decode_left <= 0)
    t.now[3] += finished.sum(axis=1)
    _record(c, s, finished, t.now[0], resend=resend)


def _snapshot(s: _Clients, t: _Totals, window: FloatArray) -> None:
    """Note the totals when every client has finished its warm-up rounds, and again once ``window`` more requests
    have returned (whole cycles of the engine, _window_requests)."""
    warm = np.all((s.done >= WARMUP_ROUNDS) | ~s.active, axis=1) & ~t.warmed
    t.warm[:, warm] = t.now[:, warm]
    np.logical_or(t.warmed, warm, out=t.warmed)
    end = t.warmed & ~t.ended & (t.now[3] - t.warm[3] >= window)
    t.end[:, end] = t.now[:, end]
    np.logical_or(t.ended, end, out=t.ended)


def _window_requests(clients: FloatArray, cap: FloatArray) -> FloatArray:
    """Requests that return in the throughput window: whole cycles of the engine, as many as cover MEASURED_ROUNDS
    rounds of every client. The synchronised cohort keeps its shape, so the engine repeats one cycle: below the cap
    every client's request once, past it one full batch (``cap`` requests; the rest wait, and the batch refills from
    the queue the step a request returns). Within a cycle output tokens do not come at an even pace (a step that
    runs the cohort's prompts is several times a decode-only step), so a window that ends part-way through a cycle
    (every client's last round, past the cap) measured a rate that saw-toothed with the clients (8B A100 vLLM, cap
    256, 220 / 194: 3,880-4,270 tok/s at 256-486 clients)."""
    cycle = np.maximum(np.minimum(clients, cap), 1.0)
    return np.ceil(MEASURED_ROUNDS * clients / cycle) * cycle


def _simulated_clients(c: ServingCases, theta: Mapping[str, float], concurrency: FloatArray) -> tuple[FloatArray, ...]:
    """(clients asked for, batch cap, clients simulated) per case: past SATURATED_CLIENTS x cap the rest only queue."""
    n = np.maximum(np.floor(np.asarray(concurrency, dtype=np.float64)), 1.0)
    cap = np.floor(max_batch(c, theta))
    clients = np.where(cap >= 1.0, np.minimum(n, SATURATED_CLIENTS * np.maximum(cap, 1.0)), 0.0)
    return n, cap, clients


def simulate_closed_loop(c: ServingCases, theta: Mapping[str, float], concurrency: FloatArray) -> LoadPoint:
    """The synchronised closed loop of ``concurrency`` clients per case ((n,), whole clients): mean and p95 TTFT and
    TPOT [s], output tokens/s and requests/s of the replica, mean requests in flight. Cases whose weights do not fit
    answer infinite latency and zero throughput, as estimator.inference.latency.closed_loop does.

    Cases are independent, so they run in blocks of similar width (cases x simulated clients at most MAX_CELLS, a
    case wider than that alone): memory stays bounded whatever the number of cases, and a narrow case does not pay
    for the widest one's columns. The answer equals one pass over all cases (to the last bit: a block's means sum
    in another order)."""
    concurrency = np.asarray(concurrency, dtype=np.float64)
    clients = np.maximum(_simulated_clients(c, theta, concurrency)[2], 1.0)
    order = np.argsort(clients, kind="stable")
    # Sorted by width, a block ends where its row count times its widest case would pass MAX_CELLS.
    starts = [0]
    for i in range(1, len(order)):
        if (i - starts[-1] + 1) * clients[order[i]] > MAX_CELLS:
            starts.append(i)
    blocks = [order[a:b] for a, b in zip(starts, [*starts[1:], len(order)], strict=True)]
    if len(blocks) <= 1:
        return _closed_loop_block(c, theta, concurrency)
    parts = [(index, _closed_loop_block(c.take(index), theta, concurrency[index])) for index in blocks]
    merged = {}
    for name in LoadPoint.__dataclass_fields__:
        first = getattr(parts[0][1], name)
        out = np.empty(len(c), dtype=first.dtype)
        for index, load in parts:
            out[index] = getattr(load, name)
        merged[name] = out
    return LoadPoint(**merged)


def _closed_loop_block(c: ServingCases, theta: Mapping[str, float], concurrency: FloatArray) -> LoadPoint:
    n, cap, clients = _simulated_clients(c, theta, concurrency)
    fits = cap >= 1.0
    width = int(max(clients.max(initial=0.0), 1.0))
    shape = (len(c), width)
    active = np.arange(width)[None, :] < clients[:, None]
    rounds = WARMUP_ROUNDS + MEASURED_ROUNDS
    s = _Clients(
        active=active,
        admitted=np.zeros(shape, dtype=bool),
        prefill_left=np.where(active, c.isl[:, None], 0.0),
        decode_left=np.where(active, c.osl[:, None] - 1.0, 0.0),
        ticket=np.broadcast_to(np.arange(width, dtype=np.float64), shape).copy(),
        sent_at=np.zeros(shape),
        first_at=np.zeros(shape),
        done=np.zeros(shape, dtype=np.int64),
        ttft=np.full((*shape, rounds), np.nan),
        tpot=np.full((*shape, rounds), np.nan),
    )
    t = _Totals(np.zeros((4, len(c))), np.zeros((4, len(c))), np.zeros((4, len(c))), ~fits, ~fits)
    window = _window_requests(clients, np.maximum(cap, 1.0))
    for _ in range(MAX_EVENTS):
        if t.ended.all() and np.all((s.done >= rounds) | ~s.active):
            break
        _step(c, theta, s, np.maximum(cap, 1.0), t)
        _snapshot(s, t, window)
    t.end[:, ~t.ended] = t.now[:, ~t.ended]  # capped: what was measured so far
    load = _load_point(c, s, t, n, cap, fits)
    queued = np.where(load.requests_per_s > 0, (n - clients) / np.maximum(load.requests_per_s, 1e-12), 0.0)
    return replace(load, ttft_s=load.ttft_s + queued, ttft_p95_s=load.ttft_p95_s + queued)


def _load_point(
    c: ServingCases,
    s: _Clients,
    t: _Totals,
    clients: FloatArray,
    cap: FloatArray,
    fits: npt.NDArray[np.bool_],
    *,
    warmup_rounds: int = WARMUP_ROUNDS,
) -> LoadPoint:
    span = np.maximum(t.end - t.warm, 0.0)
    seconds = np.where(span[0] > 0, span[0], np.inf)
    tput = span[1] / seconds
    measured = s.ttft[:, :, warmup_rounds:].reshape(len(c), -1)
    itl = s.tpot[:, :, warmup_rounds:].reshape(len(c), -1)
    some = fits & np.isfinite(measured).any(axis=1)
    safe = np.where(some[:, None], measured, 0.0)
    safe_itl = np.where(some[:, None], itl, 0.0)

    def stat(x: FloatArray, q: float | None) -> FloatArray:
        value = np.nanmean(x, axis=1) if q is None else np.nanquantile(x, q, axis=1)
        return np.where(some, value, np.inf)

    return LoadPoint(
        in_flight=np.where(fits, span[2] / seconds, 0.0),
        saturated=(clients > cap) | ~fits,
        output_tokens_per_s=np.where(some, tput, 0.0),
        requests_per_s=np.where(some, tput / c.osl, 0.0),
        ttft_s=stat(safe, None),
        tpot_s=stat(safe_itl, None),
        ttft_p95_s=stat(safe, TAIL_QUANTILE),
        tpot_p95_s=stat(safe_itl, TAIL_QUANTILE),
    )


def _window(s: _Clients, lo: int, hi: int) -> _Clients:
    """The columns lo..hi-1 of the state, as views (in ticket order)."""
    cut = {f: getattr(s, f)[:, lo:hi] for f in _Clients.__dataclass_fields__ if f != "in_order"}
    return _Clients(**cut, in_order=True)


def arrival_times(
    requests_per_s: FloatArray, requests: int, *, poisson: bool = True, seed: int = ARRIVAL_SEED
) -> FloatArray:
    """Send times [s] of ``requests`` requests per case at ``requests_per_s`` ((n,); ``inf``: all at t = 0, a burst):
    Poisson arrivals from a fixed ``seed`` (the same draws for every case, so the result is deterministic and cases
    differ only by their rate), or evenly spaced. The first request is sent at t = 0."""
    rate = np.asarray(requests_per_s, dtype=np.float64)
    gaps = np.random.default_rng(seed).standard_exponential(requests) if poisson else np.ones(requests)
    gaps[0] = 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(np.isfinite(rate) & (rate > 0), 1.0 / rate, 0.0)
    return np.cumsum(gaps)[None, :] * scale[:, None]


def simulate_open_loop(
    c: ServingCases,
    theta: Mapping[str, float],
    requests_per_s: FloatArray,
    *,
    requests: int,
    poisson: bool = True,
    seed: int = ARRIVAL_SEED,
    trim: int = 0,
) -> LoadPoint:
    """An open-loop benchmark run: ``requests`` requests per case sent at ``requests_per_s`` ((n,); ``inf`` sends them
    all at once) whatever the engine does, each request sent once, the same scheduler as the closed loop. Every
    request is measured (no warm-up): mean and p95 TTFT and TPOT [s]; output tokens/s and requests/s over the run,
    first send to last return (what a benchmark reports, lower than the send rate by the drain at the end); mean
    requests in flight; ``saturated`` where a request waited for a batch slot. Past the engine's capacity the queue
    grows only while requests are still being sent, so a finite run answers a finite TTFT where the queueing formula
    (estimator.inference.latency.open_loop, an endless stream) answers infinite. ``seed``: the arrivals' draws.
    ``trim``: the first and the last ``trim`` requests are run but left out of the latency figures, so that a long
    run measures the steady state of an endless stream (not the start from an empty engine, nor the drain)."""
    if not 1 <= requests <= MAX_OPEN_LOOP_REQUESTS:
        raise InferenceError("requests", f"must be between 1 and {MAX_OPEN_LOOP_REQUESTS}; got {requests!r}")
    if not np.all(np.asarray(requests_per_s, dtype=np.float64) > 0):
        raise InferenceError("requests_per_s", "must be positive (inf: every request at once)")
    if not 0 <= 2 * trim < requests:
        raise InferenceError("trim", f"must leave some of the {requests} requests measured; got {trim!r}")
    cap = np.floor(max_batch(c, theta))
    fits = cap >= 1.0
    sent = arrival_times(requests_per_s, requests, poisson=poisson, seed=seed)
    shape = (len(c), requests)
    active = np.broadcast_to(fits[:, None], shape).copy()
    s = _Clients(
        active=active,
        admitted=np.zeros(shape, dtype=bool),
        prefill_left=np.where(active, c.isl[:, None], 0.0),
        decode_left=np.where(active, c.osl[:, None] - 1.0, 0.0),
        ticket=np.broadcast_to(np.arange(requests, dtype=np.float64), shape).copy(),
        sent_at=sent,
        first_at=np.zeros(shape),
        done=np.zeros(shape, dtype=np.int64),
        ttft=np.full((*shape, 1), np.nan),
        tpot=np.full((*shape, 1), np.nan),
        in_order=True,
    )
    t = _Totals(np.zeros((4, len(c))), np.zeros((4, len(c))), np.zeros((4, len(c))), ~fits, ~fits)
    slots = np.maximum(cap, 1.0)
    queued = np.zeros(len(c), dtype=bool)
    for _ in range(MAX_EVENTS + EVENTS_PER_REQUEST * requests):
        alive = s.active.any(axis=0)
        if not alive.any():
            break
        # Only the requests between the oldest unfinished one and the next to arrive take part in a step: work on
        # that window of columns (views: updates land in the full arrays).
        lo = int(np.argmax(alive))
        hi = min(requests, int((s.sent_at <= t.now[0][:, None]).sum(axis=1).max()) + 1)
        w = _window(s, lo, max(hi, lo + 1))
        _admit(w, slots, t.now[0])
        queued |= (w.active & ~w.admitted & (w.sent_at <= t.now[0][:, None])).any(axis=1)
        _step(c, theta, w, slots, t, resend=False)
    t.end[:] = t.now
    if trim:
        s.ttft[:, :trim] = s.ttft[:, requests - trim :] = np.nan
        s.tpot[:, :trim] = s.tpot[:, requests - trim :] = np.nan
    load = _load_point(c, s, t, np.full(len(c), float(requests)), np.full(len(c), np.inf), fits, warmup_rounds=0)
    return replace(load, saturated=queued | ~fits)
