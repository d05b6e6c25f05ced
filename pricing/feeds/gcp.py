"""GCP: the Cloud Billing Catalog API (API key) for Compute Engine SKUs, priced per component.

GCP prices GPUs and their host VM separately (price-feeds.md 1.3 and 5.5), so an accelerator
machine type's price is assembled: vCPUs x the series' core SKU + GiB x its RAM SKU + GPUs x the
GPU SKU, per region and usage type (OnDemand, Preemptible = spot, Commit1Yr/Commit3Yr). A4 (B200)
has no host SKUs: its GPU slice SKU prices the whole VM, GPUs x slice. The machine
types and their host series come from `pricing/data/gcp_machine_types.csv` (GCP's machine docs).
Unit prices are `units + nanos / 1e9`. GPU SKUs that belong to no listed machine type, and machine
types whose host SKUs are missing in a region, are counted as rejections.
"""

from __future__ import annotations

import csv
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
    MalformedRecord,
    OfferRecord,
    Progress,
    Rejection,
    as_list,
    as_object,
    parse_datetime,
    read_json,
    to_decimal,
)

SERVICE = "services/6F81-5844-456A"  # Compute Engine
API_URL = f"https://cloudbilling.googleapis.com/v1/{SERVICE}/skus"
MACHINE_TYPES_CSV = Path(__file__).resolve().parent.parent / "data" / "gcp_machine_types.csv"
MARKETS = {"OnDemand": "on_demand", "Preemptible": "spot", "Commit1Yr": "reserved_1y", "Commit3Yr": "reserved_3y"}
# Host SKU series as Cloud Billing writes them: 'A3Plus Instance Core/Ram' is A3 Mega's host and 'A3Ultra Instance
# Core/Ram' A3 Ultra's, without a space (dstackai/gpuhunt src/gpuhunt/providers/gcp.py maps "A3Plus Instance" to
# a3-megagpu; cloudpilot-ai/karpenter-provider-gcp pkg/providers/pricing/instanceprice/families.go @ dc6099e8, after
# Cyclenerd/google-cloud-pricing-cost-calculator build/mapping.csv, lists "A3Plus Instance Core" and "A3Ultra Instance
# Core"; read 2026-12). A4 has no host SKU: its VM is priced per GPU slice (GPU_SLICE).
HOST = re.compile(r"(?:^|\s)(A2|A3Plus|A3Ultra|A3|G2) (?:Instance )?(Core|Cpu|Ram)\b", re.IGNORECASE)
# 'A4 Nvidia B200 (1 gpu slice) running in ...': the whole A4 VM per GPU (gpuhunt's add_compute_gpu_slice_sku and
# get_instance_price: gpu_count x slice; SkyPilot fetch_gcp.py matches 'Nvidia B200 (1 gpu slice)').
GPU_SLICE = "(1 gpu slice)"
NANOS = Decimal(1_000_000_000)
# GPU SKUs priced for a purchase mode this app does not model as a market: DWS (Dynamic Workload
# Scheduler) flex-start and calendar-mode reservations. Their usageType is OnDemand, so without this
# they would overwrite the on-demand price with a cheaper one.
SPECIAL_MODE = re.compile(r"\bDWS\b|Calendar Mode|^Reserved ", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class MachineType:
    name: str
    host_series: str
    vcpus: int
    memory_gib: Decimal
    gpu: str
    gpu_count: int
    gpu_skus: tuple[str, ...]


def machine_types(path: Path = MACHINE_TYPES_CSV) -> list[MachineType]:
    with path.open(newline="", encoding="utf-8") as handle:
        return [
            MachineType(
                name=row["machine_type"],
                host_series=row["host_series"],
                vcpus=int(row["vcpus"]),
                memory_gib=Decimal(row["memory_gib"]),
                gpu=row["gpu"],
                gpu_count=int(row["gpu_count"]),
                gpu_skus=tuple(part.strip().lower() for part in row["gpu_sku"].split("|")),
            )
            for row in csv.DictReader(handle)
        ]


@dataclass(frozen=True, slots=True)
class Component:
    price: Decimal
    description: str
    effective_at: Any


def unit_price(sku: dict[str, Any]) -> tuple[Decimal | None, str, str]:
    """(USD per usage unit, usage unit, currency) from `units + nanos/1e9` of the SKU's first priced tier: the first
    tier that is not free (a negative one included, so that it is refused rather than passed over), else the last."""
    try:
        expression = sku["pricingInfo"][0]["pricingExpression"]
        rates = expression["tieredRates"]
    except (KeyError, IndexError, TypeError):
        return None, "", ""
    if not isinstance(expression, dict) or not isinstance(rates, list):
        return None, "", ""
    for rate in rates:
        price = (rate.get("unitPrice") if isinstance(rate, dict) else None) or {}
        if not isinstance(price, dict):
            return None, "", ""
        units, nanos = to_decimal(price.get("units") or 0), to_decimal(price.get("nanos") or 0)
        if units is None or nanos is None:
            return None, "", ""
        value = units + nanos / NANOS
        if value != 0 or rate is rates[-1]:
            return value, str(expression.get("usageUnit", "")), str(price.get("currencyCode", ""))
    return None, "", ""


@dataclass
class GcpFeed:
    api_key: str
    max_pages: int = 500
    name: str = "gcp"
    label: str = "GCP Cloud Billing Catalog API"

    def is_configured(self) -> bool:
        return bool(self.api_key)

    def not_configured_reason(self) -> str:
        return "PRICING_GCP_API_KEY is not set"

    def fetch(self, *, progress: Progress) -> Iterator[OfferRecord | Rejection]:
        skus = self._skus(progress)
        yield from assemble(skus, machine_types())

    def _skus(self, progress: Progress) -> list[Any]:
        session = http.session()
        session.headers["X-Goog-Api-Key"] = self.api_key  # a header, so the key never appears in error text
        skus: list[Any] = []
        token = ""
        for page in range(1, self.max_pages + 1):
            params = {"currencyCode": "USD", "pageSize": 5000}
            if token:
                params["pageToken"] = token
            progress(page - 1, 0, f"GCP SKUs page {page}")
            payload = http.get_json(session, API_URL, what=f"GCP SKUs page {page}", params=params)
            if not isinstance(payload, dict) or not isinstance(payload.get("skus"), list):
                raise FeedDataError(f"GCP SKUs page {page}: truncated page, no 'skus' list")
            skus.extend(payload["skus"])  # anything that is no object is counted by _collect
            token = payload.get("nextPageToken") or ""
            if not token:
                return skus
        raise FeedDataError(f"GCP SKUs: more than {self.max_pages} pages; refusing a partial set")


Hosts = dict[tuple[str, str, str, str], Component]  # (series, core|ram, market, region)
Gpus = dict[tuple[str, str, str], Component]  # (gpu sku pattern, market, region)


def assemble(skus: list[Any], machines: list[MachineType]) -> Iterator[OfferRecord | Rejection]:
    hosts: Hosts = {}
    gpus: Gpus = {}
    # Longest first, so a pattern inside a longer one ("h100 80gb gpu" in "h100 80gb mega gpu") loses.
    patterns = sorted({pattern for machine in machines for pattern in machine.gpu_skus}, key=len, reverse=True)
    for sku in skus:
        try:
            yield from _collect(sku, patterns, hosts, gpus)
        except MalformedRecord as error:  # raised before the SKU is filed: nothing of it is kept
            yield Rejection("malformed_record", f"gcp SKU {str(sku.get('description', ''))[:80]!r}: {error}")
    for machine in machines:
        yield from _machine_offers(machine, hosts, gpus)


def _priced(sku: dict[str, Any], description: str, market: str | None) -> tuple[Component, str] | Rejection:
    """The SKU's price as a component (and its usage unit), or why it cannot be used."""
    category = sku.get("category") or {}
    if market is None:
        return Rejection("unsupported_usage_type", f"gcp {description}: {category.get('usageType')}")
    if SPECIAL_MODE.search(description):
        return Rejection("special_mode_sku", f"gcp {description}")
    price, unit, currency = unit_price(sku)
    if price is None:
        return Rejection("malformed_record", f"gcp {description}: no unit price")
    if currency != "USD":
        return Rejection("currency_not_usd", f"gcp {description}: {currency}")
    return Component(price, description, parse_datetime(sku["pricingInfo"][0].get("effectiveTime"))), unit


def _collect(sku: Any, patterns: list[str], hosts: Hosts, gpus: Gpus) -> Iterator[Rejection]:
    """File one SKU as a GPU or host component per region, or yield why it was dropped. SKUs of other
    resources (storage, network, licences, host cores of machine series without GPUs) are no offers
    and are passed over without a count: the Compute Engine catalog lists tens of thousands."""
    if not isinstance(sku, dict):
        yield Rejection("malformed_record", f"gcp SKU {str(sku)[:60]!r} is not an object")
        return
    category = as_object(sku.get("category") or {}, "category")
    if category.get("resourceFamily") != "Compute":
        return  # storage, network, licences: not machine prices
    description = str(sku.get("description", ""))
    host = HOST.search(description)
    is_gpu = category.get("resourceGroup", "") == "GPU" or GPU_SLICE in description.lower()
    if not is_gpu and not host:
        return  # host SKUs of machine series without GPUs
    usage_type = str(category.get("usageType", ""))
    market = "spot" if description.lower().startswith("spot preemptible") else MARKETS.get(usage_type)
    priced = _priced(sku, description, market)
    if isinstance(priced, Rejection):
        yield priced
        return
    component, unit = priced
    regions = [str(region) for region in as_list(sku.get("serviceRegions") or [], "serviceRegions")]
    if not regions:
        yield Rejection("no_service_region", f"gcp {description}: no serviceRegions")
        return
    if is_gpu:
        pattern = next((p for p in patterns if p in description.lower()), None)
        if pattern is None:
            yield Rejection("gpu_sku_without_machine_type", f"gcp {description}")
        elif unit != "h":
            yield Rejection("unsupported_unit", f"gcp {description}: {unit}")
        else:
            gpus.update({(pattern, str(market), region): component for region in regions})
        return
    assert host is not None  # checked above: neither GPU nor host SKUs returned early
    series, kind = host.group(1).upper(), "ram" if host.group(2).lower() == "ram" else "core"
    if unit != ("GiBy.h" if kind == "ram" else "h"):
        yield Rejection("unsupported_unit", f"gcp {description}: {unit}")
        return
    hosts.update({(series, kind, str(market), region): component for region in regions})


@dataclass(frozen=True, slots=True)
class Assembled:
    price: Decimal
    components: tuple[Component, ...]
    source: str


def assembled_price(
    *, machine: MachineType, gpu: Component, hosts: Hosts, market: str, region: str
) -> Assembled | Rejection:
    """The machine's hourly price from its GPU SKU and, unless it is priced per GPU slice (no host series), its
    series' core and RAM SKUs; a Rejection naming what is missing or not a price."""
    where = f"gcp {machine.name} {region} {market}"
    if not machine.host_series:  # priced per GPU slice: the GPU SKU is the whole VM
        components: tuple[Component, ...] = (gpu,)
        price = machine.gpu_count * gpu.price
        source = f"{machine.gpu_count} x '{gpu.description}' (the whole VM, per GPU slice)"
    else:
        series = machine.host_series.upper()
        core, ram = hosts.get((series, "core", market, region)), hosts.get((series, "ram", market, region))
        if core is None or ram is None:
            return Rejection("missing_host_sku", f"{where}: no '{machine.host_series} Instance Core/Ram' SKU")
        components = (gpu, core, ram)
        price = machine.vcpus * core.price + machine.memory_gib * ram.price + machine.gpu_count * gpu.price
        source = (
            f"{machine.vcpus} x '{core.description}' + {machine.memory_gib} GiB x '{ram.description}' + "
            f"{machine.gpu_count} x '{gpu.description}'"
        )
    # A component priced zero or below is no price: summed with the others it passed validation, and an A2 with
    # its GPU SKU at 0 was stored at the price of its vCPUs and RAM (0.739477/GPU-h where 3.673385 is right).
    free = [f"'{c.description}' at {c.price}" for c in components if c.price <= 0]
    if free:
        return Rejection("non_positive_price", f"{where}: {', '.join(free)}")
    return Assembled(price=price, components=components, source=source)


def _machine_offers(machine: MachineType, hosts: Hosts, gpus: Gpus) -> Iterator[OfferRecord | Rejection]:
    for (pattern, market, region), gpu in sorted(gpus.items()):
        if pattern not in machine.gpu_skus:
            continue
        assembled = assembled_price(machine=machine, gpu=gpu, hosts=hosts, market=market, region=region)
        if isinstance(assembled, Rejection):
            yield assembled
            continue
        yield OfferRecord(
            provider="gcp",
            instance_type=machine.name,
            region=region,
            market=market,
            gpu_name=machine.gpu,
            gpu=machine.gpu,
            gpu_count=Decimal(machine.gpu_count),
            usd_per_hour=assembled.price,
            vcpus=machine.vcpus,
            memory_gib=machine.memory_gib,
            effective_at=max((c.effective_at for c in assembled.components if c.effective_at), default=None),
            source=f"GCP Cloud Billing Catalog {SERVICE}: {assembled.source}",
        )


def from_settings() -> GcpFeed:
    return GcpFeed(api_key=settings.PRICING_GCP_API_KEY, max_pages=settings.PRICING_MAX_PAGES)


def records_from_files(paths: list[Path], *, cloud: str | None = None) -> list[OfferRecord | Rejection]:
    """Saved Cloud Billing SKU pages ({"skus": [...]}) for `import_prices`, assembled together."""
    skus: list[Any] = []
    for path in paths:
        payload = read_json(path)
        if not isinstance(payload, dict) or not isinstance(payload.get("skus"), list):
            raise FeedFileError(path, "not a Cloud Billing SKU page: no 'skus' list")
        skus.extend(payload["skus"])
    return list(assemble(skus, machine_types()))
