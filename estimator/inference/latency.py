"""Latency under load: TTFT and TPOT (mean and p95) of one replica at a given concurrency (closed loop: N clients
each sending its next request when the last one finished) or a given request rate (open loop: Poisson arrivals).
These are queueing formulas with random (Poisson-like) arrivals: smooth and cheap, what the sizing grid uses. A
benchmark's closed loop (clients that start together with identical requests) and its open-loop run (a finite number
of requests sent at a rate: past capacity the queue stops growing when they run out, where the formula's endless
stream answers infinite) are simulated step by step in estimator.inference.simulate instead.

Vectorised over cases (and a grid per case). The queueing model, on top of estimator.inference.model:

* In flight: ``B = min(N, cap)`` requests (cap = KV capacity, at most the engine's batch limit). Throughput
  ``X(B)`` tokens/s and mean TPOT ``B / X(B)`` (prefills of arriving requests interleaved) as the model gives.
* TTFT of an admitted request (continuous batching with chunked prefill, a token budget of ``max_num_tokens`` per
  step): the wait for the step in progress and for other requests' prefills, then its own prefill chunks, each in a
  step that also runs the decode batch. Other requests' prompts arrive at ``X(B) / osl`` per second and keep the
  prefill "server" busy for ``chunks x (chunk + decode step)`` each; M/D/1 mean wait ``rho S / (2 (1 - rho))``
  (Poisson arrivals, equal prompts), plus half a decode step when no prefill is under way.
* Closed loop past the cap: Little's law; each of the N clients cycles in ``N / X_req``; the part not spent in service
  is spent waiting for a batch slot, and that wait is part of TTFT (what the NIM measurements show past saturation).
* Open loop at rate ``lambda``: in flight ``B = lambda x (TTFT + (osl - 1) TPOT(B))`` (fixed point); waiting for a slot
  among ``cap`` slots: M/D/c mean wait by Sakasegawa's approximation ``S rho^(sqrt(2(c+1)) - 1) / (c (1 - rho)) x
  (1 + c_s^2) / 2`` with c_s = 0; at or above capacity the queue grows without bound (TTFT infinite).
* p95 from the same model: waits with an exponential tail ``P(W > t) = rho exp(-t rho / W)`` (M/M/1-type tail with
  the model's mean wait W); TPOT p95 is the step that carries a prefill chunk when more than 5 % of the steps do.
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
    max_batch,
    prefill_chunks,
    prefill_s,
    solo_prefill_s,
    throughput_at_batch,
)

TAIL: Final[float] = 0.05  # p95
FIXED_POINT_ITERATIONS: Final[int] = 60


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


def _tail(mean_wait: FloatArray, rho: FloatArray) -> FloatArray:
    """p95 of a wait with mean ``mean_wait`` whose probability of being non-zero is ``rho``."""
    rho = np.clip(rho, 1e-12, 1.0)
    return np.where(rho > TAIL, mean_wait / rho * np.log(rho / TAIL), 0.0)


def _prefill_wait(
    c: ServingCases, theta: Mapping[str, float], req_rate: FloatArray, step: FloatArray, in_flight: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """(mean, p95) wait of a new prompt before its own first prefill chunk starts, at ``req_rate`` requests/s with
    plain decode steps of ``step`` seconds and ``in_flight`` requests (itself included). The prefill "server" is busy
    for every step that carries prompt tokens, and such a step also runs the whole decode batch; prompts pack into
    steps of ``max_num_tokens`` tokens, so one prompt costs its prefill plus ``input_tokens / max_num_tokens`` decode
    steps, utilisation ``rho = rate of the others x that``. M/D/1 (Poisson arrivals, equal prompts):
    ``rho S / (2 (1 - rho))``; when no prefill is under way the prompt still waits for the end of the decode step in
    progress (half a step on average)."""
    share = col(c.isl / c.max_num_tokens, req_rate)
    service = col(prefill_s(c, theta), req_rate) + share * step
    # Closed loop (finite source): a prompt queues only behind the other B - 1 requests' prompts.
    others_rate = req_rate * (1.0 - 1.0 / np.maximum(in_flight, 1.0))
    rho = np.clip(others_rate * service, 0.0, 0.999)
    queue = rho * service / (2.0 * (1.0 - rho))
    # A step is in progress only when other requests are in flight (a lone client finds the engine idle).
    others = np.clip(in_flight - 1.0, 0.0, 1.0)
    idle_step = others * (1.0 - rho) * step / 2.0
    return queue + idle_step, _tail(queue, rho) + idle_step


def _tpot_p95(c: ServingCases, theta: Mapping[str, float], batch: FloatArray, req_rate: FloatArray) -> FloatArray:
    """A decode step that also carries one prefill chunk, when more than 5 % of steps carry one; else a plain step."""
    step = decode_step_s(c, theta, batch)
    chunk_tokens = col(np.minimum(c.isl, c.max_num_tokens), batch)
    chunk_s = chunk_tokens / col(c.isl, batch) * col(prefill_s(c, theta), batch)
    chunked_steps = np.clip(req_rate * col(prefill_chunks(c), batch) * step, 0.0, 1.0)
    return np.where(chunked_steps > TAIL, step + chunk_s, step)


def _in_service(c: ServingCases, theta: Mapping[str, float], batch: FloatArray) -> dict[str, FloatArray]:
    """Per-request figures with ``batch`` requests in flight and no wait for a slot."""
    b = np.maximum(batch, 1.0)
    tput = throughput_at_batch(c, theta, b)
    req = tput / col(c.osl, b)
    tpot = b / np.maximum(tput, 1e-12)
    step = decode_step_s(c, theta, b)
    wait, wait95 = _prefill_wait(c, theta, req, step, b)
    # Its own prefill, each chunk in a step that also carries the decode batch (the first token comes out of the
    # step that finishes the prompt).
    base = col(solo_prefill_s(c, theta), b) + col(prefill_chunks(c), b) * step
    return {
        "tput": tput,
        "req": req,
        "tpot": tpot,
        "ttft": base + wait,
        "ttft95": base + wait95,
        "tpot95": np.maximum(_tpot_p95(c, theta, b, req), tpot),
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


def open_loop(c: ServingCases, theta: Mapping[str, float], requests_per_s: FloatArray) -> LoadPoint:
    """Poisson arrivals at ``requests_per_s`` per case ((n,) or (n, g)); infinite latency at or above capacity."""
    lam = np.asarray(requests_per_s, dtype=np.float64)
    cap = col(np.floor(max_batch(c, theta)), lam)
    fits = cap >= 1.0
    capacity = np.where(fits, _in_service(c, theta, np.maximum(cap, 1.0))["req"], 0.0)
    stable = lam < capacity
    b = np.minimum(np.maximum(lam * col(solo_prefill_s(c, theta), lam), 1.0), np.maximum(cap, 1.0))
    for _ in range(FIXED_POINT_ITERATIONS):  # in flight = rate x time in service (Little), monotone in b
        service = _in_service(c, theta, b)["service"]
        b = np.clip(0.5 * b + 0.5 * lam * service, 1e-3, np.maximum(cap, 1.0))
    s = _in_service(c, theta, b)
    slots = np.maximum(cap, 1.0)
    rho = np.clip(b / slots, 0.0, 0.999)
    slot_wait = s["service"] * rho ** (np.sqrt(2.0 * (slots + 1.0)) - 1.0) / (slots * (1.0 - rho)) * 0.5
    ok = fits & stable
    tput = np.where(ok, lam * col(c.osl, lam), 0.0)
    return LoadPoint(
        in_flight=np.where(ok, b, np.inf),
        saturated=~ok,
        output_tokens_per_s=tput,
        requests_per_s=np.where(ok, lam, 0.0),
        ttft_s=np.where(ok, s["ttft"] + slot_wait, np.inf),
        tpot_s=np.where(ok, s["tpot"], np.inf),
        ttft_p95_s=np.where(ok, s["ttft95"] + _tail(slot_wait, rho ** np.sqrt(slots)), np.inf),
        tpot_p95_s=np.where(ok, s["tpot95"], np.inf),
    )
