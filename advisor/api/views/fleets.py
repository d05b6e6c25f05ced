"""Fleet plans: ``POST /api/v1/fleet-plans`` (stateless) and saved fleets under ``/api/v1/fleets``
(versioned, owner-scoped like scenarios; another user's fleet answers 404). Bad input is a 400
problem+json with a pointer to each bad field; nothing is stored."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet
from django.http import HttpResponse
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from advisor.api.errors import FieldErrors, name_field_errors
from advisor.api.idempotency import IDEMPOTENCY_PARAMETER, KEY_REUSED_RESPONSE, idempotent
from advisor.api.parsers import JSONParser
from advisor.api.scenario_input import scenario_error_entries
from advisor.api.schema import FleetInputDocument, FleetInputDocumentField, FleetPlanDocument
from advisor.api.serializers import NameField, StrictSerializer, saved_versions
from advisor.api.views.advice import FirstRenderer
from advisor.fleet.models import Fleet
from advisor.fleet.proposal import render_fleet_pdf
from advisor.fleet.service import fleet_plan_for, validate_fleet_for
from advisor.fleet.store import fleet_create, fleet_delete, fleet_for_user, fleet_update, fleets_for_user
from advisor.scenario import ScenarioError
from advisor.scenarios import NAME_MAX_LENGTH
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
from core.api.renderers import PDFRenderer
from core.auth import signed_in_user


class FleetInputSerializer(StrictSerializer):
    name = NameField(max_length=NAME_MAX_LENGTH)
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


class FleetListView(GenericAPIView):
    serializer_class = FleetListItemSerializer

    def get_queryset(self) -> QuerySet[Fleet]:
        return fleets_for_user(user=signed_in_user(self.request))

    @extend_schema(summary="Your saved fleets, newest first", responses=FleetListItemSerializer(many=True))
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(FleetListItemSerializer(page, many=True).data)

    @extend_schema(
        summary="Save a fleet",
        request=FleetInputSerializer,
        parameters=[IDEMPOTENCY_PARAMETER, ETAG_HEADER],
        responses={
            201: FleetOutputSerializer,
            422: KEY_REUSED_RESPONSE,
        },
    )
    def post(self, request: Request) -> Response:
        # As scenarios: a retried POST with the same key returns the first fleet (a hostile probe: two were saved).
        return idempotent(request, lambda: self._create(request))

    def _create(self, request: Request) -> Response:
        name, document = _validated_input(request)
        try:
            fleet = fleet_create(owner=signed_in_user(request), name=name, document=document)
        except DocumentNameError as error:
            raise name_field_errors(error) from error
        location = reverse("v1:fleet-detail", kwargs={"fleet_id": fleet.pk}, request=request)
        data = FleetOutputSerializer(fleet).data
        return Response(data, status=status.HTTP_201_CREATED, headers={"Location": location, "ETag": entity_tag(data)})


class FleetDetailView(GenericAPIView):
    serializer_class = FleetOutputSerializer
    lookup_url_kwarg = "fleet_id"

    def get_queryset(self) -> QuerySet[Fleet]:
        return fleets_for_user(user=signed_in_user(self.request)).annotate(version_count=Count("versions"))

    @extend_schema(
        summary="One of your fleets (its ETag goes in If-Match when you replace it)",
        parameters=[IF_NONE_MATCH_PARAMETER, ETAG_HEADER],
        responses={200: FleetOutputSerializer, 304: NOT_MODIFIED_RESPONSE},
    )
    def get(self, request: Request, fleet_id: int) -> Response:
        return conditional_response(request, FleetOutputSerializer(self.get_object()).data)

    @extend_schema(
        summary="Replace a fleet's name and document (the previous state is kept as a version)",
        request=FleetInputSerializer,
        parameters=[IF_MATCH_PARAMETER, ETAG_HEADER],
        responses={
            200: FleetOutputSerializer,
            412: PRECONDITION_FAILED_RESPONSE,
        },
    )
    def put(self, request: Request, fleet_id: int) -> Response:
        # Versioned like scenarios, so guarded like them (a hostile probe: PUT with a stale or bogus If-Match answered
        # 200 and overwrote, a lost update): the ETag GET gives, checked before the body (RFC 9110 13.2.1).
        current = self.get_object()
        require_if_match(request, entity_tag(FleetOutputSerializer(current).data))
        name, document = _validated_input(request)
        try:
            fleet = fleet_update(fleet=current, name=name, document=document)
        except DocumentNameError as error:
            raise name_field_errors(error) from error
        data = FleetOutputSerializer(self.get_queryset().get(pk=fleet.pk)).data
        return Response(data, headers={"ETag": entity_tag(data)})

    @extend_schema(summary="Delete a fleet and its versions", responses={204: None})
    def delete(self, request: Request, fleet_id: int) -> Response:
        fleet_delete(fleet=fleet_for_user(user=signed_in_user(request), fleet_id=fleet_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


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
