from __future__ import annotations

from rest_framework.request import Request

from advisor.api.scenario_input import parse_scenario_or_400
from advisor.api.serializers import ScenarioInputSerializer, ScenarioListItemSerializer, ScenarioOutputSerializer
from advisor.api.views.versioned import VersionedDetailView, VersionedDocumentApi, VersionedListView
from advisor.models import Scenario
from advisor.scenarios import (
    scenario_create,
    scenario_delete,
    scenario_for_user,
    scenario_update,
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
