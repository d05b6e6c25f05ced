"""Reads for the advice pipeline, the pages and the API. Keyword-only, typed, no writes."""

from __future__ import annotations

import csv
import datetime as dt
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd
from django.conf import settings
from django.core.cache import cache
from django.db.models import Max, QuerySet
from django.utils import timezone

from pricing.feeds import FEED_NAMES, PART_SEPARATOR, UnknownFeed, UnknownFeedPart, feed_units, get_feed, refreshable
from pricing.models import SNAPSHOT_FEED, FeedRun, HardwareQuote, Offer, OwnershipDefault, PriceObservation, Provider
from pricing.services import (
    INTERRUPTED_PREFIX,
    NOT_RETRIED,
    OWNERSHIP_DEFAULTS_CSV,
    PROVIDER_NAMES,
    RETRIES_EXHAUSTED,
    SNAPSHOT_CSV,
    progress_cache_key,
)

OFFER_COLUMNS = [
    "id",  # the offer's row id: what GET /api/v1/offers/{id}/history takes, so an Advice can link its price
    "provider",
    "instance",
    "region",
    "market",
    "gpu",
    "gpu_count",
    "usd_per_hour",
    "usd_per_gpu_hour",
    "observed_at",
    "source",
    "is_snapshot",
    "stale",
]


@functools.cache
def snapshot_compiled_on() -> dt.date | None:
    """The compile date of the bundled snapshot (its `compiled_on` column)."""
    with SNAPSHOT_CSV.open(newline="", encoding="utf-8") as handle:
        first = next(csv.DictReader(handle), None)
    return dt.date.fromisoformat(first["compiled_on"]) if first and first.get("compiled_on") else None


def stale_before() -> dt.datetime:
    return timezone.now() - dt.timedelta(hours=settings.PRICING_STALE_AFTER_HOURS)


def current_offers(
    *,
    gpu: str | None = None,
    providers: list[str] | None = None,
    markets: list[str] | None = None,
    regions: list[str] | None = None,
) -> QuerySet[Offer]:
    offers = Offer.objects.filter(withdrawn_at__isnull=True).select_related("provider")
    if gpu:
        offers = offers.filter(gpu=gpu)
    if providers:
        offers = offers.filter(provider__slug__in=providers)
    if markets:
        offers = offers.filter(market__in=markets)
    if regions:
        offers = offers.filter(region__in=regions)
    return offers


def is_stale(offer: Offer, *, before: dt.datetime | None = None) -> bool:
    return offer.observed_at is None or offer.observed_at < (before or stale_before())


CAPACITY_CSV = OWNERSHIP_DEFAULTS_CSV.parent / "capacity_caps.csv"


@functools.cache
def capacity_caps() -> dict[tuple[str, str], tuple[int, str]]:
    """(provider, market or "*") -> (instances of one offer rentable at once, source), from the sourced
    pricing/data/capacity_caps.csv; providers without a row have unknown capacity."""
    with CAPACITY_CSV.open(encoding="utf-8") as handle:
        rows = csv.DictReader(line for line in handle if not line.startswith("#"))
        return {(r["provider"], r["market"]): (int(r["max_instances"]), r["source"]) for r in rows}


def offer_max_gpus(*, provider: str, market: str, gpu_count: float) -> float | None:
    """GPUs one offer can supply at once (instance GPUs x the provider's cap), or None when unpublished."""
    caps = capacity_caps()
    cap = caps.get((provider, market)) or caps.get((provider, "*"))
    return None if cap is None else float(gpu_count) * cap[0]


def offers_frame(*, gpu: str, providers: list[str] | None = None, markets: list[str] | None = None) -> pd.DataFrame:
    """One row per current offer of `gpu`; money in USD per hour, `observed_at` tz-aware or NaT."""
    rows = list(
        current_offers(gpu=gpu, providers=providers, markets=markets).values_list(
            "id",
            "provider__slug",
            "instance_type",
            "region",
            "market",
            "gpu",
            "gpu_count",
            "usd_per_hour",
            "usd_per_gpu_hour",
            "observed_at",
            "source",
            "is_snapshot",
        )
    )
    frame = pd.DataFrame(rows, columns=OFFER_COLUMNS[:-1])
    for column in ("gpu_count", "usd_per_hour", "usd_per_gpu_hour"):
        frame[column] = frame[column].astype(float)
    frame["observed_at"] = pd.to_datetime(frame["observed_at"], utc=True)
    frame["is_snapshot"] = frame["is_snapshot"].astype(bool)
    frame["stale"] = (frame["observed_at"].isna() | (frame["observed_at"] < pd.Timestamp(stale_before()))).astype(bool)
    frame = frame.sort_values(["usd_per_gpu_hour", "provider", "instance", "region"], ignore_index=True)
    return say_when_undated_undercuts_dated(frame)


def say_when_undated_undercuts_dated(frame: pd.DataFrame) -> pd.DataFrame:
    """An undated offer (no source date: observed_at NaT) cheaper per GPU-hour than every dated offer
    of its GPU and market is kept, but its source says so and names that dated offer: whoever picks
    the cheapest offer then shows that it chose an undated price over a dated one. (Plain lists: a few
    hundred rows, where pandas' merge and row access cost milliseconds per advice.)"""
    columns = ("gpu", "market", "provider", "instance", "usd_per_gpu_hour", "observed_at", "source")
    rows = list(zip(*(frame[name].tolist() for name in columns), strict=True))
    best: dict[tuple[str, str], tuple[Any, ...]] = {}
    for row in sorted((r for r in rows if not pd.isna(r[5])), key=lambda r: r[4]):  # stable: frame order on ties
        best.setdefault((row[0], row[1]), row)
    sources = [
        (
            f"{source} [undated price; the cheapest dated {market} offer of {gpu} is {ref[2]} {ref[3]} at "
            f"${ref[4]:.4f}/GPU-h, as of {ref[5]:%Y-%m-%d}]"
            if pd.isna(observed) and (ref := best.get((gpu, market))) is not None and usd < ref[4]
            else source
        )
        for gpu, market, _provider, _instance, usd, observed, source in rows
    ]
    if sources == [row[6] for row in rows]:
        return frame
    return frame.assign(source=sources)


def best_offers(
    *,
    gpu: str,
    providers: list[str] | None = None,
    markets: list[str] | None = None,
    per_provider: bool = False,
) -> pd.DataFrame:
    """The cheapest offer per GPU-hour in each market (or in each provider and market), same columns."""
    frame = offers_frame(gpu=gpu, providers=providers, markets=markets)
    keys = ["provider", "market"] if per_provider else ["market"]
    return frame.drop_duplicates(subset=keys, keep="first").reset_index(drop=True)


@dataclass(frozen=True, slots=True)
class HardwareQuoteInfo:
    gpu: str
    gpus_per_server: int
    name: str
    usd: float  # one server, all in
    quoted_on: dt.date
    source: str
    power_kw: float  # server draw at load
    idle_power_kw: float | None
    networking_usd_per_node: float
    notes: str


def hardware_quote_names(*, gpu: str) -> list[str]:
    """The names of the purchase quotes for servers of `gpu` (what a scenario's /buy/server may name)."""
    quotes = HardwareQuote.objects.filter(gpu=gpu).order_by("gpus_per_server", "-quoted_on", "id")
    return list(quotes.values_list("name", flat=True))


def hardware_quote(
    *, gpu: str, gpus_per_server: int | None = None, name: str | None = None
) -> HardwareQuoteInfo | None:
    """The newest purchase quote for a server of `gpu` (of that size when given); with `name`, the quote of
    that name (the smallest server carrying it). None when none exists."""
    quotes = HardwareQuote.objects.filter(gpu=gpu)
    if gpus_per_server is not None:
        quotes = quotes.filter(gpus_per_server=gpus_per_server)
    if name is not None:
        quote = quotes.filter(name=name).order_by("gpus_per_server", "-quoted_on", "id").first()
    else:
        quote = quotes.order_by("-quoted_on", "-id").first()
    if quote is None:
        return None
    return HardwareQuoteInfo(
        gpu=quote.gpu,
        gpus_per_server=quote.gpus_per_server,
        name=quote.name,
        usd=float(quote.usd),
        quoted_on=quote.quoted_on,
        source=quote.source,
        power_kw=float(quote.power_kw),
        idle_power_kw=float(quote.idle_power_kw) if quote.idle_power_kw is not None else None,
        networking_usd_per_node=float(quote.networking_usd_per_node),
        notes=quote.notes,
    )


def ownership_defaults() -> dict[str, dict[str, Any]]:
    """power_usd_per_kwh, pue, colo_usd_per_kw_month, ... each {"value", "unit", "source", "as_of"}.

    From the database (editable in the admin); the bundled file answers before bootstrap ran.
    """
    rows = [(d.key, d.value, d.unit, d.source, d.as_of) for d in OwnershipDefault.objects.all()]
    if not rows:
        with OWNERSHIP_DEFAULTS_CSV.open(newline="", encoding="utf-8") as handle:
            rows = [
                (r["key"], float(r["value"]), r["unit"], r["source"], dt.date.fromisoformat(r["as_of"]))
                for r in csv.DictReader(handle)
            ]
    return {
        key: {"value": value, "unit": unit, "source": source, "as_of": as_of}
        for key, value, unit, source, as_of in rows
    }


def price_freshness(*, gpu: str | None = None) -> dict[str, Any]:
    """Whether the prices (of `gpu`) are live or snapshot, how old, and whether they are stale."""
    offers = current_offers(gpu=gpu)
    live = offers.filter(is_snapshot=False)
    newest_live = live.aggregate(newest=Max("observed_at"))["newest"]
    newest_any = offers.aggregate(newest=Max("observed_at"))["newest"]
    snapshot_count = offers.filter(is_snapshot=True).count()
    live_count = live.count()
    compiled = snapshot_compiled_on()
    stale = newest_live is None or newest_live < stale_before()
    if live_count and not snapshot_count:
        label = f"Live prices, newest observed {newest_live:%Y-%m-%d %H:%M} UTC"
    elif live_count:
        label = (
            f"Live prices for {live_count} offers (newest {newest_live:%Y-%m-%d %H:%M} UTC); "
            f"{snapshot_count} from the bundled snapshot compiled {compiled}"
        )
    elif snapshot_count:
        label = f"Bundled snapshot compiled {compiled}, not live prices"
    else:
        label = "No prices loaded"
    return {
        "live": live_count > 0,
        "snapshot": snapshot_count > 0,
        "live_offers": live_count,
        "snapshot_offers": snapshot_count,
        "newest_observed_at": newest_live or newest_any,
        "newest_live_observed_at": newest_live,
        "snapshot_compiled_on": compiled,
        "stale": stale,
        "stale_after_hours": settings.PRICING_STALE_AFTER_HOURS,
        "label": label,
    }


def run_progress(run: FeedRun) -> dict[str, Any]:
    """A running run's progress (from the cache, where the refresh reports it), else its stored counts."""
    live = cache.get(progress_cache_key(run.id)) if run.status == FeedRun.Status.RUNNING else None
    if live:
        return live
    return {"done": run.progress_done, "total": run.progress_total, "note": run.progress_note}


@dataclass(frozen=True, slots=True)
class FeedStatus:
    name: str
    label: str
    configured: bool
    last_run: FeedRun | None
    last_success: FeedRun | None
    stale: bool
    # What anyone may read of the last run's error (run_error_category); staff see the error itself.
    error_category: str = ""


def run_error_category(run: FeedRun) -> str:
    """A short, fixed description of why a run did not succeed, safe to show anyone (the error text itself can
    hold hosts, URLs or exception details and stays in the admin and the logs); "" for a run without error."""
    if not run.error:
        return ""
    if run.status == FeedRun.Status.FAILED:
        if run.retryable:
            return "network error; will retry"
        marker = run.error.rfind(f"; {RETRIES_EXHAUSTED}")
        if marker >= 0:  # the note record_retries_exhausted appended: fixed words and a time, safe to show
            return "network error; " + run.error[marker + 2 :]
        if run.error.endswith(f"; {NOT_RETRIED}"):  # a network failure that nothing retries (feed_refresh)
            return f"network error; {NOT_RETRIED}"
        return "interrupted" if run.error.startswith(INTERRUPTED_PREFIX) else "failed"
    categories: dict[str, str] = {
        FeedRun.Status.NOT_CONFIGURED: "not configured",
        FeedRun.Status.REJECTED: "prices refused by checks; previous offers kept",
        FeedRun.Status.SKIPPED: "another refresh was running",
    }
    return categories.get(str(run.status), "failed")


def feed_statuses() -> list[FeedStatus]:
    """Each feed (and the bundled snapshot) with its last run that did something (not skipped) and last success."""
    before = stale_before()
    statuses = []
    # A group feed (skypilot) is listed, then each of its parts, which run on their own: the configured ones and
    # those with runs of their own (a cloud imported with `import_prices --cloud`, or refreshed by name).
    recorded = _recorded_parts()
    names = [
        unit
        for group in FEED_NAMES
        for unit in dict.fromkeys(
            [group, *feed_units(group), *(part for part in recorded if part.startswith(group + PART_SEPARATOR))]
        )
    ]
    for name in (*names, SNAPSHOT_FEED):
        runs = FeedRun.objects.filter(feed=name).order_by("-started_at", "-id")
        # A skipped run (a duplicate refresh that found the feed locked) did nothing: it never stands in for the
        # run it collided with, whose failure, success or progress is the feed's status. Only skipped runs: that.
        last_run = runs.exclude(status=FeedRun.Status.SKIPPED).first() or runs.first()
        last_success = runs.filter(status=FeedRun.Status.SUCCESS).first()
        if name == SNAPSHOT_FEED:
            label, configured, stale = f"Bundled snapshot (compiled {snapshot_compiled_on()})", True, True
        else:
            feed = get_feed(name)
            label, configured = feed.label, feed.is_configured()
            stale = last_success is None or (last_success.finished_at or last_success.started_at) < before
        category = run_error_category(last_run) if last_run else ""
        statuses.append(FeedStatus(name, label, configured, last_run, last_success, stale, category))
    return statuses


def _recorded_parts() -> list[str]:
    """The parts of group feeds (`skypilot:<cloud>`) that have runs and that a refresh still knows, sorted."""
    names = FeedRun.objects.filter(feed__contains=PART_SEPARATOR).order_by().values_list("feed", flat=True).distinct()
    known = []
    for name in sorted(names):
        try:
            known.append(refreshable(name))
        except (UnknownFeed, UnknownFeedPart):  # a name recorded before unknown clouds were refused
            continue
    return known


def offer_history_rows(*, offer: Offer) -> list[tuple[dt.datetime, PriceObservation]]:
    """The offer's history rows, oldest first, each with the moment it is placed at: the one order the page's
    table, its chart and /api/v1/offers/{id}/history use.

    A dated row is placed at its source's date (observed_at). An undated row (the bundled snapshot's, whose
    source gives no date) is placed at the time it was recorded, but never after a dated row recorded after it:
    that row superseded it, so the history ends at the current price (an undated snapshot row loaded after
    the dates of the files imported next was drawn last, after the price that replaced it). Ties keep the
    recording order."""
    rows = list(offer.history.order_by("recorded_at", "id"))
    placed: list[tuple[dt.datetime, int, PriceObservation]] = []
    superseded_by: dt.datetime | None = None  # the earliest date of the dated rows recorded after this one
    for position in reversed(range(len(rows))):
        row = rows[position]
        if row.observed_at is not None:
            when = row.observed_at
            superseded_by = when if superseded_by is None else min(superseded_by, when)
        else:
            when = row.recorded_at if superseded_by is None else min(row.recorded_at, superseded_by)
        placed.append((when, position, row))
    placed.sort(key=lambda item: (item[0], item[1]))
    return [(when, row) for when, _, row in placed]


def offer_history(*, offer: Offer) -> list[tuple[dt.datetime, float]]:
    """(when, USD per GPU-hour) for each history row, in the order of `offer_history_rows`."""
    return [(when, float(row.usd_per_gpu_hour)) for when, row in offer_history_rows(offer=offer)]


def known_provider_slugs() -> frozenset[str]:
    """Every provider a Scenario may name in rent.providers: those in the catalog and those a feed names."""
    return frozenset(PROVIDER_NAMES) | frozenset(Provider.objects.values_list("slug", flat=True))


def unknown_provider_slugs(*, slugs: Iterable[str]) -> list[str]:
    """The given slugs no provider has (``known_provider_slugs``), sorted: an unknown slug would silently match
    nothing, read as 'no prices' (the API's price queries) or flip the advice to "buy" (a Scenario's providers)."""
    return sorted(set(slugs) - known_provider_slugs())
