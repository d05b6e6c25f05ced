from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import Throttled
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from advisor.api.errors import FieldErrors, pointer
from advisor.api.serializers import TokenCreatedSerializer, TokenCreateSerializer, TokenSerializer
from advisor.api.tokens import (
    TokenNameError,
    api_token_create,
    api_token_for_user,
    api_token_revoke,
    api_tokens_for_user,
)
from advisor.models import ApiToken
from core.api.renderers import JSON_AND_CSV
from core.auth import signed_in_user
from core.ratelimit import token_create_allowed


class TokenCreateThrottled(Throttled):
    """The per-user token-creation limit (core.ratelimit), worded as one sentence: DRF appends its wait sentence to
    any detail given ("...; try again in 355 seconds. Expected available in 355 seconds."), so the wait goes in
    through DRF's own (pluralising) templates instead."""

    default_detail = "Too many tokens created;"
    extra_detail_singular = "try again in {wait} second."
    extra_detail_plural = "try again in {wait} seconds."

    def __init__(self, wait: int) -> None:  # the wait completes the sentence: it is not optional here
        super().__init__(wait=wait)


class TokenListView(GenericAPIView):
    serializer_class = TokenSerializer
    renderer_classes = JSON_AND_CSV

    def get_queryset(self):
        return api_tokens_for_user(user=signed_in_user(self.request))

    @extend_schema(summary="Your API tokens (active and revoked)", responses=TokenSerializer(many=True))
    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(TokenSerializer(page, many=True).data)

    @extend_schema(
        summary="Create a token; the key is shown once",
        request=TokenCreateSerializer,
        responses={201: TokenCreatedSerializer},
    )
    def post(self, request: Request) -> Response:
        data = TokenCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        wait = token_create_allowed(user_id=signed_in_user(request).pk)
        if wait is not None:
            raise TokenCreateThrottled(wait=wait)
        try:
            # request.auth is the ApiToken when the call was made with a key (None for a session).
            user, name = signed_in_user(request), data.validated_data["name"]
            creator = request.auth if isinstance(request.auth, ApiToken) else None
            issued = api_token_create(user=user, name=name, created_by=creator)
        except TokenNameError as error:
            raise FieldErrors([{"pointer": pointer("name"), "detail": str(error), "code": "invalid"}]) from error
        body = {**TokenSerializer(issued.token).data, "key": issued.key}
        return Response(body, status=status.HTTP_201_CREATED)


class TokenDetailView(GenericAPIView):
    serializer_class = TokenSerializer

    @extend_schema(summary="One of your tokens", responses=TokenSerializer)
    def get(self, request: Request, token_id: int) -> Response:
        return Response(TokenSerializer(api_token_for_user(user=signed_in_user(request), token_id=token_id)).data)

    @extend_schema(summary="Revoke a token (it stays listed, revoked)", responses={204: None})
    def delete(self, request: Request, token_id: int) -> Response:
        api_token_revoke(token=api_token_for_user(user=signed_in_user(request), token_id=token_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
