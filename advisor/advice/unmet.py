"""When no deployment meets the latency targets: the one that comes nearest (``closest``) and what would meet the
targets (``relax``), each change checked by running the same estimator again, never guessed.

``closest`` is the fitting deployment with the smallest worst ratio of reached to targeted p95 latency
(max(TTFT / target, TPOT / target)). ``relax`` lists, in this order: looser targets (the lowest p95 latencies the
sizing meets with the closest deployment, rounded up to two digits, then a short ladder of looser ones that leave
room for queueing, ``LATENCY_LADDER``), FP8 weights (when the plan runs 16-bit and the
GPU has an FP8 peak), more tensor parallelism (when the scenario's node held the TP degrees back), and a faster GPU
(the next GPUs by memory bandwidth that meet the targets: ``gpus_above``). Each entry says whether that change alone
meets the targets."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

from advisor import formatting as fmt
from advisor.scenario import Scenario
from estimator import inference as inf
from estimator.specs import GPU_IDS, GpuSpec, get_gpu

SIXTEEN_BIT: Final[tuple[str, ...]] = ("bf16", "fp16")
# Other GPUs suggested beside the scenario's when it cannot be met: the next faster ones (a serving plan here), or
# the next bigger ones (a training job that fits no size, advisor.advice.training).
MAX_BIGGER_GPUS: Final[int] = 2
# The word a suggestion uses and the datasheet quantity (estimator/data/gpus.csv) it orders GPUs by: "bigger" is
# memory, "faster" the memory bandwidth that bounds decoding (a new user's probe: an A100 40GB was called "a bigger
# GPU" than a 48 GB L40S, ordered by bandwidth).
GpuWord = Literal["bigger", "faster"]
GPU_QUANTITY: Final[dict[str, tuple[str, str]]] = {
    "bigger": ("memory_gb", "GB of memory"),
    "faster": ("memory_bw_gbps", "GB/s of memory bandwidth"),
}


def gpus_above(gpu: str, *, word: GpuWord) -> list[GpuSpec]:
    """The catalog's GPUs with more of the quantity ``word`` names (GPU_QUANTITY) than ``gpu``, ascending in it."""
    field = GPU_QUANTITY[word][0]
    here = getattr(get_gpu(gpu), field)
    return sorted((g for g in map(get_gpu, GPU_IDS) if getattr(g, field) > here), key=lambda g: getattr(g, field))


def gpu_above_text(g: GpuSpec, *, than: GpuSpec, word: GpuWord) -> str:
    """ "a faster GPU: NVIDIA A100 SXM4 40GB (1,555 GB/s of memory bandwidth against 864)"."""
    field, unit = GPU_QUANTITY[word]
    return f"a {word} GPU: {g.name} ({getattr(g, field):,.0f} {unit} against {getattr(than, field):,.0f})"


# Looser latency targets offered beside the lowest the sizing meets, as multiples of it. That lowest is what one
# request alone reaches: each replica serves one request at a time (behind one router's queue, estimator sizing's
# pooled_replicas), where a looser target lets replicas batch (an outsider's probe, before the pool: 70B at 20
# requests/s, a 58 ms p95 TTFT needed 1,912 H100s, $1.65M a month; 70 ms needs 144, $128k). Three steps, each
# sized once and priced once: bounded work per request.
LATENCY_LADDER: Final[tuple[float, ...]] = (1.1, 1.25, 1.5)
# A ladder step is offered only where it needs at most this share of the GPUs of the last target offered: a looser
# target that saves little is not worth a line (the lowest one is already cheap when the traffic is light).
LADDER_GPU_SHARE: Final[float] = 0.8

Sizer = Callable[..., list[Any]]


def round_up(x: float, digits: int = 2) -> float:
    """``x`` rounded up to ``digits`` significant digits (a target a person would write that ``x`` still meets)."""
    scale = 10 ** (math.floor(math.log10(x)) - digits + 1)
    return float(f"{math.ceil(x / scale - 1e-9) * scale:.{digits}g}")


def _loosened(reached: float, *, target: float) -> float:
    """The target where the sizing reaches it, else what it reaches rounded up: a one-token answer has no decode
    step, so its TPOT is 0 and the TPOT target holds (a hostile probe: ``round_up(0)`` answered 500)."""
    return target if reached <= target else round_up(reached)


def _worst_ratio(d: Any, ttft_target: float, tpot_target: float) -> float:
    ratio = max(d.ttft_s / ttft_target, d.tpot_s / tpot_target)
    return ratio if math.isfinite(ratio) else math.inf


def closest_deployment(deployments: Sequence[Any], *, ttft_target: float, tpot_target: float) -> Any | None:
    """The fitting deployment nearest to the targets, or None when none fits in memory."""
    fits = [d for d in deployments if d.fits_memory]
    if not fits:
        return None
    return min(fits, key=lambda d: (_worst_ratio(d, ttft_target, tpot_target), d.tp))


def closest_document(d: Any, *, ttft_target: float, tpot_target: float) -> dict[str, Any]:
    """``{tp, gpus_per_replica, ttft_s, tpot_s, ttft_target_s, tpot_target_s, meets_latency}`` of a deployment:
    the latencies it reaches at its smallest batch (one request at a time), nothing that needs the targets met."""
    return {
        "tp": int(d.tp),
        "gpus_per_replica": int(d.tp),
        "ttft_s": float(d.ttft_s),
        "tpot_s": float(d.tpot_s),
        "ttft_target_s": ttft_target,
        "tpot_target_s": tpot_target,
        "meets_latency": bool(d.meets_latency),
    }


def _best(deployments: Sequence[Any], ttft: float, tpot: float) -> Any | None:
    meeting = [d for d in deployments if d.fits_memory and d.meets_latency]
    if meeting:
        return min(meeting, key=lambda d: d.tp)
    return closest_deployment(deployments, ttft_target=ttft, tpot_target=tpot)


def _entry(change: str, text: str, d: Any | None, **extra: Any) -> dict[str, Any]:
    return {
        "change": change,
        "text": text,
        "meets_latency": bool(d is not None and d.fits_memory and d.meets_latency),
        "tp": int(d.tp) if d is not None else None,
        "ttft_s": float(d.ttft_s) if d is not None and math.isfinite(d.ttft_s) else None,
        "tpot_s": float(d.tpot_s) if d is not None and math.isfinite(d.tpot_s) else None,
        **extra,
    }


def relax_options(
    s: Scenario,
    *,
    model: Any,
    closest: Any | None,
    size: Sizer,
) -> list[dict[str, Any]]:
    """What would meet the targets. ``size(gpu=, precision=, tps=)`` runs the estimator's sizing for the scenario's
    traffic and targets with one thing changed (the caller binds the rest)."""
    latency = s.workload.latency
    assert latency is not None
    ttft, tpot = latency.ttft_p95_s, latency.tpot_p95_s
    out: list[dict[str, Any]] = []
    reach = (closest.reachable_ttft_s, closest.reachable_tpot_s) if closest is not None else (math.inf, math.inf)
    if all(math.isfinite(x) for x in reach):
        # The sizing's own nearest load, rounded up (not the latencies reported for the deployment, which can be
        # another load's): an outsider's probe was offered 4.6 s where 1.2 s is met, and a target the sizing
        # then misses.
        looser = (_loosened(reach[0], target=ttft), _loosened(reach[1], target=tpot))
        out.extend(_looser_targets(s, size=size, lowest=looser))
    spec = get_gpu(s.gpu)
    if s.workload.precision in SIXTEEN_BIT and "fp8" in spec.peak_tflops:
        d = _best(size(gpu=s.gpu, precision="fp8", tps=None), ttft, tpot)
        out.append(_entry("precision", "serve FP8 weights", d, precision="fp8"))
    top = max(t for t in inf.TP_DEGREES if t <= spec.gpus_per_node)
    if top > s.network.gpus_per_node:
        # The GPU's own node: TP up to it, and for a mixture of experts groups of such nodes (expert parallelism).
        node_tps = inf.parallel_degrees(model=model, scale_up=spec.gpus_per_node)
        d = _best(size(gpu=s.gpu, precision=s.workload.precision, tps=node_tps), ttft, tpot)
        out.append(_entry("tensor_parallel", f"a node of {spec.gpus_per_node} GPUs for TP up to {top}", d))
    out.extend(_faster_gpus(s, size=size, ttft=ttft, tpot=tpot))
    return out


def _targets_text(looser: tuple[float, float], targets: tuple[float, float]) -> str:
    return (
        f"accept a p95 TTFT of {fmt.duration_s(looser[0])} and TPOT of {fmt.duration_s(looser[1])} "
        f"(targets {fmt.duration_s(targets[0])} and {fmt.duration_s(targets[1])})"
    )


def _gpus(d: Any | None) -> float:
    """GPUs a deployment that meets the targets needs at the peak (inf where it does not)."""
    if d is None or not (d.fits_memory and d.meets_latency) or not math.isfinite(d.gpus_peak):
        return math.inf
    return float(d.gpus_peak)


def _looser_targets(s: Scenario, *, size: Sizer, lowest: tuple[float, float]) -> list[dict[str, Any]]:
    """The lowest looser targets the sizing meets, then the ``LATENCY_LADDER`` steps above them (only the targets
    that were missed are loosened) that need markedly fewer GPUs, each sized by the same sizing."""
    latency = s.workload.latency
    assert latency is not None
    targets = (latency.ttft_p95_s, latency.tpot_p95_s)

    def sized(step: tuple[float, float]) -> Any | None:
        return _best(size(gpu=s.gpu, precision=s.workload.precision, tps=None, targets=step), *step)

    d = sized(lowest)
    offered: list[dict[str, Any]] = []
    seen, last = {lowest}, _gpus(d)
    for factor in LATENCY_LADDER:
        step = _stepped(lowest, targets=targets, factor=factor)
        if step in seen:  # two factors rounded to one target (a tiny latency)
            continue
        seen.add(step)
        stepped = sized(step)
        gpus = _gpus(stepped)
        if not math.isfinite(gpus) or gpus > LADDER_GPU_SHARE * last:
            continue
        last = gpus
        why = f"{factor:g} x the lowest met, which leaves room for requests to queue, so fewer replicas"
        offered.append(
            _entry(
                "latency_targets",
                f"{_targets_text(step, targets)}: {why}",
                stepped,
                ttft_p95_s=step[0],
                tpot_p95_s=step[1],
            )
        )
    text = _targets_text(lowest, targets)
    traffic = s.workload.traffic
    if traffic is not None and traffic.output_tokens <= 1:
        text += " (a one-token answer has no decode step, so any TPOT target holds; only the TTFT is reachable or not)"
    if offered:
        text += (
            ": the lowest the sizing meets, about what a request alone reaches, so each replica serves one request at "
            "a time behind one queue; the looser targets below let replicas batch and need far fewer GPUs"
        )
    return [_entry("latency_targets", text, d, ttft_p95_s=lowest[0], tpot_p95_s=lowest[1]), *offered]


def _stepped(lowest: tuple[float, float], *, targets: tuple[float, float], factor: float) -> tuple[float, float]:
    """``lowest`` times ``factor`` (rounded up to two digits) where it loosens a target, the target where it did not."""
    ttft, tpot = (round_up(x * factor) if x > target else target for x, target in zip(lowest, targets, strict=True))
    return ttft, tpot


def _faster_gpus(s: Scenario, *, size: Sizer, ttft: float, tpot: float) -> list[dict[str, Any]]:
    spec = get_gpu(s.gpu)
    # Decoding is bound by memory bandwidth: the GPUs that read weights and KV cache faster.
    faster = gpus_above(s.gpu, word="faster")
    out: list[dict[str, Any]] = []
    for g in faster:
        if s.workload.precision not in g.peak_tflops:
            continue
        try:
            d = _best(size(gpu=g.id, precision=s.workload.precision, tps=None), ttft, tpot)
        except (inf.InferenceError, ValueError):
            continue
        if d is not None and d.meets_latency:
            out.append(_entry("gpu", gpu_above_text(g, than=spec, word="faster"), d, gpu=g.id))
        if len(out) >= MAX_BIGGER_GPUS:
            break
    if not out and faster:
        out.append(_entry("gpu", "no faster GPU in the catalog meets the targets either", None))
    return out
