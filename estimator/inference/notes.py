"""What a serving prediction rests on, in words: one definition of each warning for ``manage.py estimate_inference``'s
prediction_note (estimator.inference.points) and the inference Advice's warnings (advisor.advice.inference).

An outsider's probe (serve7) found the note empty for a GH200 (no calibration rows), an L40S TP 8 group over PCIe,
Mixtral rows, vLLM and SGLang rows (the calibration is TensorRT-LLM's tables) and an MI300X whose engine was picked
for it, and no word where a KV cache held 8 requests of the 500 asked (Qwen3-32B on one H100 under vLLM: measured
throughput 0.6x the model's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from estimator.inference.data import ServedModel, ServingGpu, ServingStack, fabrics
from estimator.inference.engines import (
    BENCHMARK_STACK_ENGINES,
    DEFAULT_SERVING_ENGINE,
    default_serving_engine,
    serving_engine_problem,
)
from estimator.inference.fit import measured_format, table_coverage
from estimator.specs import UnknownGpuError, get_gpu

# Below this many requests a KV cache holds, the batch a replica runs is set by admissions and (on engines that
# allocate KV pages as tokens are generated) preemptions rather than by the load: the probe's KV-starved vLLM case
# held about 8 (its throughput came out 1.6x the measured), the calibration's rows hold tens to thousands. The
# figure is where the warning starts, not a fitted constant [unc: no table row measures a cache this small].
FEW_KV_REQUESTS: Final[float] = 16.0


def gpu_name(gpu: str) -> str:
    try:
        return get_gpu(gpu).name
    except UnknownGpuError:  # a GPU of the serving table only (the A100 PCIe 80GB)
        return gpu


@dataclass(frozen=True)
class ServingCoverage:
    """One deployment's GPU, precision and serving engine against what the serving calibration has rows of
    (table_coverage): what its fitted efficiencies and held-out accuracy were measured on."""

    gpu: str
    precision: str
    engine: str
    calibrated_pairs: tuple[tuple[str, str], ...]  # (GPU id, precision) of the table's rows
    calibrated_engines: tuple[str, ...]

    @property
    def calibrated_gpus(self) -> tuple[str, ...]:
        return tuple(sorted({gpu for gpu, _ in self.calibrated_pairs}))

    @property
    def precisions_on_gpu(self) -> tuple[str, ...]:
        """The precisions the table measures this GPU at (none where it has no rows of it)."""
        return tuple(sorted({p for gpu, p in self.calibrated_pairs if gpu == self.gpu}))

    @property
    def gpu_calibrated(self) -> bool:
        return bool(self.precisions_on_gpu)

    @property
    def precision_calibrated(self) -> bool:
        """The table measures this GPU at this precision (bf16 read as fp16: measured_format)."""
        wanted = measured_format(self.precision)
        return any(measured_format(p) == wanted for p in self.precisions_on_gpu)

    @property
    def engine_calibrated(self) -> bool:
        return self.engine in self.calibrated_engines

    @property
    def covers_deployment(self) -> bool:
        return self.precision_calibrated and self.engine_calibrated

    def measured_on(self) -> str:
        """ "trtllm runs on NVIDIA A100 SXM4 80GB at FP16, ...": what the calibration's rows are."""
        gpus = [
            f"{gpu_name(gpu)} at {'/'.join(p.upper() for on, p in self.calibrated_pairs if on == gpu)}"
            for gpu in self.calibrated_gpus
        ]
        return f"{', '.join(self.calibrated_engines)} runs on {', '.join(gpus)}"


def serving_coverage(*, gpu: str, precision: str, engine: str) -> ServingCoverage:
    """Whether the serving calibration has rows of ``gpu`` at ``precision`` and of ``engine`` (the one test of it:
    the warnings and the capacity band's ``covers_deployment`` read it)."""
    pairs, engines = table_coverage()
    return ServingCoverage(
        gpu=gpu, precision=precision, engine=engine, calibrated_pairs=pairs, calibrated_engines=engines
    )


def uncalibrated_serving_warnings(coverage: ServingCoverage) -> list[str]:
    """What the serving calibration has no rows of (the GPU, its precision on a GPU it has, the engine): where its
    throughput is borrowed from and that the stated accuracy was measured elsewhere (as the training advice warns
    for an uncalibrated GPU family). An outsider's probe: an MI300X on vLLM read 1.43x an H100's TensorRT-LLM
    requests/s per GPU beside an accuracy measured on neither; a serving lead's: a B200 at BF16 (the table holds
    it at FP4 only) had no word."""
    gpu, engine, engines = coverage.gpu, coverage.engine, coverage.calibrated_engines
    out = []
    measured_on = ", ".join(gpu_name(g) for g in coverage.calibrated_gpus)
    if not coverage.gpu_calibrated:
        out.append(
            f"The serving calibration has no rows on {gpu_name(gpu)}: its throughput applies the efficiencies fitted "
            f"on {', '.join(engines)} runs on {measured_on} to its datasheet bandwidth and FLOP/s, and the stated "
            "accuracy (held-out error, capacity band, KV-share error) was measured on those GPUs, not on this one: "
            "expect a wider error, and benchmark it before committing."
        )
    elif not coverage.precision_calibrated:
        precision = coverage.precision.upper()
        out.append(
            f"The serving calibration has no {precision} rows on {gpu_name(gpu)} (only "
            f"{', '.join(p.upper() for p in coverage.precisions_on_gpu)}): its {precision} throughput applies the "
            f"efficiencies fitted on {coverage.measured_on()} to its datasheet bandwidth and FLOP/s, and the stated "
            f"accuracy (held-out error, capacity band, KV-share error) was not measured at {precision} on this GPU: "
            "expect a wider error, and benchmark it before committing."
        )
    if not coverage.engine_calibrated:
        out.append(
            f"The serving calibration has no {engine} rows: its throughput is borrowed from {', '.join(engines)} "
            f"(measured on {measured_on}): {engine}'s own settings (serving_stacks.csv: the memory it reserves, "
            "its batch cap and step token budget, the kernels it lacks) are applied to their fitted efficiencies, "
            f"its own kernels and scheduler are not measured, and the stated accuracy was measured on "
            f"{', '.join(engines)}, not {engine}."
        )
    return out


def engine_of_stack(stack: str) -> str:
    """The serving engine a stack row runs (trtllm_bench and trtllm_v0.9 are TensorRT-LLM builds)."""
    key = stack.strip().lower()
    return BENCHMARK_STACK_ENGINES.get(key, key)


def default_engine_reason(gpu: str) -> str:
    """The engine a deployment on ``gpu`` with none given is sized for, and why that one."""
    engine = default_serving_engine(gpu)
    why = serving_engine_problem(DEFAULT_SERVING_ENGINE, gpu)
    return f"{engine}, the default where it runs" if why is None else f"{engine}, because the default {why}"


def default_engine_note(gpu: str) -> str:
    """What a point with no stack was sized for (an MI300X row got vLLM without a word)."""
    return f"no stack given: sized for {default_engine_reason(gpu)}"


def kv_capacity_warning(*, requests: float, concurrency: float, engine_cap: float, stack: ServingStack) -> str | None:
    """A warning where the KV cache, not the engine's batch cap, holds few requests: fewer than ``concurrency`` (the
    clients or requests in flight asked for) or fewer than FEW_KV_REQUESTS. Engines that allocate KV as tokens are
    generated (kv_output_reserved < 1: vLLM, SGLang) admit more than fit their whole output and preempt them when
    pages run out, recomputing their prefill, which the model does not simulate; TensorRT-LLM reserves the whole
    output on admission and queues instead. None where neither applies."""
    held = max(math.floor(requests), 0)
    if held >= engine_cap or (held >= concurrency and held >= FEW_KV_REQUESTS):
        return None
    short = f"fewer than the {concurrency:,.0f} asked for" if held < concurrency else f"under {FEW_KV_REQUESTS:.0f}"
    if stack.kv_output_reserved < 1.0:
        engine = (
            f"{stack.name} allocates KV pages as tokens are generated, so it admits more and preempts them when the "
            "pages run out, recomputing their prefill, which this model does not simulate: expect lower throughput "
            "and longer TTFT and TPOT than stated"
        )
    else:
        engine = f"{stack.name} reserves each request's whole output on admission and queues the rest"
    return f"the KV cache holds {held:,} requests ({short}): {engine}"


def pcie_group_note(gpu: ServingGpu, tp: int) -> str | None:
    """A tensor-parallel group joined by PCIe only: its all-reduces are costed from the fabric row, not measured for
    this GPU (fabrics.csv)."""
    if tp <= 1 or not gpu.pcie:
        return None
    row = fabrics()[gpu.fabric]
    if row.max_ranks and tp > row.max_ranks:
        row = fabrics()[row.wide_fabric]
    return (
        f"tp {tp} over PCIe (no NVLink): every all-reduce costed at fabrics.csv {row.name}'s "
        f"{row.busbw_efficiency:.0%} bus-bandwidth efficiency and {row.latency_s * 1e6:.0f} us latency ({row.source})"
    )


def moe_note(model: ServedModel) -> str | None:
    """What a mixture of experts is modelled with: tokens routed uniformly (estimator.inference.model
    weights_read_bytes), so no expert is hotter than another."""
    if not model.experts:
        return None
    return (
        f"mixture of experts ({model.active_experts} of {model.experts} experts per token): tokens assumed routed "
        "uniformly (no expert load imbalance), so the expert weights a step reads and its expert GEMMs are those of "
        "an even spread"
    )
