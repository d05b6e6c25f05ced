"""The measurements: matmul throughput, all-reduce bus bandwidth, a DDP training step.

torch is imported inside each function (it is an optional dependency). The all-reduce and the
training step expect an initialised torch.distributed process group (see `launch`); every rank
calls them together, and each returns the same result on every rank (times are the maximum over
ranks, because a collective is as slow as its slowest member).
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from estimator.profiling.results import (
    AllReduceResult,
    MatmulResult,
    MatmulSkip,
    ModelShape,
    TrainResult,
    bus_bandwidth_GBps,
)

if TYPE_CHECKING:
    import torch


def _synchronize(device: torch.device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextlib.contextmanager
def _tf32(device: torch.device, enabled: bool) -> Iterator[None]:
    """Set TF32 for CUDA matmuls and convolutions for the duration, then restore the settings."""
    import torch

    if device.type != "cuda":
        yield
        return
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def _max_over_ranks(value: float, device: torch.device) -> float:
    """The maximum of a per-rank float over the process group (the value itself without one)."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return value
    tensor = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(tensor, op=dist.ReduceOp.MAX)
    return float(tensor.item())


def _fp8_supported(device: torch.device) -> str | None:
    """None when fp8 matmul can run here, else the reason it cannot."""
    import torch

    if device.type != "cuda":
        return "fp8 matmul needs a GPU (torch._scaled_mm is CUDA/ROCm only)"
    if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
        return f"torch {torch.__version__} has no fp8 matmul"
    if torch.version.cuda and torch.cuda.get_device_capability(device) < (8, 9):
        capability = torch.cuda.get_device_capability(device)
        return f"fp8 tensor cores need compute capability 8.9+ (Ada/Hopper); this GPU is {capability}"
    return None


def matmul_tflops(
    precision: str, device: torch.device, *, n: int, warmup: int = 3, repeats: int = 10, trials: int = 3
) -> MatmulResult | MatmulSkip:
    """Dense n x n x n matmul throughput (2n^3 FLOPs) in a precision; the median of `trials`.

    fp32 disables TF32 on CUDA (so it measures true FP32), tf32 enables it; bf16/fp16 use those
    dtypes with fp32 accumulation as cuBLAS does; fp8 uses torch._scaled_mm (e4m3, bf16 out).
    """
    import torch

    if precision == "tf32" and device.type != "cuda":
        return MatmulSkip(precision, "tf32 is a GPU tensor-core mode; a CPU has none")
    if precision == "fp8":
        reason = _fp8_supported(device)
        if reason:
            return MatmulSkip(precision, reason)
    generator = torch.Generator(device=device).manual_seed(0)
    if precision == "fp8":
        # MI300-class GPUs (ROCm) implement the "fnuz" variant of e4m3; NVIDIA the OCP one.
        fp8 = torch.float8_e4m3fnuz if getattr(torch.version, "hip", None) else torch.float8_e4m3fn
        a = torch.randn(n, n, device=device, generator=generator).to(fp8)
        # _scaled_mm wants the second operand column-major.
        b = torch.randn(n, n, device=device, generator=generator).to(fp8).t()
        scale = torch.tensor(1.0, device=device)

        def product() -> Any:
            return torch._scaled_mm(a, b, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)
    else:
        dtype = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
        a = torch.randn(n, n, device=device, dtype=dtype, generator=generator)
        b = torch.randn(n, n, device=device, dtype=dtype, generator=generator)
        out = torch.empty(n, n, device=device, dtype=dtype)

        def product() -> Any:
            return torch.matmul(a, b, out=out)

    try:
        with _tf32(device, precision == "tf32"):
            for _ in range(warmup):
                product()
            _synchronize(device)
            seconds: list[float] = []
            for _ in range(trials):
                start = time.perf_counter()
                for _ in range(repeats):
                    product()
                _synchronize(device)
                seconds.append((time.perf_counter() - start) / repeats)
    except (RuntimeError, NotImplementedError) as error:
        # A dtype this build or device cannot multiply is a finding to report, not a crash.
        return MatmulSkip(precision, f"{type(error).__name__}: {str(error).splitlines()[0]}")
    per_matmul = statistics.median(seconds)
    index = device.index if device.index is not None else 0
    return MatmulResult(precision, n, index, per_matmul, 2 * n**3 / per_matmul / 1e12)


def allreduce_sweep(
    sizes: Sequence[int], device: torch.device, *, warmup: int = 5, iters: int = 20
) -> list[AllReduceResult]:
    """All-reduce (sum) of float32 buffers of each byte size across the process group.

    Every rank must call this with the same sizes. The time per all-reduce is the maximum over
    ranks of (elapsed / iters), as nccl-tests does; busbw = 2(n-1)/n * bytes / time.
    """
    import torch
    import torch.distributed as dist

    world = dist.get_world_size()
    if world < 2:
        raise ValueError("an all-reduce needs at least two processes")
    results: list[AllReduceResult] = []
    for nbytes in sizes:
        elements = max(1, nbytes // 4)
        # Zeros stay zeros under summation: no overflow to inf however many iterations run.
        buffer = torch.zeros(elements, dtype=torch.float32, device=device)
        for _ in range(warmup):
            dist.all_reduce(buffer)
        _synchronize(device)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(buffer)
        _synchronize(device)
        seconds = _max_over_ranks((time.perf_counter() - start) / iters, device)
        actual = elements * 4
        algbw, busbw = bus_bandwidth_GBps(actual, seconds, world)
        results.append(AllReduceResult(world, actual, seconds, algbw, busbw))
        del buffer
    return results


def _autocast(precision: str, device: torch.device) -> contextlib.AbstractContextManager[Any]:
    import torch

    if precision in {"bf16", "fp16"}:
        dtype = torch.bfloat16 if precision == "bf16" else torch.float16
        return torch.autocast(device_type=device.type, dtype=dtype)
    return contextlib.nullcontext()


def train_step_benchmark(
    shape: ModelShape,
    precision: str,
    device: torch.device,
    *,
    micro_batch: int,
    grad_accum: int = 1,
    warmup_steps: int = 2,
    steps: int = 5,
    activation_checkpointing: bool = False,
    gpus_per_node: int | None = None,
    seed: int = 0,
) -> TrainResult:
    """Time full optimizer steps of a GPT-style model under DDP across the process group.

    Mixed precision as people train: fp32 master weights and AdamW states, the forward and
    backward under autocast for bf16/fp16 (fp16 with loss scaling). fp8 training needs
    Transformer Engine and is refused; fp8 shows up in the matmul figures only.
    """
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from estimator.profiling._gpt import GPT

    if precision == "fp8":
        raise ValueError("fp8 training needs Transformer Engine, which this profiler does not use; fp8 is matmul-only")
    if precision == "tf32" and device.type != "cuda":
        raise ValueError("tf32 is a GPU tensor-core mode; train in fp32 or bf16 on a CPU")
    if micro_batch < 1 or grad_accum < 1 or steps < 1 or warmup_steps < 0:
        raise ValueError("micro_batch, grad_accum and steps must be >= 1, warmup_steps >= 0")

    distributed = dist.is_available() and dist.is_initialized()
    world = dist.get_world_size() if distributed else 1
    rank = dist.get_rank() if distributed else 0
    torch.manual_seed(seed)  # same initial weights on every rank, as DDP expects
    model: torch.nn.Module = GPT(shape, activation_checkpointing=activation_checkpointing).to(device)
    if distributed:
        model = DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None, gradient_as_bucket_view=True
        )
    fused = device.type == "cuda"
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1, fused=fused)
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    # Each rank gets its own synthetic batch (data parallelism); generated once so no input
    # pipeline is timed.
    data_gen = torch.Generator(device=device).manual_seed(seed + 1 + rank)
    tokens = torch.randint(shape.vocab, (grad_accum, micro_batch, shape.seq_len + 1), device=device, generator=data_gen)

    def one_step() -> torch.Tensor:
        loss_value = torch.zeros((), device=device)
        for micro in range(grad_accum):
            batch = tokens[micro]
            # Gradient accumulation: synchronise gradients only on the last micro-batch.
            sync = micro == grad_accum - 1 or not distributed
            context = contextlib.nullcontext() if sync else model.no_sync()  # type: ignore[operator]
            with context, _autocast(precision, device):
                loss = model(batch[:, :-1], batch[:, 1:]) / grad_accum
            scaler.scale(loss).backward()
            loss_value += loss.detach()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        return loss_value

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    with _tf32(device, precision == "tf32"):
        for _ in range(warmup_steps):
            one_step()
        _synchronize(device)
        if distributed:
            dist.barrier()
        start = time.perf_counter()
        for _ in range(steps):
            last_loss = one_step()
        _synchronize(device)
        elapsed = time.perf_counter() - start
    step_time = _max_over_ranks(elapsed / steps, device)
    final_loss = float(last_loss)
    if not math.isfinite(final_loss):
        raise RuntimeError(f"the {precision} training step diverged (loss {final_loss}); the timing is not a valid run")
    peak = _max_over_ranks(torch.cuda.max_memory_allocated(device) / 1e9, device) if device.type == "cuda" else None
    result = TrainResult(
        precision=precision,
        world_size=world,
        gpus_per_node=gpus_per_node or world,
        shape=shape,
        micro_batch=micro_batch,
        grad_accum=grad_accum,
        activation_checkpointing=activation_checkpointing,
        steps=steps,
        step_time_s=step_time,
        tokens_per_s=micro_batch * grad_accum * world * shape.seq_len / step_time,
        final_loss=final_loss,
        peak_memory_gb=peak,
    )
    return result
