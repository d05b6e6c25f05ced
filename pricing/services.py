"""Writes: refresh a feed (fetch, validate, one transaction), ingest offers, load the bundled data.

A failing feed never touches the current offers: it raises before the transaction opens, or the
run is rejected (far fewer offers than last time) before anything is written. Ingest is keyed on
(provider, instance type, region, market), so the same refresh twice creates nothing and appends
no history; history rows are appended only for new offers and price changes.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import logging
import os
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from decimal import Decimal
from itertools import islice
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, connection, models, transaction
from django.db.backends.base.operations import BaseDatabaseOperations
from django.utils import timezone

from pricing.feeds import PART_SEPARATOR, UnknownFeedPart, feed_units, file_reader, get_feed, import_unit
from pricing.feeds.base import (
    FeedDataError,
    FeedError,
    FeedNotConfigured,
    OfferRecord,
    Progress,
    Rejection,
    no_progress,
    shown,
    to_decimal,
)
from pricing.models import (
    SNAPSHOT_FEED,
    FeedLock,
    FeedRun,
    HardwareQuote,
    Market,
    Offer,
    OwnershipDefault,
    PriceObservation,
    Provider,
)

logger = logging.getLogger(__name__)

DATA_DIR = Path(__file__).resolve().parent / "data"
SNAPSHOT_CSV = DATA_DIR / "gpu_price_snapshot.csv"
HARDWARE_QUOTES_CSV = DATA_DIR / "hardware_quotes.csv"
OWNERSHIP_DEFAULTS_CSV = DATA_DIR / "ownership_defaults.csv"
MARKETS = frozenset(Market.values)
MAX_EXAMPLES_PER_REASON = 5
# How far a record's own date may run ahead of this machine's clock (the other machine's clock runs a little fast)
# before it is refused as `observed_in_future`: a later date would keep its prices "fresh" until then.
MAX_CLOCK_SKEW = dt.timedelta(minutes=5)
OBSERVED_IN_FUTURE = "observed_in_future"
# A record dated before the stored observation of its offer does not replace it (an older file imported last).
OLDER_THAN_STORED = "older_than_stored"

PROVIDER_NAMES = {
    "aws": "AWS",
    "azure": "Azure",
    "gcp": "Google Cloud",
    "lambda": "Lambda",
    "runpod": "RunPod",
    "vast": "Vast.ai",
    "nebius": "Nebius",
    "cudo": "Cudo Compute",
    "fluidstack": "Fluidstack",
    "oci": "Oracle Cloud",
    "crusoe": "Crusoe",
    "vultr": "Vultr",
    "digitalocean": "DigitalOcean",
    "do": "DigitalOcean",
    "coreweave": "CoreWeave",
}


# --- validation --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ValidOffer:
    """A record that passed validation, with its values as the Offer columns store them (so a re-run
    compares equal and every value fits its column)."""

    record: OfferRecord
    gpu: str
    gpu_count: Decimal
    usd_per_hour: Decimal
    usd_per_gpu_hour: Decimal
    vcpus: int | None = None
    memory_gib: Decimal | None = None


@dataclass
class Validation:
    accepted: list[ValidOffer] = field(default_factory=list)
    fetched: int = 0
    rejections: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def rejected(self) -> int:
        return sum(entry["count"] for entry in self.rejections.values())

    def reject(self, reason: str, detail: str) -> None:
        entry = self.rejections.setdefault(reason, {"count": 0, "examples": []})
        entry["count"] += 1
        if len(entry["examples"]) < MAX_EXAMPLES_PER_REASON:
            # The examples go to a JSON column: PostgreSQL's jsonb refuses the NUL a rejected record may hold.
            entry["examples"].append(detail.replace("\x00", "\\x00")[:200])

    def set_aside(self, refused: list[tuple[ValidOffer, Rejection]]) -> None:
        """Move accepted records the ingest refused (`OLDER_THAN_STORED`) to the rejected ones, so a run's and an
        import's summary count each record once, under its reason."""
        if not refused:
            return
        ids = {id(item) for item, _ in refused}
        self.accepted = [item for item in self.accepted if id(item) not in ids]
        for _, rejection in refused:
            self.reject(rejection.reason, rejection.detail)


def price_bounds() -> tuple[Decimal, Decimal]:
    """The plausible USD per GPU-hour range from settings."""
    return (
        Decimal(str(settings.PRICING_MIN_USD_PER_GPU_HOUR)),
        Decimal(str(settings.PRICING_MAX_USD_PER_GPU_HOUR)),
    )


# The columns a record's values are stored in: their sizes are the model's, read here, not repeated.
_TEXT_COLUMNS: tuple[tuple[str, models.Field], ...] = (
    ("provider", Provider._meta.get_field("slug")),
    ("instance_type", Offer._meta.get_field("instance_type")),
    ("region", Offer._meta.get_field("region")),
    ("source", Offer._meta.get_field("source")),
)


def _stored_decimal(value: object, name: str) -> Decimal | None:
    """`value` rounded as the Offer column `name` stores it, or None when the column cannot hold it (not a
    finite Decimal, or too large for DECIMAL(max_digits, decimal_places): SQLite would store it and fail
    on every later read, PostgreSQL refuses the whole transaction)."""
    column = Offer._meta.get_field(name)
    assert isinstance(column, models.DecimalField)
    if not isinstance(value, Decimal) or not value.is_finite():
        return None
    limit = Decimal(10) ** (column.max_digits - column.decimal_places)
    if abs(value) >= limit:  # checked before rounding: quantize raises on a value with more digits than the context
        return None
    stored = value.quantize(Decimal(1).scaleb(-column.decimal_places))
    return stored if abs(stored) < limit else None  # 999.9996 rounds to 1000.000


def _decimal_column_type(name: str) -> str:
    column = Offer._meta.get_field(name)
    assert isinstance(column, models.DecimalField)
    return f"DECIMAL({column.max_digits},{column.decimal_places})"


def _integer_range(name: str) -> tuple[int, int]:
    """The range Django documents for the column's integer type: PostgreSQL enforces it, SQLite does not,
    so checking it here makes both refuse the same records."""
    column = Offer._meta.get_field(name)
    assert isinstance(column, models.Field)
    low, high = BaseDatabaseOperations.integer_field_ranges[column.get_internal_type()]
    return low, high


def _text_problem(record: OfferRecord) -> tuple[str, str] | None:
    """(field, why) for the first text value its column cannot hold: too long, or a NUL (PostgreSQL text refuses it)."""
    for name, column in _TEXT_COLUMNS:
        value = getattr(record, name)
        if not isinstance(value, str):
            return name, f"{name} is {type(value).__name__}, not text"
        if "\x00" in value:
            return name, f"{name} holds a NUL character"
        if column.max_length is not None and len(value) > column.max_length:
            return name, f"{name} has {len(value)} characters, the column holds {column.max_length}"
    return None


def _positive(value: object) -> bool:
    return isinstance(value, Decimal) and value.is_finite() and value > 0


def _stored_positive(value: object, name: str, not_positive: str, where: str) -> Decimal | Rejection:
    """A count or price as its column stores it, still above zero after rounding (the CHECK constraints
    and the per-GPU price divide by it); `not_positive` is the reason when it is not."""
    if not _positive(value):
        return Rejection(not_positive, f"{where}: {name} {shown(value)}")
    stored = _stored_decimal(value, name)
    if stored is None:
        return Rejection(f"invalid_{name}", f"{where}: {name} {shown(value)} does not fit {_decimal_column_type(name)}")
    if stored <= 0:
        return Rejection(not_positive, f"{where}: {name} {shown(value)} is 0 at the stored precision")
    return stored


def _stored_specs(record: OfferRecord, where: str) -> tuple[int | None, Decimal | None] | Rejection:
    """(vCPUs, memory GiB) as their columns store them; both are optional, a value given must fit."""
    low, high = _integer_range("vcpus")
    # bool is an int subclass, and JSON's true is no vCPU count.
    if record.vcpus is not None and not (type(record.vcpus) is int and low <= record.vcpus <= high):
        return Rejection("invalid_vcpus", f"{where}: vcpus {shown(record.vcpus)} is no integer in [{low}, {high}]")
    if record.memory_gib is None:
        return record.vcpus, None
    memory_gib = _stored_decimal(record.memory_gib, "memory_gib")
    if memory_gib is None or memory_gib < 0:  # the column would hold a negative size; no machine has one
        return Rejection(
            "invalid_memory_gib",
            f"{where}: memory_gib {shown(record.memory_gib)} is no size {_decimal_column_type('memory_gib')} holds",
        )
    return record.vcpus, memory_gib


def _observed_in_future(record: OfferRecord, where: str, now: dt.datetime | None) -> Rejection | None:
    """A record dated by its source later than `now` (beyond MAX_CLOCK_SKEW) is refused: stored, that date would
    call its price fresh until then (a catalog file dated 2031 silenced the staleness warning for five years)."""
    if record.observed_at is None:
        return None
    now = now or timezone.now()
    if record.observed_at <= now + MAX_CLOCK_SKEW:
        return None
    return Rejection(
        OBSERVED_IN_FUTURE,
        f"{where[:120]}: observed {record.observed_at:%Y-%m-%d %H:%M} UTC, after now ({now:%Y-%m-%d %H:%M} UTC)",
    )


def validate_offer(
    record: OfferRecord, *, bounds: tuple[Decimal, Decimal] | None = None, now: dt.datetime | None = None
) -> ValidOffer | Rejection:
    """Check one record: currency, market, GPU id, positive count and price, plausible $/GPU-hour, a date of
    its own no later than `now` (default: the clock; MAX_CLOCK_SKEW allowed), and that every value fits the
    column it is stored in (rounded to the stored precision, counts and prices still positive). A value that
    does not fit is one rejected record (`invalid_<field>`), never a failed run."""
    where = f"{record.provider} {record.instance_type} {record.region or '-'} {record.market}"
    if record.currency != "USD":
        return Rejection("currency_not_usd", f"{where}: {record.currency}")
    if record.market not in MARKETS:
        return Rejection("unknown_market", f"{where}: {record.market!r}")
    if not record.instance_type or not record.provider:
        missing = " and ".join(name for name in ("provider", "instance_type") if not getattr(record, name))
        return Rejection("missing_identity", f"{where}: no {missing} (source: {record.source[:160]})")
    text = _text_problem(record)
    if text is not None:
        return Rejection(f"invalid_{text[0]}", f"{where[:120]}: {text[1]}")
    future = _observed_in_future(record, where, now)
    if future is not None:
        return future
    gpu = record.canonical_gpu
    if gpu is None:
        return Rejection("unknown_gpu", f"{where}: GPU name {record.gpu_name!r}")
    gpu_count = _stored_positive(record.gpu_count, "gpu_count", "no_gpu_count", where)
    if isinstance(gpu_count, Rejection):
        return gpu_count
    usd_per_hour = _stored_positive(record.usd_per_hour, "usd_per_hour", "non_positive_price", where)
    if isinstance(usd_per_hour, Rejection):
        return usd_per_hour
    per_gpu = record.usd_per_hour / record.gpu_count
    low, high = bounds or price_bounds()
    if not (low <= per_gpu <= high):
        return Rejection("implausible_per_gpu_price", f"{where}: ${per_gpu:.4f}/GPU-h outside [{low}, {high}]")
    usd_per_gpu_hour = _stored_decimal(per_gpu, "usd_per_gpu_hour")
    if usd_per_gpu_hour is None:  # only when the configured price bounds exceed the column
        return Rejection("invalid_usd_per_gpu_hour", f"{where}: ${per_gpu}/GPU-h does not fit the column")
    specs = _stored_specs(record, where)
    if isinstance(specs, Rejection):
        return specs
    return ValidOffer(
        record=record,
        gpu=gpu,
        gpu_count=gpu_count,
        usd_per_hour=usd_per_hour,
        usd_per_gpu_hour=usd_per_gpu_hour,
        vcpus=specs[0],
        memory_gib=specs[1],
    )


def _nothing_accepted(checked: Validation) -> str:
    """Why an import stored nothing, as the feed's status says it: every record older than the stored prices, or
    none valid (the detail named the older prices whatever the reasons were: a reviewer's unknown GPU)."""
    if set(checked.rejections) == {OLDER_THAN_STORED}:
        return "the files held no valid offer newer than the stored ones"
    return "the files held no valid offers"


def _newer(candidate: ValidOffer, kept: ValidOffer) -> bool:
    """Whether ``candidate`` was observed after ``kept`` (both dated); an undated one never replaces."""
    a, b = candidate.record.observed_at, kept.record.observed_at
    return a is not None and b is not None and a > b


def validate_all(items: Iterable[OfferRecord | Rejection], *, now: dt.datetime | None = None) -> Validation:
    """Validate every record (`validate_offer`, one clock reading for them all) and refuse duplicates: of one offer
    listed twice, the newest-dated record is kept (two saved files imported together, the older first, kept the older
    price where importing them one by one keeps the newer: a reviewer), else the first."""
    result = Validation()
    kept_at: dict[tuple[str, str, str, str], int] = {}
    bounds = price_bounds()
    now = now or timezone.now()
    for item in items:
        result.fetched += 1
        checked = item if isinstance(item, Rejection) else validate_offer(item, bounds=bounds, now=now)
        if isinstance(checked, Rejection):
            result.reject(checked.reason, checked.detail)
            continue
        key = checked.record.key
        if key in kept_at:
            result.reject("duplicate_offer", " ".join(key))
            if _newer(checked, result.accepted[kept_at[key]]):
                result.accepted[kept_at[key]] = checked
            continue
        kept_at[key] = len(result.accepted)
        result.accepted.append(checked)
    result.warnings.extend(_spot_above_on_demand(result.accepted))
    return result


def _spot_above_on_demand(offers: list[ValidOffer]) -> list[str]:
    on_demand = {
        (o.record.provider, o.record.instance_type, o.record.region): o.usd_per_hour
        for o in offers
        if o.record.market == Market.ON_DEMAND
    }
    warnings = []
    for offer in offers:
        if offer.record.market != Market.SPOT:
            continue
        base = on_demand.get((offer.record.provider, offer.record.instance_type, offer.record.region))
        if base is not None and offer.usd_per_hour > base:
            warnings.append(
                f"spot above on-demand: {offer.record.provider} {offer.record.instance_type} "
                f"{offer.record.region or '-'} ${offer.usd_per_hour}/h > ${base}/h"
            )
    return warnings[:50]


# --- ingest ------------------------------------------------------------------------------------


@dataclass
class IngestCounts:
    created: int = 0
    changed: int = 0
    unchanged: int = 0
    skipped_live: int = 0
    withdrawn: int = 0
    # Records that did not supersede the stored offer, with why (`Validation.set_aside` counts them as rejected).
    refused: list[tuple[ValidOffer, Rejection]] = field(default_factory=list)


def _chunks(items: Iterable[ValidOffer], size: int) -> Iterator[list[ValidOffer]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _provider_ids(slugs: set[str], cache_ids: dict[str, int]) -> dict[str, int]:
    missing = slugs - cache_ids.keys()
    if missing:
        for provider in Provider.objects.filter(slug__in=missing):
            cache_ids[provider.slug] = provider.id
        for slug in missing - cache_ids.keys():
            provider, _ = Provider.objects.get_or_create(slug=slug, defaults={"name": PROVIDER_NAMES.get(slug, slug)})
            cache_ids[slug] = provider.id
    return cache_ids


def _lock_providers(provider_ids: Iterable[int]) -> None:
    """Hold the providers' rows until the transaction ends, so that writers of one provider's offers take turns.
    Two feeds (lambda and skypilot:lambda: different refresh locks) may write the same offer: under PostgreSQL
    READ COMMITTED both saw it missing and the second insert failed with a unique violation. The rows are locked
    in id order (one batch's providers at once), and the offers are read only after the lock is granted, so the
    second writer sees the first's. SQLite has no row locks and needs none: its write transactions take the
    database's write lock when they begin (settings: IMMEDIATE)."""
    list(Provider.objects.select_for_update().filter(id__in=set(provider_ids)).order_by("id").values_list("id"))


# Columns written by the ingest, in order; the rest of the row is the identity (provider, instance, region, market).
_OFFER_VALUE_FIELDS = (
    "gpu",
    "gpu_count",
    "vcpus",
    "memory_gib",
    "usd_per_hour",
    "usd_per_gpu_hour",
    "observed_at",
    "effective_at",
    "source",
    "feed",
    "is_snapshot",
    "price_changed_at",
    "withdrawn_at",
    "last_run",
)
_OFFER_KEY_FIELDS = ("provider", "instance_type", "region", "market")
_HISTORY_FIELDS = ("offer", "usd_per_hour", "usd_per_gpu_hour", "observed_at", "recorded_at", "source", "feed_run")
_EXISTING_FIELDS = (
    "id",
    "provider_id",
    "instance_type",
    "region",
    "market",
    "usd_per_hour",
    "gpu",
    "gpu_count",
    "source",
    "feed",
    "withdrawn_at",
    "effective_at",
    "observed_at",
    "price_changed_at",
)


def _column(model: type[models.Model], name: str) -> str:
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)  # only concrete fields have a column (not reverse relations)
    return connection.ops.quote_name(field.column)


def _columns(model: type[models.Model], names: Iterable[str]) -> list[str]:
    return [_column(model, name) for name in names]


def _insert_sql(model: type[models.Model], names: tuple[str, ...]) -> str:
    columns = _columns(model, names)
    table = connection.ops.quote_name(model._meta.db_table)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))})"  # noqa: S608 (identifiers from model metadata; values are parameters)


def _update_sql(model: type[models.Model], names: tuple[str, ...]) -> str:
    assignments = ", ".join(f"{column} = %s" for column in _columns(model, names))
    table = connection.ops.quote_name(model._meta.db_table)
    return f"UPDATE {table} SET {assignments} WHERE {connection.ops.quote_name('id')} = %s"  # noqa: S608 (identifiers from model metadata)


def _insert_rows(cursor: Any, model: type[models.Model], names: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    """Insert many rows in one go: COPY on PostgreSQL, executemany elsewhere (SQLite runs it in C)."""
    if connection.vendor == "postgresql":
        table = connection.ops.quote_name(model._meta.db_table)
        # COPY goes to psycopg's own cursor: wrapped, its errors are Django's (DatabaseError) as a statement's are.
        with (
            connection.wrap_database_errors,
            cursor.cursor.copy(f"COPY {table} ({', '.join(_columns(model, names))}) FROM STDIN") as copy,
        ):
            for row in rows:
                copy.write_row(row)
    else:
        cursor.executemany(_insert_sql(model, names), rows)


def _update_rows(cursor: Any, model: type[models.Model], names: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
    """Update many rows by id (each row: the values of `names`, then the id). On PostgreSQL the rows
    are copied into a temporary table and applied with one UPDATE ... FROM; elsewhere executemany."""
    if connection.vendor != "postgresql":
        cursor.executemany(_update_sql(model, names), rows)
        return
    table = connection.ops.quote_name(model._meta.db_table)
    columns = _columns(model, names)
    key = connection.ops.quote_name("id")
    staging = connection.ops.quote_name(f"{model._meta.db_table}_ingest")
    cursor.execute(
        f"CREATE TEMPORARY TABLE IF NOT EXISTS {staging} AS "  # noqa: S608 (identifiers from model metadata)
        f"SELECT {', '.join(columns)}, {key} FROM {table} WITH NO DATA"
    )
    cursor.execute(f"TRUNCATE {staging}")
    with (
        connection.wrap_database_errors,
        cursor.cursor.copy(f"COPY {staging} ({', '.join(columns)}, {key}) FROM STDIN") as copy,
    ):
        for row in rows:
            copy.write_row(row)
    assignments = ", ".join(f"{column} = staged.{column}" for column in columns)
    cursor.execute(
        f"UPDATE {table} SET {assignments} FROM {staging} AS staged "  # noqa: S608 (identifiers from model metadata)
        f"WHERE {table}.{key} = staged.{key}"
    )


def _datetime_adapter(now: dt.datetime) -> Callable[[dt.datetime | None], Any]:
    """The backend's datetime adaptation, looked up once, with `now` (most rows' value) adapted once."""
    adapt = connection.ops.adapt_datetimefield_value
    db_now = adapt(now)

    def to_db(value: dt.datetime | None) -> Any:
        if value is None:
            return None
        return db_now if value is now else adapt(value)

    return to_db


def ingest_offers(
    *,
    feed: str,
    offers: Iterable[ValidOffer],
    run: FeedRun | None = None,
    now: dt.datetime | None = None,
    is_snapshot: bool = False,
    batch_size: int = 2000,
    progress: Progress = no_progress,
    total: int = 0,
) -> IngestCounts:
    """Upsert validated offers in batches and append history for new offers and price changes.

    Streams: memory holds one batch at a time, and each batch costs a handful of statements
    (one lookup, one multi-row insert or update per kind) instead of several per row. Live feeds
    stamp `observed_at` with `now` unless the record carries the source's own date (a SkyPilot
    catalog file's timestamp); the snapshot keeps the source's own date and never overwrites
    an offer a live feed wrote. Call inside a transaction; `withdraw_missing` withdraws the rest.
    """
    now = now or timezone.now()
    counts = IngestCounts()
    provider_ids: dict[str, int] = {}
    run_id = run.id if run else None
    to_db = _datetime_adapter(now)
    db_now = to_db(now)
    offer_insert_fields = (*_OFFER_KEY_FIELDS, *_OFFER_VALUE_FIELDS, "first_seen_at")
    done = 0
    with connection.cursor() as cursor:
        for batch in _chunks(offers, batch_size):
            ids = _provider_ids({o.record.provider for o in batch}, provider_ids)
            _lock_providers(ids[o.record.provider] for o in batch)
            instances = {o.record.instance_type for o in batch}
            existing = {
                row[1:5]: row
                for row in Offer.objects.filter(
                    provider_id__in={ids[o.record.provider] for o in batch}, instance_type__in=instances
                ).values_list(*_EXISTING_FIELDS)
            }
            new_rows: list[tuple[Any, ...]] = []
            new_items: dict[tuple[int, str, str, str], tuple[ValidOffer, Any]] = {}
            updates: list[tuple[Any, ...]] = []
            confirmed: list[int] = []
            confirmed_own: list[int] = []
            history: list[tuple[Any, ...]] = []
            for item in batch:
                record = item.record
                key = (ids[record.provider], record.instance_type, record.region, record.market)
                observed_at = record.observed_at if is_snapshot else (record.observed_at or now)
                current = existing.get(key)
                if current is None:
                    if key in new_items:
                        continue  # validate_all already refuses duplicates; this guards direct callers
                    values = _offer_values(item, feed, observed_at, now, run_id, is_snapshot, to_db)
                    new_items[key] = (item, values[6])  # values[6]: observed_at, adapted for the database
                    new_rows.append((*key, *values, db_now))
                    continue
                (offer_id, _, _, _, _, price, gpu, gpu_count, source, owner, withdrawn, effective, seen, since) = (
                    current
                )
                if is_snapshot and (owner != SNAPSHOT_FEED or withdrawn is not None):
                    counts.skipped_live += 1
                    continue
                older = _older_than_stored(item, owner=owner, stored=seen, now=now)
                if older is not None:
                    counts.refused.append((item, older))
                    if owner == feed:  # its feed still lists it: this run must not withdraw it
                        confirmed_own.append(offer_id)
                    continue
                price_changed = price != item.usd_per_hour
                described_differently = (
                    gpu != item.gpu
                    or gpu_count != item.gpu_count
                    or source != record.source
                    or owner != feed
                    or withdrawn is not None
                    or effective != record.effective_at
                    or ((is_snapshot or record.observed_at is not None) and seen != observed_at)
                )
                if not (price_changed or described_differently):
                    counts.unchanged += 1
                    # A record dated by its source keeps that date; an undated one was seen now.
                    (confirmed_own if record.observed_at is not None else confirmed).append(offer_id)
                    continue
                counts.changed += price_changed
                counts.unchanged += not price_changed
                changed_at = now if price_changed else since
                updates.append(
                    (*_offer_values(item, feed, observed_at, changed_at, run_id, is_snapshot, to_db), offer_id)
                )
                if price_changed:
                    history.append(_history_row(offer_id, item, to_db(observed_at), db_now, run_id))
            if new_rows:
                _insert_rows(cursor, Offer, offer_insert_fields, new_rows)
                counts.created += len(new_rows)
                history.extend(_created_history(new_items, db_now, run_id))
            if updates:
                _update_rows(cursor, Offer, _OFFER_VALUE_FIELDS, updates)
            if confirmed and not is_snapshot:
                Offer.objects.filter(id__in=confirmed).update(observed_at=now, last_run=run)
            if confirmed_own and not is_snapshot:
                Offer.objects.filter(id__in=confirmed_own).update(last_run=run)
            if history:
                _insert_rows(cursor, PriceObservation, _HISTORY_FIELDS, history)
            done += len(batch)
            progress(done, total, f"saved {done} offers")
    return counts


def _created_history(
    new_items: dict[tuple[int, str, str, str], tuple[ValidOffer, Any]], db_now: Any, run_id: int | None
) -> list[tuple[Any, ...]]:
    """The first history row of each offer just inserted (`new_items`: identity -> (offer, adapted observed_at));
    their ids are read back by identity."""
    created = Offer.objects.filter(
        provider_id__in={key[0] for key in new_items},
        instance_type__in={key[1] for key in new_items},
    ).values_list("id", "provider_id", "instance_type", "region", "market")
    rows = []
    for offer_id, provider_id, instance_type, region, market in created:
        new = new_items.get((provider_id, instance_type, region, market))
        if new is not None:
            rows.append(_history_row(offer_id, new[0], new[1], db_now, run_id))
    return rows


def _older_than_stored(
    item: ValidOffer, *, owner: str, stored: dt.datetime | None, now: dt.datetime
) -> Rejection | None:
    """An `OLDER_THAN_STORED` rejection when the record's own date is before the stored observation of its
    offer: an older file imported (or served) after a newer one must not bring back its price. The bundled
    snapshot is superseded by any live price, as `withdraw_missing` does, and a stored date in the future
    (written before such dates were refused) is no reason to keep a price."""
    observed = item.record.observed_at
    if observed is None or stored is None or owner == SNAPSHOT_FEED:
        return None
    if observed >= stored or stored > now + MAX_CLOCK_SKEW:
        return None
    record = item.record
    return Rejection(
        OLDER_THAN_STORED,
        f"{record.provider} {record.instance_type} {record.region or '-'} {record.market}: ${item.usd_per_hour}/h "
        f"observed {observed:%Y-%m-%d %H:%M} UTC, before the stored observation of {stored:%Y-%m-%d %H:%M} UTC",
    )


def _offer_values(
    item: ValidOffer,
    feed: str,
    observed_at: dt.datetime | None,
    price_changed_at: dt.datetime,
    run_id: int | None,
    is_snapshot: bool,
    to_db: Callable[[dt.datetime | None], Any],
) -> tuple[Any, ...]:
    """Values for _OFFER_VALUE_FIELDS, in order, adapted for the database."""
    record = item.record
    return (
        item.gpu,
        item.gpu_count,
        item.vcpus,
        item.memory_gib,
        item.usd_per_hour,
        item.usd_per_gpu_hour,
        to_db(observed_at),
        to_db(record.effective_at),
        record.source,
        feed,
        is_snapshot,
        to_db(price_changed_at),
        None,
        run_id,
    )


def _history_row(
    offer_id: int, item: ValidOffer, db_observed_at: Any, db_now: Any, run_id: int | None
) -> tuple[Any, ...]:
    return (
        offer_id,
        item.usd_per_hour,
        item.usd_per_gpu_hour,
        db_observed_at,
        db_now,
        item.record.source,
        run_id,
    )


def withdraw_missing(*, feed: str, run: FeedRun, now: dt.datetime, providers: Iterable[str] = ()) -> int:
    """Withdraw this feed's offers that the successful `run` did not list, and the bundled snapshot's
    offers of the providers the run covered: live prices supersede the snapshot of those providers.
    Imports (`feed_import`) never call this: a price sheet is not the whole catalog."""
    missing = Offer.objects.filter(feed=feed, withdrawn_at__isnull=True).exclude(last_run=run).update(withdrawn_at=now)
    # The snapshot's offers of these providers, and those a group feed wrote before its parts ran on
    # their own (offers of feed "skypilot" when "skypilot:runpod" has run).
    previous_owners = [SNAPSHOT_FEED, *([feed.partition(PART_SEPARATOR)[0]] if PART_SEPARATOR in feed else [])]
    superseded = Offer.objects.filter(
        feed__in=previous_owners, withdrawn_at__isnull=True, provider__slug__in=list(providers)
    ).update(withdrawn_at=now)
    return missing + superseded


# --- the lock ----------------------------------------------------------------------------------


def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _lock_token() -> str:
    """`<host>.<pid>.<random>` (at most 40 characters): lets a later refresh see that the holder died."""
    return f"{_host_tag()}.{os.getpid():x}.{uuid.uuid4().hex[:22]}"


def _holder_is_dead(token: str) -> bool:
    """True only when the holder ran on this host and its process is gone (a worker killed mid-refresh)."""
    host, _, rest = token.partition(".")
    pid_hex, _, _ = rest.partition(".")
    if host != _host_tag() or not pid_hex:
        return False
    try:
        pid = int(pid_hex, 16)
    except ValueError:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, not ours to signal
        return False
    return False


def feed_lock_acquire(*, feed: str, ttl_s: int | None = None) -> str | None:
    """Take the database lock for `feed`; None when another refresh holds it and it has not expired.

    A lock whose holder process is gone (same host) is taken over at once, and the dead holder's
    runs are marked failed: a worker killed mid-refresh does not block the redelivered task."""
    now = timezone.now()
    token = _lock_token()
    expires_at = now + dt.timedelta(seconds=ttl_s or settings.PRICING_LOCK_TTL_S)
    try:
        with transaction.atomic():
            FeedLock.objects.create(feed=feed, token=token, expires_at=expires_at)
        return token
    except IntegrityError:
        taken_over = FeedLock.objects.filter(feed=feed, expires_at__lt=now).update(token=token, expires_at=expires_at)
        if not taken_over:
            holder = FeedLock.objects.filter(feed=feed).values_list("token", flat=True).first()
            if holder and _holder_is_dead(holder):
                taken_over = FeedLock.objects.filter(feed=feed, token=holder).update(token=token, expires_at=expires_at)
        if taken_over:
            _fail_running(feed=feed, now=now)
        return token if taken_over else None


INTERRUPTED_PREFIX = "the refresh stopped without finishing"


def _fail_running(*, feed: str, now: dt.datetime) -> int:
    return FeedRun.objects.filter(feed=feed, status=FeedRun.Status.RUNNING).update(
        status=FeedRun.Status.FAILED,
        finished_at=now,
        error=f"{INTERRUPTED_PREFIX} (its worker died); nothing it started was kept",
    )


def fail_orphaned_runs() -> int:
    """Mark failed the "running" runs whose refresh is gone: no lock held for the feed, an expired lock, or a lock
    whose holder process died; without this a killed worker's run shows "running" until the next refresh."""
    now = timezone.now()
    failed = 0
    for feed in FeedRun.objects.filter(status=FeedRun.Status.RUNNING).values_list("feed", flat=True).distinct():
        lock = FeedLock.objects.filter(feed=feed).first()
        if lock is None or lock.expires_at < now or _holder_is_dead(lock.token):
            failed += _fail_running(feed=feed, now=now)
    return failed


def feed_lock_release(*, feed: str, token: str) -> None:
    FeedLock.objects.filter(feed=feed, token=token).delete()


# A live refresh pushes its lock's expiry out again at most this often, on its progress reports: a command-line
# refresh has no time limit, and one that ran past PRICING_LOCK_TTL_S let a scheduled refresh take the lock over and
# run beside it (left alone in two sessions).
LOCK_RENEW_EVERY_S = 60.0


class FeedLockLost(FeedError):
    """Another refresh took this one's lock over (it had expired): nothing of this run may be saved."""


def feed_lock_renew(*, feed: str, token: str, ttl_s: int | None = None) -> None:
    """The lock held by ``token`` expires PRICING_LOCK_TTL_S from now; FeedLockLost where it is no longer held."""
    expires_at = timezone.now() + dt.timedelta(seconds=ttl_s or settings.PRICING_LOCK_TTL_S)
    if not FeedLock.objects.filter(feed=feed, token=token).update(expires_at=expires_at):
        raise FeedLockLost("another refresh took this feed's lock over (this one had outlived it); nothing was saved")


def _lock_renewing(feed: str, token: str, outer: Progress) -> Progress:
    """``outer`` that first renews the feed's lock, at most every LOCK_RENEW_EVERY_S seconds."""
    renewed_at = time.monotonic()

    def report(done: int, total: int, note: str) -> None:
        nonlocal renewed_at
        if time.monotonic() - renewed_at >= LOCK_RENEW_EVERY_S:
            feed_lock_renew(feed=feed, token=token)
            renewed_at = time.monotonic()
        outer(done, total, note)

    return report


# --- the refresh -------------------------------------------------------------------------------


def progress_cache_key(run_id: int) -> str:
    return f"pricing:feedrun:{run_id}:progress"


def _run_progress(run: FeedRun, outer: Progress) -> Progress:
    def report(done: int, total: int, note: str) -> None:
        cache.set(progress_cache_key(run.id), {"done": done, "total": total, "note": note[:200]}, timeout=3600)
        outer(done, total, note)

    return report


def _finish(run: FeedRun, status: str, **fields: Any) -> FeedRun:
    run.status = status
    run.finished_at = timezone.now()
    for name, value in fields.items():
        setattr(run, name, value)
    run.save()
    cache.delete(progress_cache_key(run.id))
    return run


RETRIES_EXHAUSTED = "retries exhausted"
# What a network failure that nothing retries says (a refresh from `refresh_prices`, or in-process without Redis):
# only a run a Celery worker retries is `retryable` ("will retry").
NOT_RETRIED = "not retried; refresh again"


def next_scheduled_refresh(*, feed: str, after: dt.datetime) -> dt.datetime | None:
    """The latest moment beat queues `feed` again (a part of a group feed runs with its group): beat's interval
    after `after`, as beat ticked at or before it; None when beat has no entry for the feed."""
    hours = settings.PRICING_REFRESH_HOURS.get(feed.split(PART_SEPARATOR, 1)[0])
    return after + dt.timedelta(hours=hours) if hours else None


def record_retries_exhausted(*, run: FeedRun) -> FeedRun:
    """Mark a network failure as the last attempt: Celery used all its retries, so nothing retries the feed
    until beat's next refresh (named when the schedule knows it). The run is no longer `retryable`."""
    note = RETRIES_EXHAUSTED
    when = next_scheduled_refresh(feed=run.feed, after=run.finished_at or timezone.now())
    if when is not None:
        note += f"; next scheduled refresh by {when:%Y-%m-%d %H:%M} UTC"
    run.retryable = False
    run.error = f"{run.error}; {note}" if run.error else note
    run.save(update_fields=["retryable", "error"])
    return run


def _summary(checked: Validation) -> dict[str, Any]:
    """The FeedRun fields that count a run's records: fetched, accepted, rejected and why."""
    return {
        "fetched": checked.fetched,
        "accepted": len(checked.accepted),
        "rejected": checked.rejected,
        "rejections": checked.rejections,
    }


def database_error_text(error: BaseException) -> str:
    """One line for a database error that ended a refresh or an import (the commands print it; the full text,
    with PostgreSQL's DETAIL and CONTEXT lines, stays in the run's error and the log)."""
    lines = str(error).strip().splitlines()
    return f"database error, nothing changed: {type(error).__name__}: {lines[0] if lines else 'no message'}"


def feeds_refresh(*, name: str, progress: Progress = no_progress, accept_smaller: bool = False) -> list[FeedRun]:
    """Refresh a feed, or each part of a group feed on its own (one run each): a part that fails
    keeps its own previous offers and leaves the other parts' runs alone."""
    return [feed_refresh(name=unit, progress=progress, accept_smaller=accept_smaller) for unit in feed_units(name)]


def refresh_runs_feeds_in_request(*, feed: str, in_process: bool) -> bool:
    """Whether queueing a refresh of `feed` ("" for every feed) from a web request would run several feeds inside that
    request: with tasks in-process (no Redis) the task runs where it is queued, every feed one after another (an ops
    probe: 159 s offline for all feeds, then a page saying the refresh had "started"). One feed's run is bounded by
    its own HTTP timeouts and retries; a group's parts (skypilot) or every feed are not, so the page refuses them and
    names `refresh_prices` instead."""
    return in_process and (not feed or feed_units(feed) != [feed])


def feed_refresh(
    *, name: str, progress: Progress = no_progress, accept_smaller: bool = False, worker_retries: bool = False
) -> FeedRun:
    """Fetch one feed, validate every record and, in one transaction, update offers and history.

    A network failure is `retryable` (shown as "will retry") only when `worker_retries`: a Celery worker's task
    that retries it. Any other caller (`refresh_prices`, the in-process task without Redis) retries nothing, and
    the run's error ends with NOT_RETRIED instead.

    Always returns the FeedRun that says what happened; never leaves offers half-written.
    A group feed (skypilot) is refreshed part by part with `feeds_refresh`. A run with fewer valid
    offers than PRICING_MIN_FRACTION_OF_LAST_RUN of the last successful live refresh is refused
    unless `accept_smaller` (the operator's `refresh_prices --accept-smaller FEED`).
    """
    feed = get_feed(name)
    if hasattr(feed, "parts"):
        raise ValueError(f"{name!r} is a group of feeds refreshed one by one ({', '.join(feed.parts())})")
    token = feed_lock_acquire(feed=name)
    if token is None:
        skipped = FeedRun.objects.create(
            feed=name,
            status=FeedRun.Status.SKIPPED,
            error="another refresh of this feed is running; this one did nothing",
        )
        # It ends as it starts: a finished_at read before create() stamped started_at came before it.
        skipped.finished_at = skipped.started_at
        skipped.save(update_fields=["finished_at"])
        return skipped
    try:
        run = FeedRun.objects.create(feed=name)
        report = _lock_renewing(name, token, _run_progress(run, progress))
        if not feed.is_configured():
            return _finish(run, FeedRun.Status.NOT_CONFIGURED, error=feed.not_configured_reason())
        try:
            checked = validate_all(feed.fetch(progress=report))
        except FeedNotConfigured as error:
            return _finish(run, FeedRun.Status.NOT_CONFIGURED, error=str(error))
        except FeedError as error:
            if error.retryable and not worker_retries:
                return _finish(run, FeedRun.Status.FAILED, error=f"{error}; {NOT_RETRIED}", retryable=False)
            return _finish(run, FeedRun.Status.FAILED, error=str(error), retryable=error.retryable)
        except Exception as error:  # an adapter bug must not wipe data or hide the cause
            logger.exception("feed %s raised unexpectedly", name)
            return _finish(run, FeedRun.Status.FAILED, error=f"unexpected {type(error).__name__}: {error}")
        refusal, notes = _refusal(name, len(checked.accepted), accept_smaller=accept_smaller)
        if refusal:
            return _finish(run, FeedRun.Status.REJECTED, error=refusal, warnings=checked.warnings, **_summary(checked))
        now = timezone.now()
        try:
            with transaction.atomic():
                total = len(checked.accepted)
                counts = ingest_offers(
                    feed=name, offers=checked.accepted, run=run, now=now, progress=report, total=total
                )
                providers = {offer.record.provider for offer in checked.accepted}
                withdrawn = withdraw_missing(feed=name, run=run, now=now, providers=providers)
                checked.set_aside(counts.refused)
                return _finish(
                    run,
                    FeedRun.Status.SUCCESS,
                    created=counts.created,
                    changed=counts.changed,
                    unchanged=counts.unchanged,
                    withdrawn=withdrawn,
                    progress_done=total,
                    progress_total=total,
                    warnings=[*notes, *checked.warnings],
                    **_summary(checked),
                )
        except FeedLockLost as error:  # rolled back: another refresh owns the feed now
            return _finish(run, FeedRun.Status.FAILED, error=str(error))
        except BaseException as error:  # rolled back (a time limit, a database error): say so, then re-raise
            _finish(
                run, FeedRun.Status.FAILED, error=f"saving failed, nothing changed: {type(error).__name__}: {error}"
            )
            raise
    finally:
        feed_lock_release(feed=name, token=token)


ACCEPT_SMALLER_COMMAND = "python manage.py refresh_prices --accept-smaller"


def _shortfall(name: str, accepted: int) -> str:
    """How far `accepted` falls below PRICING_MIN_FRACTION_OF_LAST_RUN of the last successful live refresh
    of the feed, or '' when it does not. Imports and the snapshot are not the whole catalog: never the baseline."""
    last = (
        FeedRun.objects.filter(feed=name, status=FeedRun.Status.SUCCESS, kind=FeedRun.Kind.REFRESH)
        .order_by("-started_at", "-id")
        .first()
    )
    threshold = settings.PRICING_MIN_FRACTION_OF_LAST_RUN
    if last is None or not last.accepted or accepted >= threshold * last.accepted:
        return ""
    return (
        f"{accepted} valid offers, {accepted / last.accepted:.0%} of the {last.accepted} "
        f"of the last successful refresh (minimum {threshold:.0%})"
    )


def _refusal(name: str, accepted: int, *, accept_smaller: bool = False) -> tuple[str, list[str]]:
    """(why a run's offers must not replace the current ones, or ''; warnings to record when they may).
    `accept_smaller`: the operator accepts a catalog below the minimum share once (refresh_prices
    --accept-smaller), e.g. after removing regions; a run with no valid offers is still refused."""
    if accepted == 0:
        return "the feed returned no valid offers; previous offers kept", []
    shortfall = _shortfall(name, accepted)
    if not shortfall:
        return "", []
    if accept_smaller:
        return "", [f"accepted on request (--accept-smaller): {shortfall}"]
    return (
        f"the feed returned {shortfall}; previous offers kept. If the catalog shrank for good, accept it once "
        f"with `{ACCEPT_SMALLER_COMMAND} {name}`"
    ), []


# --- bundled data ------------------------------------------------------------------------------


def _snapshot_records(path: Path) -> Iterator[OfferRecord | Rejection]:
    with path.open(newline="", encoding="utf-8") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            count = to_decimal(row["gpu_count"])
            price = to_decimal(row["usd_per_hour"])
            try:
                observed = dt.date.fromisoformat(row["observed_on"]) if row["observed_on"] else None
            except ValueError:
                yield Rejection("unreadable_row", f"{path.name} line {line}: observed_on {row['observed_on']!r}")
                continue
            if count is None or price is None:
                yield Rejection("unreadable_row", f"{path.name} line {line}: gpu_count/usd_per_hour")
                continue
            yield OfferRecord(
                provider=row["provider"],
                instance_type=row["instance_type"],
                region=row["region"],
                market=row["market"],
                gpu_name=row["gpu"],
                gpu=row["gpu"] if row["gpu"] else None,
                gpu_count=count,
                usd_per_hour=price,
                vcpus=int(row["vcpus"]) if row["vcpus"] else None,
                memory_gib=to_decimal(row["memory_gib"]) if row["memory_gib"] else None,
                observed_at=dt.datetime.combine(observed, dt.time.min, tzinfo=dt.UTC) if observed else None,
                source=f"{row['source']} [bundled snapshot compiled {row['compiled_on']}]",
            )


def snapshot_load(*, path: Path = SNAPSHOT_CSV) -> FeedRun | None:
    """Load the bundled snapshot; records a FeedRun only when it changed something (idempotent)."""
    began = timezone.now()
    checked = validate_all(_snapshot_records(path))
    with transaction.atomic():
        counts = ingest_offers(feed=SNAPSHOT_FEED, offers=checked.accepted, is_snapshot=True)
        first_load = not FeedRun.objects.filter(feed=SNAPSHOT_FEED, status=FeedRun.Status.SUCCESS).exists()
        if not (counts.created or counts.changed or first_load):
            return None
        run = FeedRun.objects.create(
            feed=SNAPSHOT_FEED,
            kind=FeedRun.Kind.SNAPSHOT,
            status=FeedRun.Status.SUCCESS,
            finished_at=timezone.now(),
            fetched=checked.fetched,
            accepted=len(checked.accepted),
            rejected=checked.rejected,
            rejections=checked.rejections,
            warnings=checked.warnings
            + ([f"{counts.skipped_live} rows left alone: a live feed owns them"] if counts.skipped_live else []),
            created=counts.created,
            changed=counts.changed,
            unchanged=counts.unchanged,
        )
        # create() stamps started_at (auto_now_add) after the load it records: the run began before reading the file.
        run.started_at = began
        run.save(update_fields=["started_at"])
        return run


def hardware_quotes_load(*, path: Path = HARDWARE_QUOTES_CSV) -> int:
    """Create the shipped quotes that are missing; quotes edited in the admin are left as they are."""
    created = 0
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            _, was_created = HardwareQuote.objects.get_or_create(
                gpu=row["gpu"],
                gpus_per_server=int(row["gpus_per_server"]),
                name=row["name"],
                defaults={
                    "usd": Decimal(row["usd"]),
                    "quoted_on": dt.date.fromisoformat(row["quoted_on"]),
                    "source": row["source"],
                    "power_kw": Decimal(row["power_kw"]),
                    "idle_power_kw": Decimal(row["idle_power_kw"]) if row["idle_power_kw"] else None,
                    "networking_usd_per_node": Decimal(row["networking_usd_per_node"] or "0"),
                    "notes": row["notes"],
                },
            )
            created += was_created
    return created


def ownership_defaults_load(*, path: Path = OWNERSHIP_DEFAULTS_CSV) -> int:
    created = 0
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            _, was_created = OwnershipDefault.objects.get_or_create(
                key=row["key"],
                defaults={
                    "value": float(row["value"]),
                    "unit": row["unit"],
                    "source": row["source"],
                    "as_of": dt.date.fromisoformat(row["as_of"]),
                },
            )
            created += was_created
    return created


def load_bundled_data() -> str:
    """Bootstrap loader: price snapshot, hardware quotes, ownership defaults. Safe to run again."""
    run = snapshot_load()
    quotes = hardware_quotes_load()
    defaults = ownership_defaults_load()
    offers = Offer.objects.filter(is_snapshot=True).count()
    snapshot = (
        f"snapshot: {run.created} offers added, {run.changed} changed, {run.rejected} rows rejected"
        if run
        else "snapshot: already loaded, nothing changed"
    )
    counts = Counter(Offer.objects.filter(withdrawn_at__isnull=True).values_list("gpu", flat=True))
    return (
        f"{snapshot} ({offers} snapshot offers, {len(counts)} GPU types); "
        f"{quotes} hardware quotes added; {defaults} ownership defaults added"
    )


# --- import from saved payloads ----------------------------------------------------------------


def _imported(record: OfferRecord, *, names: str, observed_at: dt.datetime | None) -> OfferRecord:
    """`record` as imported from the files `names`: dated `observed_at` (the operator's capture time) when given,
    whatever date the adapter gave it; its source names the files and, when the operator dated it, says so."""
    if observed_at is None:
        return replace(record, source=f"{record.source} [imported from {names}]")
    return replace(
        record,
        source=f"{record.source} [imported from {names}, captured {observed_at:%Y-%m-%d %H:%M} UTC as the importer "
        "gave it]",
        observed_at=observed_at,
    )


@dataclass
class ImportResult:
    run: FeedRun
    checked: Validation


def feed_import(
    *, name: str, paths: list[Path], cloud: str | None = None, observed_at: dt.datetime | None = None
) -> ImportResult:
    """Read provider payloads saved to files through the feed's own adapter, validate every record
    as a refresh does and ingest the accepted offers in one transaction (for air-gapped sites and
    negotiated price sheets). Every file is read before anything is written: an unreadable one
    raises FeedFileError naming it and nothing is stored. Imports add and update offers; they do
    not withdraw the ones a file does not list (a price sheet is not the whole catalog). A `cloud` given to a
    feed without parts raises UnknownFeedPart: it was ignored, and the offers imported as if it were not given.
    `observed_at` (the operator's `--observed-at`: when the payload was captured) dates every record, and the source
    says so: it wins over a date the adapter infers from the file (a SkyPilot CSV states none, so its reader dates it
    by the file's modification time, which a copy made today sets to today). No adapter reads a date of observation
    from a payload; the effective dates AWS and Azure payloads state (`effective_at`: since when a price applies) are
    kept as stated. Without it a record keeps the adapter's date, else counts as observed now, as in a refresh."""
    if cloud is not None and not hasattr(get_feed(name), "parts"):
        raise UnknownFeedPart(f"feed {name!r} takes no cloud (only skypilot's files are one cloud's); leave it out")
    unit = import_unit(name, cloud)
    names = ", ".join(path.name for path in paths)
    try:
        records = file_reader(name)(paths, cloud=cloud)
    except FeedError:
        raise
    except Exception as error:  # an adapter bug on this payload: name the files (exit 2), keep the traceback in the log
        logger.exception("feed %s could not read %s", name, names)
        raise FeedDataError(
            f"{', '.join(map(str, paths))}: could not be read as {name} payloads "
            f"(unexpected {type(error).__name__}: {error}); nothing was stored"
        ) from error
    tagged = [
        item if isinstance(item, Rejection) else _imported(item, names=names, observed_at=observed_at)
        for item in records
    ]
    checked = validate_all(tagged)
    token = feed_lock_acquire(feed=unit)
    if token is None:
        raise FeedError(f"a refresh of {unit} is running; import again when it has finished")
    try:
        with transaction.atomic():
            run = FeedRun.objects.create(feed=unit, kind=FeedRun.Kind.IMPORT)
            counts = ingest_offers(feed=unit, offers=checked.accepted, run=run)
            checked.set_aside(counts.refused)
            _finish(
                run,
                FeedRun.Status.SUCCESS if checked.accepted else FeedRun.Status.REJECTED,
                **_summary(checked),
                warnings=[f"imported from files: {names}", *checked.warnings],
                created=counts.created,
                changed=counts.changed,
                unchanged=counts.unchanged,
                error="" if checked.accepted else _nothing_accepted(checked),
            )
    finally:
        feed_lock_release(feed=unit, token=token)
    return ImportResult(run=run, checked=checked)
