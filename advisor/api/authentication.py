"""`Authorization: Token <key>` (or `Bearer <key>`) against the hashed, revocable ApiToken table."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication, get_authorization_header
from rest_framework.request import Request

from advisor.api.tokens import api_token_authenticate


class ApiTokenAuthentication(TokenAuthentication):
    """Subclasses DRF's TokenAuthentication so drf-spectacular documents the scheme; keys are ours."""

    keyword = "Token"
    keywords = ("token", "bearer")

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        auth = get_authorization_header(request).split()
        if not auth or auth[0].lower().decode(errors="replace") not in self.keywords:
            return None
        if len(auth) != 2:
            raise exceptions.AuthenticationFailed(_("Invalid token header: expected 'Token <key>'."))
        try:
            key = auth[1].decode("ascii")
        except UnicodeError as error:
            raise exceptions.AuthenticationFailed(_("Invalid token header: the key must be ASCII.")) from error
        return self.authenticate_credentials(key)

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        token = api_token_authenticate(key=key)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid or revoked token."))
        return token.user, token
