"""GPU specifications, read from the bundled data file ``estimator/data/gpus.csv`` (sources in its header).

Adding a GPU is adding a row to that file; nothing here names a GPU.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Final

DATA_DIR: Final[Path] = Path(__file__).resolve().parent / "data"
PRECISIONS: Final[tuple[str, ...]] = ("fp32", "tf32", "bf16", "fp16", "fp8")


class UnknownGpuError(ValueError):
    """A GPU id that is not in the spec table; the message lists the valid ids."""

    def __init__(self, gpu_id: str) -> None:
        self.gpu_id = gpu_id
        super().__init__(f"unknown gpu {gpu_id!r}; valid ids: {', '.join(GPU_IDS)}")


class UnsupportedPrecisionError(ValueError):
    """The GPU has no (dense tensor) peak for this precision; the message lists what it supports."""

    def __init__(self, gpu_id: str, precision: str, supported: tuple[str, ...]) -> None:
        self.gpu_id = gpu_id
        self.precision = precision
        super().__init__(f"precision {precision!r} is not supported on {gpu_id}; supported: {', '.join(supported)}")


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One GPU model and its typical server.

    Attributes (units in brackets):
        id: stable id used in CSVs and scenarios (``h100-sxm``).
        family: GPUs calibrated together (``hopper``); efficiency parameters are fitted per family.
        memory_gb: device memory as the datasheet prints it [GB] (the product's name: "80 GB"), for display only.
        memory_bytes: device memory the driver reports [bytes] (nvidia-smi 'Total'; else the datasheet's binary
            figure): the one capacity training and serving hold a job against (gpus.csv header).
        memory_bw_gbps: device memory bandwidth [GB/s].
        peak_tflops: dense peak per precision [TFLOP/s]; precisions the GPU lacks are absent.
        nvlink_gbps: per-GPU scale-up bandwidth, bidirectional aggregate as datasheets quote it [GB/s]
            (PCIe x16 for GPUs without NVLink/xGMI).
        gpus_per_node: GPUs in the typical server.
        nvlink_domain: GPUs sharing one NVLink/NVSwitch scale-up domain (GB200 NVL72: 72 across 18 four-GPU trays);
            gpus_per_node where the domain is the server (an empty cell).
        inter_node_gbps: scale-out bandwidth of one typical server [Gb/s] (8 x 400 Gb/s NDR = 3200).
        tdp_w: board power [W]; server_power_kw: typical server maximum power [kW].
        source: where the numbers come from.
        vendor (derived): the maker, the first word of ``name`` as its datasheet spells it (``NVIDIA``, ``AMD``).
    """

    id: str
    name: str
    family: str
    memory_gb: float
    memory_bytes: float
    memory_bw_gbps: float
    peak_tflops: MappingProxyType[str, float]
    nvlink_gbps: float
    gpus_per_node: int
    inter_node_gbps: float
    tdp_w: float
    server_power_kw: float
    source: str
    nvlink_domain: int = 0  # 0 = gpus_per_node (set by the loader from the csv)

    @property
    def vendor(self) -> str:
        return self.name.split(" ", 1)[0]

    def capacity_text(self) -> str:
        """The memory a job is held against per GPU [GB = 1e9 bytes], beside the datasheet's figure users know: the
        two differ because datasheets count binary units (an H100's 80 GB shows as 85.5 GB). Every sentence that
        sets a job's need against a GPU's memory says this, so "83 GB of 80 GB" is never printed for a job that
        fits."""
        return capacity_words(capacity_gb=self.memory_bytes / 1e9, datasheet_gb=self.memory_gb)

    def supported_precisions(self) -> tuple[str, ...]:
        return tuple(p for p in PRECISIONS if p in self.peak_tflops)

    def peak_flops(self, precision: str) -> float:
        """Dense peak [FLOP/s] for ``precision``; raises UnsupportedPrecisionError when the GPU has none."""
        try:
            return self.peak_tflops[precision] * 1e12
        except KeyError:
            raise UnsupportedPrecisionError(self.id, precision, self.supported_precisions()) from None


def capacity_words(*, capacity_gb: float, datasheet_gb: float) -> str:
    """ "85.5 GB per GPU (the driver's figure for the 80 GB part)": the one wording of a GPU's capacity
    (``GpuSpec.capacity_text``; the pages word an issued Advice's gpu block with it)."""
    return f"{capacity_gb:.1f} GB per GPU (the driver's figure for the {datasheet_gb:g} GB part)"


def _read_rows() -> list[dict[str, str]]:
    text = (DATA_DIR / "gpus.csv").read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return list(csv.DictReader(io.StringIO(body)))


def _parse(row: dict[str, str]) -> GpuSpec:
    peaks = {p: float(row[f"{p}_tflops"]) for p in PRECISIONS if row[f"{p}_tflops"].strip()}
    return GpuSpec(
        id=row["id"],
        name=row["name"],
        family=row["family"],
        memory_gb=float(row["memory_gb"]),
        memory_bytes=float(row["memory_bytes"]),
        memory_bw_gbps=float(row["memory_bw_gbps"]),
        peak_tflops=MappingProxyType(peaks),
        nvlink_gbps=float(row["nvlink_gbps"]),
        gpus_per_node=int(row["gpus_per_node"]),
        inter_node_gbps=float(row["inter_node_gbps"]),
        tdp_w=float(row["tdp_w"]),
        server_power_kw=float(row["server_power_kw"]),
        source=row["source"],
        nvlink_domain=int(row.get("nvlink_domain") or row["gpus_per_node"]),
    )


@cache
def unverified_since() -> str | None:
    """The date gpus.csv's header gives its values marked "unc" (from memory, not re-verified since), ISO 8601; None
    where the header states none. The file has no date column: no row records the day its spec was read."""
    text = (DATA_DIR / "gpus.csv").read_text(encoding="utf-8")
    header = " ".join(line for line in text.splitlines() if line.startswith("#"))
    found = re.search(r'"unc" = [^()]*\((\d{4}-\d{2}-\d{2})\)', header)
    return found.group(1) if found else None


@cache
def _table() -> dict[str, GpuSpec]:
    return {spec.id: spec for spec in map(_parse, _read_rows())}


GPU_IDS: Final[tuple[str, ...]] = tuple(_table())


def get_gpu(gpu_id: str) -> GpuSpec:
    """The spec of ``gpu_id`` (case-insensitive); raises UnknownGpuError listing the valid ids."""
    try:
        return _table()[gpu_id.strip().lower()]
    except (KeyError, AttributeError):
        raise UnknownGpuError(str(gpu_id)) from None


def all_gpus() -> tuple[GpuSpec, ...]:
    return tuple(_table().values())
