"""Writes: refresh a feed (fetch, validate, one transaction), ingest offers, load the bundled data.

A failing feed never touches the current offers: it raises before the transaction opens, or the
run is rejected (far fewer offers than last time) before anything is written. Ingest is keyed on
(provider, instance type, region, market), so the same refresh twice creates nothing and appends
no history; history rows are appended only for new offers and price changes.
"""

from __future__ import annotations

import csv
import datetime as dt
import logging
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import islice
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.utils import timezone

from pricing.feeds import get_feed
from pricing.feeds.base import (
    FeedError,
    FeedNotConfigured,
    OfferRecord,
    Progress,
    Rejection,
    no_progress,
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
PRICE_PLACES = Decimal("0.000001")
COUNT_PLACES = Decimal("0.001")
MARKETS = frozenset(Market.values)
MAX_EXAMPLES_PER_REASON = 5

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
    record: OfferRecord
    gpu: str
    gpu_count: Decimal  # stored precision, so a re-run compares equal
    usd_per_hour: Decimal
    usd_per_gpu_hour: Decimal


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
            entry["examples"].append(detail[:200])


def validate_offer(record: OfferRecord) -> ValidOffer | Rejection:
    """Check one record: currency, market, GPU id, positive count and price, plausible $/GPU-hour."""
    where = f"{record.provider} {record.instance_type} {record.region or '-'} {record.market}"
    if record.currency != "USD":
        return Rejection("currency_not_usd", f"{where}: {record.currency}")
    if record.market not in MARKETS:
        return Rejection("unknown_market", f"{where}: {record.market!r}")
    if not record.instance_type or not record.provider:
        return Rejection("missing_identity", where)
    gpu = record.canonical_gpu
    if gpu is None:
        return Rejection("unknown_gpu", f"{where}: GPU name {record.gpu_name!r}")
    if record.gpu_count is None or record.gpu_count <= 0:
        return Rejection("no_gpu_count", f"{where}: gpu_count {record.gpu_count}")
    if record.usd_per_hour is None or record.usd_per_hour <= 0:
        return Rejection("non_positive_price", f"{where}: ${record.usd_per_hour}/h")
    per_gpu = record.usd_per_hour / record.gpu_count
    low, high = settings.PRICING_MIN_USD_PER_GPU_HOUR, settings.PRICING_MAX_USD_PER_GPU_HOUR
    if not (Decimal(str(low)) <= per_gpu <= Decimal(str(high))):
        return Rejection("implausible_per_gpu_price", f"{where}: ${per_gpu:.4f}/GPU-h outside [{low}, {high}]")
    return ValidOffer(
        record=record,
        gpu=gpu,
        gpu_count=record.gpu_count.quantize(COUNT_PLACES),
        usd_per_hour=record.usd_per_hour.quantize(PRICE_PLACES),
        usd_per_gpu_hour=per_gpu.quantize(PRICE_PLACES),
    )


def validate_all(items: Iterable[OfferRecord | Rejection]) -> Validation:
    result = Validation()
    seen: set[tuple[str, str, str, str]] = set()
    for item in items:
        result.fetched += 1
        checked = item if isinstance(item, Rejection) else validate_offer(item)
        if isinstance(checked, Rejection):
            result.reject(checked.reason, checked.detail)
            continue
        key = checked.record.key
        if key in seen:
            result.reject("duplicate_offer", " ".join(key))
            continue
        seen.add(key)
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

    Streams: memory holds one batch at a time. Live feeds stamp `observed_at` with `now`; the
    snapshot keeps the source's own date and never overwrites an offer a live feed wrote. Call
    inside a transaction; withdrawing offers the feed no longer lists is `withdraw_missing`'s job.
    """
    now = now or timezone.now()
    counts = IngestCounts()
    provider_ids: dict[str, int] = {}
    done = 0
    for batch in _chunks(offers, batch_size):
        ids = _provider_ids({o.record.provider for o in batch}, provider_ids)
        existing = {
            (offer.provider_id, offer.instance_type, offer.region, offer.market): offer
            for offer in Offer.objects.filter(
                provider_id__in={ids[o.record.provider] for o in batch},
                instance_type__in={o.record.instance_type for o in batch},
            )
        }
        to_create: list[Offer] = []
        to_update: list[Offer] = []
        confirmed: list[int] = []
        history: list[PriceObservation] = []
        for item in batch:
            record = item.record
            key = (ids[record.provider], record.instance_type, record.region, record.market)
            observed_at = record.observed_at if is_snapshot else (record.observed_at or now)
            current = existing.get(key)
            if current is None:
                offer = Offer(
                    provider_id=key[0],
                    instance_type=record.instance_type,
                    region=record.region,
                    market=record.market,
                    price_changed_at=now,
                )
                _assign(offer, item, feed=feed, observed_at=observed_at, run=run, is_snapshot=is_snapshot)
                to_create.append(offer)
                continue
            if is_snapshot and current.feed != SNAPSHOT_FEED:
                counts.skipped_live += 1
                continue
            price_changed = current.usd_per_hour != item.usd_per_hour
            described_differently = (
                current.gpu != item.gpu
                or current.gpu_count != item.gpu_count
                or current.source != record.source
                or current.feed != feed
                or current.withdrawn_at is not None
                or current.effective_at != record.effective_at
                or (is_snapshot and current.observed_at != observed_at)
            )
            if price_changed or described_differently:
                if price_changed:
                    current.price_changed_at = now
                    counts.changed += 1
                else:
                    counts.unchanged += 1
                _assign(current, item, feed=feed, observed_at=observed_at, run=run, is_snapshot=is_snapshot)
                current.withdrawn_at = None
                to_update.append(current)
                if price_changed:
                    history.append(_observation(current, item, observed_at=observed_at, run=run))
            else:
                counts.unchanged += 1
                confirmed.append(current.id)
        if to_create:
            Offer.objects.bulk_create(to_create, batch_size=batch_size)
            counts.created += len(to_create)
            history.extend(_observation(offer, None, observed_at=offer.observed_at, run=run) for offer in to_create)
        if to_update:
            Offer.objects.bulk_update(to_update, _UPDATE_FIELDS, batch_size=500)
        if confirmed and not is_snapshot:
            Offer.objects.filter(id__in=confirmed).update(observed_at=now, last_run=run)
        if history:
            PriceObservation.objects.bulk_create(history, batch_size=batch_size)
        done += len(batch)
        progress(done, total, f"saved {done} offers")
    return counts


_UPDATE_FIELDS = [
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
]


def _assign(
    offer: Offer,
    item: ValidOffer,
    *,
    feed: str,
    observed_at: dt.datetime | None,
    run: FeedRun | None,
    is_snapshot: bool,
) -> None:
    record = item.record
    offer.gpu = item.gpu
    offer.gpu_count = item.gpu_count
    offer.vcpus = record.vcpus
    offer.memory_gib = record.memory_gib.quantize(Decimal("0.1")) if record.memory_gib is not None else None
    offer.usd_per_hour = item.usd_per_hour
    offer.usd_per_gpu_hour = item.usd_per_gpu_hour
    offer.observed_at = observed_at
    offer.effective_at = record.effective_at
    offer.source = record.source
    offer.feed = feed
    offer.is_snapshot = is_snapshot
    offer.last_run = run


def _observation(
    offer: Offer, item: ValidOffer | None, *, observed_at: dt.datetime | None, run: FeedRun | None
) -> PriceObservation:
    return PriceObservation(
        offer=offer,
        usd_per_hour=offer.usd_per_hour,
        usd_per_gpu_hour=offer.usd_per_gpu_hour,
        observed_at=observed_at,
        source=offer.source,
        feed_run=run,
    )


def withdraw_missing(*, feed: str, run: FeedRun, now: dt.datetime) -> int:
    """Mark this feed's offers that the successful `run` did not list as withdrawn."""
    return Offer.objects.filter(feed=feed, withdrawn_at__isnull=True).exclude(last_run=run).update(withdrawn_at=now)


# --- the lock ----------------------------------------------------------------------------------


def feed_lock_acquire(*, feed: str, ttl_s: int | None = None) -> str | None:
    """Take the database lock for `feed`; None when another refresh holds it and it has not expired."""
    now = timezone.now()
    token = uuid.uuid4().hex
    expires_at = now + dt.timedelta(seconds=ttl_s or settings.PRICING_LOCK_TTL_S)
    try:
        with transaction.atomic():
            FeedLock.objects.create(feed=feed, token=token, expires_at=expires_at)
        return token
    except IntegrityError:
        taken_over = FeedLock.objects.filter(feed=feed, expires_at__lt=now).update(token=token, expires_at=expires_at)
        return token if taken_over else None


def feed_lock_release(*, feed: str, token: str) -> None:
    FeedLock.objects.filter(feed=feed, token=token).delete()


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


def feed_refresh(*, name: str, progress: Progress = no_progress) -> FeedRun:
    """Fetch one feed, validate every record and, in one transaction, update offers and history.

    Always returns the FeedRun that says what happened; never leaves offers half-written.
    """
    feed = get_feed(name)
    token = feed_lock_acquire(feed=name)
    if token is None:
        return FeedRun.objects.create(
            feed=name,
            status=FeedRun.Status.SKIPPED,
            finished_at=timezone.now(),
            error="another refresh of this feed is running; this one did nothing",
        )
    try:
        run = FeedRun.objects.create(feed=name)
        report = _run_progress(run, progress)
        if not feed.is_configured():
            return _finish(run, FeedRun.Status.NOT_CONFIGURED, error=feed.not_configured_reason())
        try:
            checked = validate_all(feed.fetch(progress=report))
        except FeedNotConfigured as error:
            return _finish(run, FeedRun.Status.NOT_CONFIGURED, error=str(error))
        except FeedError as error:
            return _finish(run, FeedRun.Status.FAILED, error=str(error), retryable=error.retryable)
        except Exception as error:  # an adapter bug must not wipe data or hide the cause
            logger.exception("feed %s raised unexpectedly", name)
            return _finish(run, FeedRun.Status.FAILED, error=f"unexpected {type(error).__name__}: {error}")
        summary = {
            "fetched": checked.fetched,
            "accepted": len(checked.accepted),
            "rejected": checked.rejected,
            "rejections": checked.rejections,
            "warnings": checked.warnings,
        }
        refusal = _refusal(name, len(checked.accepted))
        if refusal:
            return _finish(run, FeedRun.Status.REJECTED, error=refusal, **summary)
        now = timezone.now()
        try:
            with transaction.atomic():
                counts = ingest_offers(
                    feed=name, offers=checked.accepted, run=run, now=now, progress=report, total=len(checked.accepted)
                )
                withdrawn = withdraw_missing(feed=name, run=run, now=now)
                return _finish(
                    run,
                    FeedRun.Status.SUCCESS,
                    created=counts.created,
                    changed=counts.changed,
                    unchanged=counts.unchanged,
                    withdrawn=withdrawn,
                    progress_done=len(checked.accepted),
                    progress_total=len(checked.accepted),
                    **summary,
                )
        except BaseException as error:  # rolled back (a time limit, a database error): say so, then re-raise
            _finish(
                run, FeedRun.Status.FAILED, error=f"saving failed, nothing changed: {type(error).__name__}: {error}"
            )
            raise
    finally:
        feed_lock_release(feed=name, token=token)


def _refusal(name: str, accepted: int) -> str:
    """Why a run's offers must not replace the current ones, or '' when they may."""
    if accepted == 0:
        return "the feed returned no valid offers; previous offers kept"
    last = FeedRun.objects.filter(feed=name, status=FeedRun.Status.SUCCESS).order_by("-started_at", "-id").first()
    threshold = settings.PRICING_MIN_FRACTION_OF_LAST_RUN
    if last is not None and last.accepted and accepted < threshold * last.accepted:
        return (
            f"the feed returned {accepted} valid offers, {accepted / last.accepted:.0%} of the "
            f"{last.accepted} of the last successful run (minimum {threshold:.0%}); previous offers kept"
        )
    return ""


# --- bundled data ------------------------------------------------------------------------------


def _snapshot_records(path: Path) -> Iterator[OfferRecord | Rejection]:
    with path.open(newline="", encoding="utf-8") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            count = to_decimal(row["gpu_count"])
            price = to_decimal(row["usd_per_hour"])
            if count is None or price is None:
                yield Rejection("unreadable_row", f"{path.name} line {line}: gpu_count/usd_per_hour")
                continue
            observed = dt.date.fromisoformat(row["observed_on"]) if row["observed_on"] else None
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
    checked = validate_all(_snapshot_records(path))
    with transaction.atomic():
        counts = ingest_offers(feed=SNAPSHOT_FEED, offers=checked.accepted, is_snapshot=True)
        first_load = not FeedRun.objects.filter(feed=SNAPSHOT_FEED, status=FeedRun.Status.SUCCESS).exists()
        if not (counts.created or counts.changed or first_load):
            return None
        now = timezone.now()
        return FeedRun.objects.create(
            feed=SNAPSHOT_FEED,
            status=FeedRun.Status.SUCCESS,
            finished_at=now,
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


def _skipped_note(skipped: int) -> list[str]:
    return [f"{skipped} rows left alone: a live feed owns them"] if skipped else []


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
