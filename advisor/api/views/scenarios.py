from __future__ import annotations

from django.db.models import Count, QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from advisor.api.errors import name_field_errors
from advisor.api.idempotency import IDEMPOTENCY_PARAMETER, KEY_REUSED_RESPONSE, idempotent
from advisor.api.scenario_input import parse_scenario_or_400
from advisor.api.serializers import ScenarioInputSerializer, ScenarioListItemSerializer, ScenarioOutputSerializer
from advisor.models import Scenario
from advisor.scenarios import (
    scenario_create,
    scenario_delete,
    scenario_for_user,
    scenario_update,
    scenarios_for_user,
)
from advisor.versioned import DocumentNameError
from core.api.conditional import (
    ETAG_HEADER,
    IF_MATCH_PARAMETER,
    IF_NONE_MATCH_PARAMETER,
    NOT_MODIFIED_RESPONSE,
    PRECONDITION_FAILED_RESPONSE,
    conditional_response,
    entity_tag,
    require_if_match,
)
from core.api.renderers import JSON_AND_CSV
from core.auth import signed_in_user


def _validated_input(request: Request) -> tuple[str, dict]:
    data = ScenarioInputSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    parse_scenario_or_400(data.validated_data["scenario"], at=("scenario",))
    return data.validated_data["name"], data.validated_data["scenario"]


def owned_scenario(request: Request, scenario_id: int) -> Scenario:
    """The user's scenario; another user's (or a missing) id raises Scenario.DoesNotExist -> 404."""
    return scenario_for_user(user=signed_in_user(request), scenario_id=scenario_id)


class ScenarioListView(GenericAPIView):
    serializer_class = ScenarioListItemSerializer
    renderer_classes = JSON_AND_CSV

    def get_queryset(self) -> QuerySet[Scenario]:
        return scenarios_for_user(user=signed_in_user(self.request))

    @extend_schema(summary="Your saved scenarios, newest first", responses=ScenarioListItemSerializer(many=True))
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(ScenarioListItemSerializer(page, many=True).data)

    @extend_schema(
        summary="Save a scenario",
        request=ScenarioInputSerializer,
        parameters=[IDEMPOTENCY_PARAMETER, ETAG_HEADER],
        responses={
            201: ScenarioOutputSerializer,
            422: KEY_REUSED_RESPONSE,
        },
    )
    def post(self, request: Request) -> Response:
        return idempotent(request, lambda: self._create(request))

    def _create(self, request: Request) -> Response:
        name, document = _validated_input(request)
        try:
            scenario = scenario_create(owner=signed_in_user(request), name=name, document=document)
        except DocumentNameError as error:
            raise name_field_errors(error) from error
        location = reverse("v1:scenario-detail", kwargs={"scenario_id": scenario.pk}, request=request)
        data = ScenarioOutputSerializer(scenario).data
        return Response(data, status=status.HTTP_201_CREATED, headers={"Location": location, "ETag": entity_tag(data)})


class ScenarioDetailView(GenericAPIView):
    serializer_class = ScenarioOutputSerializer
    lookup_url_kwarg = "scenario_id"  # get_object() (also used by OPTIONS) looks up pk=scenario_id in get_queryset()

    def get_queryset(self) -> QuerySet[Scenario]:
        return scenarios_for_user(user=signed_in_user(self.request)).annotate(version_count=Count("versions"))

    @extend_schema(
        summary="One of your scenarios (its ETag goes in If-Match when you replace it)",
        parameters=[IF_NONE_MATCH_PARAMETER, ETAG_HEADER],
        responses={200: ScenarioOutputSerializer, 304: NOT_MODIFIED_RESPONSE},
    )
    def get(self, request: Request, scenario_id: int) -> Response:
        return conditional_response(request, ScenarioOutputSerializer(self.get_object()).data)

    @extend_schema(
        summary="Replace a scenario's name and document (the previous state is kept as a version)",
        request=ScenarioInputSerializer,
        parameters=[IF_MATCH_PARAMETER, ETAG_HEADER],
        responses={
            200: ScenarioOutputSerializer,
            412: PRECONDITION_FAILED_RESPONSE,
        },
    )
    def put(self, request: Request, scenario_id: int) -> Response:
        current = self.get_object()
        require_if_match(request, entity_tag(ScenarioOutputSerializer(current).data))
        name, document = _validated_input(request)
        try:
            scenario = scenario_update(scenario=current, name=name, document=document)
        except DocumentNameError as error:
            raise name_field_errors(error) from error
        data = ScenarioOutputSerializer(self.get_queryset().get(pk=scenario.pk)).data
        return Response(data, headers={"ETag": entity_tag(data)})

    @extend_schema(summary="Delete a scenario and its versions", responses={204: None})
    def delete(self, request: Request, scenario_id: int) -> Response:
        scenario_delete(scenario=owned_scenario(request, scenario_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
