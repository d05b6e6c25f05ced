"""Fleet plans: ``POST /api/v1/fleet-plans`` (stateless) and saved fleets under ``/api/v1/fleets``
(versioned, owner-scoped like scenarios; another user's fleet answers 404). Bad input is a 400
problem+json with a pointer to each bad field; nothing is stored."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from advisor.api.errors import FieldErrors
from advisor.api.parsers import JSONParser
from advisor.api.scenario_input import scenario_error_entries
from advisor.api.schema import FleetInputDocument, FleetInputDocumentField, FleetPlanDocument
from advisor.api.serializers import NameField, StrictSerializer, saved_versions
from advisor.api.views.advice import FirstRenderer
from advisor.api.views.versioned import VersionedDetailView, VersionedDocumentApi, VersionedListView
from advisor.fleet.models import Fleet
from advisor.fleet.proposal import render_fleet_pdf
from advisor.fleet.service import fleet_plan_for, validate_fleet_for
from advisor.fleet.store import fleet_create, fleet_delete, fleet_for_user, fleet_update, fleets_for_user
from advisor.scenario import ScenarioError
from advisor.scenarios import NAME_MAX_LENGTH
from core.api.renderers import PDFRenderer
from core.auth import signed_in_user


class FleetInputSerializer(StrictSerializer):
    name = NameField(
        max_length=NAME_MAX_LENGTH,
        help_text="The fleet's name, also saved as the document's own `name` (the plan prints it); a `fleet.name` "
        "that differs is an error.",
    )
    fleet = FleetInputDocumentField(help_text="Fleet Plan input JSON (see DESIGN.md); unknown fields are an error.")


class FleetOutputSerializer(serializers.ModelSerializer):
    fleet = FleetInputDocumentField(source="document", read_only=True, help_text="The Fleet Plan input as saved.")
    version = serializers.SerializerMethodField(help_text="How many times it has been saved.")

    class Meta:
        model = Fleet
        fields = ["id", "name", "fleet", "version", "created_at", "updated_at"]

    def get_version(self, obj: Fleet) -> int:
        return saved_versions(obj)


class FleetListItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = Fleet
        fields = ["id", "name", "created_at", "updated_at"]


def _invalid(error: ScenarioError, *, at: tuple[str, ...] = (), status_code: int = 400) -> FieldErrors:
    return FieldErrors(
        scenario_error_entries(error, at=at),
        detail="The fleet plan input is invalid; see errors.",
        status_code=status_code,
    )


def plan_or_400(request: Request, document: Any, *, at: tuple[str, ...] = (), status_code: int = 400) -> dict:
    try:
        return fleet_plan_for(document=document, user=signed_in_user(request))
    except ScenarioError as error:
        raise _invalid(error, at=at, status_code=status_code) from error


def _validated_input(request: Request) -> tuple[str, dict]:
    data = FleetInputSerializer(data=request.data)
    data.is_valid(raise_exception=True)
    try:  # nothing that could not be planned is stored (a workload whose run outlasts a year, one that does not fit)
        validate_fleet_for(document=data.validated_data["fleet"], user=signed_in_user(request))
    except ScenarioError as error:
        raise _invalid(error, at=("fleet",)) from error
    return data.validated_data["name"], data.validated_data["fleet"]


class FleetPlanView(GenericAPIView):
    serializer_class = FleetPlanDocument
    parser_classes = [JSONParser]
    throttle_scope = "advice"

    @extend_schema(
        summary="Fleet plan (stateless): how many GPUs to own, commit to and rent for a year's job mix",
        request=FleetInputDocument,
        responses={200: FleetPlanDocument},
    )
    def post(self, request: Request) -> Response:
        return Response(plan_or_400(request, request.data))


FLEETS = VersionedDocumentApi(
    noun="fleet",
    document_field="fleet",
    model=Fleet,
    id_kwarg="fleet_id",
    detail_route="v1:fleet-detail",
    input_serializer=FleetInputSerializer,
    output_serializer=FleetOutputSerializer,
    list_item_serializer=FleetListItemSerializer,
    validated_input=_validated_input,
    for_user=fleets_for_user,
    create=fleet_create,
    owned=lambda user, fleet_id: fleet_for_user(user=user, fleet_id=fleet_id),
    update=lambda fleet, name, document: fleet_update(fleet=fleet, name=name, document=document),
    delete=lambda fleet: fleet_delete(fleet=fleet),
)


class FleetListView(VersionedListView):
    api = FLEETS


class FleetDetailView(VersionedDetailView):
    api = FLEETS


# A stored document the current rules reject (a rule or catalog change since it was saved) is a conflict, not the
# caller's bad request; /plan and /plan.pdf document it alike.
STORED_FLEET_INVALID_RESPONSE = OpenApiResponse(
    description="The saved fleet no longer passes the current rules (they changed since it was saved): `errors` "
    "names each field under `#/fleet`; PUT a corrected fleet."
)


class SavedFleetPlanView(GenericAPIView):
    serializer_class = FleetPlanDocument
    throttle_scope = "advice"

    @extend_schema(
        summary="The plan of one of your saved fleets",
        responses={200: FleetPlanDocument, 409: STORED_FLEET_INVALID_RESPONSE},
    )
    def get(self, request: Request, fleet_id: int) -> Response:
        fleet = fleet_for_user(user=signed_in_user(request), fleet_id=fleet_id)
        return Response(plan_or_400(request, fleet.document, at=("fleet",), status_code=409))


class FleetProposalView(GenericAPIView):
    renderer_classes = [PDFRenderer]
    content_negotiation_class = FirstRenderer
    throttle_scope = "pdf"

    @extend_schema(
        summary="The fleet plan of one of your saved fleets as a PDF",
        responses={(200, "application/pdf"): OpenApiTypes.BINARY, 409: STORED_FLEET_INVALID_RESPONSE},
    )
    def get(self, request: Request, fleet_id: int) -> HttpResponse:
        fleet = fleet_for_user(user=signed_in_user(request), fleet_id=fleet_id)
        plan = plan_or_400(request, fleet.document, at=("fleet",), status_code=409)
        response = HttpResponse(render_fleet_pdf(plan=plan, fleet_name=fleet.name), content_type="application/pdf")
        response["Content-Disposition"] = f'attachment; filename="{slugify(fleet.name) or "fleet"}-plan.pdf"'
        return response
