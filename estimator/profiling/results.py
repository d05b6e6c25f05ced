"""What the profiler measured, as plain dataclasses, and how it becomes profiled-run CSV rows.

Pure Python (no torch): the measurement code fills these records, this module turns them into
rows of the DESIGN.md schema. One row per training measurement (world size x precision); the
microbenchmarks of the same machine ride along in extra columns, which the schema keeps and the
estimator ignores.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TextIO

from estimator.runs import COLUMNS

# The profiled-run CSV header of DESIGN.md, in its order: the one definition lives with the importer.
SCHEMA_COLUMNS: tuple[str, ...] = COLUMNS

# Extra columns (kept and ignored by the estimator). Bandwidths are in GB/s (bytes), the unit of
# nccl-tests and of `mem_bw_GBps` in the hardware data, NOT the Gb/s of `inter_node_gbps`.
EXTRA_COLUMNS: tuple[str, ...] = (
    "device",
    "device_name",
    "grad_accum",
    "peak_memory_gb",
    "matmul_tflops",
    "matmul_n",
    "allreduce_busbw_GBps",
    "allreduce_bytes",
    "profiler_version",
)

CSV_COLUMNS: tuple[str, ...] = SCHEMA_COLUMNS + EXTRA_COLUMNS


@dataclass(frozen=True)
class MatmulResult:
    """Dense square matmul throughput of one device in one precision (2n^3 FLOPs per product)."""

    precision: str
    n: int
    device_index: int
    seconds_per_matmul: float
    tflops: float


@dataclass(frozen=True)
class MatmulSkip:
    """A precision the device cannot run (fp8 before Hopper/Ada, tf32 on a CPU...), with why."""

    precision: str
    reason: str


@dataclass(frozen=True)
class AllReduceResult:
    """One message size of the all-reduce sweep (nccl-tests conventions, float32 elements).

    algbw = bytes / time; busbw = algbw * 2(n-1)/n, comparable across world sizes.
    """

    world_size: int
    bytes: int
    seconds: float
    algbw_GBps: float
    busbw_GBps: float


@dataclass(frozen=True)
class ModelShape:
    """The GPT-style model the training step builds (GPT-2 layout: learned positions, tied
    embeddings, biases, 4h MLP by default), and its exact parameter count."""

    layers: int
    hidden: int
    heads: int
    ffn_hidden: int
    vocab: int
    seq_len: int

    @property
    def params(self) -> int:
        """Parameters of the model as built, so `params_b` matches what the step trained.

        Per layer: QKV and output projections 4h^2 + 4h, MLP 2*h*f + f + h, two LayerNorms 4h.
        Plus token embedding V*h (tied with the output head), positions s*h and a final LayerNorm.
        """
        h, f = self.hidden, self.ffn_hidden
        per_layer = 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h
        return self.layers * per_layer + self.vocab * h + self.seq_len * h + 2 * h


@dataclass(frozen=True)
class TrainResult:
    """A DDP training measurement over `world_size` processes (one per device)."""

    precision: str
    world_size: int
    gpus_per_node: int
    shape: ModelShape
    micro_batch: int
    grad_accum: int
    activation_checkpointing: bool
    steps: int
    step_time_s: float
    tokens_per_s: float
    final_loss: float
    peak_memory_gb: float | None = None

    @property
    def global_batch(self) -> int:
        """Sequences per optimizer step across all processes."""
        return self.micro_batch * self.grad_accum * self.world_size


@dataclass
class ProfileReport:
    """Everything one profiler invocation measured on one machine (or one torchrun job)."""

    profiler_version: str
    device: str  # "cuda" or "cpu"
    device_names: list[str]
    host: str
    measured_at: str  # ISO 8601 UTC
    torch_version: str
    backend: str  # nccl or gloo
    matmul: list[MatmulResult] = field(default_factory=list)
    matmul_skipped: list[MatmulSkip] = field(default_factory=list)
    allreduce: list[AllReduceResult] = field(default_factory=list)
    train: list[TrainResult] = field(default_factory=list)
    accelerator_version: str | None = None  # CUDA or ROCm version of the torch build

    def to_json(self) -> str:
        """The whole report (including the full all-reduce curve) as a JSON document."""
        document = asdict(self)
        for record, train in zip(document["train"], self.train, strict=True):
            record["global_batch"] = train.global_batch
            record["shape"]["params"] = train.shape.params
        return json.dumps(document, indent=2, sort_keys=True)

    def matmul_tflops(self, precision: str) -> tuple[float, int] | None:
        """Mean TFLOPS over the measured devices for a precision, with the matrix size used."""
        found = [m for m in self.matmul if m.precision == precision]
        if not found:
            return None
        return sum(m.tflops for m in found) / len(found), found[0].n

    def largest_allreduce(self, world_size: int) -> AllReduceResult | None:
        """The largest message measured at this world size: the figure closest to link bandwidth."""
        found = [a for a in self.allreduce if a.world_size == world_size]
        return max(found, key=lambda a: a.bytes) if found else None


def bus_bandwidth_GBps(nbytes: int, seconds: float, world_size: int) -> tuple[float, float]:
    """(algbw, busbw) in GB/s for an all-reduce of `nbytes` that took `seconds` (nccl-tests)."""
    if seconds <= 0 or world_size < 1:
        raise ValueError(f"need a positive time and world size, got {seconds} s over {world_size}")
    algbw = nbytes / seconds / 1e9
    return algbw, algbw * 2 * (world_size - 1) / world_size


def source_text(report: ProfileReport, note: str | None = None) -> str:
    """The `source` cell: who measured what, where and when, so a row can be traced and filtered."""
    names = sorted(set(report.device_names))
    devices = "; ".join(f"{name} x{report.device_names.count(name)}" for name in names)
    stack = f"torch {report.torch_version}"
    if report.accelerator_version:
        stack += f", {report.accelerator_version}"
    text = (
        f"gpu-advisor profiler {report.profiler_version}: {devices} ({report.device}), {report.backend}, "
        f"{stack}, host {report.host}, {report.measured_at}"
    )
    return f"{text}; {note}" if note else text


def _number(value: float, digits: int = 6) -> str:
    """A compact decimal for the CSV: significant digits, no exponent for ordinary magnitudes."""
    if not math.isfinite(value):
        raise ValueError(f"refusing to write a non-finite measurement ({value})")
    return f"{value:.{digits}g}" if abs(value) < 1e15 else repr(value)


def rows_from_report(
    report: ProfileReport,
    gpu: str,
    *,
    inter_node_gbps: float | None = None,
    note: str | None = None,
) -> list[dict[str, str]]:
    """One CSV row (all of CSV_COLUMNS, as strings) per training measurement of the report."""
    source = source_text(report, note)
    rows: list[dict[str, str]] = []
    for run in report.train:
        shape = run.shape
        matmul = report.matmul_tflops(run.precision)
        allreduce = report.largest_allreduce(run.world_size)
        multi_node = run.world_size > run.gpus_per_node
        row = {
            "gpu": gpu,
            "num_gpus": str(run.world_size),
            "gpus_per_node": str(run.gpus_per_node),
            # Between nodes only: a single-node run has no scale-out traffic to describe.
            "inter_node_gbps": _number(inter_node_gbps) if inter_node_gbps is not None and multi_node else "",
            "params_b": _number(shape.params / 1e9, 8),
            "layers": str(shape.layers),
            "hidden": str(shape.hidden),
            "heads": str(shape.heads),
            "ffn_hidden": str(shape.ffn_hidden),
            "vocab": str(shape.vocab),
            "seq_len": str(shape.seq_len),
            "global_batch": str(run.global_batch),
            "micro_batch": str(run.micro_batch),
            "precision": run.precision,
            "strategy": "ddp",
            "tp": "1",
            "pp": "1",
            "cp": "1",
            "activation_checkpointing": "true" if run.activation_checkpointing else "false",
            "tokens_per_s": _number(run.tokens_per_s),
            "step_time_s": _number(run.step_time_s),
            "source": source,
            "device": report.device,
            "device_name": report.device_names[0] if report.device_names else "",
            "grad_accum": str(run.grad_accum),
            "peak_memory_gb": _number(run.peak_memory_gb, 4) if run.peak_memory_gb is not None else "",
            "matmul_tflops": _number(matmul[0], 5) if matmul else "",
            "matmul_n": str(matmul[1]) if matmul else "",
            "allreduce_busbw_GBps": _number(allreduce.busbw_GBps, 5) if allreduce else "",
            "allreduce_bytes": str(allreduce.bytes) if allreduce else "",
            "profiler_version": report.profiler_version,
        }
        rows.append(row)
    return rows


def write_rows(rows: Iterable[dict[str, str]], stream: TextIO, *, header: bool = True) -> None:
    """Write rows with the CSV_COLUMNS header (schema columns first, in DESIGN.md order)."""
    writer = csv.DictWriter(stream, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    if header:
        writer.writeheader()
    writer.writerows(rows)


def write_csv(rows: Sequence[dict[str, str]], path: Path, *, append: bool = False) -> None:
    """Write (or append to) a CSV file. Appending requires the file to have the same header,
    so runs of several invocations accumulate in one calibration input."""
    if append and path.exists() and path.stat().st_size > 0:
        with path.open(newline="") as existing:
            found = next(csv.reader(existing), [])
        if tuple(found) != CSV_COLUMNS:
            raise ValueError(
                f"{path} has a different header; cannot append. Expected: {','.join(CSV_COLUMNS)}; found: "
                f"{','.join(found)}"
            )
        with path.open("a", newline="") as stream:
            write_rows(rows, stream, header=False)
        return
    with path.open("w", newline="") as stream:
        write_rows(rows, stream)


def rows_to_text(rows: Sequence[dict[str, str]]) -> str:
    """The CSV document as a string (for stdout)."""
    buffer = io.StringIO()
    write_rows(rows, buffer)
    return buffer.getvalue()
