"""The pricing API's query and output serializers: offers, feeds and their runs, price history,
hardware quotes, and the state of a background refresh task."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from pricing import selectors
from pricing.gpus import CANONICAL_GPUS
from pricing.models import FeedRun, HardwareQuote, Market, PriceObservation


def check_provider_slugs(slugs: list[str]) -> None:
    """ValidationError naming the slugs no provider has (``selectors.unknown_provider_slugs``), with the known ones."""
    unknown = selectors.unknown_provider_slugs(slugs=slugs)
    if unknown:
        known = ", ".join(sorted(selectors.known_provider_slugs()))
        names = ", ".join(repr(slug) for slug in unknown)
        raise serializers.ValidationError(f"Unknown provider {names}; known providers: {known}.")


def choice_error(what: str, choices: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """A ChoiceField's invalid_choice message that lists what is allowed."""
    return {"invalid_choice": f'"{{input}}" is not a {what}; one of: {", ".join(choices)}.'}


class OfferQuery(serializers.Serializer):
    gpu = serializers.ChoiceField(
        choices=CANONICAL_GPUS,
        required=False,
        help_text="Canonical GPU id, e.g. h100-sxm.",
        error_messages=choice_error("GPU id", tuple(CANONICAL_GPUS)),
    )
    provider = serializers.SlugField(required=False, help_text="Provider slug, e.g. aws, azure, lambda.")
    market = serializers.ChoiceField(
        choices=Market.values, required=False, error_messages=choice_error("market", tuple(Market.values))
    )

    def validate_provider(self, value: str) -> str:
        check_provider_slugs([value])
        return value


class OfferSerializer(serializers.Serializer):
    """An offer's natural key is (provider, instance, region, market): a refresh updates the offer with the same
    key in place, so its `id` is stable across refreshes and opens /api/v1/offers/{id}/history."""

    id = serializers.IntegerField(help_text="Stable id: GET /api/v1/offers/{id}/history is its price history.")
    provider = serializers.CharField(source="provider.slug")
    instance = serializers.CharField(source="instance_type")
    region = serializers.CharField(help_text="Empty when the provider prices the instance the same everywhere.")
    market = serializers.ChoiceField(choices=Market.values)
    gpu = serializers.CharField(
        help_text="Canonical GPU id (the `gpu` filter's choices; GET /api/v1/gpus/{id}/price-history takes each). "
        "A superset of GET /api/v1/gpus, which lists only the GPUs the estimator has specs for: an offer may carry "
        "a GPU with no entry there (e.g. t4, a10), priced but not estimated."
    )
    gpu_count = serializers.FloatField(help_text="GPUs in the instance (fractional for shared GPUs).")
    usd_per_hour = serializers.FloatField(help_text="Whole instance, USD per hour.")
    usd_per_gpu_hour = serializers.FloatField(help_text="USD per GPU-hour.")
    observed_at = serializers.DateTimeField(
        allow_null=True, help_text="When the price was observed; null when the source gives no date."
    )
    # The stub sees a clash with Field.source; DRF's SerializerMetaclass moves declared fields off the class.
    source = serializers.CharField(help_text="Where the number comes from (feed or snapshot file, field used).")  # type: ignore[assignment]


ERROR_HELP = "Staff see the error text; everyone else a short category (it can name hosts and exception details)."


def visible_error(run: FeedRun, request: Any) -> str:
    """The run's error as this caller may see it: the text for staff, the category otherwise."""
    user = getattr(request, "user", None)
    if user is not None and user.is_staff:
        return run.error
    return selectors.run_error_category(run)


class FeedRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    fetched = serializers.IntegerField()
    accepted = serializers.IntegerField()
    rejected = serializers.IntegerField()
    rejections = serializers.DictField(help_text="reason -> {count, examples}")
    created = serializers.IntegerField()
    changed = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    withdrawn = serializers.IntegerField()
    warnings = serializers.ListField(child=serializers.CharField())
    error = serializers.SerializerMethodField(help_text=ERROR_HELP)

    def get_error(self, run: FeedRun) -> str:
        return visible_error(run, self.context.get("request"))


class FeedSerializer(serializers.Serializer):
    name = serializers.CharField()
    # The stub sees a clash with Field.label; DRF's SerializerMetaclass moves declared fields off the class.
    label = serializers.CharField()  # type: ignore[assignment]
    configured = serializers.BooleanField()
    status = serializers.SerializerMethodField(
        help_text=(
            "The status of the last run that did something (a skipped duplicate refresh is passed over unless "
            "every run was skipped), or 'never_run'."
        )
    )
    error = serializers.SerializerMethodField(help_text="The last run's error, empty when it succeeded. " + ERROR_HELP)
    stale = serializers.BooleanField(help_text="No successful run within PRICING_STALE_AFTER_HOURS.")
    last_run = FeedRunSerializer(allow_null=True)
    last_success_at = serializers.SerializerMethodField()

    def get_status(self, feed: selectors.FeedStatus) -> str:
        return feed.last_run.status if feed.last_run else "never_run"

    def get_error(self, feed: selectors.FeedStatus) -> str:
        return visible_error(feed.last_run, self.context.get("request")) if feed.last_run else ""

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_last_success_at(self, feed: selectors.FeedStatus) -> str | None:
        run = feed.last_success
        return serializers.DateTimeField().to_representation(run.finished_at) if run and run.finished_at else None


class HardwareQuoteSerializer(serializers.ModelSerializer):
    usd = serializers.FloatField(help_text="All-in price of one server, USD.")
    power_kw = serializers.FloatField(help_text="Server draw at load, kW.")
    idle_power_kw = serializers.FloatField(allow_null=True)
    networking_usd_per_node = serializers.FloatField(help_text="Cluster fabric per node, USD.")

    class Meta:
        model = HardwareQuote
        fields = [
            "id",
            "gpu",
            "gpus_per_server",
            "name",
            "usd",
            "quoted_on",
            "source",
            "power_kw",
            "idle_power_kw",
            "networking_usd_per_node",
            "notes",
        ]
        read_only_fields = fields


class PriceObservationSerializer(serializers.ModelSerializer):
    usd_per_hour = serializers.FloatField()
    usd_per_gpu_hour = serializers.FloatField()

    class Meta:
        model = PriceObservation
        fields = ["recorded_at", "observed_at", "usd_per_hour", "usd_per_gpu_hour", "source"]
        read_only_fields = fields


class DailyPriceSerializer(serializers.Serializer):
    date = serializers.DateField()
    min_usd_per_gpu_hour = serializers.FloatField()
    median_usd_per_gpu_hour = serializers.FloatField()
    max_usd_per_gpu_hour = serializers.FloatField()
    offers = serializers.IntegerField(help_text="Offers with a price in effect that day.")


class TaskSerializer(serializers.Serializer):
    task_id = serializers.CharField()
    status = serializers.CharField(
        help_text=(
            "Celery state: PENDING, STARTED, SUCCESS, FAILURE, RETRY, REVOKED; or unknown: still PENDING after "
            "the results are kept (CELERY_RESULT_EXPIRES), so its result expired or was lost (see detail)."
        )
    )
    status_url = serializers.URLField(help_text="Poll this for the task's state and result.")
    result = serializers.JSONField(required=False, allow_null=True)
    error = serializers.CharField(required=False, allow_null=True)
    detail = serializers.CharField(required=False, help_text="Why the status is unknown, and where to look instead.")
