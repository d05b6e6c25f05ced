from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from advisor.api.scenario_input import parse_scenario_or_400
from advisor.api.schema import ScenarioDocument
from advisor.api.serializers import (
    ScenarioInputSerializer,
    ScenarioListItemSerializer,
    ScenarioOutputSerializer,
    ScenarioVersionListItemSerializer,
)
from advisor.api.views.versioned import VersionedDetailView, VersionedDocumentApi, VersionedListView
from advisor.models import Scenario
from advisor.scenarios import (
    scenario_create,
    scenario_delete,
    scenario_for_user,
    scenario_update,
    scenario_version,
    scenario_versions,
    scenarios_for_user,
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


SCENARIOS = VersionedDocumentApi(
    noun="scenario",
    document_field="scenario",
    model=Scenario,
    id_kwarg="scenario_id",
    detail_route="v1:scenario-detail",
    input_serializer=ScenarioInputSerializer,
    output_serializer=ScenarioOutputSerializer,
    list_item_serializer=ScenarioListItemSerializer,
    validated_input=_validated_input,
    for_user=scenarios_for_user,
    create=scenario_create,
    owned=lambda user, scenario_id: scenario_for_user(user=user, scenario_id=scenario_id),
    update=lambda scenario, name, document: scenario_update(scenario=scenario, name=name, document=document),
    delete=lambda scenario: scenario_delete(scenario=scenario),
)


class ScenarioListView(VersionedListView):
    api = SCENARIOS
    renderer_classes = JSON_AND_CSV


class ScenarioDetailView(VersionedDetailView):
    api = SCENARIOS


class ScenarioVersionListView(GenericAPIView):
    serializer_class = ScenarioVersionListItemSerializer

    @extend_schema(
        summary="Every saved state of one of your scenarios, newest first (a PUT keeps the previous one)",
        responses=ScenarioVersionListItemSerializer(many=True),
    )
    def get(self, request: Request, scenario_id: int) -> Response:
        page = self.paginate_queryset(scenario_versions(scenario=owned_scenario(request, scenario_id)))
        return self.get_paginated_response(ScenarioVersionListItemSerializer(page, many=True).data)


class ScenarioVersionDetailView(GenericAPIView):
    serializer_class = ScenarioDocument
    pagination_class = None

    @extend_schema(
        summary="The Scenario JSON of one saved version (PUT it back to restore it)",
        responses=ScenarioDocument,
    )
    def get(self, request: Request, scenario_id: int, number: int) -> Response:
        version = scenario_version(scenario=owned_scenario(request, scenario_id), number=number)
        return Response(version.document)
