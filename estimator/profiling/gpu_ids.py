"""Map the name a device reports (`torch.cuda.get_device_name()`) to a GPU id of DESIGN.md.

The mapping is deliberately strict: a name that could be one of two parts with different
specs (an H100 NVL, a 16 GB V100, an A10 that is not an A10G) maps to nothing, and the user
must say which id to use with `--gpu`, because a row filed under the wrong id would quietly
bias the calibration of that GPU.
"""

from __future__ import annotations

import re

from estimator.specs import GPU_IDS

# Ordered: the first pattern that matches wins, so the more specific names come first
# (GH200 before H200, GB200 before B200, "H100 NVL" is refused before the plain H100 rules).
# Patterns are matched case-insensitively against the whole reported name.
_RULES: tuple[tuple[str, str | None], ...] = (
    (r"\bGH200\b", "gh200"),
    (r"\bGB200\b", "gb200"),
    (r"\bB200\b", "b200"),
    # H200 NVL is the PCIe card with a lower power limit; it is not the SXM part `h200` describes.
    (r"\bH200\b.*\bNVL\b", None),
    (r"\bH200\b", "h200"),
    # H100 NVL has 94 GB and different clocks: neither h100-pcie nor h100-sxm.
    (r"\bH100\b.*\bNVL\b", None),
    (r"\bH100\b.*\bPCIe\b", "h100-pcie"),
    # The SXM5 part reports "H100 80GB HBM3" (and sometimes "H100 SXM5 80GB").
    (r"\bH100\b.*(\bHBM3\b|\bSXM)", "h100-sxm"),
    # The a100/v100 ids describe the SXM parts (NVLink, 400 W); a PCIe card reports "PCIe"
    # and scales differently across GPUs, so it is refused rather than filed under the SXM id.
    (r"\b[AV]100\b.*\bPCI[eE]\b", None),
    (r"\bA100\b.*\b80\s?GB\b", "a100-80gb"),
    (r"\bA100\b.*\b40\s?GB\b", "a100-40gb"),
    (r"\bV100\b.*\b32\s?GB\b", "v100-32gb"),
    (r"\bA10G\b", "a10g"),
    (r"\bL40S\b", "l40s"),
    (r"\bL4\b", "l4"),
    (r"\bRTX\s?4090\b", "rtx4090"),
    (r"\bMI300X\b", "mi300x"),
)


def gpu_id_for_device_name(name: str) -> str | None:
    """The GPU id for a reported device name, or None when the name is unknown or ambiguous."""
    for pattern, gpu_id in _RULES:
        if re.search(pattern, name, flags=re.IGNORECASE):
            return gpu_id
    return None


def resolve_gpu_id(device_names: list[str], override: str | None, *, on_gpu: bool) -> str:
    """The id to write in the `gpu` column, or ValueError with a message that says what to do.

    `override` (the `--gpu` option) wins but must itself be a valid id. Without it, every device
    must map to the same id: a run over mixed GPUs is not a row of one GPU type.
    """
    valid = ", ".join(GPU_IDS)
    if override is not None:
        if override not in GPU_IDS:
            raise ValueError(f"--gpu {override!r} is not a GPU id; valid ids: {valid}")
        return override
    if not on_gpu:
        raise ValueError(
            "no GPU is visible, so these are CPU measurements and there is no GPU id to write in the "
            "`gpu` column (the device is recorded as 'cpu' in the `device` column). Pass --gpu ID only "
            f"to exercise the profiler; such rows must not go into a calibration. Valid ids: {valid}"
        )
    ids = {name: gpu_id_for_device_name(name) for name in device_names}
    unknown = sorted(name for name, gpu_id in ids.items() if gpu_id is None)
    if unknown:
        raise ValueError(
            f"cannot tell which GPU id {', '.join(repr(n) for n in unknown)} is (unknown or ambiguous name); "
            f"pass --gpu ID with one of: {valid}"
        )
    distinct = sorted({gpu_id for gpu_id in ids.values() if gpu_id is not None})
    if len(distinct) != 1:
        raise ValueError(
            f"the visible devices are different GPUs ({', '.join(distinct)}); profile one type at a time "
            "(set CUDA_VISIBLE_DEVICES) or pass --gpu ID"
        )
    return distinct[0]
