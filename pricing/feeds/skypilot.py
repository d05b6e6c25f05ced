"""SkyPilot's public catalog CSVs (no credentials): the GPU clouds without a direct feed here.

`{PRICING_SKYPILOT_CATALOG_URL}/{version}/{cloud}/vms.csv`, one CSV per cloud, each cloud its own
feed (`skypilot:<cloud>`), fetched, validated and stored on its own: one cloud's failure is that
cloud's failed run and the other clouds' offers stay. The version per cloud is the newest the
catalog repository holds for it (`pricing/data/skypilot_catalogs.csv`), else the one SkyPilot
itself reads (`CATALOG_SCHEMA_VERSION`); a cloud with no catalog is reported as such. As SkyPilot
does (sky/catalog/common.py), a rate-limited or failing primary falls back to its S3 mirror.

Column order differs per cloud, so columns are read by name. Every row is parsed inside its own
validation: a bad cell is one rejection counted by reason, never a failed run. A row with more or fewer
cells than the header, or a last row the file ends inside (no line break after it), is a `malformed_row`: a
download cut short must not leave a cut cell standing as a price, a region or a GPU's memory. `GpuInfo` (a Python
literal; DigitalOcean's keys in lower case, paperspace's the bare GPU name, read as no memory) gives the memory per
GPU (vast's and primeintellect's give the whole box's, divided by the count here), which
decides the id (A100 81920 MiB -> a100-80gb; an 'H100' with 96256 MiB is an H100 NVL, a PCIe card); a memory no part
of that name has, as written or divided, is a rejection, never an id. A reseller's (shadeform's) plain 'H100' or
'A100' takes its form factor from the instance type or the upstream cloud's naming, else is rejected as ambiguous.
`observed_at` is the catalog file's own timestamp: the mirror's Last-Modified, else the file's last
commit date from the GitHub API; never the time it was read. One offer per (instance type, region,
market) at the cheapest zone.
"""

from __future__ import annotations

import ast
import csv
import datetime as dt
import functools
import io
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import requests
from django.conf import settings

from pricing.feeds import FEED_NAME_MAX, http
from pricing.feeds.base import (
    MAX_INTEGER_DIGITS,
    FeedDataError,
    FeedError,
    FeedFileError,
    FeedNetworkError,
    FeedNotConfigured,
    FeedNotFound,
    IntegerTooLarge,
    OfferRecord,
    Progress,
    Rejection,
    file_mtime,
    parse_datetime,
    read_text,
    shown,
    to_decimal,
    to_int,
    vcpus_too_large,
)
from pricing.gpus import PCIE_OF, canonical_gpu, canonical_gpu_by_memory, plausible_memory_mib

# sky/skylet/constants.py (skypilot-org/skypilot master, read 2026-12-03): CATALOG_SCHEMA_VERSION = 'v8'.
SKYPILOT_SCHEMA_VERSION = "v8"
VERSIONS_CSV = Path(__file__).resolve().parent.parent / "data" / "skypilot_catalogs.csv"
COMMITS_API = "https://api.github.com/repos/skypilot-org/skypilot-catalog/commits"
GITHUB_RAW_PREFIX = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/"
REQUIRED_COLUMNS = {"InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region"}
PRICE_COLUMN = {"on_demand": "Price", "spot": "SpotPrice"}
PROVIDER_OF_CLOUD = {"do": "digitalocean"}
# Names a cloud uses differently from the common mapping (snapshot README: RunPod 'H100' = H100 PCIe). RunPod's
# 'A100-80GB' is the PCIe card: its v8 rows' GpuInfo names it 'A100 PCIe' and SkyPilot's RunPod GPU_NAME_MAP maps
# it to 'NVIDIA A100 80GB PCIe' ('A100-80GB-SXM' is the SXM4 card, which the common mapping gives a100-80gb).
GPU_OVERRIDES = {("runpod", "H100"): "h100-pcie", ("runpod", "A100-80GB"): "a100-pcie-80gb"}
# Clouds whose catalog writes the memory of the whole box under GpuInfo's SizeInMiB. vast v8 (skypilot-catalog
# catalogs/v8/vast/vms.csv @ 01b8cdda, 2x-A100_SXM4 81920 MiB where 1x-A100_SXM4 is 40960) writes the same figure
# as TotalGpuMemoryInMiB, and a total of SizeInMiB x Count there would mean per GPU; primeintellect v8
# (catalogs/v8/primeintellect/vms.csv @ d9a304ea, 8x H100 655360 where 1x is 81920) counts the box a second time in
# TotalGpuMemoryInMiB (5242880), so there the total says nothing. The equality alone cannot tell: Lambda's v8 rows
# write one GPU's memory in both fields (gpu_8x_a100_80gb_sxm4: 81920 and 81920), and cudo's and OCI's give the
# total as SizeInMiB x Count. Every other cloud follows SkyPilot's schema: SizeInMiB per GPU.
BOX_MEMORY_UNLESS_TOTAL_IS_PER_GPU = frozenset({"vast"})
BOX_MEMORY = frozenset({"primeintellect"})
# Resellers: SkyPilot's shadeform fetcher names each row '<upstream cloud>_<Shadeform's type>', and Shadeform's
# 'H100' and 'A100' say PCIe or SXM only in the instance type's name, where it does (lambdalabs_H100-sxm5x8,
# denvr_A100-sxm4x8); a plain name is the upstream cloud's own naming or nothing known.
RESELLER_CLOUDS = frozenset({"shadeform"})
SXM_INSTANCE = re.compile(r"sxm|nvlink", re.IGNORECASE)
# (upstream cloud, id of the plain name) -> the GPU counts at which the plain name is the PCIe card: Scaleway's
# H100-1-80G and H100-2-80G are its H100 PCIe instances and its SXM ones are named H100-SXM-2/4/8-80G
# (scaleway/docs-content pages/gpu/reference-content/migration-h100.mdx, "H100 PCIe-based GPU Instances";
# products-availability.mdx lists "GPU H100-X-80G" apart from "GPU H100-SXM-X-80G"). At any other count no PCIe
# instance of that name exists, so the plain name settles nothing (a probe: a plain 'scaleway_H100x8' was h100-pcie).
UPSTREAM_PLAIN_NAME_IS_PCIE: dict[tuple[str, str], frozenset[int]] = {("scaleway", "h100-sxm"): frozenset({1, 2})}
FEED_PREFIX = "skypilot:"
MIN_GPU_MIB = 1024
# "pcie", cudo's "a100-pci_..." and H100 NVL instances, and Azure's NC A100 v4 (A100 PCIe 80GB, Azure docs): PCIe
# cards the catalog names like the SXM part.
PCIE_INSTANCE = re.compile(r"pcie?(?![a-z])|nvl(?!ink)|^Standard_NC\d+ads_A100_v4$", re.IGNORECASE)


@functools.cache
def catalog_versions(path: Path = VERSIONS_CSV) -> dict[str, str]:
    with path.open(newline="", encoding="utf-8") as handle:
        return {row["cloud"]: row["version"] for row in csv.DictReader(handle)}


@functools.cache
def refused_parts(path: Path = VERSIONS_CSV) -> dict[str, str]:
    """Clouds whose SkyPilot catalog holds no whole-instance price, with why and which feed to use instead."""
    with path.open(newline="", encoding="utf-8") as handle:
        return {row["cloud"]: row["refused"] for row in csv.DictReader(handle) if row.get("refused")}


def catalog_version(cloud: str) -> str:
    return catalog_versions().get(cloud, SKYPILOT_SCHEMA_VERSION)


def known_parts() -> list[str]:
    """The clouds a `skypilot:<cloud>` feed may name: those SkyPilot's catalog repository holds
    (`skypilot_catalogs.csv`) and those configured in PRICING_SKYPILOT_CLOUDS, less the refused ones."""
    return sorted((set(catalog_versions()) | set(settings.PRICING_SKYPILOT_CLOUDS)) - set(refused_parts()))


def feed_name(cloud: str) -> str:
    return f"{FEED_PREFIX}{cloud}"


@dataclass
class SkyPilotFeed:
    """The group: one `SkyPilotCloudFeed` per configured cloud, each refreshed on its own."""

    enabled: bool
    clouds: list[str] = field(default_factory=list)
    name: str = "skypilot"
    label: str = "SkyPilot catalog (public CSVs)"

    def is_configured(self) -> bool:
        return self.enabled and bool(self.clouds)

    def not_configured_reason(self) -> str:
        return "PRICING_SKYPILOT_ENABLED is off or PRICING_SKYPILOT_CLOUDS is empty"

    def parts(self) -> list[str]:
        return [feed_name(cloud) for cloud in self.clouds]

    def fetch(self, *, progress: Progress) -> Iterator[OfferRecord | Rejection]:
        raise FeedDataError(f"refresh the SkyPilot clouds one by one: {', '.join(self.parts())}")


@dataclass
class SkyPilotCloudFeed:
    cloud: str
    enabled: bool
    base_url: str
    mirror_url: str
    version: str = ""
    name: str = field(init=False)
    label: str = field(init=False)

    def __post_init__(self) -> None:
        self.version = self.version or catalog_version(self.cloud)
        self.name = feed_name(self.cloud)
        self.label = f"SkyPilot catalog {self.version} {self.cloud}"

    def is_configured(self) -> bool:
        return self.enabled and len(self.name) <= FEED_NAME_MAX

    def not_configured_reason(self) -> str:
        if len(self.name) > FEED_NAME_MAX:
            return f"cloud name {self.cloud!r} is too long for a feed name (at most {FEED_NAME_MAX} characters)"
        return "PRICING_SKYPILOT_ENABLED is off"

    def urls(self) -> tuple[str, str]:
        path = f"{self.version}/{self.cloud}/vms.csv"
        return f"{self.base_url.rstrip('/')}/{path}", f"{self.mirror_url.rstrip('/')}/{path}"

    def fetch(self, *, progress: Progress) -> Iterator[OfferRecord | Rejection]:
        session = http.session()
        primary, mirror = self.urls()
        progress(0, 1, f"SkyPilot {self.cloud} {self.version}")
        what = f"SkyPilot catalog {self.version} {self.cloud}"
        try:
            response, url = http.get(session, primary, what=what), primary
        except FeedNotFound as error:
            raise FeedNotConfigured(
                f"SkyPilot has no {self.version} catalog for {self.cloud!r} ({error}); "
                "remove it from PRICING_SKYPILOT_CLOUDS or name a cloud the catalog holds"
            ) from error
        except FeedNetworkError:
            if mirror == primary:
                raise
            # SkyPilot falls back to its S3 mirror when GitHub rate-limits it (skypilot#5438).
            response, url = http.get(session, mirror, what=f"{what} (mirror)"), mirror
        observed_at = file_timestamp(session, response, url=url, path=f"catalogs/{self.version}/{self.cloud}/vms.csv")
        yield from parse_catalog(self.cloud, response.text, url=url, observed_at=observed_at)
        progress(1, 1, f"SkyPilot {self.cloud}: read")


def file_timestamp(
    session: requests.Session, response: requests.Response, *, url: str, path: str
) -> dt.datetime | None:
    """When the catalog file last changed: Last-Modified (S3 sends it), else the GitHub commit date
    of the file; None when neither is available (the offers then say the date is unknown)."""
    header = response.headers.get("Last-Modified")
    if header:
        try:
            return parsedate_to_datetime(header).astimezone(dt.UTC)
        except (TypeError, ValueError):
            pass
    if not url.startswith(GITHUB_RAW_PREFIX):
        return None
    try:
        commits = http.get_json(
            session, COMMITS_API, what="SkyPilot catalog commit date", params={"path": path, "per_page": 1}
        )
        return parse_datetime(commits[0]["commit"]["committer"]["date"])
    except (FeedError, LookupError, TypeError):
        return None  # the prices are still good; only their date is unknown


@dataclass(frozen=True, slots=True)
class CatalogRow:
    instance: str
    region: str
    accelerator: str
    gpu: str | None
    gpu_count: Decimal
    vcpus: int | None
    memory_gib: Decimal | None
    prices: dict[str, Decimal]


class BadCell(ValueError):
    reason_prefix = "bad_cell"

    def __init__(self, column: str, value: Any, *, why: str = "") -> None:
        super().__init__(f"{column}={value!r}{why}")
        self.column = column

    @property
    def reason(self) -> str:
        return f"{self.reason_prefix}_{self.column}"


class ImplausibleGpuMemory(BadCell):
    """GpuInfo's memory is no GPU of that name's, read as written or divided by the count: picking an id from it
    priced 8x H100 SXM boxes as H100 NVL (h100-pcie) and 8x A100 40 GB boxes as a100-80gb."""

    @property
    def reason(self) -> str:
        return "implausible_gpu_memory"


class AmbiguousFormFactor(BadCell):
    """A reseller's row names a GPU sold as PCIe and as SXM cards, and nothing says which: defaulting to SXM priced
    Scaleway's H100 PCIe as h100-sxm (NVLink, 700 W)."""

    @property
    def reason(self) -> str:
        return "ambiguous_gpu_form_factor"


def _number(row: dict[str, str], column: str, *, required: bool = False) -> Decimal | None:
    raw = (row.get(column) or "").strip()
    if not raw:
        if required:
            raise BadCell(column, raw)
        return None
    value = to_decimal(raw)
    if value is None:
        raise BadCell(column, raw)
    return value


class UnreadableGpuInfo(ValueError):
    """Why a GpuInfo cell gives no memory one can trust; read_gpu_memory turns it into bad_cell_GpuInfo."""


def _gpu_info_figure(name: str, value: Any) -> float:
    """The one rule for each of GpuInfo's figures (SizeInMiB, Count, TotalGpuMemoryInMiB): what `to_decimal` reads
    (finite; no bool, no None), above zero and under 10**MAX_INTEGER_DIGITS (base.py's bound on any count or size a
    feed gives). Unlike the CSV's cells, whose range validate_offer checks as they are stored, these figures are
    never stored, so they are checked here. float() of a 400-digit SizeInMiB raised OverflowError, which refused
    the whole file (a hostile probe), and a Count of -8 with a SizeInMiB of -1146880 stored an H200."""
    number = to_decimal(value)
    if number is None or not 0 < number < Decimal(10) ** MAX_INTEGER_DIGITS:
        raise UnreadableGpuInfo(f"{name} {shown(value)} is no positive number of at most {MAX_INTEGER_DIGITS} digits")
    return float(number)


@dataclass(frozen=True, slots=True)
class GpuMemory:
    """GpuInfo's memory figures as written: SizeInMiB, the GPUs' Count and TotalGpuMemoryInMiB (0 when absent)."""

    size: float
    count: float
    total: float

    def as_mib(self, value: float) -> int:
        # RunPod's and shadeform's v8 catalogs write GB under SizeInMiB ('SizeInMiB': 80 for an A100 80GB); no GPU
        # has under 1 GiB, so a value that small is GiB.
        return int(value * 1024 if 0 < value < MIN_GPU_MIB else value)

    def readings(self, *, whole_box: bool) -> tuple[int, int]:
        """(the reading the catalog's layout gives, the other one): SizeInMiB as written and divided by Count."""
        written = self.as_mib(self.size)
        divided = self.as_mib(self.size / self.count) if self.count > 0 else written
        return (divided, written) if whole_box else (written, divided)


def _lower_keys(value: Any) -> Any:
    """DigitalOcean's v6 catalog writes GpuInfo's keys in lower case ('gpus', 'memoryinfo', 'sizeinmib').
    UnreadableGpuInfo for two keys that differ only in case: the later one won, so {'Gpus': [81920 MiB], 'gpus':
    [96256 MiB]} was stored as h100-pcie where SkyPilot reads 'Gpus' (a hostile probe); neither is picked."""
    if isinstance(value, dict):
        lowered = {str(key).lower(): _lower_keys(item) for key, item in value.items()}
        if len(lowered) < len(value):
            seen = Counter(str(key).lower() for key in value)
            clashing = sorted(str(key) for key in value if seen[str(key).lower()] > 1)
            raise UnreadableGpuInfo(f"keys {', '.join(map(shown, clashing[:4]))} differ only in case: ambiguous")
        return lowered
    if isinstance(value, list):
        return [_lower_keys(item) for item in value]
    return value


def read_gpu_memory(raw: str | None, *, accelerator: str = "") -> GpuMemory | None:
    """GpuInfo's memory ("{'Gpus': [{'Count': 2, 'MemoryInfo': {'SizeInMiB': 81920}}], 'TotalGpuMemoryInMiB':
    163840}"); None when the cell gives none: empty, or the bare GPU name paperspace's v6 catalog writes there
    (GpuInfo 'H100' on an 'H100' row)."""
    if raw is None or not raw.strip() or (accelerator and raw.strip() == accelerator):
        return None
    try:
        info = _lower_keys(ast.literal_eval(raw))  # a Python literal, as SkyPilot writes and reads it
        gpus = info["gpus"][0]
        count, total = gpus.get("count"), info.get("totalgpumemoryinmib")
        return GpuMemory(
            size=_gpu_info_figure("SizeInMiB", gpus["memoryinfo"]["sizeinmib"]),
            count=1 if count is None else _gpu_info_figure("Count", count),
            total=0 if total is None else _gpu_info_figure("TotalGpuMemoryInMiB", total),
        )
    except UnreadableGpuInfo as error:
        raise BadCell("GpuInfo", raw[:80], why=f": {error}") from None
    except (ValueError, SyntaxError, LookupError, TypeError, AttributeError, MemoryError, RecursionError):
        raise BadCell("GpuInfo", raw[:80]) from None


def is_whole_box(cloud: str, memory: GpuMemory) -> bool:
    """Whether this cloud's SizeInMiB is the memory of all the box's GPUs (see BOX_MEMORY)."""
    if cloud in BOX_MEMORY:
        return True
    return cloud in BOX_MEMORY_UNLESS_TOTAL_IS_PER_GPU and memory.total != memory.size * memory.count


def gpu_memory_mib(raw: str | None, *, cloud: str) -> int | None:
    """Memory per GPU as the cloud's catalog layout reads it, unchecked (`mib_per_gpu` checks it against the part)."""
    memory = read_gpu_memory(raw)
    return None if memory is None else memory.readings(whole_box=is_whole_box(cloud, memory))[0]


def mib_per_gpu(cloud: str, memory: GpuMemory | None, *, named: str | None, accelerator: str) -> int | None:
    """Memory per GPU: the cloud's layout's reading when a part of that name has it, else the other reading (a row
    that shows the layout is not the cloud's); ImplausibleGpuMemory when neither fits, never an id picked from it."""
    if memory is None:
        return None
    readings = memory.readings(whole_box=is_whole_box(cloud, memory))
    plausible = plausible_memory_mib(named)
    if plausible is None:
        return readings[0]
    low, high = plausible
    fitting = [mib for mib in readings if low <= mib <= high]
    if fitting:
        return fitting[0]
    raise ImplausibleGpuMemory(
        "GpuInfo",
        f"SizeInMiB {memory.size:g} x Count {memory.count:g}",
        why=f": no {accelerator} has that memory per GPU ({low}-{high} MiB), as written or divided by the count",
    )


def with_form_factor(cloud: str, instance: str, gpu: str | None, *, gpu_count: Decimal) -> str | None:
    """The PCIe card when the instance type names it (Lambda's gpu_1x_h100_pcie is listed as plain 'H100', cudo's
    a100-pci_* as 'A100'), or a reseller's upstream cloud calls its PCIe card by the plain name at that GPU count;
    AmbiguousFormFactor for a reseller's plain name that neither the name nor the upstream cloud settles."""
    if gpu not in PCIE_OF:
        return gpu
    if PCIE_INSTANCE.search(instance):
        return PCIE_OF[gpu]
    if cloud not in RESELLER_CLOUDS or SXM_INSTANCE.search(instance):
        return gpu
    upstream = instance.split("_", 1)[0].lower()
    pcie_counts = UPSTREAM_PLAIN_NAME_IS_PCIE.get((upstream, gpu))
    if pcie_counts is None:
        why = f": {upstream} resold by {cloud}, whose plain name is sold as PCIe and SXM cards; neither is named"
    elif gpu_count in pcie_counts:
        return PCIE_OF[gpu]
    else:
        shown_counts = " or ".join(str(count) for count in sorted(pcie_counts))
        why = f": {upstream} resold by {cloud} names its PCIe card plainly only at {shown_counts} GPUs, not {gpu_count}"
    raise AmbiguousFormFactor("InstanceType", instance, why=why)


def parse_row(cloud: str, row: dict[str, str]) -> CatalogRow:
    """One catalog row, every cell checked; BadCell names the first unreadable one."""
    accelerator = row["AcceleratorName"].strip()
    number = _number(row, "vCPUs")
    vcpus = to_int(number)  # IntegerTooLarge beyond its bound
    if number is not None and vcpus is None:
        raise BadCell("vCPUs", row.get("vCPUs"))
    override = GPU_OVERRIDES.get((cloud, accelerator))
    memory = read_gpu_memory(row.get("GpuInfo"), accelerator=accelerator)
    mib = mib_per_gpu(cloud, memory, named=override or canonical_gpu(accelerator), accelerator=accelerator)
    gpu_count = _number(row, "AcceleratorCount", required=True) or Decimal(0)
    by_memory = canonical_gpu_by_memory(accelerator, mib, default=override)
    gpu = with_form_factor(cloud, row["InstanceType"], by_memory, gpu_count=gpu_count)
    prices = {market: _number(row, column) for market, column in PRICE_COLUMN.items()}
    if prices["spot"] == 0:
        # SkyPilot's vast v8 catalog writes SpotPrice 0.00 on every row: no spot price, read as an empty cell, not a
        # free machine counted as a non_positive_price rejection beside each offer. A zero on-demand Price is no such
        # convention: it stays, and validation refuses it.
        prices["spot"] = None
    return CatalogRow(
        instance=row["InstanceType"],
        region=row["Region"],
        accelerator=accelerator,
        gpu=gpu,
        gpu_count=gpu_count,
        vcpus=vcpus,
        memory_gib=_number(row, "MemoryGiB"),
        prices={market: price for market, price in prices.items() if price is not None},
    )


def _rows(rows: Iterable[dict[str, str]], *, ends_with_line_break: bool) -> Iterator[tuple[int, dict[str, str], bool]]:
    """(line, row, possibly cut) for each row. A file that does not end with a line break may have been cut inside
    its last row, and a cell cut short can still read as a good value (Price 1.39 cut to 1.3, region
    "europe-central-1" to "europe-central"): that row alone is marked. The recorded catalogs all end with one."""
    numbered = enumerate(rows, start=2)
    held = next(numbered, None)
    while held is not None:
        following = next(numbered, None)
        yield (*held, following is None and not ends_with_line_break)
        held = following


def _ends_complete(text: str) -> bool:
    """Whether the file's last row cannot have been cut inside: it ends with a line break, or with the closing quote
    of a quoted cell (runpod's last column, GpuInfo, is one: a hand-saved catalog without the final line break lost
    its last offer as 'cut', a reviewer). Quotes come in pairs in CSV ("" inside a quoted cell too), so an even count
    means the last one closes a cell; a file cut inside a quoted cell has an odd count."""
    return text.endswith(("\n", "\r")) or (text.endswith('"') and text.count('"') % 2 == 0)


def _check_header(cloud: str, names: Sequence[str]) -> None:
    """FeedDataError for a header without the columns read, or with one given twice: csv.DictReader keeps the last
    copy, so a second Price column silently priced every row (a hostile probe: $12.00 stored for a $6.32 box)."""
    missing = REQUIRED_COLUMNS - set(names)
    if missing:
        raise FeedDataError(f"SkyPilot catalog {cloud}: not a catalog CSV, missing columns {sorted(missing)}")
    repeated = sorted(name for name, times in Counter(names).items() if times > 1)
    if repeated:
        shown = ", ".join(repr(name[:40]) for name in repeated[:5])
        raise FeedDataError(f"SkyPilot catalog {cloud}: column {shown} appears more than once in the header")


def parse_catalog(
    cloud: str, text: str, *, url: str, observed_at: dt.datetime | None = None, dated: str = ""
) -> Iterator[OfferRecord | Rejection]:
    """The catalog's offers, each dated `observed_at`; the source says where that date comes from: `dated`, else the
    catalog file's own date (a fetch: Last-Modified or the commit date)."""
    if cloud in refused_parts():
        raise FeedDataError(f"SkyPilot catalog {cloud}: refused: {refused_parts()[cloud]}")
    reader = csv.DictReader(io.StringIO(text))
    _check_header(cloud, reader.fieldnames or [])
    provider = PROVIDER_OF_CLOUD.get(cloud, cloud)
    cheapest: dict[tuple[str, str, str], tuple[Decimal, CatalogRow]] = {}
    for line, row, cut in _rows(reader, ends_with_line_break=_ends_complete(text)):
        if None in row or None in row.values():  # a cell too many (under None) or too few (read as None)
            yield Rejection("malformed_row", f"skypilot {cloud} line {line}: wrong number of cells (truncated?)")
            continue
        if cut:
            yield Rejection("malformed_row", f"skypilot {cloud} line {line}: the file ends inside it, no line break")
            continue
        if not row["InstanceType"].strip():  # keyed on it below: such rows merged into one ('', region, market)
            yield Rejection(
                "no_instance_type",
                f"skypilot {cloud} line {line}: no InstanceType (accelerator {row['AcceleratorName'].strip() or '?'} "
                f"x {row['AcceleratorCount'].strip() or '?'} priced apart from a host VM)",
            )
            continue
        if not row["AcceleratorName"].strip():
            yield Rejection("no_accelerator", f"skypilot {cloud} {row['InstanceType']}")
            continue
        try:
            parsed = parse_row(cloud, row)
        except BadCell as error:
            yield Rejection(error.reason, f"skypilot {cloud} line {line}: {error}")
            continue
        except IntegerTooLarge as error:
            yield vcpus_too_large(f"skypilot {cloud} line {line}", error)
            continue
        if not parsed.prices:
            yield Rejection("no_price", f"skypilot {cloud} line {line}: {parsed.instance}: neither Price nor SpotPrice")
            continue
        for market, price in parsed.prices.items():
            key = (parsed.instance, parsed.region, market)
            if key not in cheapest or price < cheapest[key][0]:
                cheapest[key] = (price, parsed)
    if not dated:
        dated = f"catalog file dated {observed_at:%Y-%m-%d}" if observed_at else "catalog file date unknown"
    for (instance, region, market), (price, parsed) in cheapest.items():
        yield OfferRecord(
            provider=provider,
            instance_type=instance,
            region=region,
            market=market,
            gpu_name=parsed.accelerator,
            gpu=parsed.gpu or canonical_gpu(parsed.accelerator),
            gpu_count=parsed.gpu_count,
            usd_per_hour=price,
            vcpus=parsed.vcpus,
            memory_gib=parsed.memory_gib,
            observed_at=observed_at,
            source=f"SkyPilot catalog {url} {PRICE_COLUMN[market]} ({dated})",
        )


def from_settings() -> SkyPilotFeed:
    return SkyPilotFeed(enabled=settings.PRICING_SKYPILOT_ENABLED, clouds=list(settings.PRICING_SKYPILOT_CLOUDS))


def cloud_from_settings(cloud: str) -> SkyPilotCloudFeed:
    return SkyPilotCloudFeed(
        cloud=cloud,
        enabled=settings.PRICING_SKYPILOT_ENABLED,
        base_url=settings.PRICING_SKYPILOT_CATALOG_URL,
        mirror_url=settings.PRICING_SKYPILOT_MIRROR_URL,
    )


def records_from_files(paths: list[Path], *, cloud: str | None) -> list[OfferRecord | Rejection]:
    """Saved catalog CSVs of one cloud (`import_prices --cloud`), each dated by the file's modification time: the CSV
    states no date, and a saved copy's mtime is at best when it was downloaded (a copy made today is dated today;
    `import_prices --observed-at` overrides it). The source names the file, never its path: the operator's directories
    are shown to every user otherwise (/tmp/ops_cudo.csv)."""
    if not cloud:
        raise FeedDataError("the SkyPilot catalog files need --cloud (e.g. --cloud cudo): the CSV does not name it")
    records: list[OfferRecord | Rejection] = []
    for path in paths:
        modified = file_mtime(path)
        try:
            records.extend(
                parse_catalog(
                    cloud,
                    read_text(path),
                    url=path.name,
                    observed_at=modified,
                    dated=f"file modified {modified:%Y-%m-%d}",
                )
            )
        except FeedDataError as error:
            raise FeedFileError(path, str(error)) from error
    return records
