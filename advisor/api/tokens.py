"""API tokens: services (create, revoke, authenticate) and selectors.

A key is `gpa_` + 32 random bytes (URL-safe base64). Only its SHA-256 digest is stored: the key is
high-entropy, so a fast hash is enough, and a database leak does not leak usable keys."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from advisor.models import ApiToken
from core.fields import char_max_length
from core.textcheck import clean_name

KEY_PREFIX = "gpa_"
PREFIX_LENGTH = 12
NAME_MAX_LENGTH = char_max_length(ApiToken, "name")
# last_used_at is a hint for the token page, not an audit log: write it at most this often.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class TokenNameError(ValueError):
    """The token name is empty or too long."""


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    key: str  # shown once, never stored


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def clean_token_name(name: str) -> str:
    try:
        return clean_name(name, max_length=NAME_MAX_LENGTH)
    except ValueError as error:
        raise TokenNameError(str(error)) from None


def api_token_create(*, user: User, name: str, created_by: ApiToken | None = None) -> IssuedToken:
    """A new token; `created_by` is the token whose key made the request (revoking it revokes this one)."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=clean_token_name(name),
        prefix=key[:PREFIX_LENGTH],
        digest=_digest(key),
        created_by=created_by,
    )
    return IssuedToken(token=token, key=key)


@transaction.atomic
def api_token_revoke(*, token: ApiToken) -> ApiToken:
    """Revoke the token and every token created with it, directly or through others."""
    now = timezone.now()
    level = [token.pk]
    while level:
        ApiToken.objects.filter(pk__in=level, revoked_at__isnull=True).update(revoked_at=now)
        level = list(ApiToken.objects.filter(created_by__in=level).values_list("pk", flat=True))
    token.refresh_from_db(fields=["revoked_at"])
    return token


def api_token_authenticate(*, key: str) -> ApiToken | None:
    """The active token for this key (with its user), or None. Touches last_used_at sparingly."""
    if not key.startswith(KEY_PREFIX):
        return None
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=_digest(key), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


# --- selectors ---


def api_tokens_for_user(*, user: User) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user)


def api_token_for_user(*, user: User, token_id: int) -> ApiToken:
    """Raises ApiToken.DoesNotExist for a missing id and for another user's token alike."""
    return ApiToken.objects.get(user=user, pk=token_id)
