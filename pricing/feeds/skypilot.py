"""SkyPilot's public catalog CSVs (no credentials): the GPU clouds without a direct feed here.

`https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v7/{cloud}/vms.csv`,
one CSV per cloud; column order differs per cloud, so columns are read by name (price-feeds.md 1).
`Price` is on demand and `SpotPrice` spot, for the whole instance; one offer per (instance type,
region, market) at the cheapest zone. The catalog states no date for its prices: `observed_at` is
the time this feed read it and the source says so. CPU-only rows are counted, not silently dropped.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal

from django.conf import settings

from pricing.feeds import http
from pricing.feeds.base import FeedDataError, OfferRecord, Progress, Rejection, to_decimal

CATALOG_URL = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v7/{cloud}/vms.csv"
REQUIRED_COLUMNS = {"InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region"}
PRICE_COLUMN = {"on_demand": "Price", "spot": "SpotPrice"}
PROVIDER_OF_CLOUD = {"do": "digitalocean"}
# Names a cloud uses differently from the common mapping (snapshot README: RunPod 'H100' = H100 PCIe).
GPU_OVERRIDES = {("runpod", "H100"): "h100-pcie", ("runpod", "A100-80GB"): "a100-80gb"}


@dataclass
class SkyPilotFeed:
    enabled: bool
    clouds: list[str] = field(default_factory=list)
    name: str = "skypilot"
    label: str = "SkyPilot catalog (public CSVs)"

    def is_configured(self) -> bool:
        return self.enabled and bool(self.clouds)

    def not_configured_reason(self) -> str:
        return "PRICING_SKYPILOT_ENABLED is off or PRICING_SKYPILOT_CLOUDS is empty"

    def fetch(self, *, progress: Progress) -> Iterator[OfferRecord | Rejection]:
        session = http.session()
        for index, cloud in enumerate(self.clouds):
            progress(index, len(self.clouds), f"SkyPilot {cloud}")
            url = CATALOG_URL.format(cloud=cloud)
            response = http.get(session, url, what=f"SkyPilot catalog {cloud}")
            yield from parse_catalog(cloud, response.text, url=url)
        progress(len(self.clouds), len(self.clouds), "SkyPilot: all clouds read")


def parse_catalog(cloud: str, text: str, *, url: str) -> Iterator[OfferRecord | Rejection]:
    reader = csv.DictReader(io.StringIO(text))
    missing = REQUIRED_COLUMNS - set(reader.fieldnames or [])
    if missing:
        raise FeedDataError(f"SkyPilot catalog {cloud}: not a catalog CSV, missing columns {sorted(missing)}")
    provider = PROVIDER_OF_CLOUD.get(cloud, cloud)
    cheapest: dict[tuple[str, str, str], tuple[Decimal, dict[str, str]]] = {}
    for line, row in enumerate(reader, start=2):
        if None in row or any(row.get(column) is None for column in REQUIRED_COLUMNS):
            yield Rejection("malformed_row", f"skypilot {cloud} line {line}: wrong number of cells (truncated?)")
            continue
        if not row["AcceleratorName"]:
            yield Rejection("no_accelerator", f"skypilot {cloud} {row['InstanceType']}")
            continue
        for market, column in PRICE_COLUMN.items():
            raw = row.get(column) or ""
            if not raw.strip():
                continue  # this instance has no price on that market
            price = to_decimal(raw)
            if price is None:
                yield Rejection("malformed_row", f"skypilot {cloud} line {line}: {column}={raw!r}")
                continue
            key = (row["InstanceType"], row["Region"], market)
            if key not in cheapest or price < cheapest[key][0]:
                cheapest[key] = (price, row)
    for (instance, region, market), (price, row) in cheapest.items():
        accelerator = row["AcceleratorName"]
        yield OfferRecord(
            provider=provider,
            instance_type=instance,
            region=region,
            market=market,
            gpu_name=accelerator,
            gpu=GPU_OVERRIDES.get((cloud, accelerator)),
            gpu_count=to_decimal(row["AcceleratorCount"]) or Decimal(0),
            usd_per_hour=price,
            vcpus=int(float(row["vCPUs"])) if (row.get("vCPUs") or "").strip() else None,
            memory_gib=to_decimal(row.get("MemoryGiB")) if (row.get("MemoryGiB") or "").strip() else None,
            source=f"SkyPilot catalog {url} {PRICE_COLUMN[market]} (catalog states no date)",
        )


def from_settings() -> SkyPilotFeed:
    return SkyPilotFeed(enabled=settings.PRICING_SKYPILOT_ENABLED, clouds=list(settings.PRICING_SKYPILOT_CLOUDS))
