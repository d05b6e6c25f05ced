"""Read-only selectors over the pricing catalog for the API: hardware quotes and price history.

Price history is stored as change events (pricing.models.PriceObservation: one row when an offer
appears and one each time its price changes), so a daily series carries each offer's price forward
until its next change."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Max, QuerySet
from django.utils import timezone

from pricing.models import HardwareQuote, Offer, PriceObservation
from pricing.selectors import offer_history_rows

MAX_HISTORY_DAYS = 3 * 366
DEFAULT_HISTORY_DAYS = 90  # a history asked without `since` starts this many days before `until`
# No cloud sold GPU-hours before AWS's first GPU instance (cg1.4xlarge, November 2010).
HISTORY_EARLIEST = dt.date(2010, 11, 1)


class HistoryWindowError(ValueError):
    """A price-history window that cannot be answered; ``field`` (since or until) is the one to change."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def price_history_window(*, since: dt.date | None, until: dt.date | None) -> tuple[dt.date, dt.date]:
    """The (since, until) days a price history covers: ``until`` defaults to today (UTC), ``since`` to
    DEFAULT_HISTORY_DAYS before it. Raises HistoryWindowError for a day outside the data's range (none can have a
    price, and the calendar's ends overflow), since after until, or a span over MAX_HISTORY_DAYS."""
    today = timezone.now().date()
    latest = today + dt.timedelta(days=1)
    for field, day in (("since", since), ("until", until)):
        if day is not None and not HISTORY_EARLIEST <= day <= latest:
            raise HistoryWindowError(field, f"must be from {HISTORY_EARLIEST} to {latest}; got {day}")
    until = until or today
    since = since or until - dt.timedelta(days=DEFAULT_HISTORY_DAYS)
    if since > until:
        raise HistoryWindowError("since", f"must be on or before until ({until})")
    if (until - since).days > MAX_HISTORY_DAYS:
        raise HistoryWindowError("since", f"the range may span at most {MAX_HISTORY_DAYS} days")
    return since, until


def hardware_quotes(*, gpu: str | None = None) -> QuerySet[HardwareQuote]:
    quotes = HardwareQuote.objects.all().order_by("gpu", "gpus_per_server", "-quoted_on", "id")
    return quotes.filter(gpu=gpu) if gpu else quotes


def offer_by_id(*, offer_id: int) -> Offer:
    """Any offer, current or withdrawn (history outlives the listing). Raises Offer.DoesNotExist."""
    return Offer.objects.select_related("provider").get(pk=offer_id)


def offers_last_modified(*, offers: QuerySet[Offer]) -> dt.datetime | None:
    """When the list of `offers` last changed: an offer appeared, changed price or was confirmed, or (any
    offer) was withdrawn. Withdrawals are counted over the whole catalog, so the date is never too early."""
    current = offers.aggregate(seen=Max("first_seen_at"), priced=Max("price_changed_at"), observed=Max("observed_at"))
    gone = Offer.objects.aggregate(gone=Max("withdrawn_at"))
    moments = [moment for moment in (*current.values(), *gone.values()) if moment is not None]
    return max(moments) if moments else None


def offer_observations(*, offer: Offer) -> list[PriceObservation]:
    """The offer's history in the order the page and its chart show it (`pricing.selectors.offer_history_rows`)."""
    return [row for _, row in offer_history_rows(offer=offer)]


@dataclass(frozen=True, slots=True)
class DailyPrice:
    date: dt.date
    min_usd_per_gpu_hour: float
    median_usd_per_gpu_hour: float
    max_usd_per_gpu_hour: float
    offers: int


def gpu_daily_prices(
    *, gpu: str, since: dt.date, until: dt.date, providers: list[str] | None = None, markets: list[str] | None = None
) -> list[DailyPrice]:
    """For each day in [since, until], the USD per GPU-hour in effect at the end of the day across the
    GPU's offers (each offer's last recorded price up to then; offers withdrawn by then excluded)."""
    offers = Offer.objects.filter(gpu=gpu)
    if providers:
        offers = offers.filter(provider__slug__in=providers)
    if markets:
        offers = offers.filter(market__in=markets)
    end = dt.datetime.combine(until + dt.timedelta(days=1), dt.time.min, tzinfo=dt.UTC)
    rows = (
        PriceObservation.objects.filter(offer__in=offers, recorded_at__lt=end)
        .order_by("offer_id", "recorded_at", "id")
        .values_list("offer_id", "recorded_at", "usd_per_gpu_hour")
    )
    withdrawn = dict(offers.filter(withdrawn_at__isnull=False).values_list("id", "withdrawn_at"))
    changes: dict[int, list[tuple[dt.datetime, float]]] = defaultdict(list)
    for offer_id, recorded_at, price in rows.iterator(chunk_size=5000):
        changes[offer_id].append((recorded_at, float(price)))
    days = [since + dt.timedelta(days=i) for i in range((until - since).days + 1)]
    series: list[DailyPrice] = []
    cursors = dict.fromkeys(changes, -1)
    for day in days:
        day_end = dt.datetime.combine(day + dt.timedelta(days=1), dt.time.min, tzinfo=dt.UTC)
        prices = []
        for offer_id, events in changes.items():
            i = cursors[offer_id]
            while i + 1 < len(events) and events[i + 1][0] < day_end:
                i += 1
            cursors[offer_id] = i
            gone = withdrawn.get(offer_id)
            if i >= 0 and (gone is None or gone >= day_end):
                prices.append(events[i][1])
        if prices:
            prices.sort()
            n = len(prices)
            median = prices[n // 2] if n % 2 else (prices[n // 2 - 1] + prices[n // 2]) / 2
            series.append(DailyPrice(day, prices[0], median, prices[-1], n))
    return series
