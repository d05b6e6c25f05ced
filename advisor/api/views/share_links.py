"""Read-only share links through the API, with the services the web's share buttons call: share an issued
proposal (``advisor.proposals.proposal_share_link_create``), list a scenario's active links and revoke one
(``advisor.scenarios``). A link opens the web's read-only page of that frozen proposal for anyone holding it."""

from __future__ import annotations

from django.urls import reverse as url_path
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from advisor.api.errors import Conflict
from advisor.api.idempotency import IDEMPOTENCY_PARAMETER, KEY_REUSED_RESPONSE, idempotent
from advisor.api.views.proposals import owned_proposal
from advisor.api.views.scenarios import owned_scenario
from advisor.models import ShareLink
from advisor.proposals import NotShareable, proposal_share_link_create
from advisor.scenarios import active_share_links, share_link_for_scenario, share_link_revoke


class ShareLinkSerializer(serializers.ModelSerializer):
    proposal_id = serializers.IntegerField(
        allow_null=True, read_only=True, help_text="The frozen proposal it shows (null: a link made before proposals)."
    )
    url = serializers.SerializerMethodField(help_text="The read-only page; anyone holding it can read, not edit.")

    class Meta:
        model = ShareLink
        fields = ["id", "scenario_id", "proposal_id", "url", "created_at"]
        read_only_fields = fields

    def get_url(self, link: ShareLink) -> str:
        return self.context["request"].build_absolute_uri(url_path("shared", kwargs={"token": link.token}))


class ProposalShareLinkView(GenericAPIView):
    serializer_class = ShareLinkSerializer

    @extend_schema(
        summary="Share one of your scenario proposals: a read-only link to it as issued",
        request=None,
        parameters=[IDEMPOTENCY_PARAMETER],
        responses={
            201: ShareLinkSerializer,
            409: OpenApiResponse(description="A fleet proposal, or one whose scenario was deleted: not shareable."),
            422: KEY_REUSED_RESPONSE,
        },
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        return idempotent(request, lambda: self._share(request, proposal_id))

    def _share(self, request: Request, proposal_id: int) -> Response:
        try:
            link = proposal_share_link_create(proposal=owned_proposal(request, proposal_id))
        except NotShareable as error:  # the service's reason, e.g. the scenario was deleted
            raise Conflict(error.sentence) from error
        return Response(ShareLinkSerializer(link, context={"request": request}).data, status=status.HTTP_201_CREATED)


class ScenarioShareLinkListView(GenericAPIView):
    serializer_class = ShareLinkSerializer

    @extend_schema(
        summary="The active share links of one of your scenarios, oldest first",
        responses=ShareLinkSerializer(many=True),
    )
    def get(self, request: Request, scenario_id: int) -> Response:
        page = self.paginate_queryset(active_share_links(scenario=owned_scenario(request, scenario_id)))
        return self.get_paginated_response(ShareLinkSerializer(page, many=True, context={"request": request}).data)


class ScenarioShareLinkDetailView(GenericAPIView):
    serializer_class = ShareLinkSerializer

    @extend_schema(summary="Revoke a share link: it then answers 'not found'", responses={204: None})
    def delete(self, request: Request, scenario_id: int, link_id: int) -> Response:
        link = share_link_for_scenario(scenario=owned_scenario(request, scenario_id), link_id=link_id)
        if link is None:
            raise exceptions.NotFound("No such share link.")
        share_link_revoke(link=link)
        return Response(status=status.HTTP_204_NO_CONTENT)
