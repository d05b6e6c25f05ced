"""Price ingest: 100,000 observations through the batched, streaming ingest vs a naive row-at-a-time save.

    .venv/bin/python bench/ingest.py [--rows 100000] [--naive-rows 5000] [--repeat 3] [--database-url URL]

Runs on a throw-away database (a temporary SQLite file unless --database-url names another, e.g. a
scratch PostgreSQL database: it is migrated and its pricing tables are emptied). Prints:
1. wall time of `pricing.services.ingest_offers` for N new offers (N observations: one offer and one
   history row each), then for N observations of the same offers where 10% changed price;
2. the rate of a naive loop (`Offer.objects.get_or_create` + `save()` + `PriceObservation.objects.create`
   per row, inside one transaction, so the comparison is not about commit cost), and the ratio of
   observations per second. Each path runs --repeat times and the best rate counts (the machine is
   shared; other load only slows a run down). The naive loop runs on 5,000 rows by default to keep the
   run short: its cost per row is constant or grows with table size, so a smaller naive run flatters
   it and the printed ratio is conservative (pass --naive-rows 100000 for the full-size comparison);
3. peak Python memory (tracemalloc) of the batched ingest at N and at N/5 observations, fed by a
   generator: flat peaks show memory is bounded by the batch size, not by N.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from djangokit import setup_django  # noqa: E402

if TYPE_CHECKING:
    from pricing.services import ValidOffer

PROVIDERS = ["aws", "azure", "gcp", "lambda", "runpod", "vast", "nebius", "oci", "cudo", "fluidstack"]
REGIONS = ["us-east-1", "us-west-2", "eu-west-1", "ap-south-1"]
MARKETS = ["on_demand", "spot", "reserved_1y", "reserved_3y"]


def observations(rows: int, *, tag: str, changed_every: int = 0) -> Iterator[ValidOffer]:
    """Validated offers, generated lazily; with changed_every=10, every 10th price is 5% higher."""
    from pricing.feeds.base import OfferRecord
    from pricing.services import ValidOffer, price_bounds, validate_offer

    bounds = price_bounds()

    for index in range(rows):
        price = Decimal(8 * (1 + index % 97)) / 10
        if changed_every and index % changed_every == 0:
            price = price * Decimal("1.05")
        record = OfferRecord(
            provider=PROVIDERS[index % len(PROVIDERS)],
            instance_type=f"{tag}-{index // 16}",
            region=REGIONS[index % 4],
            market=MARKETS[(index // 4) % 4],
            gpu_name="H100",
            gpu="h100-sxm",
            gpu_count=Decimal(8),
            usd_per_hour=price,
            source="bench/ingest.py synthetic",
        )
        offer = validate_offer(record, bounds=bounds)
        # The synthetic prices sit inside the plausible band, so a rejection here is a bug in the bench.
        assert isinstance(offer, ValidOffer), offer
        yield offer


def clear() -> None:
    from pricing.models import FeedRun, Offer, PriceObservation

    PriceObservation.objects.all().delete()
    Offer.objects.all().delete()
    FeedRun.objects.all().delete()


def batched(rows: int, *, tag: str, changed_every: int = 0) -> float:
    from django.db import transaction

    from pricing.models import FeedRun
    from pricing.services import ingest_offers

    run = FeedRun.objects.create(feed="bench")
    start = time.perf_counter()
    with transaction.atomic():
        ingest_offers(feed="bench", offers=observations(rows, tag=tag, changed_every=changed_every), run=run)
    return time.perf_counter() - start


def naive(rows: int, *, tag: str, changed_every: int = 0) -> float:
    from django.db import transaction
    from django.utils import timezone

    from pricing.models import Offer, PriceObservation, Provider

    providers = {slug: Provider.objects.get_or_create(slug=slug, defaults={"name": slug})[0] for slug in PROVIDERS}
    start = time.perf_counter()
    with transaction.atomic():
        for item in observations(rows, tag=tag, changed_every=changed_every):
            record = item.record
            now = timezone.now()
            offer, created = Offer.objects.get_or_create(
                provider=providers[record.provider],
                instance_type=record.instance_type,
                region=record.region,
                market=record.market,
                defaults={
                    "gpu": item.gpu,
                    "gpu_count": item.gpu_count,
                    "usd_per_hour": item.usd_per_hour,
                    "usd_per_gpu_hour": item.usd_per_gpu_hour,
                    "observed_at": now,
                    "source": record.source,
                    "feed": "naive",
                    "price_changed_at": now,
                },
            )
            changed = not created and offer.usd_per_hour != item.usd_per_hour
            if not created:
                offer.usd_per_hour, offer.usd_per_gpu_hour, offer.observed_at = (
                    item.usd_per_hour,
                    item.usd_per_gpu_hour,
                    now,
                )
                offer.save()
            if created or changed:
                PriceObservation.objects.create(
                    offer=offer,
                    usd_per_hour=item.usd_per_hour,
                    usd_per_gpu_hour=item.usd_per_gpu_hour,
                    observed_at=now,
                    source=record.source,
                )
    return time.perf_counter() - start


def peak_mib(rows: int, *, tag: str) -> float:
    clear()
    tracemalloc.start()
    batched(rows, tag=tag)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def best_rate(rows: int, repeat: int, measure: object, *, tag: str) -> tuple[float, float]:
    """(best observations/s of new offers, best observations/s of a 10%-changed re-ingest) over `repeat` runs.

    Best-of, because this machine is shared: other processes only ever make a run slower."""
    new_rates, changed_rates = [], []
    for attempt in range(repeat):
        clear()
        new_rates.append(rows / measure(rows, tag=f"{tag}{attempt}"))  # type: ignore[operator]
        changed_rates.append(rows / measure(rows, tag=f"{tag}{attempt}", changed_every=10))  # type: ignore[operator]
    clear()
    return max(new_rates), max(changed_rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--naive-rows", type=int, default=5_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    setup_django(prefix="bench-ingest-", database_url=args.database_url, load_data=False, env={"DEBUG": "0"})
    from django.db import connection

    print(
        f"database: {connection.vendor}; batched on {args.rows:,} observations, naive on {args.naive_rows:,}; "
        f"best of {args.repeat} runs each"
    )
    fast = best_rate(args.rows, args.repeat, batched, tag="b")
    slow = best_rate(args.naive_rows, args.repeat, naive, tag="n")
    for label, fast_rate, slow_rate in zip(("new offers", "10% changed"), fast, slow, strict=True):
        print(
            f"{label:<12} batched {args.rows / fast_rate:7.2f} s for {args.rows:,} ({fast_rate:9,.0f} obs/s)   "
            f"naive {slow_rate:7,.0f} obs/s   ratio {fast_rate / slow_rate:5.1f}x"
        )
    small = max(1, args.rows // 5)
    print(
        f"peak traced memory of the batched ingest: {peak_mib(args.rows, tag='m'):.1f} MiB at {args.rows:,} "
        f"observations, {peak_mib(small, tag='s'):.1f} MiB at {small:,} (streamed from a generator)"
    )
    clear()


if __name__ == "__main__":
    main()
