"""`GET /api/v1/offers` and `GET /api/v1/feeds`: translate query parameters, call selectors, serialize."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from pricing import selectors
from pricing.gpus import CANONICAL_GPUS
from pricing.models import Market, Offer, Provider


class OfferQuery(serializers.Serializer):
    gpu = serializers.ChoiceField(choices=CANONICAL_GPUS, required=False, help_text="Canonical GPU id, e.g. h100-sxm.")
    provider = serializers.SlugField(required=False, help_text="Provider slug, e.g. aws, azure, lambda.")
    market = serializers.ChoiceField(choices=Market.values, required=False)

    def validate_provider(self, value: str) -> str:
        if not Provider.objects.filter(slug=value).exists():
            known = ", ".join(Provider.objects.values_list("slug", flat=True))
            raise serializers.ValidationError(f"Unknown provider {value!r}; known providers: {known}.")
        return value


class OfferSerializer(serializers.Serializer):
    provider = serializers.CharField(source="provider.slug")
    instance = serializers.CharField(source="instance_type")
    region = serializers.CharField(help_text="Empty when the provider prices the instance the same everywhere.")
    market = serializers.ChoiceField(choices=Market.values)
    gpu = serializers.CharField()
    gpu_count = serializers.FloatField(help_text="GPUs in the instance (fractional for shared GPUs).")
    usd_per_hour = serializers.FloatField(help_text="Whole instance, USD per hour.")
    usd_per_gpu_hour = serializers.FloatField(help_text="USD per GPU-hour.")
    observed_at = serializers.DateTimeField(
        allow_null=True, help_text="When the price was observed; null when the source gives no date."
    )
    source = serializers.CharField(help_text="Where the number comes from (feed or snapshot file, field used).")


class OfferListApi(GenericAPIView):
    serializer_class = OfferSerializer
    queryset = Offer.objects.none()

    @extend_schema(summary="Current cloud GPU offers, cheapest per GPU-hour first", parameters=[OfferQuery])
    def get(self, request: Request) -> Response:
        query = OfferQuery(data=request.query_params)
        if not query.is_valid():
            raise ValidationError(query.errors)
        filters = query.validated_data
        offers = selectors.current_offers(
            gpu=filters.get("gpu"),
            providers=[filters["provider"]] if "provider" in filters else None,
            markets=[filters["market"]] if "market" in filters else None,
        ).order_by("usd_per_gpu_hour", "id")
        page = self.paginate_queryset(offers)
        return self.get_paginated_response(OfferSerializer(page, many=True).data)


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
    error = serializers.CharField(allow_blank=True)


class FeedSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()
    configured = serializers.BooleanField()
    status = serializers.SerializerMethodField(help_text="The last run's status, or 'never_run'.")
    error = serializers.SerializerMethodField(help_text="The last run's error, empty when it succeeded.")
    stale = serializers.BooleanField(help_text="No successful run within PRICING_STALE_AFTER_HOURS.")
    last_run = FeedRunSerializer(allow_null=True)
    last_success_at = serializers.SerializerMethodField()

    def get_status(self, feed: selectors.FeedStatus) -> str:
        return feed.last_run.status if feed.last_run else "never_run"

    def get_error(self, feed: selectors.FeedStatus) -> str:
        return feed.last_run.error if feed.last_run else ""

    def get_last_success_at(self, feed: selectors.FeedStatus) -> str | None:
        run = feed.last_success
        return serializers.DateTimeField().to_representation(run.finished_at) if run and run.finished_at else None


class FeedListApi(GenericAPIView):
    serializer_class = FeedSerializer
    pagination_class = None

    @extend_schema(summary="Each price feed (and the bundled snapshot) with its last run, status and error")
    def get(self, request: Request) -> Response:
        return Response(FeedSerializer(selectors.feed_statuses(), many=True).data)
