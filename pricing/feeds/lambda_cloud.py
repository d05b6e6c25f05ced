"""Lambda Cloud: GET /api/v1/instance-types with a bearer API key (price in cents per hour, no spot).

Response shape (price-feeds.md 5.6): {"data": {"gpu_8x_h100_sxm5": {"instance_type": {"name",
"description": "8x H100 (80 GB SXM5)", "gpu_description", "price_cents_per_hour", "specs": {"vcpus",
"memory_gib", "gpus"}}, "regions_with_capacity_available": [{"name", "description"}]}}}.
The GPU is read from the record's own description where it names a known GPU ("A100 (40 GB PCIe)"),
else from the instance name. One offer per instance type per region with capacity; an instance type
with no capacity anywhere is still a listed price, recorded with an empty region.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.conf import settings

from pricing.feeds import http
from pricing.feeds.base import (
    FeedDataError,
    FeedFileError,
    IntegerTooLarge,
    MalformedRecord,
    OfferRecord,
    Progress,
    Rejection,
    as_list,
    as_object,
    as_text,
    read_json,
    to_decimal,
    to_int,
    vcpus_too_large,
)
from pricing.gpus import PCIE_OF, canonical_gpu, canonical_gpu_by_memory

# The default of PRICING_LAMBDA_API_URL: Lambda's API host moved from cloud.lambdalabs.com to cloud.lambda.ai.
API_URL = "https://cloud.lambda.ai/api/v1/instance-types"
NAME = re.compile(r"^gpu_(\d+)x_(.+)$")
# The GPU part of the name -> canonical id, for a record without a description the GPU can be read from
# (price-feeds.md 1.4). Lambda describes gpu_1x_a100 (and the 2x/4x types) as "A100 (40 GB PCIe)", apart from
# gpu_1x_a100_sxm4 "A100 (40 GB SXM4)": a bare "a100" is the PCIe card. gpu_1x_rtx6000 is the 24 GB Quadro RTX
# 6000 (SkyPilot fetch_lambda_cloud.py GPU_TO_MEMORY 'RTX6000': 24576, 'A6000': 49152), which has no id here: it
# is left out so that it is counted as an unknown GPU, never filed as the 48 GB RTX A6000.
GPU_FROM_NAME = {
    "h100_sxm5": "h100-sxm",
    "h100_pcie": "h100-pcie",
    "a100": "a100-pcie-40gb",
    "a100_pcie": "a100-pcie-40gb",
    "a100_sxm4": "a100-40gb",
    "a100_80gb_sxm4": "a100-80gb",
    "a100_80gb_pcie": "a100-pcie-80gb",
    "gh200": "gh200",
    "b200_sxm6": "b200",
    "h200_sxm5": "h200",
    "a10": "a10",
    "a6000": "a6000",
    "v100": "v100-16gb",
    "v100_n": "v100-16gb",  # gpu_8x_v100_n: the same 8x V100 16 GB with a different host (88 vCPUs)
}
# How Lambda describes the GPU: gpu_description "H100 (80 GB SXM5)", "A100 (40 GB PCIe)", "RTX 6000 (24 GB)"; the
# instance's description has the count in front ("8x H100 (80 GB SXM5)").
DESCRIPTION = re.compile(
    r"^\s*(?:\d+x\s+)?(?P<model>[^()]+?)\s*\(\s*(?P<gb>\d+)\s*GB\s*(?P<form>[A-Za-z0-9]*)\s*\)\s*$"
)
PCIE_FORM = re.compile(r"^pcie?$", re.IGNORECASE)


def gpu_from_description(text: str) -> str | None:
    """The id of the GPU a Lambda description names (its model, form factor and memory), or None when the
    description is not in that form or names a GPU without an id here."""
    match = DESCRIPTION.match(text)
    if match is None:
        return None
    model, form = match["model"], match["form"]
    gpu = (canonical_gpu(f"{model} {form}") if form else None) or canonical_gpu(model)
    if gpu is None:
        return None
    if PCIE_FORM.match(form) and gpu in PCIE_OF:
        gpu = PCIE_OF[gpu]  # "A100 (40 GB PCIe)": the bare model is the SXM part
    return canonical_gpu_by_memory(model, int(match["gb"]) * 1024, default=gpu)


def record_gpu(gpu_part: str, descriptions: list[str]) -> str | None:
    """The record's own description decides where it names a known GPU; else the instance name."""
    for text in descriptions:
        gpu = gpu_from_description(text)
        if gpu is not None:
            return gpu
    return GPU_FROM_NAME.get(gpu_part)


@dataclass
class LambdaFeed:
    api_key: str
    api_url: str = API_URL
    name: str = "lambda"
    label: str = "Lambda Cloud API"

    def is_configured(self) -> bool:
        return bool(self.api_key)

    def not_configured_reason(self) -> str:
        return "PRICING_LAMBDA_API_KEY is not set"

    def fetch(self, *, progress: Progress) -> Iterator[OfferRecord | Rejection]:
        progress(0, 1, "Lambda: requesting instance types")
        payload = http.get_json(
            http.session(),
            self.api_url,
            what="Lambda instance-types",
            headers={"Authorization": f"Bearer {self.api_key}"},
        )
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, dict):
            raise FeedDataError("Lambda instance-types: response has no 'data' object")
        progress(1, 1, f"Lambda: {len(data)} instance types")
        for key, entry in data.items():
            yield from instance_records(key, entry, url=self.api_url)


def instance_records(key: str, entry: object, *, url: str) -> Iterator[OfferRecord | Rejection]:
    """The offers of one instance type; an entry of the wrong shape is one counted malformed record."""
    if not isinstance(entry, dict) or not isinstance(entry.get("instance_type"), dict):
        yield Rejection("malformed_record", f"lambda {key}: no instance_type")
        return
    try:
        yield from _instance_offers(key, entry, url=url)
    except MalformedRecord as error:
        yield Rejection("malformed_record", f"lambda {key}: {error}")


def _instance_offers(key: str, entry: dict[str, Any], *, url: str) -> list[OfferRecord | Rejection]:
    """Read whole before anything is yielded, so a wrong-typed field rejects the instance type, not half of it."""
    instance = entry["instance_type"]
    name = as_text(instance.get("name") or key, "name")
    cents = to_decimal(instance.get("price_cents_per_hour"))
    specs = as_object(instance.get("specs") or {}, "specs")
    description = as_text(instance.get("gpu_description") or "", "gpu_description")
    instance_description = as_text(instance.get("description") or "", "description")
    try:
        vcpus = to_int(specs.get("vcpus"))
    except IntegerTooLarge as error:
        return [vcpus_too_large(f"lambda {name}", error)]
    if vcpus is None and specs.get("vcpus") is not None:
        raise MalformedRecord(f"specs.vcpus {specs.get('vcpus')!r} is no integer")
    match = NAME.match(name)
    count = to_decimal(specs.get("gpus")) or (Decimal(match.group(1)) if match else None)
    gpu_part = match.group(2) if match else ""
    if cents is None or count is None:
        return [Rejection("malformed_record", f"lambda {name}: price or GPU count missing")]
    gpu = record_gpu(gpu_part, [description, instance_description])
    # Regions are {"name", "description"} objects (the API documentation); a bare name is read as one too.
    listed = as_list(entry.get("regions_with_capacity_available") or [], "regions_with_capacity_available")
    regions = [str(r.get("name", "")) if isinstance(r, dict) else str(r) for r in listed if isinstance(r, dict | str)]
    return [
        OfferRecord(
            provider="lambda",
            instance_type=name,
            region=region,
            market="on_demand",
            gpu_name=description or gpu_part,
            gpu=gpu,
            gpu_count=count,
            usd_per_hour=cents / 100,
            vcpus=vcpus,
            memory_gib=to_decimal(specs.get("memory_gib")),
            source=f"Lambda Cloud API {url} price_cents_per_hour",
        )
        for region in regions or [""]
    ]


def from_settings() -> LambdaFeed:
    return LambdaFeed(api_key=settings.PRICING_LAMBDA_API_KEY, api_url=settings.PRICING_LAMBDA_API_URL)


def records_from_files(paths: list[Path], *, cloud: str | None = None) -> list[OfferRecord | Rejection]:
    """Saved instance-types responses ({"data": {...}}) for `import_prices`."""
    records: list[OfferRecord | Rejection] = []
    for path in paths:
        payload = read_json(path)
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, dict):
            raise FeedFileError(path, "not a Lambda instance-types response: no 'data' object")
        for key, entry in data.items():
            records.extend(instance_records(key, entry, url=path.name))  # never the operator's directories
    return records
