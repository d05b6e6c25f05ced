"""Run the measurements in one process per device and collect them into a ProfileReport.

Two ways to get processes: `spawn_profile` starts them itself with torch.multiprocessing
(one machine, a sweep over world sizes), and `torchrun_profile` is called in each process that
`torchrun` started (the env:// rendezvous, which also spans several machines). Both run the same
`_measure` body in every rank; rank 0 hands the results back.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import socket
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from estimator.profiling.results import (
    AllReduceResult,
    MatmulResult,
    MatmulSkip,
    ModelShape,
    ProfileReport,
    TrainResult,
)

if TYPE_CHECKING:
    import torch

PROFILER_VERSION = "0.1.0"


@dataclass(frozen=True)
class ProfileConfig:
    """What to measure and how long; the CLI builds one from its options."""

    precisions: tuple[str, ...]
    shape: ModelShape
    micro_batch: int
    grad_accum: int = 1
    warmup_steps: int = 2
    steps: int = 10
    activation_checkpointing: bool = False
    matmul_n: int = 8192
    matmul_warmup: int = 3
    matmul_repeats: int = 10
    allreduce_sizes: tuple[int, ...] = (1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28)
    allreduce_warmup: int = 5
    allreduce_iters: int = 20
    timeout_s: float = 600.0
    device: str = "cuda"  # "cuda" or "cpu"
    train: bool = True


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now, for the rendezvous of spawned processes."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def torch_available() -> bool:
    """Whether torch can be imported (the profiler's optional dependency)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def visible_devices() -> tuple[str, int]:
    """('cuda', count) when GPUs are visible (ROCm builds also answer to torch.cuda), else ('cpu', 0)."""
    import torch

    if torch.cuda.is_available() and torch.cuda.device_count() > 0:
        return "cuda", torch.cuda.device_count()
    return "cpu", 0


def cpu_name() -> str:
    """The processor's marketing name where Linux tells it, else the architecture."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def _device_name(device: torch.device) -> str:
    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return cpu_name()


def _accelerator_version() -> str | None:
    import torch

    if getattr(torch.version, "hip", None):
        return f"rocm {torch.version.hip}"
    if torch.version.cuda:
        return f"cuda {torch.version.cuda}"
    return None


def _measure(config: ProfileConfig, local_rank: int, gpus_per_node: int, measure_matmul: bool) -> dict[str, Any]:
    """The body every rank runs inside an initialised process group; returns records (on all ranks)."""
    import torch
    import torch.distributed as dist

    from estimator.profiling import bench

    world = dist.get_world_size()
    device = torch.device("cuda", local_rank) if config.device == "cuda" else torch.device("cpu")
    names: list[str] = [""] * world
    dist.all_gather_object(names, _device_name(device))

    matmul: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    if measure_matmul:
        # Each GPU measures itself at the same time (they do not share compute); on a CPU the
        # processes share the cores, so one process measures alone while the others wait.
        mine: list[MatmulResult | MatmulSkip] = []
        if config.device == "cuda" or dist.get_rank() == 0:
            threads = torch.get_num_threads()
            if config.device == "cpu":
                torch.set_num_threads(os.cpu_count() or 1)  # alone on the CPU for this part
            for precision in config.precisions:
                mine.append(
                    bench.matmul_tflops(
                        precision,
                        device,
                        n=config.matmul_n,
                        warmup=config.matmul_warmup,
                        repeats=config.matmul_repeats,
                    )
                )
            torch.set_num_threads(threads)
        gathered: list[list[MatmulResult | MatmulSkip]] = [[] for _ in range(world)]
        dist.all_gather_object(gathered, mine)
        for rank_results in gathered:
            for item in rank_results:
                if isinstance(item, MatmulResult):
                    matmul.append(asdict(item))
                elif asdict(item) not in skipped:
                    skipped.append(asdict(item))

    allreduce: list[dict[str, Any]] = []
    if world > 1 and config.allreduce_sizes:
        allreduce = [
            asdict(r)
            for r in bench.allreduce_sweep(
                config.allreduce_sizes, device, warmup=config.allreduce_warmup, iters=config.allreduce_iters
            )
        ]

    train: list[dict[str, Any]] = []
    if config.train:
        for precision in config.precisions:
            if precision == "fp8" or (precision == "tf32" and config.device != "cuda"):
                continue  # measured as matmul only; the reason is in the skipped list / docs
            result = bench.train_step_benchmark(
                config.shape,
                precision,
                device,
                micro_batch=config.micro_batch,
                grad_accum=config.grad_accum,
                warmup_steps=config.warmup_steps,
                steps=config.steps,
                activation_checkpointing=config.activation_checkpointing,
                gpus_per_node=gpus_per_node,
            )
            train.append(asdict(result))
            if config.device == "cuda":
                # Hand the previous model's cached blocks back before the next precision allocates.
                torch.cuda.empty_cache()
    return {"device_names": names, "matmul": matmul, "matmul_skipped": skipped, "allreduce": allreduce, "train": train}


def _init_group(
    config: ProfileConfig, init_method: str, rank: int, world: int, local_rank: int, local_world: int
) -> None:
    import torch
    import torch.distributed as dist

    backend = "nccl" if config.device == "cuda" else "gloo"
    if config.device == "cuda":
        torch.cuda.set_device(local_rank)
    else:
        # Processes on one CPU share its cores; without a cap each would start one thread per core.
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, local_world)))
    kwargs: dict[str, Any] = {}
    if config.device == "cuda":
        # Binds NCCL's communicator to this rank's GPU (and silences the "unknown device" warning).
        kwargs["device_id"] = torch.device("cuda", local_rank)
    dist.init_process_group(
        backend,
        init_method=init_method,
        rank=rank,
        world_size=world,
        timeout=dt.timedelta(seconds=config.timeout_s),
        **kwargs,
    )


def _leave_together() -> None:
    """Wait for every rank before tearing the group down: a rank that destroys its gloo group while a
    peer still talks to it makes that peer abort ("terminate called without an active exception")."""
    import torch.distributed as dist

    dist.barrier()


def _destroy_rank_zero_last(rank: int, world: int, timeout_s: float) -> None:
    """Tear the group down with rank 0 last. Past the barrier, a rank whose peers have already closed their gloo
    connections can still abort inside its own teardown ("terminate called without an active exception", seen on a
    loaded 2-core machine about one launch in ten), so every other rank says through the launcher's store that it has
    left before rank 0 closes its side."""
    import torch.distributed as dist

    store = dist.TCPStore(
        os.environ["MASTER_ADDR"],
        int(os.environ["MASTER_PORT"]),
        is_master=False,
        timeout=dt.timedelta(seconds=timeout_s),
    )
    if rank != 0:
        dist.destroy_process_group()
        store.add(_LEFT_KEY, 1)
        return
    deadline = time.monotonic() + timeout_s
    while store.add(_LEFT_KEY, 0) < world - 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    dist.destroy_process_group()


_LEFT_KEY: Final[str] = "estimator.profile/left"


def _spawned_worker(
    local_rank: int, world: int, port: int, config: ProfileConfig, measure_matmul: bool, result_path: str
) -> None:
    """Entry point of each spawned process (top level so that spawn can pickle it)."""
    import torch.distributed as dist

    _init_group(config, f"tcp://127.0.0.1:{port}", local_rank, world, local_rank, world)
    try:
        records = _measure(config, local_rank, world, measure_matmul)
        if local_rank == 0:
            Path(result_path).write_text(json.dumps(records))
        _leave_together()
    finally:
        dist.destroy_process_group()


def _new_report(config: ProfileConfig) -> ProfileReport:
    import torch

    return ProfileReport(
        profiler_version=PROFILER_VERSION,
        device=config.device,
        device_names=[],
        host=socket.gethostname(),
        measured_at=dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        torch_version=torch.__version__,
        backend="nccl" if config.device == "cuda" else "gloo",
        accelerator_version=_accelerator_version(),
    )


def _merge(report: ProfileReport, records: dict[str, Any]) -> None:
    if len(records["device_names"]) > len(report.device_names):
        report.device_names = list(records["device_names"])
    report.matmul.extend(MatmulResult(**r) for r in records["matmul"])
    report.matmul_skipped.extend(MatmulSkip(**r) for r in records["matmul_skipped"])
    report.allreduce.extend(AllReduceResult(**r) for r in records["allreduce"])
    for r in records["train"]:
        report.train.append(TrainResult(**{**r, "shape": ModelShape(**r["shape"])}))


def spawn_profile(config: ProfileConfig, world_sizes: list[int], *, log: Any = sys.stderr) -> ProfileReport:
    """Measure on this machine with one spawned process per device for each world size.

    Matmul throughput is measured once, in the run with the most processes (so on every GPU that
    takes part); all-reduce and training at every world size of at least 2 and 1 respectively.
    """
    import torch.multiprocessing as mp

    if not world_sizes or min(world_sizes) < 1 or len(set(world_sizes)) != len(world_sizes):
        raise ValueError(f"world sizes must be distinct and >= 1, got {world_sizes}")
    report = _new_report(config)
    largest = max(world_sizes)
    with tempfile.TemporaryDirectory(prefix="gpu-advisor-profile-") as tmp:
        for world in world_sizes:
            print(f"profiling with {world} process(es) on {config.device} ...", file=log, flush=True)
            result_path = Path(tmp) / f"world{world}.json"
            for attempt in range(3):
                try:
                    mp.start_processes(
                        _spawned_worker,
                        args=(world, free_port(), config, world == largest, str(result_path)),
                        nprocs=world,
                        join=True,
                        start_method="spawn",
                    )
                    break
                except mp.ProcessRaisedException as error:
                    # The free port can be taken between our probe and the rendezvous binding it.
                    if "address already in use" not in str(error).lower() or attempt == 2:
                        raise
            _merge(report, json.loads(result_path.read_text()))
    return report


def torchrun_profile(config: ProfileConfig) -> ProfileReport | None:
    """Measure in a process started by torchrun (RANK, WORLD_SIZE, LOCAL_RANK... in the environment).

    Returns the report on global rank 0 and None on the other ranks.
    """

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    gpus_per_node = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
    report = _new_report(config) if rank == 0 else None
    _init_group(config, "env://", rank, world, local_rank, gpus_per_node)
    try:
        records = _measure(config, local_rank, gpus_per_node, measure_matmul=True)
        _leave_together()
    finally:
        _destroy_rank_zero_last(rank, world, config.timeout_s)
    if report is None:
        return None
    _merge(report, records)
    return report


def launched_by_torchrun() -> bool:
    """Whether this process was started by torchrun (or another launcher with its variables)."""
    return all(name in os.environ for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))
