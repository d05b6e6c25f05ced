"""Where prices live: providers, current offers, append-only history, feed runs, ownership costs."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class Market(models.TextChoices):
    ON_DEMAND = "on_demand", "On demand"
    SPOT = "spot", "Spot"
    RESERVED_1Y = "reserved_1y", "Reserved 1 year"
    RESERVED_3Y = "reserved_3y", "Reserved 3 years"


# How a sentence names each market ("renting 1-year reserved ..."), beside the admin's labels above.
MARKET_PHRASES: dict[str, str] = {
    Market.ON_DEMAND.value: "on-demand",
    Market.SPOT.value: "spot",
    Market.RESERVED_1Y.value: "1-year reserved",
    Market.RESERVED_3Y.value: "3-year reserved",
}
# Bought by the hour at a price that moves, versus committed for a term at a fixed price.
FLOATING_MARKETS: tuple[str, ...] = (Market.ON_DEMAND.value, Market.SPOT.value)
RESERVED_MARKETS: tuple[str, ...] = (Market.RESERVED_1Y.value, Market.RESERVED_3Y.value)
# A reserved market's term: what a run bought on its own term pays for (economics.term_utilization).
TERM_YEARS: dict[str, float] = {Market.RESERVED_1Y.value: 1.0, Market.RESERVED_3Y.value: 3.0}


SNAPSHOT_FEED = "snapshot"


class Provider(models.Model):
    slug = models.SlugField(max_length=40, unique=True)
    name = models.CharField(max_length=80)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name


class Offer(models.Model):
    """One current (or withdrawn) price: an instance type in a region on a market.

    `observed_at` is when the price was last observed: the source's own date for the snapshot
    (None when the source gives none), the fetch time of the last successful run for live feeds.
    `effective_at` is the effective date the source states for the price, when it states one.
    """

    provider = models.ForeignKey(Provider, on_delete=models.PROTECT, related_name="offers")
    instance_type = models.CharField(max_length=120)
    region = models.CharField(max_length=60, blank=True, default="")
    market = models.CharField(max_length=16, choices=Market.choices)
    gpu = models.CharField(max_length=20, db_index=True)
    gpu_count = models.DecimalField(max_digits=6, decimal_places=3)
    vcpus = models.PositiveIntegerField(null=True, blank=True)
    memory_gib = models.DecimalField(max_digits=9, decimal_places=1, null=True, blank=True)
    usd_per_hour = models.DecimalField(max_digits=12, decimal_places=6)
    usd_per_gpu_hour = models.DecimalField(max_digits=12, decimal_places=6)
    observed_at = models.DateTimeField(null=True, blank=True)
    effective_at = models.DateTimeField(null=True, blank=True)
    source = models.TextField()
    feed = models.CharField(max_length=40, db_index=True, help_text="The feed that last wrote this offer.")
    is_snapshot = models.BooleanField(default=False)
    first_seen_at = models.DateTimeField(auto_now_add=True)
    price_changed_at = models.DateTimeField()
    withdrawn_at = models.DateTimeField(
        null=True, blank=True, help_text="Set when a successful run no longer lists it."
    )
    last_run = models.ForeignKey("FeedRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["usd_per_gpu_hour"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "instance_type", "region", "market"], name="offer_identity"),
            models.CheckConstraint(condition=Q(usd_per_hour__gt=0), name="offer_price_positive"),
            models.CheckConstraint(condition=Q(gpu_count__gt=0), name="offer_gpu_count_positive"),
        ]
        indexes = [models.Index(fields=["gpu", "market"], name="offer_gpu_market")]

    def __str__(self) -> str:
        return f"{self.provider.slug} {self.instance_type} {self.region or '-'} {self.market}"


class PriceObservation(models.Model):
    """Append-only history: one row when an offer first appears and one each time its price changes."""

    offer = models.ForeignKey(Offer, on_delete=models.CASCADE, related_name="history")
    usd_per_hour = models.DecimalField(max_digits=12, decimal_places=6)
    usd_per_gpu_hour = models.DecimalField(max_digits=12, decimal_places=6)
    observed_at = models.DateTimeField(null=True, blank=True)
    recorded_at = models.DateTimeField(auto_now_add=True)
    source = models.TextField()
    feed_run = models.ForeignKey("FeedRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        ordering = ["offer", "recorded_at", "id"]

    def __str__(self) -> str:
        return f"{self.offer_id} ${self.usd_per_hour}/h at {self.recorded_at:%Y-%m-%d %H:%M}"


class FeedRun(models.Model):
    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        SUCCESS = "success", "Success"
        FAILED = "failed", "Failed"
        REJECTED = "rejected", "Rejected (previous offers kept)"
        NOT_CONFIGURED = "not_configured", "Not configured"
        SKIPPED = "skipped", "Skipped (another refresh of this feed is running)"

    class Kind(models.TextChoices):
        # Only a live refresh reads a feed's whole catalog, so only a successful one is the size a later
        # refresh is checked against (PRICING_MIN_FRACTION_OF_LAST_RUN); a price sheet is not the catalog.
        REFRESH = "refresh", "Live refresh"
        IMPORT = "import", "Import from files"
        SNAPSHOT = "snapshot", "Bundled snapshot"

    feed = models.CharField(max_length=40, db_index=True)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.REFRESH)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    fetched = models.PositiveIntegerField(default=0)
    accepted = models.PositiveIntegerField(default=0)
    rejected = models.PositiveIntegerField(default=0)
    rejections = models.JSONField(default=dict, blank=True, help_text="reason -> count, with a few examples")
    created = models.PositiveIntegerField(default=0)
    changed = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    withdrawn = models.PositiveIntegerField(default=0)
    warnings = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True, default="")
    retryable = models.BooleanField(default=False, help_text="The failure was a network error worth retrying.")
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    progress_note = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["feed", "-started_at"], name="feedrun_feed_started")]

    def __str__(self) -> str:
        return f"{self.feed} {self.status} {self.started_at:%Y-%m-%d %H:%M}"


class FeedLock(models.Model):
    """One row per feed while a refresh holds it: the database lock that keeps refreshes apart."""

    feed = models.CharField(max_length=40, unique=True)
    token = models.CharField(max_length=40)
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.feed} until {self.expires_at:%H:%M:%S}"


class HardwareQuote(models.Model):
    """The all-in purchase price of one server, with where the number comes from."""

    gpu = models.CharField(max_length=20, db_index=True)
    gpus_per_server = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=120)
    usd = models.DecimalField(max_digits=12, decimal_places=2, help_text="USD, one server, all in")
    quoted_on = models.DateField()
    source = models.TextField()
    power_kw = models.DecimalField(max_digits=7, decimal_places=3, help_text="kW drawn by the server at load")
    idle_power_kw = models.DecimalField(max_digits=7, decimal_places=3, null=True, blank=True)
    networking_usd_per_node = models.DecimalField(
        max_digits=12, decimal_places=2, default=0, help_text="USD of cluster fabric per node"
    )
    notes = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["gpu", "gpus_per_server", "-quoted_on"]
        constraints = [
            models.UniqueConstraint(fields=["gpu", "gpus_per_server", "name"], name="hardware_quote_identity"),
            models.CheckConstraint(condition=Q(usd__gt=0), name="hardware_quote_usd_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.gpus_per_server}x {self.gpu}: {self.name}"


class OwnershipDefault(models.Model):
    key = models.SlugField(max_length=40, unique=True)
    value = models.FloatField()
    unit = models.CharField(max_length=40)
    source = models.TextField()
    as_of = models.DateField()

    class Meta:
        ordering = ["key"]

    def __str__(self) -> str:
        return f"{self.key} = {self.value} {self.unit}"
