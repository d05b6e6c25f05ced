"""AWS through boto3: Price List `get_products` (us-east-1 endpoint), EC2 instance types and spot history.

- On-demand and reserved (standard, no upfront, 1 and 3 years) from `pricing.get_products`, filtered
  to GPU instances, Linux, shared tenancy, no pre-installed software, used capacity, paginated by
  NextToken (price-feeds.md 5.1). The same rule (PRODUCT_RULE) is checked on every product read, so a
  saved offer file's Linux-with-SQL-Server products are counted, not priced as Linux. Capacity Block
  products (priced $0, `marketoption` not OnDemand), Windows rows and usage types other than box usage
  are counted as rejections.
- GPU model, count and memory from EC2 `describe_instance_types` (with SkyPilot's fix-ups: p5en
  reports the GPU name "NVIDIA", p4de is A100 80GB, L4 memory is misreported; a GPU slice such as
  g6f reports Count 0 and its fraction in GpuPartitionSize).
- Spot from EC2 `describe_spot_price_history` (Linux/UNIX, now): the cheapest zone per region.
Credentials: PRICING_AWS_ACCESS_KEY_ID/SECRET, or boto3's default chain.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
from django.conf import settings

from core.jsontext import parse_json_text
from pricing.feeds.base import (
    FeedDataError,
    FeedError,
    FeedFileError,
    FeedNetworkError,
    FeedNotConfigured,
    IntegerTooLarge,
    MalformedRecord,
    OfferRecord,
    Progress,
    Rejection,
    as_object,
    as_text,
    parse_datetime,
    read_json,
    to_decimal,
    to_int,
    vcpus_too_large,
)
from pricing.gpus import canonical_gpu_by_memory

PRICING_REGION = "us-east-1"  # the Price List API answers from us-east-1 for every region
RETRYABLE_CODES = {
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "TooManyRequestsException",
    "ServiceUnavailable",
    "InternalError",
    "InternalErrorException",
    "RequestTimeout",
}
BOX_USAGE = re.compile(r"^(?:[A-Z0-9]+-)?BoxUsage:")  # no prefix in us-east-1, USW2- / EU- elsewhere
RESERVED_MARKETS = {"1yr": "reserved_1y", "3yr": "reserved_3y"}
# Products that are instances: a Price List page or offer file also lists storage, load balancers,
# data transfer... (botocore's own GetProducts example is an EBS volume), which are no offers.
INSTANCE_FAMILIES = {"Compute Instance", "Compute Instance (bare metal)"}
# Instance types whose EC2 GPU info needs fixing (price-feeds.md 1.1 and 2.2).
GPU_FIXUPS: dict[str, tuple[str, int]] = {
    "p5en.48xlarge": ("h200", 8),
    "p5e.48xlarge": ("h200", 8),
    "p4de.24xlarge": ("a100-80gb", 8),
    "p3dn.24xlarge": ("v100-32gb", 8),
}


@dataclass(frozen=True, slots=True)
class ProductTerm:
    """One attribute an offered product must have: sent as a TERM_MATCH filter to `get_products` and checked on every
    product read (a bulk offer file holds them all, unfiltered); a product without it is counted under `reason`."""

    field: str
    value: str
    reason: str


# The products that are on-demand/reserved Linux GPU instances, after SkyPilot's fetch_aws.py row filter
# (skypilot-org/skypilot sky/catalog/data_fetchers/fetch_aws.py, read at 00526108, price-feeds.md 1.1: Linux, no
# Pre Installed S/W, CapacityStatus Used, Tenancy Shared) and the get_products form of skypilot#1437. An offer file
# lists "Linux with SQL Std/Web/Ent" beside plain Linux with the same operatingSystem and BoxUsage usagetype, told
# apart only by preInstalledSw (and operation RunInstances:0004/0100/0200): AWS's EC2 offer file, SKU EHFDZFP2EH9BD4DX
# m5.xlarge "SQL Std" $0.672 against $0.192 for plain Linux (version 20260910195514).
PRODUCT_RULE: tuple[ProductTerm, ...] = (
    ProductTerm("instanceFamily", "GPU instance", "not_gpu_instance"),
    ProductTerm("operatingSystem", "Linux", "not_linux"),
    ProductTerm("tenancy", "Shared", "not_shared_tenancy"),
    ProductTerm("preInstalledSw", "NA", "preinstalled_software"),
    ProductTerm("capacitystatus", "Used", "capacity_reservation"),
    ProductTerm("licenseModel", "No License required", "license_not_free"),
)


def product_filters(region: str) -> list[dict[str, str]]:
    """The `get_products` filters: the region and PRODUCT_RULE."""
    terms = [("regionCode", region)] + [(term.field, term.value) for term in PRODUCT_RULE]
    return [{"Type": "TERM_MATCH", "Field": name, "Value": value} for name, value in terms]


def product_rule_rejection(*, attributes: dict[str, Any], where: str) -> Rejection | None:
    """The rejection of a product whose attributes break PRODUCT_RULE (the first term broken), or None."""
    for term in PRODUCT_RULE:
        value = attributes.get(term.field)
        if value != term.value:
            return Rejection(term.reason, f"{where}: {term.field} {value!r}, not {term.value!r}")
    return None


def _gpu_from_ec2(info: dict[str, Any]) -> tuple[str, Decimal, int] | None:
    """(GPU name for the canonical mapping, count, MiB per GPU) from one describe_instance_types entry."""
    gpu_info = info.get("GpuInfo") or {}
    gpus = (gpu_info.get("Gpus") if isinstance(gpu_info, dict) else None) or []
    if not isinstance(gpus, list) or not gpus or not isinstance(gpus[0], dict):
        return None  # no usable GPU info: the product's own `gpu` attribute is used, as for a type EC2 omits
    first = gpus[0]
    name = str(first.get("Name") or "")
    memory = first.get("MemoryInfo") or {}
    try:
        mib = (to_int(memory.get("SizeInMiB")) if isinstance(memory, dict) else None) or 0
    except IntegerTooLarge:
        mib = 0  # no GPU's memory: unknown, as a missing one
    count = to_decimal(first.get("Count"))
    partition, logical = to_decimal(first.get("GpuPartitionSize")), to_decimal(first.get("LogicalGpuCount"))
    if not count and partition and logical:
        # A slice of one GPU (g6f, gr6f): EC2 reports Count 0 and the slice as GpuPartitionSize of
        # LogicalGpuCount GPUs (moto's DescribeInstanceTypes record: g6f.large 0.125 of an L4).
        count = partition * logical
    if count is None:
        return None
    name = canonical_gpu_by_memory(name, mib) or name  # memory decides A100 40/80 GB, V100 16/32 GB
    return name, count, mib


@dataclass
class AwsFeed:
    session: boto3.Session
    regions: list[str] = field(default_factory=list)
    max_attempts: int = 3
    max_pages: int = 500
    name: str = "aws"
    label: str = "AWS Price List API + EC2"
    _clients: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

    def is_configured(self) -> bool:
        return bool(self.regions) and self.session.get_credentials() is not None

    def not_configured_reason(self) -> str:
        if not self.regions:
            return "PRICING_AWS_REGIONS is empty"
        return "no AWS credentials (set PRICING_AWS_ACCESS_KEY_ID and PRICING_AWS_SECRET_ACCESS_KEY)"

    def client(self, service: str, region: str) -> Any:
        """One boto3 client per (service, region), kept so tests can attach botocore's Stubber to it."""
        key = (service, region)
        if key not in self._clients:
            config = Config(
                retries={"max_attempts": self.max_attempts, "mode": "standard"},
                connect_timeout=settings.PRICING_HTTP_TIMEOUT_S,
                read_timeout=settings.PRICING_HTTP_TIMEOUT_S,
            )
            self._clients[key] = self.session.client(service, region_name=region, config=config)
        return self._clients[key]

    def fetch(self, *, progress: Progress) -> Iterator[OfferRecord | Rejection]:
        try:
            for index, region in enumerate(self.regions):
                progress(index, len(self.regions), f"AWS {region}: price list")
                yield from self._region(region)
            progress(len(self.regions), len(self.regions), "AWS: all regions read")
        except NoCredentialsError as error:
            raise FeedNotConfigured(f"AWS: {error}") from error
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            message = f"AWS {error.operation_name}: {code}: {error.response.get('Error', {}).get('Message', '')}"
            raise (FeedNetworkError if code in RETRYABLE_CODES else FeedError)(message) from error
        except BotoCoreError as error:  # endpoint connection errors, read/connect timeouts
            raise FeedNetworkError(f"AWS: {type(error).__name__}: {error}") from error

    def _region(self, region: str) -> Iterator[OfferRecord | Rejection]:
        products = list(self._products(region))
        instance_types = sorted({_instance_type(p) for p, _ in products} - {""})
        gpus = self._gpu_info(region, instance_types)
        for product, raw in products:
            yield from _price_records(product, raw, region, gpus)
        yield from self._spot(region, instance_types, gpus)

    def _products(self, region: str) -> Iterator[tuple[dict[str, Any], str]]:
        paginator = self.client("pricing", PRICING_REGION).get_paginator("get_products")
        pages = paginator.paginate(ServiceCode="AmazonEC2", Filters=product_filters(region), FormatVersion="aws_v1")
        for number, page in enumerate(pages, start=1):
            if number > self.max_pages:
                raise FeedDataError(f"AWS price list {region}: more than {self.max_pages} pages")
            if "PriceList" not in page:
                raise FeedDataError(f"AWS price list {region} page {number}: truncated page, no PriceList")
            for raw in page["PriceList"]:
                try:
                    product = parse_json_text(raw) if isinstance(raw, str) else raw
                except ValueError as error:  # a cut-off JSON string: the page was truncated
                    raise FeedDataError(
                        f"AWS price list {region} page {number}: malformed product ({error})"
                    ) from error
                yield product, raw

    def _gpu_info(self, region: str, instance_types: list[str]) -> dict[str, tuple[str, Decimal, int]]:
        ec2 = self.client("ec2", region)
        found: dict[str, tuple[str, Decimal, int]] = {}
        for start in range(0, len(instance_types), 100):
            chunk = instance_types[start : start + 100]
            for page in ec2.get_paginator("describe_instance_types").paginate(InstanceTypes=chunk):
                for info in page.get("InstanceTypes", []):
                    gpu = _gpu_from_ec2(info)
                    if gpu:
                        found[info["InstanceType"]] = gpu
        return found

    def _spot(
        self, region: str, instance_types: list[str], gpus: dict[str, tuple[str, Decimal, int]]
    ) -> Iterator[OfferRecord | Rejection]:
        if not instance_types:
            return
        cheapest: dict[str, tuple[Decimal, dt.datetime | None, str]] = {}
        paginator = self.client("ec2", region).get_paginator("describe_spot_price_history")
        pages = paginator.paginate(
            InstanceTypes=instance_types,
            ProductDescriptions=["Linux/UNIX"],
            StartTime=dt.datetime.now(tz=dt.UTC),
        )
        for page in pages:
            for entry in page.get("SpotPriceHistory", []):
                price = to_decimal(entry.get("SpotPrice"))
                instance = entry.get("InstanceType", "")
                if price is None:
                    yield Rejection(
                        "malformed_record", f"aws spot {instance} {region}: SpotPrice {entry.get('SpotPrice')!r}"
                    )
                    continue
                if instance not in cheapest or price < cheapest[instance][0]:
                    cheapest[instance] = (
                        price,
                        parse_datetime(entry.get("Timestamp")),
                        entry.get("AvailabilityZone", ""),
                    )
        for instance, (price, timestamp, zone) in sorted(cheapest.items()):
            name, count = _gpu_name_and_count(instance, gpus, None)
            yield OfferRecord(
                provider="aws",
                instance_type=instance,
                region=region,
                market="spot",
                gpu_name=name,
                gpu=GPU_FIXUPS.get(instance, (None, 0))[0],
                gpu_count=count,
                usd_per_hour=price,
                effective_at=timestamp,
                source=f"AWS EC2 DescribeSpotPriceHistory Linux/UNIX, cheapest zone ({zone})",
            )


def _gpu_name_and_count(
    instance: str, gpus: dict[str, tuple[str, Decimal, int]], attributes: dict[str, Any] | None
) -> tuple[str, Decimal]:
    if instance in GPU_FIXUPS:
        gpu, fixed_count = GPU_FIXUPS[instance]
        return gpu, Decimal(fixed_count)
    if instance in gpus:
        name, count, _ = gpus[instance]
        return name, count
    return "", to_decimal((attributes or {}).get("gpu")) or Decimal(0)


def _attributes(product: Any) -> dict[str, Any]:
    """The product's attributes; MalformedRecord when the PriceList item has not the product.attributes shape."""
    return as_object(as_object(as_object(product, "product").get("product"), "product").get("attributes"), "attributes")


def _instance_type(product: Any) -> str:
    try:
        return as_text(_attributes(product).get("instanceType") or "", "instanceType")
    except MalformedRecord:
        return ""  # _price_records counts it


def _price_records(
    product: Any, raw: Any, region: str, gpus: dict[str, tuple[str, Decimal, int]]
) -> Iterable[OfferRecord | Rejection]:
    """The offers of one product, one per price term; a product of the wrong shape is one malformed record."""
    try:
        return _product_records(product, region, gpus)
    except MalformedRecord as error:
        instance = _instance_type(product)
        return [Rejection("malformed_record", f"aws {instance or '?'} {region}: {error}")]


def _product_records(
    product: dict[str, Any], region: str, gpus: dict[str, tuple[str, Decimal, int]]
) -> list[OfferRecord | Rejection]:
    attributes = _attributes(product)
    instance = as_text(attributes.get("instanceType") or "", "instanceType")
    where = f"aws {instance or '?'} {region}"
    family = product["product"].get("productFamily")
    if not isinstance(family, str) or family not in INSTANCE_FAMILIES or not instance:
        return [Rejection("not_compute_instance", f"{where}: productFamily {family!r}")]
    broken = product_rule_rejection(attributes=attributes, where=where)
    if broken:
        return [broken]
    if attributes.get("marketoption", "OnDemand") != "OnDemand":
        return [Rejection("capacity_block", f"{where}: marketoption {attributes.get('marketoption')}")]
    usage = str(attributes.get("usagetype") or "")
    if not BOX_USAGE.match(usage):
        return [Rejection("not_box_usage", f"{where}: usagetype {usage}")]
    name, count = _gpu_name_and_count(instance, gpus, attributes)
    fixed = GPU_FIXUPS.get(instance, (None, 0))[0]
    try:
        vcpus = to_int(attributes.get("vcpu"))  # str.isdigit() then int() failed on '²'; unknown stays None
    except IntegerTooLarge as error:
        return [vcpus_too_large(where, error)]
    memory = to_decimal(str(attributes.get("memory", "")).replace(" GiB", "").replace(",", ""))
    version = product.get("version", "")
    records: list[OfferRecord | Rejection] = []
    terms = as_object(product.get("terms") or {}, "terms")
    if not (terms.get("OnDemand") or terms.get("Reserved")):
        return [Rejection("no_price_terms", f"{where}: neither an OnDemand nor a Reserved term")]

    def offer(market: str, term: dict[str, Any], price: Decimal, currency: str, term_name: str) -> OfferRecord:
        return OfferRecord(
            provider="aws",
            instance_type=instance,
            region=region,
            market=market,
            gpu_name=name,
            gpu=fixed,
            gpu_count=count,
            usd_per_hour=price,
            currency=currency,
            vcpus=vcpus,
            memory_gib=memory,
            effective_at=parse_datetime(term.get("effectiveDate")),
            source=f"AWS Price List API get_products AmazonEC2 version {version} {term_name}",
        )

    for code, term in as_object(terms.get("OnDemand") or {}, "terms.OnDemand").items():
        try:
            price, unit, currency = _hourly(as_object(term, f"term {code}"))
        except MalformedRecord as error:  # one term of the wrong shape; the product's other terms stand
            records.append(Rejection("malformed_record", f"{where}: {error}"))
            continue
        if price is None:
            records.append(Rejection("malformed_record", f"{where}: on-demand term without an hourly price ({unit})"))
            continue
        records.append(offer("on_demand", term, price, currency, "OnDemand pricePerUnit"))
    for code, term in as_object(terms.get("Reserved") or {}, "terms.Reserved").items():
        try:
            records.append(_reserved_record(as_object(term, f"term {code}"), where, offer))
        except MalformedRecord as error:
            records.append(Rejection("malformed_record", f"{where}: {error}"))
    return records


def _reserved_record(
    term: dict[str, Any], where: str, offer: Callable[[str, dict[str, Any], Decimal, str, str], OfferRecord]
) -> OfferRecord | Rejection:
    attrs = as_object(term.get("termAttributes") or {}, "termAttributes")
    market = RESERVED_MARKETS.get(as_text(attrs.get("LeaseContractLength", ""), "LeaseContractLength"))
    if market is None or attrs.get("OfferingClass") != "standard" or attrs.get("PurchaseOption") != "No Upfront":
        # Convertible and partial/all-upfront terms are alternatives to the one modelled (standard,
        # no upfront), not separate offers: dropped, and counted so the run says how many.
        variant = "/".join(
            str(attrs.get(key, "?")) for key in ("LeaseContractLength", "OfferingClass", "PurchaseOption")
        )
        return Rejection("reserved_variant_not_modelled", f"{where}: {variant}")
    price, unit, currency = _hourly(term)
    if price is None:
        return Rejection("malformed_record", f"{where}: reserved term without an hourly price ({unit})")
    return offer(market, term, price, currency, "Reserved standard no-upfront")


def _hourly(term: dict[str, Any]) -> tuple[Decimal | None, str, str]:
    for code, dimension in as_object(term.get("priceDimensions") or {}, "priceDimensions").items():
        if as_object(dimension, f"priceDimension {code}").get("unit") != "Hrs":
            continue
        prices = as_object(dimension.get("pricePerUnit") or {}, "pricePerUnit")
        if "USD" in prices:
            return to_decimal(prices["USD"]), "Hrs", "USD"
        if prices:
            currency, value = next(iter(prices.items()))
            return to_decimal(value), "Hrs", currency
    return None, "no Hrs dimension", ""


def from_settings() -> AwsFeed:
    session = boto3.Session(
        aws_access_key_id=settings.PRICING_AWS_ACCESS_KEY_ID or None,
        aws_secret_access_key=settings.PRICING_AWS_SECRET_ACCESS_KEY or None,
    )
    return AwsFeed(session=session, regions=list(settings.PRICING_AWS_REGIONS), max_pages=settings.PRICING_MAX_PAGES)


def offer_file_products(payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The products of a bulk offer file (`.../offers/v1.0/aws/AmazonEC2/current/{region}/index.json`),
    each in the `get_products` PriceList item shape: the file keeps products and terms apart, keyed
    by SKU; a PriceList item carries one product with its own terms."""
    terms = payload.get("terms") or {}
    for sku, product in (payload.get("products") or {}).items():
        yield {
            "product": product,
            "serviceCode": payload.get("offerCode", ""),
            "terms": {kind: (terms.get(kind) or {}).get(sku, {}) for kind in ("OnDemand", "Reserved")},
            "version": payload.get("version", ""),
            "publicationDate": payload.get("publicationDate", ""),
        }


def _file_products(path: Path, payload: Any) -> list[dict[str, Any]]:
    """The products one saved file holds: a `get_products` page or a bulk offer file."""
    if isinstance(payload, dict) and isinstance(payload.get("products"), dict):
        terms = payload.get("terms") or {}
        if not isinstance(terms, dict) or not all(
            isinstance(terms.get(kind) or {}, dict) for kind in ("OnDemand", "Reserved")
        ):
            raise FeedFileError(path, "an AWS offer file whose 'terms' is not an object of OnDemand/Reserved objects")
        items: list[Any] = list(offer_file_products(payload))
    elif isinstance(payload, dict) and isinstance(payload.get("PriceList"), list):
        items = payload["PriceList"]
    else:
        raise FeedFileError(
            path,
            "not an AWS get_products page ('PriceList'), offer file ('products') nor describe_instance_types",
        )
    products = []
    for raw in items:
        try:
            products.append(parse_json_text(raw) if isinstance(raw, str) else raw)
        except ValueError as error:  # a cut-off JSON string: the file was truncated
            raise FeedFileError(path, f"malformed product ({error})") from error
    return products


def records_from_files(paths: list[Path], *, cloud: str | None = None) -> list[OfferRecord | Rejection]:
    """Saved `get_products` pages ({"PriceList": [...]}) or bulk offer files ({"products": ..., "terms":
    ...}) for `import_prices`, with any saved `describe_instance_types` responses ({"InstanceTypes":
    [...]}) among the files giving the GPUs."""
    products: list[dict[str, Any]] = []
    gpus: dict[str, tuple[str, Decimal, int]] = {}
    for path in paths:
        payload = read_json(path)
        if isinstance(payload, dict) and isinstance(payload.get("InstanceTypes"), list):
            for info in payload["InstanceTypes"]:
                gpu = _gpu_from_ec2(info) if isinstance(info, dict) else None
                if gpu:
                    gpus[str(info.get("InstanceType"))] = gpu
            continue
        products.extend(_file_products(path, payload))
    records: list[OfferRecord | Rejection] = []
    for product in products:
        try:
            region = str(_attributes(product).get("regionCode") or "")
        except MalformedRecord:
            region = ""  # _price_records counts the product
        records.extend(_price_records(product, product, region, gpus))
    return records
