"""`GET /api/v1/offers`, `/offers/{id}/history` and `/feeds`: translate query parameters, call selectors,
serialize. Tabular resources also render as CSV."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from core.api.conditional import (
    ETAG_HEADER,
    IF_NONE_MATCH_PARAMETER,
    LAST_MODIFIED_HEADER,
    NOT_MODIFIED_RESPONSE,
    conditional_response,
)
from core.api.query import QueryParameterProblem
from core.api.renderers import JSON_AND_CSV
from pricing import selectors
from pricing.api.selectors import offer_by_id, offer_observations, offers_last_modified
from pricing.api.serializers import FeedSerializer, OfferQuery, OfferSerializer, PriceObservationSerializer
from pricing.models import Offer


class OfferListApi(GenericAPIView):
    serializer_class = OfferSerializer
    queryset = Offer.objects.none()
    renderer_classes = JSON_AND_CSV

    @extend_schema(
        summary="Current cloud GPU offers, cheapest per GPU-hour first",
        description="Each offer's `id` is stable (natural key: provider, instance, region, market) and opens "
        "`/offers/{id}/history`. Responses carry `ETag` and `Last-Modified`; send `If-None-Match` to get a 304.",
        parameters=[OfferQuery, IF_NONE_MATCH_PARAMETER, ETAG_HEADER, LAST_MODIFIED_HEADER],
        responses={200: OfferSerializer(many=True), 304: NOT_MODIFIED_RESPONSE},
    )
    def get(self, request: Request) -> Response:
        query = OfferQuery(data=request.query_params)
        if not query.is_valid():  # a 400 naming each query parameter, as every other query error is
            details = {name: " ".join(str(message) for message in messages) for name, messages in query.errors.items()}
            raise QueryParameterProblem(details, code="invalid")
        filters = query.validated_data
        offers = selectors.current_offers(
            gpu=filters.get("gpu"),
            providers=[filters["provider"]] if "provider" in filters else None,
            markets=[filters["market"]] if "market" in filters else None,
        ).order_by("usd_per_gpu_hour", "id")
        page = self.paginate_queryset(offers)
        body = self.get_paginated_response(OfferSerializer(page, many=True).data).data
        changed = offers_last_modified(offers=offers)
        return conditional_response(request, body, variant=request.accepted_media_type, last_modified=changed)


class FeedListApi(GenericAPIView):
    serializer_class = FeedSerializer
    pagination_class = None
    renderer_classes = JSON_AND_CSV

    @extend_schema(
        summary="Each price feed (and the bundled snapshot) with its last run, status and error",
        responses=FeedSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        return Response(FeedSerializer(selectors.feed_statuses(), many=True, context={"request": request}).data)


class OfferHistoryView(GenericAPIView):
    serializer_class = PriceObservationSerializer
    renderer_classes = JSON_AND_CSV

    @extend_schema(
        summary="An offer's price history: one point when it appeared and one per price change",
        responses=PriceObservationSerializer(many=True),
    )
    def get(self, request: Request, offer_id: int) -> Response:
        offer = offer_by_id(offer_id=offer_id)
        # A list in the page's order (undated rows placed by rule, not SQL); DRF pages any sequence, its stubs say
        # QuerySet.
        page = self.paginate_queryset(offer_observations(offer=offer))  # type: ignore[arg-type]
        return self.get_paginated_response(PriceObservationSerializer(page, many=True).data)
