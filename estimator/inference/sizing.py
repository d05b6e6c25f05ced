"""Sizing a deployment from the serving model: the best operating point of a replica under p95 latency targets,
replicas for a traffic, and point predictions (what ``manage.py estimate_inference`` writes).

The best replica is the highest request rate over a grid of rates (one lone client's to the capacity at the batch
cap) whose p95 TTFT and p95 TPOT under random arrivals (the open loop of estimator.inference.latency) meet the
targets; replicas = ceil(requests/s / replica requests/s) for the peak and for the mean traffic, so that every
replica sees at most that rate. Where a request alone meets the targets, replicas that each serve one request at a
time behind one router's queue (``pooled_replicas``) are the other way to serve it, taken where they need fewer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

import numpy as np
from scipy.special import gammaln, pdtr

from estimator import bounds
from estimator.inference.data import (
    MOE_MULTI_NODE_DEGREES,
    PRECISIONS,
    TP_DEGREES,
    BoolArray,
    FloatArray,
    InferenceError,
    ServedModel,
    ServingCases,
    ServingGpu,
    build_cases,
    positive,
    serving_gpu,
)
from estimator.inference.engines import default_serving_engine
from estimator.inference.fit import InferenceCalibration, default_calibration
from estimator.inference.latency import (
    MIN_IN_FLIGHT,
    SLOT_SERVICE_VARIABILITY,
    LoadPoint,
    Replica,
    open_loop_in_flight,
    replica,
    wait_p95,
)
from estimator.inference.model import (
    activation_bytes_per_gpu,
    decode_step_s,
    kv_capacity_requests,
    kv_memory_bytes,
    kv_share,
    max_batch,
    weight_bytes_per_gpu,
)
from estimator.inference.simulate import simulate_closed_loop


@dataclass(frozen=True, slots=True)
class ReplicaPerformance:
    """Best operating point of one replica per case (arrays). Units: tokens/s, requests/s, seconds (p95).
    ``reachable_ttft_s`` and ``reachable_tpot_s``: the p95 latencies of the searched load nearest the targets
    (_nearest): sizing again with targets at or above both meets them (what a looser target can ask). ``lone``:
    one request at a time (simulate_closed_loop at concurrency 1) for every case, where it was simulated (some
    case met no load), else None."""

    fits_memory: BoolArray
    meets_latency: BoolArray
    batch: FloatArray
    max_batch: FloatArray
    output_tokens_per_s: FloatArray
    requests_per_s: FloatArray
    ttft_s: FloatArray
    tpot_s: FloatArray
    weights_gb_per_gpu: FloatArray
    reachable_ttft_s: FloatArray
    reachable_tpot_s: FloatArray
    lone: LoadPoint | None = None


def best_under_latency(
    c: ServingCases,
    theta: Mapping[str, float],
    *,
    ttft_s: FloatArray | float,
    tpot_s: FloatArray | float,
    grid_points: int = 24,
) -> ReplicaPerformance:
    """Highest request rate per case whose p95 TPOT and p95 TTFT under random (Poisson) arrivals meet the targets
    (estimator.inference.latency.open_loop: production traffic is not a fixed set of clients, and its p95 is what
    a load test at that rate measures), over a geometric grid of loads from MIN_IN_FLIGHT requests in flight to the
    batch cap. ``batch`` is the mean requests in flight there (Little's law). Where no load meets them, a lone
    client's figures are reported with meets_latency False: one request at a time (batch 1), the synchronised
    closed loop of one client that estimate_inference simulates at concurrency 1."""
    figures = replica(c, theta)
    cap, fits = figures.cap, figures.fits
    # The load is searched by its mean in flight (the rate follows by Little's law, no fixed point per rate), from
    # almost nothing in flight to the cap: a long prompt with a short answer can need far less than one request in
    # flight on average to keep its prefill queue short (32,000 in / 1 out).
    low = np.full(len(c), MIN_IN_FLIGHT)
    high = np.maximum(cap, 1.0)
    # Coarse to fine (the p95s cost most at large caps): the best of a coarse grid, then a fine grid from there to
    # the next coarse point, as fine as one grid of ``grid_points`` squared at twice a coarse grid's cost.
    ttft = np.asarray(ttft_s, dtype=np.float64).reshape(-1, 1)
    tpot = np.asarray(tpot_s, dtype=np.float64).reshape(-1, 1)
    span = np.log(np.maximum(high / low, 1.0))
    rows = np.arange(len(c))
    coarse = np.linspace(0.0, 1.0, grid_points)
    load, ok, idx = _search(c, theta, figures, np.log(low)[:, None] + span[:, None] * coarse[None, :], ttft, tpot)
    start = np.log(low) + span * coarse[idx]
    width = span / max(grid_points - 1, 1)
    fine = np.linspace(0.0, 1.0, grid_points)
    fine_load, fine_ok, fine_idx = _search(c, theta, figures, (start + width * fine[:, None]).T, ttft, tpot)
    better = fine_ok[rows, fine_idx] & (fine_load.requests_per_s[rows, fine_idx] > load.requests_per_s[rows, idx])
    meets = ok.any(axis=1) | fine_ok.any(axis=1)
    chosen = {
        f: np.where(better, getattr(fine_load, f)[rows, fine_idx], getattr(load, f)[rows, idx])
        for f in LoadPoint.__dataclass_fields__
    }
    if not meets.all():
        # Where no load meets the targets, what is reported is a lone client's: one request at a time, as
        # estimate_inference simulates it at concurrency 1 (an outsider's probe: the Poisson load at the lone
        # client's in-flight count read 4.53 s p95 TTFT for 70B FP8 at 32,000 in on TP 8, where one request takes
        # 1.09 s), not the lightest load searched.
        lone = simulate_closed_loop(c, theta, np.ones_like(cap))
        chosen = {f: np.where(meets, v, getattr(lone, f)) for f, v in chosen.items()}
    else:
        lone = None
    req = np.where(fits, chosen["requests_per_s"], 0.0)
    reach_ttft, reach_tpot = _nearest((load, fine_load), ttft, tpot)
    return ReplicaPerformance(
        fits_memory=fits,
        meets_latency=meets & fits,
        batch=np.where(fits, np.maximum(np.round(chosen["in_flight"]), 1.0), 0.0),
        max_batch=np.maximum(cap, 0.0),
        output_tokens_per_s=req * c.osl,
        requests_per_s=req,
        ttft_s=np.where(fits, chosen["ttft_p95_s"], np.inf),
        tpot_s=np.where(fits, chosen["tpot_p95_s"], np.inf),
        weights_gb_per_gpu=weight_bytes_per_gpu(c) / 1e9,
        reachable_ttft_s=np.where(fits, reach_ttft, np.inf),
        reachable_tpot_s=np.where(fits, reach_tpot, np.inf),
        lone=lone,
    )


def _nearest(loads: Sequence[LoadPoint], ttft: FloatArray, tpot: FloatArray) -> tuple[FloatArray, FloatArray]:
    """(p95 TTFT, p95 TPOT) per case of the searched load nearest the targets: the smallest worst ratio of p95 to
    target, max(TTFT / target, TPOT / target), as unmet.closest_deployment ranks deployments. Every searched load
    is searched again at any targets (the grids depend on the batch cap only), so targets at or above this pair
    are met; where the p95s rise with the load, it is the lightest load, and no lower TTFT target is met."""
    ttfts = np.concatenate([x.ttft_p95_s for x in loads], axis=1)
    tpots = np.concatenate([x.tpot_p95_s for x in loads], axis=1)
    ratio = np.maximum(ttfts / ttft, tpots / tpot)
    idx = np.argmin(np.where(np.isfinite(ratio), ratio, np.inf), axis=1)
    rows = np.arange(len(idx))
    return ttfts[rows, idx], tpots[rows, idx]


def _search(
    c: ServingCases,
    theta: Mapping[str, float],
    figures: Replica,
    log_in_flight: FloatArray,
    ttft: FloatArray,
    tpot: FloatArray,
) -> tuple[LoadPoint, BoolArray, np.ndarray]:
    """The open loop over a grid of mean in flight (log, per case), which points meet the p95 targets, and the
    highest-rate one per case (the first point, the lightest load, where none does)."""
    load = open_loop_in_flight(c, theta, np.exp(log_in_flight), figures=figures)
    ok = (load.tpot_p95_s <= tpot) & (load.ttft_p95_s <= ttft) & figures.fits[:, None]
    idx = np.where(ok.any(axis=1), np.argmax(np.where(ok, load.requests_per_s, -np.inf), axis=1), 0)
    return load, ok, idx


def replicas_for(*, requests_per_s: FloatArray | float, replica_requests_per_s: FloatArray) -> FloatArray:
    """Replicas needed to serve ``requests_per_s`` (at least 1; infinite where a replica serves nothing)."""
    r = np.asarray(replica_requests_per_s, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.ceil(np.asarray(requests_per_s, dtype=np.float64) / r - 1e-9)
    return np.where(r > 0, np.maximum(need, 1.0), np.inf)


def pooled_replicas(
    *, requests_per_s: FloatArray | float, service_s: FloatArray, wait_s: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """(replicas, p95 wait [s]) of replicas that each serve one request at a time (``service_s`` alone) behind one
    router's queue (M/G/c): the fewest whose p95 wait for a free replica is at most ``wait_s``. With ``a`` = rate x
    service replicas busy on average (Little), a request waits with Erlang C's probability, then an exponential
    time of mean ``S v / (c - a)``, v Allen-Cunneen's factor for equal requests (SLOT_SERVICE_VARIABILITY, as the
    slot wait). Splitting the rate into one Poisson stream per replica instead leaves each replica a trickle: at a
    target about a lone request's latency no replica may hold two, and the replicas multiply (a new user's probe:
    84,600 L40S where 710 replicas of 4 are busy). Erlang B is the Poisson pmf over its cdf (scipy); the
    fewest is found by bisection (the wait falls as replicas are added) from a + 1 to a + 4 sqrt(a) + 16, past
    Halfin-Whitt's ~1.75 sqrt(a) for a 5 % chance to wait: a few dozen steps, whatever the traffic."""
    service = np.asarray(service_s, dtype=np.float64)
    busy = np.asarray(requests_per_s, dtype=np.float64) * service
    serves = np.isfinite(busy) & np.isfinite(service) & (service > 0.0)
    a = np.where(serves, busy, 0.0)
    budget = np.asarray(wait_s, dtype=np.float64)

    def wait(c: FloatArray) -> FloatArray:
        with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
            log_pmf = np.where(a > 0.0, c * np.log(np.where(a > 0.0, a, 1.0)) - a - gammaln(c + 1.0), -np.inf)
            erlang_b = np.exp(log_pmf) / pdtr(c, a)
            erlang_c = np.where(a > 0.0, erlang_b / (1.0 - a / c * (1.0 - erlang_b)), 0.0)
            return wait_p95(erlang_c * service * SLOT_SERVICE_VARIABILITY / (c - a), erlang_c)

    lo = np.floor(a)  # at most a busy: the queue grows without end
    hi = lo + 1.0 + np.ceil(4.0 * np.sqrt(a)) + 16.0
    while np.any(hi - lo > 1.0):
        mid = np.floor((lo + hi) / 2.0)
        ok = wait(mid) <= budget
        lo, hi = np.where(ok | (hi - lo <= 1.0), lo, mid), np.where(ok & (hi - lo > 1.0), mid, hi)
    waited = wait(hi)
    found = serves & (waited <= budget)
    return np.where(found, hi, np.inf), np.where(found, waited, np.inf)


@dataclass(frozen=True, slots=True)
class MemoryBudget:
    """What one GPU of a replica holds [GB], each part from the serving model's own functions (model.py), so the
    parts add up to what the fit was checked on: weights (weight_bytes_per_gpu), activation buffers
    (activation_bytes_per_gpu), the engine's runtime reserve (cases.runtime_bytes) and the KV cache the engine gives
    it (kv_memory_bytes / tp; 0 where the weights leave it nothing). ``capacity_gb``: the memory it is held against,
    the driver's figure (ServingGpu.memory_bytes, as the Advice's gpu.memory_capacity_gb)."""

    capacity_gb: float
    weights_gb: float
    activations_gb: float
    runtime_gb: float
    kv_cache_gb: float

    @property
    def held_gb(self) -> float:
        """The memory the replica holds per GPU: the parts' sum."""
        return self.weights_gb + self.activations_gb + self.runtime_gb + self.kv_cache_gb


def memory_budgets(c: ServingCases) -> list[MemoryBudget]:
    """One MemoryBudget per case."""
    kv = np.maximum(kv_memory_bytes(c) / c.tp, 0.0)
    parts = (c.mem_bytes, weight_bytes_per_gpu(c), activation_bytes_per_gpu(c), c.runtime_bytes, kv)
    return [MemoryBudget(*(float(p[i]) / 1e9 for p in parts)) for i in range(len(c))]


@dataclass(frozen=True, slots=True)
class Deployment:
    """One parallel layout for a traffic: per-replica performance (latencies p95) and replicas for peak and mean.
    ``tp`` is the GPUs of one replica (tensor parallel inside the NVLink domain; expert parallel beyond it).
    ``batch``, ``ttft_s``, ``tpot_s`` are at the replica's sized capacity (``replica_requests_per_s``, the highest
    rate that meets the targets); the ``*_at_peak`` fields at the load the peak puts on each replica
    (peak requests/s / replicas_peak): what a load test at the peak would see (nan where no replica count serves it).
    ``reachable_ttft_s`` and ``reachable_tpot_s``: the lowest p95 targets this sizing meets (ReplicaPerformance).
    ``kv_share``: the share of the replica's GPU memory its KV cache gets (model.kv_share). ``memory``: what each of
    its GPUs holds (MemoryBudget)."""

    tp: int
    fits_memory: bool
    meets_latency: bool
    batch: int
    max_batch: int
    replica_output_tokens_per_s: float
    replica_requests_per_s: float
    ttft_s: float
    tpot_s: float
    weights_gb_per_gpu: float
    replicas_peak: float
    replicas_mean: float
    batch_at_peak: float = math.nan
    ttft_at_peak_s: float = math.nan
    tpot_at_peak_s: float = math.nan
    reachable_ttft_s: float = math.nan
    reachable_tpot_s: float = math.nan
    kv_share: float = math.nan
    memory: MemoryBudget | None = None

    @property
    def gpus_peak(self) -> float:
        return self.tp * self.replicas_peak

    @property
    def gpus_mean(self) -> float:
        return self.tp * self.replicas_mean


def does_not_fit_text(*, tp: int, memory_gb: float, tokens: float) -> str:
    """Why no deployment or point is predicted, in one wording for the advice and estimate_inference: "does not fit
    1 x 80 GB with a KV cache for 200 tokens" (memory_gb: the datasheet's, as users know the GPU)."""
    return f"does not fit {tp} x {memory_gb:g} GB with a KV cache for {tokens:,.0f} tokens"


def scale_up_gpus(gpu: ServingGpu, gpus_per_node: int | None = None) -> int:
    """GPUs one tensor-parallel group can span on the scale-up link: the GPU's NVLink domain where it spans servers
    (GB200 NVL72: 72 GPUs over 4-GPU trays), otherwise the server (``gpus_per_node`` when given: the scenario's)."""
    if gpu.nvlink_domain > gpu.gpus_per_node:
        return gpu.nvlink_domain
    return gpus_per_node or gpu.gpus_per_node


def with_scale_out(gpu: ServingGpu, *, gpus_per_node: int | None, inter_node_gbps: float | None) -> ServingGpu:
    """``gpu`` with the scale-out network a deployment is given, per node of ``gpus_per_node`` GPUs (default: the
    GPU's typical server) [Gb/s], as one-way GB/s a GPU; unchanged without one."""
    if inter_node_gbps is None:
        return gpu
    return replace(gpu, scale_out_gbps=float(inter_node_gbps) / 8.0 / max(gpus_per_node or gpu.gpus_per_node, 1))


def tensor_parallel_degrees(gpu: str, *, gpus_per_node: int | None = None) -> list[int]:
    """TP degrees of TP_DEGREES that stay on ``gpu``'s scale-up link (scale_up_gpus); at least [1]."""
    limit = scale_up_gpus(serving_gpu(gpu), gpus_per_node)
    return [t for t in TP_DEGREES if t <= limit] or [1]


def parallel_degrees(*, model: ServedModel, scale_up: int, tps: Sequence[int] | None = None) -> list[int]:
    """Replica sizes to try: TP 1, 2, 4, 8 up to the ``scale_up`` GPUs of the scale-up link (scale_up_gpus); a
    mixture of experts also spans 2 and 4 such groups with expert parallelism (models such as DeepSeek-V3 do not fit
    one node of 80 GB GPUs)."""
    if tps:
        return [t for t in tps if t <= scale_up or model.experts] or [1]
    degrees = [t for t in TP_DEGREES if t <= scale_up] or [1]
    if model.experts:
        degrees += [d * max(degrees) // max(TP_DEGREES) for d in MOE_MULTI_NODE_DEGREES]
    return degrees


def size_deployments(
    *,
    model: ServedModel,
    gpu: str,
    precision: str,
    input_tokens: float,
    output_tokens: float,
    peak_requests_per_s: float,
    mean_requests_per_s: float,
    ttft_p95_s: float,
    tpot_p95_s: float,
    tps: Sequence[int] | None = None,
    calibration: InferenceCalibration | None = None,
    stack: str | None = None,
    gpus_per_node: int | None = None,
    inter_node_gbps: float | None = None,
) -> list[Deployment]:
    """One Deployment per replica size (default: ``parallel_degrees``). ``inter_node_gbps``: the scale-out network
    per node [Gb/s] of ``gpus_per_node`` GPUs (default: the GPU's typical server, gpus.csv / estimator.specs), which
    a replica beyond the scale-up domain runs its collectives over: inter_node_gbps / 8 / gpus_per_node GB/s a GPU.
    Replicas within the scale-up domain do not use it."""
    spec = with_scale_out(serving_gpu(gpu), gpus_per_node=gpus_per_node, inter_node_gbps=inter_node_gbps)
    precision = precision.strip().lower()
    if precision not in PRECISIONS:
        raise InferenceError("precision", f"must be one of {', '.join(PRECISIONS)}; got {precision!r}")
    spec.peak_flops(precision)
    for name, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens)):
        positive(name, value)
    # The Scenario's floors for the same quantities (estimator.bounds), not "above 0", which let subnormals through.
    for name, value, minimum in (
        ("peak_requests_per_s", peak_requests_per_s, bounds.MIN_REQUESTS_PER_S),
        ("ttft_p95_s", ttft_p95_s, bounds.MIN_LATENCY_S),
        ("tpot_p95_s", tpot_p95_s, bounds.MIN_LATENCY_S),
    ):
        if positive(name, value) < minimum:
            raise InferenceError(name, f"must be at least {minimum:g}, got {value!r}")
    if not (0 <= mean_requests_per_s <= peak_requests_per_s):
        raise InferenceError("mean_requests_per_s", "must be between 0 and peak_requests_per_s")
    degrees = parallel_degrees(model=model, scale_up=scale_up_gpus(spec), tps=tps)
    cal = calibration or default_calibration()
    n = len(degrees)
    cases = build_cases(
        models=[model] * n,
        gpus=[spec] * n,
        precisions=[precision] * n,
        tps=degrees,
        input_tokens=[input_tokens] * n,
        output_tokens=[output_tokens] * n,
        stacks=[stack or default_serving_engine(gpu)] * n,
    )
    perf = best_under_latency(cases, cal.params, ttft_s=ttft_p95_s, tpot_s=tpot_p95_s)
    peak = replicas_for(requests_per_s=peak_requests_per_s, replica_requests_per_s=perf.requests_per_s)
    mean = replicas_for(requests_per_s=mean_requests_per_s, replica_requests_per_s=perf.requests_per_s)
    at_peak = _at_peak(cases, cal.params, perf, peak, peak_requests_per_s)
    split = {
        "fits_memory": perf.fits_memory,
        "meets_latency": perf.meets_latency,
        "batch": perf.batch,
        "replica_output_tokens_per_s": perf.output_tokens_per_s,
        "replica_requests_per_s": perf.requests_per_s,
        "ttft_s": perf.ttft_s,
        "tpot_s": perf.tpot_s,
        "replicas_peak": peak,
        "replicas_mean": mean,
        "batch_at_peak": at_peak.in_flight,
        "ttft_at_peak_s": at_peak.ttft_p95_s,
        "tpot_at_peak_s": at_peak.tpot_p95_s,
        "reachable_ttft_s": perf.reachable_ttft_s,
        "reachable_tpot_s": perf.reachable_tpot_s,
    }
    f = _pooled_where_fewer(
        cases,
        cal.params,
        split,
        lone=perf.lone,
        peak_requests_per_s=peak_requests_per_s,
        mean_requests_per_s=mean_requests_per_s,
        ttft_p95_s=ttft_p95_s,
        tpot_p95_s=tpot_p95_s,
    )
    shares = kv_share(cases)
    budgets = memory_budgets(cases)
    return [
        Deployment(
            tp=degrees[i],
            fits_memory=bool(f["fits_memory"][i]),
            meets_latency=bool(f["meets_latency"][i]),
            batch=int(f["batch"][i]),
            max_batch=int(perf.max_batch[i]),
            replica_output_tokens_per_s=float(f["replica_output_tokens_per_s"][i]),
            replica_requests_per_s=float(f["replica_requests_per_s"][i]),
            ttft_s=float(f["ttft_s"][i]),
            tpot_s=float(f["tpot_s"][i]),
            weights_gb_per_gpu=float(perf.weights_gb_per_gpu[i]),
            replicas_peak=float(f["replicas_peak"][i]),
            replicas_mean=float(f["replicas_mean"][i]),
            batch_at_peak=float(f["batch_at_peak"][i]),
            ttft_at_peak_s=float(f["ttft_at_peak_s"][i]),
            tpot_at_peak_s=float(f["tpot_at_peak_s"][i]),
            reachable_ttft_s=float(f["reachable_ttft_s"][i]),
            reachable_tpot_s=float(f["reachable_tpot_s"][i]),
            kv_share=float(shares[i]),
            memory=budgets[i],
        )
        for i in range(n)
    ]


def _pooled_where_fewer(
    c: ServingCases,
    theta: Mapping[str, float],
    split: dict[str, np.ndarray],
    *,
    lone: LoadPoint | None,
    peak_requests_per_s: float,
    mean_requests_per_s: float,
    ttft_p95_s: float,
    tpot_p95_s: float,
) -> dict[str, np.ndarray]:
    """The deployment's figures (``split``: each replica its own Poisson stream at its sized rate), replaced by a
    pool of replicas serving one request at a time behind one router (``pooled_replicas``) where a request alone
    meets the targets and the pool needs fewer replicas, or where no load meets them: the table then reports a
    lone request's latencies, which a pool keeps with no wait at the p95 (one replica per request busy back to
    back, the rate x service time, would queue without end). One rule for both, so looser targets at those
    latencies need no more GPUs than the table shows (a new user's probe: 84,600 L40S against the table's 2,840)."""
    fits: BoolArray = np.asarray(split["fits_memory"], dtype=bool)
    met: BoolArray = np.asarray(split["meets_latency"], dtype=bool)
    # A pool needs at least the rate x a request's time alone replicas, and that time is at least its decode steps
    # at batch 1: where even that many outnumber the split's replicas, no pool needs fewer, and the lone request
    # is not simulated (the sizing's common case, a replica that batches).
    at_least = split["replica_requests_per_s"] * np.maximum(c.osl - 1.0, 0.0) * decode_step_s(c, theta, np.ones(len(c)))
    if not np.any(fits & (~met | (at_least < 1.0 + split["replica_requests_per_s"] / peak_requests_per_s))):
        return split
    if lone is None:
        lone = simulate_closed_loop(c, theta, np.ones(len(c)))
    serves = fits & (lone.requests_per_s > 0.0)
    service = np.where(serves, 1.0 / np.where(serves, lone.requests_per_s, 1.0), np.inf)  # one request, alone
    alone_meets = serves & (lone.ttft_p95_s <= ttft_p95_s) & (lone.tpot_p95_s <= tpot_p95_s)
    budget = np.where(alone_meets, ttft_p95_s - lone.ttft_p95_s, 0.0)  # the TTFT a router's queue may add
    at_peak, wait = pooled_replicas(requests_per_s=peak_requests_per_s, service_s=service, wait_s=budget)
    at_mean, _ = pooled_replicas(requests_per_s=mean_requests_per_s, service_s=service, wait_s=budget)
    use = serves & np.isfinite(at_peak) & (~met | (alone_meets & (at_peak < split["replicas_peak"])))
    share = peak_requests_per_s / np.where(use, at_peak, 1.0)  # each replica's rate at the peak
    ttft = lone.ttft_p95_s + wait
    # The lowest targets the sizing meets: a lone request's latencies where they are nearer the targets than any
    # searched load's (the pool reaches them).
    lone_ratio = np.maximum(lone.ttft_p95_s / ttft_p95_s, lone.tpot_p95_s / tpot_p95_s)
    grid_ratio = np.maximum(split["reachable_ttft_s"] / ttft_p95_s, split["reachable_tpot_s"] / tpot_p95_s)
    nearer = serves & (lone_ratio <= np.where(np.isfinite(grid_ratio), grid_ratio, np.inf))
    pooled = {
        "batch": np.ones(len(c)),
        "replica_requests_per_s": share,
        "replica_output_tokens_per_s": share * c.osl,
        "ttft_s": ttft,
        "tpot_s": lone.tpot_p95_s,
        "replicas_peak": at_peak,
        "replicas_mean": at_mean,
        "batch_at_peak": share * service,  # in flight per replica (Little)
        "ttft_at_peak_s": ttft,
        "tpot_at_peak_s": lone.tpot_p95_s,
    }
    out = {k: np.where(use, pooled[k], v) if k in pooled else v for k, v in split.items()}
    out["meets_latency"] = met | alone_meets
    out["reachable_ttft_s"] = np.where(nearer, lone.ttft_p95_s, split["reachable_ttft_s"])
    out["reachable_tpot_s"] = np.where(nearer, lone.tpot_p95_s, split["reachable_tpot_s"])
    return out


AT_PEAK_GRID: Final[int] = 96  # in-flight counts per replica, log-spaced from MIN_IN_FLIGHT to the batch cap


def _at_peak(
    c: ServingCases, theta: Mapping[str, float], perf: ReplicaPerformance, peak: FloatArray, peak_requests_per_s: float
) -> LoadPoint:
    """The open loop of each replica at its share of the peak, ``peak requests/s / replicas``: the replicas are
    rounded up, so each carries at most its sized rate, and its requests in flight (Little's law) and p95 latencies
    are those of that share, not of the sized capacity (an outsider's probe: Mixtral 30 requests/s on 3 replicas
    sized for 15 each was quoted at 125 in flight per replica, the capacity's; 10 requests/s x 9 s gives ~90).
    NaN where the replica does not fit or no replica count serves the peak."""
    serves = perf.fits_memory & np.isfinite(peak) & (perf.requests_per_s > 0)
    share = np.where(serves, peak_requests_per_s / np.where(serves, peak, 1.0), 0.0)
    # Never above the sized rate (rounding guard): the open loop at the sized rate is what the targets were met at.
    target = np.minimum(share, perf.requests_per_s)
    # The in-flight count whose rate (Little's law: in flight / time in service, rising with it) is the target, read
    # off a log grid of in-flight counts up to the cap in one vectorised pass, then evaluated there: open_loop's
    # bisection made this 3.7x the rest of the sizing (bench/advise.py --inference).
    rep = replica(c, theta)
    steps = np.linspace(0.0, 1.0, AT_PEAK_GRID)[None, :]
    grid = MIN_IN_FLIGHT * (np.maximum(rep.cap, 1.0)[:, None] / MIN_IN_FLIGHT) ** steps
    rates = np.maximum.accumulate(open_loop_in_flight(c, theta, grid, figures=rep).requests_per_s, axis=1)
    rows = np.arange(len(target))
    above = np.clip((rates < target[:, None]).sum(axis=1), 1, AT_PEAK_GRID - 1)  # first grid rate >= the target
    low, high = rates[rows, above - 1], rates[rows, above]
    weight = np.clip((target - low) / np.where(high > low, high - low, 1.0), 0.0, 1.0)
    log_grid = np.log(grid)
    in_flight = np.exp(log_grid[rows, above - 1] + weight * (log_grid[rows, above] - log_grid[rows, above - 1]))
    load = open_loop_in_flight(c, theta, in_flight, figures=rep)
    fields = {f: getattr(load, f) for f in LoadPoint.__dataclass_fields__}
    # Where the rate is not monotone in the in-flight count (one-token answers: the load between two grid points
    # can read over capacity although both sides serve the share), the read point is saturated: the replica's
    # sized operating point stands in, a load at least the share that meets the targets (its figures bound the
    # share's from above) rather than no figures (an outsider's probe: a 500 from the advice). A read point slower
    # than the sized one is off that branch too (8B TP 4 with one-token answers: the grid's rates peak just under
    # the share near the sized batch and pass it again only at 180 in flight, a p95 TTFT of 28 s).
    slower = (load.ttft_p95_s > perf.ttft_s) | (load.tpot_p95_s > perf.tpot_s)
    missed = serves & (load.saturated | ~np.isfinite(load.ttft_p95_s) | ~np.isfinite(load.tpot_p95_s) | slower)
    sized = {"in_flight": perf.batch, "ttft_p95_s": perf.ttft_s, "tpot_p95_s": perf.tpot_s}
    for f, v in sized.items():
        fields[f] = np.where(missed, v, fields[f])
    for f in ("ttft_s", "tpot_s"):  # no mean where the sized point's p95 stands in
        fields[f] = np.where(missed, np.nan, fields[f])
    fields["saturated"] = load.saturated & ~missed
    fields["requests_per_s"] = np.where(missed, target, fields["requests_per_s"])
    fields["output_tokens_per_s"] = np.where(missed, target * c.osl, fields["output_tokens_per_s"])
    for f in ("in_flight", "ttft_s", "tpot_s", "ttft_p95_s", "tpot_p95_s"):
        fields[f] = np.where(serves, fields[f], np.nan)
    return LoadPoint(**fields)


@dataclass(frozen=True, slots=True)
class ServingPoint:
    """One deployment at one load, as ``estimate_inference`` takes it (one per CSV row)."""

    model: ServedModel
    gpu: str
    precision: str
    tp: int
    concurrency: float
    input_tokens: float
    output_tokens: float
    stack: str = ""
    attention_dp: bool = False  # attention data-parallel over the tp GPUs, experts expert-parallel (MoE only)


@dataclass(frozen=True, slots=True)
class PointEstimate:
    """Whole-replica output tokens/s, mean TTFT and TPOT [s] and their p95, and the batch cap, per point."""

    output_tokens_per_s: FloatArray
    ttft_s: FloatArray
    tpot_s: FloatArray
    ttft_p95_s: FloatArray
    tpot_p95_s: FloatArray
    max_concurrency: FloatArray
    # Requests the KV cache holds (not capped by the engine) and the engine's batch cap: the capacity warning's
    # inputs (estimator.inference.notes.kv_capacity_warning).
    kv_requests: FloatArray
    engine_max_batch: FloatArray


def estimate_points(
    points: Sequence[ServingPoint], *, calibration: InferenceCalibration | None = None
) -> PointEstimate:
    """Every point as a benchmark measures it (its clients start together with identical requests: the synchronised
    closed loop of estimator.inference.simulate), in one vectorised pass."""
    cal = calibration or default_calibration()
    cases = build_cases(
        models=[p.model for p in points],
        gpus=[serving_gpu(p.gpu) for p in points],
        precisions=[p.precision for p in points],
        tps=[p.tp for p in points],
        input_tokens=[p.input_tokens for p in points],
        output_tokens=[p.output_tokens for p in points],
        stacks=[p.stack or default_serving_engine(p.gpu) for p in points],
        attention_dp=[p.attention_dp for p in points],
    )
    load = simulate_closed_loop(cases, cal.params, np.asarray([p.concurrency for p in points], dtype=np.float64))
    return PointEstimate(
        output_tokens_per_s=load.output_tokens_per_s,
        ttft_s=load.ttft_s,
        tpot_s=load.tpot_s,
        ttft_p95_s=load.ttft_p95_s,
        tpot_p95_s=load.tpot_p95_s,
        max_concurrency=np.floor(max_batch(cases, cal.params)),
        kv_requests=kv_capacity_requests(cases, cal.params),
        engine_max_batch=cases.engine_max_batch * np.where(cases.attention_dp, cases.tp, 1.0),
    )
