"""Frozen proposals: issue one for a saved scenario, read it back as JSON, xlsx or PDF.

The numbers come from the stored Advice only (advisor.proposals); nothing here reads live prices."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import HttpResponse
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from advisor.api.errors import FieldErrors
from advisor.api.idempotency import IDEMPOTENCY_PARAMETER, KEY_REUSED_RESPONSE, idempotent
from advisor.api.representations import OnlyRenderer
from advisor.api.scenario_input import scenario_error_entries
from advisor.api.schema import ProposalAdviceDocumentField
from advisor.api.views.advice import FirstRenderer
from advisor.models import Proposal
from advisor.proposal import frozen_proposal_pdf
from advisor.proposals import (
    issue_fleet_proposal,
    issue_proposal,
    proposal_for_user,
    proposals_for_scenario,
    proposals_for_user,
)
from advisor.scenario import ScenarioError
from advisor.xlsx import MEDIA_TYPE as XLSX_MEDIA_TYPE
from advisor.xlsx import proposal_workbook
from core.api.renderers import PDFRenderer, StoredTextJSONRenderer
from core.auth import signed_in_user

CONTENT_HASH_HELP = (
    'SHA-256 (hex) of {"advice": ..., "provenance": ...} as this API serves them, written as JSON with sorted keys, '
    "no whitespace and non-ASCII characters as \\u escapes (Python: json.dumps(doc, sort_keys=True, "
    'separators=(",", ":"))); the same on SQLite and PostgreSQL.'
)


class ProposalSerializer(serializers.ModelSerializer):
    scenario_id = serializers.IntegerField(allow_null=True, read_only=True)
    fleet_id = serializers.IntegerField(allow_null=True, read_only=True)
    recomputed_from_id = serializers.IntegerField(allow_null=True, read_only=True)
    advice = ProposalAdviceDocumentField(
        read_only=True, help_text="The Advice JSON (kind fleet: the Fleet Plan JSON) as issued (never recomputed)."
    )
    provenance = serializers.JSONField(
        read_only=True, help_text="Offers, hardware quote and calibration the Advice used, with sources and dates."
    )

    class Meta:
        model = Proposal
        fields = [
            "id",
            "kind",
            "scenario_id",
            "fleet_id",
            "scenario_name",
            "issued_at",
            "content_hash",
            "recomputed_from_id",
            "advice",
            "provenance",
        ]
        read_only_fields = fields
        extra_kwargs = {"content_hash": {"help_text": CONTENT_HASH_HELP}}


class ProposalListItemSerializer(serializers.ModelSerializer):
    scenario_id = serializers.IntegerField(allow_null=True, read_only=True)
    fleet_id = serializers.IntegerField(allow_null=True, read_only=True)

    class Meta:
        model = Proposal
        fields = ["id", "kind", "scenario_id", "fleet_id", "scenario_name", "issued_at", "content_hash"]
        read_only_fields = fields
        extra_kwargs = {"content_hash": {"help_text": CONTENT_HASH_HELP}}


class XLSXRenderer(BaseRenderer):
    """`?format=xlsx`: the proposal as a workbook (advisor.xlsx); errors stay problem+json."""

    media_type = XLSX_MEDIA_TYPE
    format = "xlsx"
    charset = None
    render_style = "binary"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        return proposal_workbook(proposal=data)


def listed(proposals: QuerySet[Proposal]) -> QuerySet[Proposal]:
    """The columns a list item shows, without the stored Advice, provenance and document (tens of KB each: a page of
    500 read them all to print seven fields, 0.36 s against 0.005 s for scenarios)."""
    return proposals.only(*ProposalListItemSerializer.Meta.fields)


def owned_proposal(request: Request, proposal_id: int) -> Proposal:
    """The user's proposal; another user's (or a missing) id raises Proposal.DoesNotExist -> 404."""
    return proposal_for_user(user=signed_in_user(request), proposal_id=proposal_id)


class ProposalListView(GenericAPIView):
    serializer_class = ProposalListItemSerializer

    @extend_schema(
        summary="Your proposals (of scenarios and fleets), newest first",
        responses=ProposalListItemSerializer(many=True),
    )
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(listed(proposals_for_user(user=signed_in_user(request))))
        return self.get_paginated_response(ProposalListItemSerializer(page, many=True).data)


class ScenarioProposalListView(GenericAPIView):
    serializer_class = ProposalSerializer
    throttle_scope = "advice"

    @extend_schema(
        summary="The proposals issued for one of your scenarios, newest first",
        responses=ProposalListItemSerializer(many=True),
    )
    def get(self, request: Request, scenario_id: int) -> Response:
        proposals = proposals_for_scenario(user=signed_in_user(request), scenario_id=scenario_id)
        page = self.paginate_queryset(listed(proposals))
        return self.get_paginated_response(ProposalListItemSerializer(page, many=True).data)

    @extend_schema(
        summary="Issue a frozen proposal: the scenario's Advice with today's prices, stored as issued",
        request=None,
        parameters=[IDEMPOTENCY_PARAMETER],
        responses={
            201: ProposalSerializer,
            409: OpenApiResponse(description="The saved document no longer validates; errors point into it."),
            422: KEY_REUSED_RESPONSE,
        },
    )
    def post(self, request: Request, scenario_id: int) -> Response:
        return idempotent(request, lambda: self._issue(request, scenario_id))

    def _issue(self, request: Request, scenario_id: int) -> Response:
        try:
            proposal = issue_proposal(user=signed_in_user(request), scenario_id=scenario_id)
        except ScenarioError as error:
            raise FieldErrors(
                scenario_error_entries(error, at=("scenario",)),
                detail="The saved scenario is invalid; see errors.",
                status_code=status.HTTP_409_CONFLICT,
            ) from error
        return created(request, proposal)


def created(request: Request, proposal: Proposal) -> Response:
    location = reverse("v1:proposal-detail", kwargs={"proposal_id": proposal.pk}, request=request)
    return Response(ProposalSerializer(proposal).data, status=status.HTTP_201_CREATED, headers={"Location": location})


class FleetProposalListView(GenericAPIView):
    serializer_class = ProposalSerializer
    throttle_scope = "advice"

    @extend_schema(
        summary="Issue a frozen fleet proposal: the saved fleet's Fleet Plan with today's prices, stored as issued",
        request=None,
        parameters=[IDEMPOTENCY_PARAMETER],
        responses={
            201: ProposalSerializer,
            409: OpenApiResponse(description="The saved fleet no longer plans; errors point into it."),
            422: KEY_REUSED_RESPONSE,
        },
    )
    def post(self, request: Request, fleet_id: int) -> Response:
        # As scenario proposals: a retried POST with the same key returns the first proposal (a hostile probe: two
        # proposals were issued).
        return idempotent(request, lambda: self._issue(request, fleet_id))

    def _issue(self, request: Request, fleet_id: int) -> Response:
        try:
            proposal = issue_fleet_proposal(user=signed_in_user(request), fleet_id=fleet_id)
        except ScenarioError as error:
            raise FieldErrors(
                scenario_error_entries(error, at=("fleet",)),
                detail="The saved fleet is invalid; see errors.",
                status_code=status.HTTP_409_CONFLICT,
            ) from error
        return created(request, proposal)


def _workbook(proposal: Proposal) -> Response:
    """The proposal for XLSXRenderer (a scenario's or a fleet's workbook, advisor.xlsx), as an attachment."""
    response = Response(ProposalSerializer(proposal).data)
    filename = f"{slugify(proposal.scenario_name) or 'scenario'}-proposal-{proposal.pk}.xlsx"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


class ProposalDetailView(GenericAPIView):
    serializer_class = ProposalSerializer
    # `?format=xlsx` (DESIGN.md) still answers the workbook; the document lists only the JSON here and the workbook
    # at proposal.xlsx, which generated clients can read (advisor.api.representations).
    renderer_classes = [StoredTextJSONRenderer, XLSXRenderer]

    @extend_schema(
        summary="One of your proposals as issued (the workbook: proposal.xlsx)", responses={200: ProposalSerializer}
    )
    def get(self, request: Request, proposal_id: int) -> Response:
        proposal = owned_proposal(request, proposal_id)
        if getattr(request.accepted_renderer, "format", "") == "xlsx":
            return _workbook(proposal)
        return Response(ProposalSerializer(proposal).data)


class ProposalWorkbookView(GenericAPIView):
    renderer_classes = [XLSXRenderer]
    content_negotiation_class = OnlyRenderer
    metadata_class = None  # OPTIONS is a 405: its description is no proposal, and a workbook of it was a 500

    @extend_schema(
        summary="One of your proposals as a workbook (xlsx), from its stored Advice or Fleet Plan",
        responses={(200, XLSX_MEDIA_TYPE): OpenApiTypes.BINARY},
    )
    def get(self, request: Request, proposal_id: int) -> Response:
        return _workbook(owned_proposal(request, proposal_id))


class ProposalPDFView(GenericAPIView):
    renderer_classes = [PDFRenderer]
    content_negotiation_class = FirstRenderer
    throttle_scope = "pdf"

    @extend_schema(
        summary="The PDF of one of your proposals, from its stored Advice",
        responses={(200, "application/pdf"): OpenApiTypes.BINARY},
    )
    def get(self, request: Request, proposal_id: int) -> HttpResponse:
        proposal = owned_proposal(request, proposal_id)
        response = HttpResponse(frozen_proposal_pdf(proposal=proposal), content_type="application/pdf")
        filename = f"{slugify(proposal.scenario_name) or 'scenario'}-proposal-{proposal.pk}.pdf"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
