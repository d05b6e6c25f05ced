"""Azure: the public Retail Prices API (no credentials), GPU VM series only.

`GET https://prices.azure.com/api/retail/prices?$filter=...` pages with `NextPageLink`; Azure has
shipped empty NextPageLinks on full pages, so a full page without one falls back to `$skip`
(price-feeds.md 1.2 and 5.4). GPU model and count are not in the price feed: they come from the
ARM SKU name (the same regex table approach as gpuhunt; counts from Azure's VM size docs).

Rows: `Consumption` (on demand, or spot when skuName or meterName says " Spot") and `Reservation`
(`reservationTerm` "1 Year"/"3 Years", priced for the whole term, converted to USD per hour).
Windows, Low Priority and DevTest rows are counted as rejections with their reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import requests
from django.conf import settings

from core import units
from pricing.feeds import http
from pricing.feeds.base import (
    FeedDataError,
    FeedFileError,
    IntegerTooLarge,
    OfferRecord,
    Progress,
    Rejection,
    parse_datetime,
    read_json,
    to_decimal,
    to_int,
)

API_URL = "https://prices.azure.com/api/retail/prices"
HOURS_PER_YEAR = Decimal(units.HOURS_PER_YEAR)
RESERVATION_YEARS = {"1 Year": ("reserved_1y", 1), "3 Years": ("reserved_3y", 3)}
# Windows rows end their productName in " Windows", but some H100 series in " Win" ("Virtual
# Machines NCCadsv5 Srs Win", SkyPilot fetch_azure.py); Cloud Services (classic) rows are no VMs
# one can rent as such. SkyPilot's fetcher drops the same three spellings.
WINDOWS_PRODUCT = re.compile(r" Win(?:dows)?\b")
CLOUD_SERVICES_PRODUCT = re.compile(r"(?:^| )Cloud ?Services\b")

# (pattern on the ARM SKU name, canonical GPU, GPU count from the vCPU number or a fixed count).
# Counts: Azure VM size docs for each series (NDsr H100 v5, ND H200 v5, NDm A100 v4, NC A100 v4,
# NCads H100 v5 (H100 NVL), NVadsA10 v5 (fractional A10), NCasT4 v3, NCv3, NDv2, ND MI300X v5).
_SKU_TABLE: list[tuple[re.Pattern[str], str, dict[int, Decimal] | Decimal]] = [
    # ND H100 v5 and its relatives: ND96isr (InfiniBand) and ND96is, 8x H100 SXM 80 GB
    # (SkyPilot fetch_azure.py standardNDSH100v5Family -> H100); ND H200 v5 (standardNDISRH200V5Family).
    (re.compile(r"^Standard_ND96isr?_H100_v5$"), "h100-sxm", Decimal(8)),
    (re.compile(r"^Standard_ND96isr?_H200_v5$"), "h200", Decimal(8)),
    # ND GB200 v6: 4 GB200 per VM (SkyPilot AZURE_MISSING_GPU_COUNT, observed 2026-09-02).
    (re.compile(r"^Standard_ND128isr_(?:NDR_)?GB200_v6$"), "gb200", Decimal(4)),
    (re.compile(r"^Standard_ND96amsr_A100_v4$"), "a100-80gb", Decimal(8)),
    (re.compile(r"^Standard_ND96asr_v4$"), "a100-40gb", Decimal(8)),
    # NC A100 v4 carries A100 PCIe 80 GB cards (Azure docs, "NC A100 v4-series"), not the SXM4 of NDm A100 v4.
    (re.compile(r"^Standard_NC(\d+)ads_A100_v4$"), "a100-pcie-80gb", {24: Decimal(1), 48: Decimal(2), 96: Decimal(4)}),
    # NC H100 v5 and the confidential NCC H100 v5 carry H100 NVL 94 GB (a PCIe card).
    (re.compile(r"^Standard_NCC?(\d+)adi?s_H100_v5$"), "h100-pcie", {40: Decimal(1), 80: Decimal(2)}),
    (
        re.compile(r"^Standard_NV(\d+)adm?s_A10_v5$"),
        "a10",
        {6: Decimal(1) / 6, 12: Decimal(1) / 3, 18: Decimal(1) / 2, 36: Decimal(1), 72: Decimal(2)},
    ),
    (re.compile(r"^Standard_NC(\d+)as_T4_v3$"), "t4", {4: Decimal(1), 8: Decimal(1), 16: Decimal(1), 64: Decimal(4)}),
    (re.compile(r"^Standard_NC(\d+)s_v3$"), "v100-16gb", {6: Decimal(1), 12: Decimal(2), 24: Decimal(4)}),
    # NC24rs v3 (RDMA): 4x V100, the only r size of NCv3 (microsoft/aspire AksNodeVmSizes.cs @ 5bd693ae, generated
    # from Azure's resource SKUs: "Standard_NC24rs_v3 -- 24 vCPUs -- 448 GB RAM -- 4 GPU(s)"; Azure ML's docs: "in one
    # node of Standard_NC24rs_v3 there are 4 NVIDIA V100 GPUs", citing
    # learn.microsoft.com/azure/virtual-machines/sizes-gpu).
    (re.compile(r"^Standard_NC24rs_v3$"), "v100-16gb", Decimal(4)),
    (re.compile(r"^Standard_ND40rs_v2$"), "v100-32gb", Decimal(8)),
    # ND MI300X v5 in both sizes, ND96is and ND96isr (Microsoft Learn "Isolation for VMs in Azure", ND family row:
    # Standard_ND96is_MI300X_v5, Standard_ND96isr_MI300X_v5; the ND MI300X v5 series page
    # learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ndmi300xv5-series: 8 AMD Instinct MI300X GPUs).
    # Not mapped, no Learn size page found (2026-12): the flex sizes ND96isf_H100_v5 and ND96isrf_H200_v5; nor
    # ND128isr_GB300_v6, GB300 being no GPU of the catalog (pricing/gpus.py): those stay unknown_gpu.
    (re.compile(r"^Standard_ND96isr?_MI300X_v5$"), "mi300x", Decimal(8)),
]


def gpu_of_sku(arm_sku_name: str) -> tuple[str, Decimal] | None:
    for pattern, gpu, counts in _SKU_TABLE:
        match = pattern.match(arm_sku_name)
        if not match:
            continue
        if isinstance(counts, Decimal):
            return gpu, counts
        try:
            size = to_int(match.group(1))
        except IntegerTooLarge:  # "Standard_NC" + "9" * 5000 + "s_v3": no size, one unknown_gpu, not a failed file
            return None
        count = counts.get(size) if size is not None else None
        return (gpu, count) if count is not None else None
    return None


def gpu_filter(region: str) -> str:
    return (
        "serviceName eq 'Virtual Machines' and "
        f"armRegionName eq '{region}' and "
        "(contains(armSkuName, 'Standard_NC') or contains(armSkuName, 'Standard_ND') "
        "or contains(armSkuName, 'Standard_NV'))"
    )


def _with_skip(url: str, skip: int) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "$skip"]
    query.append(("$skip", str(skip)))
    return urlunsplit(parts._replace(query=urlencode(query)))


@dataclass
class AzureFeed:
    enabled: bool
    regions: list[str] = field(default_factory=list)
    max_pages: int = 500
    page_size: int = 100  # the Retail Prices API's page size (price-feeds.md 5.4)
    name: str = "azure"
    label: str = "Azure Retail Prices API"

    def is_configured(self) -> bool:
        return self.enabled and bool(self.regions)

    def not_configured_reason(self) -> str:
        return "PRICING_AZURE_ENABLED is off or PRICING_AZURE_REGIONS is empty"

    def fetch(self, *, progress: Progress) -> Iterator[OfferRecord | Rejection]:
        session = http.session()
        for index, region in enumerate(self.regions):
            progress(index, len(self.regions), f"Azure {region}")
            yield from page_records(self._items(session, region), where=f"Azure prices {region}")
        progress(len(self.regions), len(self.regions), "Azure: all regions read")

    def _items(self, session: requests.Session, region: str) -> Iterator[Any]:
        url = f"{API_URL}?{urlencode({'$filter': gpu_filter(region)})}"
        skip = 0
        for page in range(1, self.max_pages + 1):
            payload = http.get_json(session, url, what=f"Azure prices {region} page {page}")
            items = payload.get("Items") if isinstance(payload, dict) else None
            if not isinstance(items, list):
                raise FeedDataError(f"Azure prices {region} page {page}: truncated page, no 'Items' list")
            count = payload.get("Count")
            if isinstance(count, int) and count != len(items):
                raise FeedDataError(
                    f"Azure prices {region} page {page}: truncated page, Count says {count} but {len(items)} items"
                )
            yield from items
            if not items:
                return
            skip += len(items)
            next_link = payload.get("NextPageLink")
            if next_link:
                url = next_link
            elif len(items) >= self.page_size:  # a full page with an empty NextPageLink: Azure's known paging bug
                url = _with_skip(url, skip)
            else:
                return
        raise FeedDataError(f"Azure prices {region}: more than {self.max_pages} pages; refusing a partial set")


def page_records(items: Iterable[Any], *, where: str) -> Iterator[OfferRecord | Rejection]:
    """The records of a page's `Items`; an item that is no JSON object is one counted malformed record."""
    for item in items:
        if isinstance(item, dict):
            yield from item_records(item)
        else:
            yield Rejection("malformed_record", f"{where}: item {str(item)[:60]!r} is not an object")


def item_identity(item: dict) -> str:
    """What identifies a Retail Prices item when its armSkuName cannot: meterId, skuId and meterName."""
    return " ".join(f"{key} {item.get(key)!s}" for key in ("meterId", "skuId", "meterName") if item.get(key))


def item_records(item: dict) -> Iterator[OfferRecord | Rejection]:
    sku = str(item.get("armSkuName") or "")
    region = str(item.get("armRegionName") or "")
    product = str(item.get("productName") or "")
    # Spot and Low Priority are marked in skuName and meterName; real rows spell the meter both
    # "ND96isr H100 v5 Spot" and "ND96isrH100v5 Spot", so either field decides.
    sku_name = " ".join(str(item.get(key) or "") for key in ("skuName", "meterName"))
    price_type = str(item.get("type") or "")
    where = f"azure {sku or '?'} {region or '-'}"
    if WINDOWS_PRODUCT.search(product):
        yield Rejection("not_linux", f"{where}: {product}")
        return
    if CLOUD_SERVICES_PRODUCT.search(product):
        yield Rejection("cloud_services", f"{where}: {product}")
        return
    if "Low Priority" in sku_name:
        yield Rejection("low_priority", f"{where}: {sku_name}")
        return
    if price_type == "Consumption":
        market, years = ("spot" if re.search(r" Spot\b", sku_name) else "on_demand"), 0
    elif price_type == "Reservation" and str(item.get("reservationTerm")) in RESERVATION_YEARS:
        market, years = RESERVATION_YEARS[str(item["reservationTerm"])]
    else:
        yield Rejection("unsupported_price_type", f"{where}: type {price_type!r} {item.get('reservationTerm') or ''}")
        return
    if not sku:  # validation would name neither the item nor the field ('azure  eastus reserved_1y')
        yield Rejection("missing_identity", f"azure item {item_identity(item)} {region or '-'}: no armSkuName")
        return
    price = to_decimal(item.get("retailPrice", item.get("unitPrice")))
    if price is None:
        yield Rejection(
            "malformed_record",
            f"{where} ({item_identity(item)}): neither retailPrice ({item.get('retailPrice')!r}) nor unitPrice "
            f"({item.get('unitPrice')!r}) is a price",
        )
        return
    if years:
        price = price / (HOURS_PER_YEAR * years)
    elif item.get("unitOfMeasure") != "1 Hour":
        yield Rejection("unsupported_unit", f"{where}: {item.get('unitOfMeasure')!r}")
        return
    gpu = gpu_of_sku(sku)
    yield OfferRecord(
        provider="azure",
        instance_type=sku,
        region=region,
        market=market,
        gpu_name=sku,
        gpu=gpu[0] if gpu else None,
        gpu_count=gpu[1] if gpu else Decimal(0),
        usd_per_hour=price,
        currency=str(item.get("currencyCode") or ""),
        effective_at=parse_datetime(item.get("effectiveStartDate")),
        source=f"Azure Retail Prices API {API_URL} {price_type} retailPrice ({product}, {sku_name.strip()})",
    )


def from_settings() -> AzureFeed:
    return AzureFeed(
        enabled=settings.PRICING_AZURE_ENABLED,
        regions=list(settings.PRICING_AZURE_REGIONS),
        max_pages=settings.PRICING_MAX_PAGES,
    )


def records_from_files(paths: list[Path], *, cloud: str | None = None) -> list[OfferRecord | Rejection]:
    """Saved Retail Prices pages ({"Items": [...]}, or a bare list of items) for `import_prices`."""
    records: list[OfferRecord | Rejection] = []
    for path in paths:
        payload = read_json(path)
        items = payload.get("Items") if isinstance(payload, dict) else payload
        if not isinstance(items, list):
            raise FeedFileError(path, "not an Azure Retail Prices page: no 'Items' list")
        records.extend(page_records(items, where=str(path)))
    return records
