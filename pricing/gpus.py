"""Canonical GPU ids and the mapping from each provider's GPU names to them.

Canonical ids are the ones DESIGN.md fixes (v100-32gb ... mi300x) plus the other real GPUs the
price snapshot carries (t4, v100-16gb, a10, l40, a6000, rtx3090). A name that maps to nothing is
returned as None so the caller can count and report it; nothing is silently dropped.
"""

from __future__ import annotations

import re

CANONICAL_GPUS: tuple[str, ...] = (
    "v100-32gb",
    "a10g",
    "l4",
    "l40s",
    "a100-40gb",
    "a100-80gb",
    "h100-pcie",
    "h100-sxm",
    "h200",
    "gh200",
    "b200",
    "gb200",
    "rtx4090",
    "mi300x",
    # Real offers in the snapshot and the feeds beyond the fixed list.
    "t4",
    "v100-16gb",
    "a10",
    "l40",
    "a6000",
    "rtx3090",
    # A100 PCIe cards: no NVLink/NVSwitch between the GPUs and a 300 W limit (NVIDIA A100 datasheet: SXM4 400 W,
    # 600 GB/s NVLink; PCIe 250-300 W, NVLink bridge to one other card at most), so not the a100-40gb/-80gb (SXM4)
    # that DESIGN.md's ids and the hardware quotes describe: renting one must not price an SXM4 cluster.
    "a100-pcie-40gb",
    "a100-pcie-80gb",
)

# Keys are normalized with _key(): upper case, only letters and digits.
_ALIASES: dict[str, str] = {
    # NVIDIA data-centre parts as the clouds spell them.
    "V100": "v100-16gb",
    "V10016GB": "v100-16gb",
    "TESLAV100": "v100-16gb",
    "V10032GB": "v100-32gb",
    "V100SXM232GB": "v100-32gb",
    "A10G": "a10g",
    "A10": "a10",
    "A10PCIE": "a10",
    "L4": "l4",
    "L40S": "l40s",
    "L40": "l40",
    "A100": "a100-40gb",
    "A10040GB": "a100-40gb",
    "A100SXM440GB": "a100-40gb",
    "A100PCIE40GB": "a100-pcie-40gb",
    "TESLAA100": "a100-40gb",
    "A10080GB": "a100-80gb",
    "A100SXM480GB": "a100-80gb",
    "A10080GBSXM": "a100-80gb",
    "A10080GBSXM4": "a100-80gb",
    "A10080GBPCIE": "a100-pcie-80gb",
    "A100PCIE80GB": "a100-pcie-80gb",
    "A100PCIE": "a100-pcie-40gb",
    "A100SXM": "a100-80gb",
    "H100": "h100-sxm",
    "H10080GB": "h100-sxm",
    "H100SXM": "h100-sxm",
    "H100SXM5": "h100-sxm",
    "H10080GBSXM5": "h100-sxm",
    "H10080GBHBM3": "h100-sxm",  # RunPod gpuTypes id "NVIDIA H100 80GB HBM3"
    "H100SXM580GB": "h100-sxm",
    "H100MEGA": "h100-sxm",
    "H10080GBMEGA": "h100-sxm",
    "H10080GBPLUS": "h100-sxm",
    "H100PCIE": "h100-pcie",
    "H10080GBPCIE": "h100-pcie",
    "H100NVL": "h100-pcie",
    "H200": "h200",
    "H200141GB": "h200",
    "H200SXM": "h200",
    "GH200": "gh200",
    "GH20096GB": "gh200",
    "B200": "b200",
    "GB200": "gb200",
    "RTX4090": "rtx4090",
    "GEFORCERTX4090": "rtx4090",
    "RTX3090": "rtx3090",
    "GEFORCERTX3090": "rtx3090",
    "RTXA6000": "a6000",
    "A6000": "a6000",
    "MI300X": "mi300x",
    "INSTINCTMI300X": "mi300x",
    "T4": "t4",
    "TESLAT4": "t4",
}


def _key(name: str) -> str:
    cleaned = re.sub(r"^(NVIDIA|AMD|TESLA)\s*", "", name.strip(), flags=re.IGNORECASE)
    return re.sub(r"[^A-Z0-9]", "", cleaned.upper())


def canonical_gpu(name: str | None) -> str | None:
    """The canonical id for a provider's GPU name, or None when the name is unknown."""
    if not name:
        return None
    if name in CANONICAL_GPUS:
        return name
    key = _key(name)
    if key in _ALIASES:
        return _ALIASES[key]
    # "TESLA V100" style prefixes removed once more (e.g. "NVIDIA Tesla V100").
    return _ALIASES.get(re.sub(r"^TESLA", "", key))


# Parts sold with more than one memory size under one name: (canonical id of the bare name) ->
# [(at least this many MiB per GPU, the id)], largest first. Sizes: NVIDIA datasheets (A100 40/80 GB,
# V100 16/32 GB, H100 SXM/PCIe 80 GB vs H100 NVL 94 GB, a PCIe card: DESIGN.md has no h100-nvl id).
_BY_MEMORY: dict[str, tuple[tuple[int, str], ...]] = {
    "a100-40gb": ((60_000, "a100-80gb"), (0, "a100-40gb")),
    "a100-80gb": ((60_000, "a100-80gb"), (0, "a100-40gb")),
    "v100-16gb": ((30_000, "v100-32gb"), (0, "v100-16gb")),
    "v100-32gb": ((30_000, "v100-32gb"), (0, "v100-16gb")),
    "a100-pcie-40gb": ((60_000, "a100-pcie-80gb"), (0, "a100-pcie-40gb")),
    "a100-pcie-80gb": ((60_000, "a100-pcie-80gb"), (0, "a100-pcie-40gb")),
    "h100-sxm": ((88_000, "h100-pcie"), (0, "h100-sxm")),
    "h100-pcie": ((0, "h100-pcie"),),
}
# The memory per GPU a part sold under one name can have, for the names whose memory picks the id (_BY_MEMORY
# above): a reading outside it is not one GPU's (a whole box, or a box divided once too often). NVIDIA
# datasheets: V100 16/32 GB, A100 40/80 GB, H100 80 GB to H100 NVL 94 GB (cudo v7 writes 96256 MiB). Widened by
# MEMORY_SLACK_MIB: nvidia-smi reports less than the nominal size (81559 MiB for an H100 in the do and hyperbolic
# catalogs) and catalogs round.
MEMORY_SLACK_MIB = 2048
_V100_MIB = (16_384, 32_768)
_A100_MIB = (40_960, 81_920)
_H100_MIB = (81_920, 96_256)
PART_MEMORY_MIB: dict[str, tuple[int, int]] = {
    "v100-16gb": _V100_MIB,
    "v100-32gb": _V100_MIB,
    "a100-40gb": _A100_MIB,
    "a100-80gb": _A100_MIB,
    "a100-pcie-40gb": _A100_MIB,
    "a100-pcie-80gb": _A100_MIB,
    "h100-sxm": _H100_MIB,
    "h100-pcie": _H100_MIB,
}


def plausible_memory_mib(gpu: str | None) -> tuple[int, int] | None:
    """(lowest, highest) MiB one GPU sold under the bare name of ``gpu`` can report, slack included; None for parts
    whose memory does not pick the id (a reading of theirs is not checked)."""
    if gpu not in PART_MEMORY_MIB:
        return None
    low, high = PART_MEMORY_MIB[gpu]
    return low - MEMORY_SLACK_MIB, high + MEMORY_SLACK_MIB


# The PCIe card of an SXM part, for names that only the instance type tells apart (SkyPilot lists 'A100' for both).
PCIE_OF: dict[str, str] = {"h100-sxm": "h100-pcie", "a100-40gb": "a100-pcie-40gb", "a100-80gb": "a100-pcie-80gb"}


def canonical_gpu_by_memory(name: str | None, mib_per_gpu: int | None, *, default: str | None = None) -> str | None:
    """The canonical id when the GPU's memory decides it (A100 81920 MiB -> a100-80gb, an 'H100' with
    96256 MiB is an H100 NVL -> h100-pcie); the name alone (or `default`) when memory is unknown."""
    gpu = default or canonical_gpu(name)
    if gpu is None or not mib_per_gpu or gpu not in _BY_MEMORY:
        return gpu
    return next(choice for floor, choice in _BY_MEMORY[gpu] if mib_per_gpu >= floor)
