"""Hardware purchase quotes and a GPU's daily price series. Pricing owns the selectors and serializers;
these two views stay with the advisor because quotes accept only the GPU ids the estimator knows
(pricing may not import the estimator). A price history is there for every GPU id an offer can carry
(pricing's canonical ids, a superset of the estimator's)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from advisor.api.views.base import CalendarDayField, CommaSeparatedChoices, query_params
from core.api.renderers import JSON_AND_CSV
from estimator.specs import GPU_IDS
from pricing.api.selectors import (
    DEFAULT_HISTORY_DAYS,
    HistoryWindowError,
    gpu_daily_prices,
    hardware_quotes,
    price_history_window,
)
from pricing.api.serializers import DailyPriceSerializer, HardwareQuoteSerializer, check_provider_slugs
from pricing.gpus import CANONICAL_GPUS
from pricing.models import Market


class HardwareQuoteQuery(serializers.Serializer):
    gpu = serializers.ChoiceField(choices=GPU_IDS, required=False, help_text="Only quotes for this GPU.")


class HardwareQuoteListView(GenericAPIView):
    serializer_class = HardwareQuoteSerializer
    renderer_classes = JSON_AND_CSV

    @extend_schema(
        summary="Server purchase quotes (capex inputs of the buy side)",
        parameters=[HardwareQuoteQuery],
        responses=HardwareQuoteSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        query = query_params(HardwareQuoteQuery, request)
        page = self.paginate_queryset(hardware_quotes(gpu=query.get("gpu")))
        return self.get_paginated_response(HardwareQuoteSerializer(page, many=True).data)


_MARKETS_HELP = f"Comma-separated markets ({', '.join(Market.values)}); default all."


class GpuPriceHistoryQuery(serializers.Serializer):
    since = CalendarDayField(
        required=False, help_text=f"First day (UTC), default {DEFAULT_HISTORY_DAYS} days before `until`."
    )
    until = CalendarDayField(required=False, help_text="Last day (UTC), default today.")
    provider = CommaSeparatedChoices(required=False, help_text="Comma-separated provider slugs; default all.")
    market = CommaSeparatedChoices(
        choices=tuple(Market.values),
        required=False,
        help_text=_MARKETS_HELP,
    )

    def validate_provider(self, value: list[str]) -> list[str]:
        check_provider_slugs(value)
        return value

    def validate(self, attrs: dict) -> dict:
        try:
            since, until = price_history_window(since=attrs.get("since"), until=attrs.get("until"))
        except HistoryWindowError as error:
            raise serializers.ValidationError({error.field: [str(error)]}) from error
        return {**attrs, "since": since, "until": until}


class GpuPriceHistoryView(GenericAPIView):
    serializer_class = DailyPriceSerializer
    renderer_classes = JSON_AND_CSV
    pagination_class = None

    @extend_schema(
        summary="A GPU's daily price series (end-of-day price in effect, across matching offers)",
        description="Any GPU id an offer can carry (the `gpu` of GET /api/v1/offers): a superset of GET "
        "/api/v1/gpus, which lists the GPUs the estimator has specs for.",
        parameters=[
            GpuPriceHistoryQuery,
            # A comma-separated list of the market enum GET /api/v1/offers declares (style form, not exploded).
            OpenApiParameter(
                "market",
                {"type": "array", "items": {"type": "string", "enum": list(Market.values)}},
                style="form",
                explode=False,
                description=_MARKETS_HELP,
            ),
        ],
        responses=DailyPriceSerializer(many=True),
    )
    def get(self, request: Request, gpu_id: str) -> Response:
        if gpu_id not in CANONICAL_GPUS:
            raise NotFound(f"Unknown GPU {gpu_id!r}; offers carry these GPU ids: {', '.join(CANONICAL_GPUS)}.")
        query = query_params(GpuPriceHistoryQuery, request)
        series = gpu_daily_prices(
            gpu=gpu_id,
            since=query["since"],
            until=query["until"],
            providers=query.get("provider"),
            markets=query.get("market"),
        )
        return Response(DailyPriceSerializer(series, many=True).data)
