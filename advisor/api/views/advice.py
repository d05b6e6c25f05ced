"""Advice (stateless, and for a saved scenario) and the PDF proposal: the same Advice document the web
pages render, from advisor.web.planning.advice_for (the one door to the pipeline), cached by its inputs."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.generics import GenericAPIView
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response

from advisor.api.advice_cache import cached_advice_for
from advisor.api.errors import FieldErrors
from advisor.api.parsers import JSONParser
from advisor.api.scenario_input import scenario_error_entries
from advisor.api.schema import AdviceDocument, ScenarioDocument
from advisor.api.views.scenarios import owned_scenario
from advisor.proposal import render_proposal_pdf
from advisor.scenario import ScenarioError
from core.api.renderers import PDFRenderer
from core.auth import signed_in_user


def advice_or_400(request: Request, document: Any, *, at: tuple[str, ...] = (), status_code: int = 400) -> dict:
    try:
        return cached_advice_for(document=document, user=signed_in_user(request))
    except ScenarioError as error:
        detail = "The scenario is invalid; see errors."
        raise FieldErrors(scenario_error_entries(error, at=at), detail=detail, status_code=status_code) from error


def saved_advice(request: Request, scenario_id: int) -> tuple[str, dict]:
    """(name, Advice) of the user's saved scenario. A stored document the current rules reject is a 409."""
    scenario = owned_scenario(request, scenario_id)
    return scenario.name, advice_or_400(request, scenario.document, at=("scenario",), status_code=409)


class AdviceView(GenericAPIView):
    serializer_class = AdviceDocument
    parser_classes = [JSONParser]
    throttle_scope = "advice"

    @extend_schema(
        summary="Advice for a Scenario (stateless): rent or buy, and how many GPUs",
        request=ScenarioDocument,
        responses={200: AdviceDocument},
    )
    def post(self, request: Request) -> Response:
        return Response(advice_or_400(request, request.data))


class ScenarioAdviceView(GenericAPIView):
    serializer_class = AdviceDocument
    throttle_scope = "advice"

    @extend_schema(
        summary="Advice for one of your saved scenarios",
        responses={
            200: AdviceDocument,
            409: OpenApiResponse(description="The saved document no longer validates; errors point into it."),
        },
    )
    def get(self, request: Request, scenario_id: int) -> Response:
        return Response(saved_advice(request, scenario_id)[1])


class FirstRenderer(BaseContentNegotiation):
    """The PDF is the only representation: answer it whatever the Accept header says (errors stay JSON)."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None


class ScenarioProposalView(GenericAPIView):
    renderer_classes = [PDFRenderer]
    content_negotiation_class = FirstRenderer
    throttle_scope = "pdf"

    @extend_schema(
        summary="The PDF proposal of one of your saved scenarios",
        responses={(200, "application/pdf"): OpenApiTypes.BINARY, 409: OpenApiResponse(description="As /advice.")},
    )
    def get(self, request: Request, scenario_id: int) -> HttpResponse:
        name, advice = saved_advice(request, scenario_id)
        response = HttpResponse(render_proposal_pdf(advice=advice, scenario_name=name), content_type="application/pdf")
        response["Content-Disposition"] = f'attachment; filename="{slugify(name) or "scenario"}-proposal.pdf"'
        return response
