"""Latency under load: TTFT and TPOT (mean and p95) of one replica at a given concurrency (closed loop: N clients
each sending its next request when the last one finished) or a given request rate (open loop: Poisson arrivals).
These are queueing formulas with random (Poisson-like) arrivals: smooth and cheap, what the sizing grid uses. A
benchmark's closed loop (clients that start together with identical requests) and its open-loop run (a finite number
of requests sent at a rate: past capacity the queue stops growing when they run out, where the formula's endless
stream answers infinite) are simulated step by step in estimator.inference.simulate instead.

Vectorised over cases (and a grid per case). The queueing model, on top of estimator.inference.model:

* In flight: ``B = min(N, cap)`` requests (cap = KV capacity, at most the engine's batch limit). Throughput
  ``X(B)`` tokens/s as the model gives; mean TPOT the decode step at the batch, lengthened by the prefills of the
  other requests that arrive during the decode (``B / X(B)`` at B >= 1; below one in flight on average the arrivals
  fall with the load, and TPOT to the lone request's decode step).
* TTFT of an admitted request (continuous batching with chunked prefill, a token budget of ``max_num_tokens`` per
  step): the wait for the step in progress and for other requests' prefills, then its own prefill. A prompt that
  fits one step runs in one engine step with the others' decode tokens (model.engine_step_s, as the simulation runs
  it) together with every prompt that arrived during the step before (a batched prefill step; see _prefill_wait for
  the step-length chain and its moments); a longer prompt runs in chunks, each in a step that also runs the decode
  batch, behind the prompt work ahead of it (M/D/1 mean wait ``rho S / (2 (1 - rho))``, plus half a decode step when
  no prefill is under way). Other prompts arrive at the full rate under random arrivals (Poisson arrivals see time
  averages) and from the other B - 1 clients in a closed loop.
* Closed loop past the cap: Little's law; each of the N clients cycles in ``N / X_req``; the part not spent in service
  is spent waiting for a batch slot, and that wait is part of TTFT (what the NIM measurements show past saturation).
* Open loop at rate ``lambda``: in flight ``B = lambda x (TTFT + (osl - 1) TPOT(B))`` (Little's law, solved by
  bisection); waiting for one of ``cap`` slots: the replica as a load-dependent server (n requests in service
  return ``X(n) / osl`` requests/s), a birth-death chain in product form, its wait halved by Allen-Cunneen's factor
  for equal requests (_slot_wait); at or above capacity the queue grows without bound (TTFT infinite).
* p95 from the same model, checked against the simulated endless Poisson stream (bench/inference_tail.py): the
  batched prefill step's wait as a Gamma law of its mean and variance (Wilson-Hilferty quantile); a long prompt's
  wait as the rest of a decode step (uniform) or the M/D/1 wait (conditionally exponential, ``P(W > t) = rho exp(-t
  rho / W)``); the slot wait with the same exponential tail (exact for the birth-death chain). TPOT p95 is the p95
  over requests of each request's mean TPOT, as a benchmark reports it: a compound Poisson sum of the other
  requests' prefills in its steps and, under random arrivals, of the batch's own fluctuation (Cornish-Fisher).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np

from estimator.inference.data import BoolArray, FloatArray, ServingCases
from estimator.inference.model import (
    col,
    decode_step_s,
    engine_step_s,
    max_batch,
    prefill_chunks,
    prefill_s,
    solo_prefill_s,
    step_token_budget,
    throughput_at_batch,
)

TAIL: Final[float] = 0.05  # p95
Z_TAIL: Final[float] = 1.6448536269514722  # the standard normal's 95th percentile
FIXED_POINT_ITERATIONS: Final[int] = 32  # bisection in log b: the mean in flight to 1e-8 relative
MIN_IN_FLIGHT: Final[float] = 1e-3
SLOT_SERVICE_VARIABILITY: Final[float] = 0.5  # Allen-Cunneen (c_a^2 + c_s^2) / 2: Poisson arrivals, equal requests
BATCHED_PREFILL_ITERATIONS: Final[int] = 3  # prompts per prefill step: a short fixed point (it settles in 2-3)
QUANTILE_ITERATIONS: Final[int] = 40  # bisection: the p95 to 1e-12 of its bracket
# Slot-wait chain states this many log units below the most likely one are left out of its normalising sum: each
# weighs under e^-40 of the mode, so the ~2,000 states of a batch cap of 2,048 change it by under 1e-14 (relative).
SLOT_STATES_BELOW_MODE: Final[float] = 40.0


@dataclass(frozen=True, slots=True)
class LoadPoint:
    """One replica at one load per case (arrays, shape of the load). Units: tokens/s, requests/s, seconds."""

    in_flight: FloatArray
    saturated: BoolArray
    output_tokens_per_s: FloatArray
    requests_per_s: FloatArray
    ttft_s: FloatArray
    tpot_s: FloatArray
    ttft_p95_s: FloatArray
    tpot_p95_s: FloatArray

    def __post_init__(self) -> None:
        # Every p95 a user reads is at least its mean, here where every path builds its figures (the queueing
        # formulas, the simulation, the sizing's grids, replace() included). Both paths can put it a hair under:
        # a wait fewer than 5 % of requests have adds to the mean but not to the p95 (_wait_quantile answers 0
        # for it; a 32,000-token prompt at light load read 0.72217 s p95 against a 0.72237 s mean), and in a
        # simulated sample a few requests that waited a whole batched prefill more pull the mean over the p95
        # (0.123728 s against 0.124083 s). A p95 under the mean reads as an error, and the sizing checks p95
        # targets: the mean is the conservative floor. NaN (no figure) stays as it is.
        for tail, mean in (("ttft_p95_s", self.ttft_s), ("tpot_p95_s", self.tpot_s)):
            p95 = getattr(self, tail)
            object.__setattr__(self, tail, np.where(p95 < mean, mean, p95))


def wait_p95(mean_wait: FloatArray, rho: FloatArray) -> FloatArray:
    """p95 of a wait with mean ``mean_wait`` whose probability of being non-zero is ``rho``, conditionally
    exponential (``P(W > t) = rho exp(-t rho / mean_wait)``): a slot wait here, a router's queue in the sizing."""
    rho = np.clip(rho, 1e-12, 1.0)
    return np.where(rho > TAIL, mean_wait / rho * np.log(rho / TAIL), 0.0)


def _prefill_wait(
    c: ServingCases,
    theta: Mapping[str, float],
    req_rate: FloatArray,
    step: FloatArray,
    in_flight: FloatArray,
    *,
    random_arrivals: bool = False,
    tails: bool = True,
) -> tuple[FloatArray, FloatArray]:
    """(mean, p95) wait of a new prompt beyond its own prefill and one decode step, at ``req_rate`` requests/s with
    plain decode steps of ``step`` seconds and ``in_flight`` requests (itself included). Other prompts arrive at the
    full rate under random arrivals (Poisson arrivals see time averages), at the rate of the other B - 1 clients in a
    closed loop (a finite source).

    A prompt that fits one step's token budget (``max_num_tokens``) waits for the step in progress, then runs in the
    next step together with every prompt that arrived during the current one (the scheduler takes them all; they get
    their first token together), so its wait is ``R + P N``: R the rest of the current step (uniform over it), N ~
    Poisson(rate x T) the prompts that arrived during that step T, P one prompt's prefill. Step lengths follow
    ``T' = d + P Poisson(rate x T)``: mean ``d / (1 - rho)``, variance ``rho P E[T] / (1 - rho^2)`` (rho = rate x P),
    taken as a Gamma law; an arrival lands in a step with probability proportional to its length (Gamma shape + 1).
    The wait's mean and variance follow; its p95 from the Gamma of the same two moments (Wilson-Hilferty).

    A longer prompt spans several steps and queues behind the prompt work ahead of it: M/D/1 with service
    ``prefill + chunks x decode step``, ``rho S / (2 (1 - rho))``, plus half a decode step when no prefill is under
    way (its p95: _wait_quantile)."""
    share = col(c.isl / c.max_num_tokens, req_rate)
    prefill = col(prefill_s(c, theta), req_rate)
    service = prefill + share * step
    others_rate = req_rate if random_arrivals else req_rate * (1.0 - 1.0 / np.maximum(in_flight, 1.0))
    # A step is in progress only when other requests are in flight (a lone client finds the engine idle); under
    # random arrivals the others in flight are Poisson with the mean in flight (M/G/inf), none with e^-B.
    others = 1.0 - np.exp(-in_flight) if random_arrivals else np.clip(in_flight - 1.0, 0.0, 1.0)
    rho = np.clip(others_rate * service, 0.0, 0.999)
    queue = rho * service / (2.0 * (1.0 - rho))
    long_mean = queue + others * (1.0 - rho) * step / 2.0
    # One-step prompts: the batched prefill step (see above).
    d = others * step
    prefill = _batched_prefill_s(c, theta, others_rate, d, in_flight, prefill)
    rho1 = np.clip(others_rate * prefill, 0.0, 0.999)
    mean_t = d / (1.0 - rho1)
    var_t = rho1 * prefill * mean_t / (1.0 - rho1**2)
    shape_b = mean_t**2 / np.maximum(var_t, 1e-30) + 1.0  # length-biased Gamma
    scale = var_t / np.maximum(mean_t, 1e-30)
    e_t, v_t, e_t2 = shape_b * scale, shape_b * scale**2, shape_b * (shape_b + 1.0) * scale**2
    a = 0.5 + rho1
    wait = np.where(mean_t > 0.0, a * e_t, 0.0)
    var_w = e_t2 / 12.0 + prefill**2 * others_rate * e_t + a**2 * v_t
    one_step = col(c.isl <= c.max_num_tokens, req_rate)
    mean = np.where(one_step, wait, long_mean)
    if not tails:  # the open loop's fixed point needs the means only (the bisection is the costly part)
        return mean, mean
    long_p95 = _wait_quantile(others * (1.0 - rho), step, rho, queue)
    return mean, np.where(one_step, _gamma_p95(wait, var_w), long_p95)


def _batched_prefill_s(
    c: ServingCases,
    theta: Mapping[str, float],
    rate: FloatArray,
    d: FloatArray,
    batch: FloatArray,
    alone: FloatArray,
) -> FloatArray:
    """Prefill cost per prompt [s] in a step that carries the prompts arriving during one step (``n = 1 + rate x
    mean step``, within the token budget): a step of several prompts costs less than their solo prefills added, as
    their all-reduces move larger messages (NCCL past the custom kernel's limit) and the step's fixed costs are
    shared. The mean step comes from the same cost (a short fixed point, from the one-prompt cost ``alone``)."""
    b = np.maximum(batch, 1.0)
    isl = col(c.isl, b)
    room = np.maximum(col(step_token_budget(c), b) / isl, 1.0)
    ctx = b * col(c.isl + c.osl / 2.0, b)
    plain = engine_step_s(c, theta, decode=b, context=ctx)
    cost = alone
    for _ in range(BATCHED_PREFILL_ITERATIONS):
        mean_t = d / (1.0 - np.clip(rate * cost, 0.0, 0.999))
        n = np.clip(1.0 + rate * mean_t, 1.0, room)
        step = engine_step_s(c, theta, decode=b, context=ctx, prefill=n * isl, prefill_attention=n * isl**2 / 2.0)
        cost = (step - plain) / n
    return cost


def _gamma_p95(mean: FloatArray, var: FloatArray) -> FloatArray:
    """p95 of a Gamma law of that mean and variance (Wilson-Hilferty's cube-root normal approximation); 0 for 0."""
    shape = mean**2 / np.maximum(var, 1e-30)
    h = 1.0 / (9.0 * np.maximum(shape, 1e-12))
    return np.where(mean > 0.0, mean * np.maximum(1.0 - h + Z_TAIL * np.sqrt(h), 0.0) ** 3, 0.0)


def _wait_quantile(p_step: FloatArray, step: FloatArray, rho: FloatArray, queue: FloatArray) -> FloatArray:
    """p95 of a prompt's wait: with probability ``p_step`` the rest of a plain decode step in progress (uniform on
    0..step: a new request lands at a random point of it), with probability ``rho`` the M/D/1 wait behind other
    prompts (mean ``queue``, conditionally exponential: ``P(W > t) = rho exp(-t rho / queue)``), else none. The
    two parts are exclusive (a prefill under way holds the step in progress), so their tails add; the quantile is
    found by bisection (the tail is monotone in t), vectorised."""
    r = np.clip(rho, 1e-12, 1.0)
    scale = np.maximum(queue, 1e-15) / r
    hi = step + scale * np.log(np.maximum(r / TAIL, 1.0)) + 1e-12

    def exceeds(t: FloatArray) -> FloatArray:
        return p_step * np.clip(1.0 - t / np.maximum(step, 1e-15), 0.0, 1.0) + r * np.exp(-t / scale)

    lo = np.zeros_like(hi)
    for _ in range(QUANTILE_ITERATIONS):
        mid = 0.5 * (lo + hi)
        above = exceeds(mid) > TAIL
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return np.where(exceeds(np.zeros_like(hi)) > TAIL, hi, 0.0)


def _tpot_p95(
    c: ServingCases,
    theta: Mapping[str, float],
    batch: FloatArray,
    req_rate: FloatArray,
    tpot: FloatArray,
    *,
    random_batch: bool,
) -> FloatArray:
    """p95 over requests of a request's TPOT (its decode time over its output tokens after the first, as a benchmark
    reports TPOT). It exceeds the mean by the other requests' work in its steps: each request arriving during its
    decode (``n`` of them, Poisson) adds its prefill, ``p`` per token; with random arrivals (``random_batch``) the
    batch is itself random (M/G/inf: a request that overlaps a fraction w of its decode adds ``k w`` per token, k =
    one more request's decode step). That is a compound Poisson sum: variance ``n (2k^2/3 + kp + p^2)``, third
    cumulant ``n (k^3/2 + k^2 p + 3kp^2/2 + p^3)`` (``n (p^2)``, ``n (p^3)`` for a closed loop's fixed batch); its
    p95 by the Cornish-Fisher expansion (normal quantile corrected for skew; few arrivals make it skewed)."""
    gaps = np.maximum(col(c.osl, batch) - 1.0, 1.0)
    k = decode_step_s(c, theta, batch + 1.0) - decode_step_s(c, theta, batch)
    p = col(prefill_s(c, theta), batch) / gaps
    n = req_rate * gaps * tpot
    w = 1.0 if random_batch else 0.0
    var = n * (w * (2.0 * k**2 / 3.0 + k * p) + p**2)
    third = n * (w * (k**3 / 2.0 + k**2 * p + 1.5 * k * p**2) + p**3)
    sigma = np.sqrt(np.maximum(var, 0.0))
    skew = np.where(sigma > 0.0, third / np.maximum(sigma, 1e-30) ** 3, 0.0)
    # Where no more than 5 % of requests see anyone arrive during their decode (P(N >= 1) = 1 - e^-n), the p95
    # request saw none: its TPOT is at most the mean (LoadPoint keeps the mean as the floor). The expansion gave
    # tpot + 0.28 p there however rare the arrivals (its skew grows as n^-1/2), a phantom tail at vanishing load.
    none_arrive = -np.expm1(-n) <= TAIL
    return np.where(none_arrive, tpot, tpot + sigma * (Z_TAIL + (Z_TAIL**2 - 1.0) * skew / 6.0))


def _in_service(
    c: ServingCases,
    theta: Mapping[str, float],
    batch: FloatArray,
    *,
    random_batch: bool = False,
    tails: bool = True,
) -> dict[str, FloatArray]:
    """Per-request figures with ``batch`` requests in flight (on average, Poisson-distributed: ``random_batch``)
    and no wait for a slot."""
    b = np.maximum(batch, 1.0)
    tput = throughput_at_batch(c, theta, b)
    req = tput / col(c.osl, b)
    answers = col(c.osl, b) > 1.0  # a one-token answer has no time between tokens: TPOT 0, as benchmarks report
    step = decode_step_s(c, theta, b)
    # Other prompts arrive at the request rate of b in flight; below one request in flight on average (random
    # arrivals only) the engine runs a lone request's figures, and the rate falls with the load (Little's law: a
    # 32,000-token prompt at 0.01 in flight arrives once in ~100 prefills, not back to back).
    arrivals = req * np.minimum(np.asarray(batch, dtype=np.float64), 1.0) if random_batch else req
    # Once its prompt is prefilled a request decodes at the step of the batch it shares, lengthened by the other
    # requests' prefills that land meanwhile (at ``arrivals``, each ``prefill_s``): TPOT = step + arrivals x
    # prefill x TPOT. At b >= 1 in flight that is b / X(b) (the arrivals are X(b) / osl); below one in flight it
    # falls to the lone request's decode step as the load vanishes (its own prefill is in its TTFT, not here).
    busy = np.clip(arrivals * col(prefill_s(c, theta), b), 0.0, 0.999)
    tpot = np.where(answers, step / (1.0 - busy), 0.0)
    wait, wait95 = _prefill_wait(c, theta, arrivals, step, b, random_arrivals=random_batch, tails=tails)
    # Its own prefill, each chunk in a step that also carries the decode batch (the first token comes out of the
    # step that finishes the prompt).
    base = col(solo_prefill_s(c, theta), b) + col(prefill_chunks(c), b) * step
    # A prompt that fits one step runs in one engine step with the others' decode tokens (the weights read once for
    # both): that step's time, as the simulation runs it. Others decoding: the B - 1 other clients of a closed loop,
    # B on average under random arrivals (Poisson arrivals see the time average).
    o = b if random_batch else b - 1.0
    isl = col(c.isl, b)
    own = engine_step_s(
        c, theta, decode=o, context=o * col(c.isl + c.osl / 2.0, b), prefill=isl, prefill_attention=isl**2 / 2.0
    )
    base = np.where(col(c.isl <= c.max_num_tokens, b), own, base)
    return {
        "tput": tput,
        "req": req,
        "tpot": tpot,
        "ttft": base + wait,
        "ttft95": base + wait95,
        "tpot95": np.where(answers, _tpot_p95(c, theta, b, arrivals, tpot, random_batch=random_batch), 0.0)
        if tails
        else tpot,
        "service": base + wait + (col(c.osl, b) - 1.0) * tpot,
    }


def closed_loop(c: ServingCases, theta: Mapping[str, float], concurrency: FloatArray) -> LoadPoint:
    """``concurrency`` clients per case ((n,) or (n, g)), each sending its next request when the last finished."""
    n = np.asarray(concurrency, dtype=np.float64)
    cap = col(np.floor(max_batch(c, theta)), n)
    fits = cap >= 1.0
    b = np.where(fits, np.minimum(n, cap), 1.0)
    s = _in_service(c, theta, b)
    cycle = n / np.maximum(s["req"], 1e-12)  # Little's law: each client's request cycle
    slot_wait = np.maximum(cycle - s["service"], 0.0)
    saturated = n > cap
    return LoadPoint(
        in_flight=np.where(fits, b, 0.0),
        saturated=saturated | ~fits,
        output_tokens_per_s=np.where(fits, s["tput"], 0.0),
        requests_per_s=np.where(fits, s["req"], 0.0),
        ttft_s=np.where(fits, s["ttft"] + slot_wait, np.inf),
        tpot_s=np.where(fits, s["tpot"], np.inf),
        # Closed loop past the cap: every request waits about the same for a slot (clients queue in turn).
        ttft_p95_s=np.where(fits, s["ttft95"] + slot_wait, np.inf),
        tpot_p95_s=np.where(fits, s["tpot95"], np.inf),
    )


@dataclass(frozen=True, slots=True)
class Replica:
    """What the open loop needs of a replica at any load, computed once per case table and shared by every load
    evaluated on it (the sizing's two grids): the batch cap, the requests/s at the cap, and the birth-death chain's
    service rates ``mu(n) = X(n) / osl`` for n = 1..cap as ``log_mu_sum[:, k] = sum log mu(1..k)`` (_slot_wait).
    Arrays per case (n,), the sums (n, largest cap + 1)."""

    cap: FloatArray
    fits: BoolArray
    capacity: FloatArray
    mu_cap: FloatArray
    log_mu_sum: FloatArray


def replica(c: ServingCases, theta: Mapping[str, float]) -> Replica:
    """The load-independent figures of each case's replica (see Replica)."""
    cap = np.floor(max_batch(c, theta))
    fits = cap >= 1.0
    capacity = np.where(fits, _in_service(c, theta, np.maximum(cap, 1.0), tails=False)["req"], 0.0)
    top = int(max(np.max(cap, initial=1.0), 1.0))
    n = np.arange(1.0, top + 1.0)
    mu = throughput_at_batch(c, theta, np.broadcast_to(n, (len(c), top))) / c.osl[:, None]
    inside = n[None, :] <= cap[:, None]
    log_mu = np.where(inside, np.log(np.maximum(mu, 1e-300)), 0.0)
    mu_cap = np.take_along_axis(mu, (np.clip(cap, 1.0, top) - 1.0).astype(np.int64)[:, None], axis=1)[:, 0]
    log_mu_sum = np.concatenate([np.zeros((len(c), 1)), np.cumsum(log_mu, axis=1)], axis=1)
    return Replica(cap=cap, fits=fits, capacity=capacity, mu_cap=mu_cap, log_mu_sum=log_mu_sum)


def open_loop(c: ServingCases, theta: Mapping[str, float], requests_per_s: FloatArray) -> LoadPoint:
    """Poisson arrivals at ``requests_per_s`` per case ((n,) or (n, g)); infinite latency at or above capacity."""
    lam = np.asarray(requests_per_s, dtype=np.float64)
    rep = replica(c, theta)
    cap = col(rep.cap, lam)
    # In flight = rate x time in service (Little's law): the root of rate x service(b) - b, bracketed by almost
    # nothing in flight and the cap (below capacity the excess changes sign there), by bisection in log b. A damped
    # iteration converges slowly where service(b) is steep (near capacity, 60 steps left in-flight 70 % off).
    lo = np.full_like(lam * cap, MIN_IN_FLIGHT)
    hi = np.maximum(cap, 1.0) * np.ones_like(lam)
    for _ in range(FIXED_POINT_ITERATIONS):
        b = np.sqrt(lo * hi)
        excess = lam * _in_service(c, theta, b, random_batch=True, tails=False)["service"] - b
        lo, hi = np.where(excess > 0.0, b, lo), np.where(excess > 0.0, hi, b)
    b = np.sqrt(lo * hi)
    return _open_point(c, theta, rep, lam, b, _in_service(c, theta, b, random_batch=True))


def open_loop_in_flight(
    c: ServingCases, theta: Mapping[str, float], in_flight: FloatArray, *, figures: Replica | None = None
) -> LoadPoint:
    """The open loop of ``open_loop`` at the request rate that keeps ``in_flight`` requests in flight on average
    ((n,) or (n, g), up to the batch cap): rate = in flight / time in service (Little's law), so no fixed point is
    solved, which makes a grid over the load cheap (what the sizing searches). ``figures``: ``replica(c, theta)``
    when the caller evaluates several grids on the same cases."""
    rep = figures or replica(c, theta)
    b = np.asarray(in_flight, dtype=np.float64)
    b = np.clip(b, MIN_IN_FLIGHT, np.maximum(col(rep.cap, b), 1.0))
    s = _in_service(c, theta, b, random_batch=True)
    lam = b / np.maximum(s["service"], 1e-12)
    return _open_point(c, theta, rep, lam, b, s)


def _open_point(
    c: ServingCases,
    theta: Mapping[str, float],
    rep: Replica,
    lam: FloatArray,
    b: FloatArray,
    s: dict[str, FloatArray],
) -> LoadPoint:
    """The open loop at rate ``lam`` with ``b`` requests in flight on average (Little's law holds between them);
    ``s`` is ``_in_service`` at ``b`` with random arrivals."""
    ok = col(rep.fits, lam) & (lam < col(rep.capacity, lam))
    p_wait, slot_wait = _slot_wait(c, rep, np.where(ok, lam, 0.0))
    tput = np.where(ok, lam * col(c.osl, lam), 0.0)
    return LoadPoint(
        in_flight=np.where(ok, b, np.inf),
        saturated=~ok,
        output_tokens_per_s=tput,
        requests_per_s=np.where(ok, lam, 0.0),
        ttft_s=np.where(ok, s["ttft"] + slot_wait, np.inf),
        tpot_s=np.where(ok, s["tpot"], np.inf),
        ttft_p95_s=np.where(ok, s["ttft95"] + wait_p95(slot_wait, p_wait), np.inf),
        tpot_p95_s=np.where(ok, s["tpot95"], np.inf),
    )


def _slot_wait(c: ServingCases, rep: Replica, lam: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(probability, mean) of waiting for a batch slot at rate ``lam`` ((n,) or (n, g)). The replica is a
    load-dependent server: with n requests in service it returns ``mu(n) = X(n) / osl`` requests/s (X: the model's
    throughput at batch n), up to ``mu(cap)`` with a queue beyond the cap; a birth-death chain whose stationary law
    is ``pi(n) ~ prod lam / mu(k)`` (product form), geometric with ratio ``r = lam / mu(cap)`` past the cap. A
    request queues with probability ``P = pi(cap) / (1 - r)`` and then waits ``1 / (mu(cap) (1 - r))`` on average
    for exponential work, times Allen-Cunneen's ``(c_a^2 + c_s^2) / 2 = 1/2`` for Poisson arrivals of equal
    requests. (A fixed-service M/D/c slot model misses that every request slows down as the batch fills.)"""
    top = rep.log_mu_sum.shape[1] - 1
    flat_cap = rep.cap
    mu_cap = rep.mu_cap
    lam2 = lam.reshape(len(c), -1)
    log_lam = np.log(np.maximum(lam2, 1e-300))[:, :, None]
    # log pi(k) for k = 0..cap (pi(0) = 1): k log lam - sum of log mu(1..k); states past the cap are -inf.
    k = np.arange(top + 1.0)
    log_pi = k[None, None, :] * log_lam  # in place from here: this (cases, loads, states) array is the costly part
    log_pi -= rep.log_mu_sum[:, None, :]
    np.copyto(log_pi, -np.inf, where=(k[None, :] > flat_cap[:, None])[:, None, :])
    log_pi -= log_pi.max(axis=2, keepdims=True)
    weights = np.zeros_like(log_pi)
    np.exp(log_pi, out=weights, where=log_pi > -SLOT_STATES_BELOW_MODE)
    r = np.clip(lam2 / np.maximum(mu_cap, 1e-300)[:, None], 0.0, 0.999999)
    at_cap = np.exp(
        np.take_along_axis(log_pi, np.clip(flat_cap, 0.0, top).astype(np.int64)[:, None, None], axis=2)[:, :, 0]
    )
    total = weights.sum(axis=2) + at_cap * r / (1.0 - r)
    p_wait = np.where(lam2 > 0.0, at_cap / (1.0 - r) / total, 0.0)
    mean = p_wait * SLOT_SERVICE_VARIABILITY / (np.maximum(mu_cap, 1e-300)[:, None] * (1.0 - r))
    return p_wait.reshape(lam.shape), mean.reshape(lam.shape)
