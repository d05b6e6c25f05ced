"""`Idempotency-Key` on POST (draft-ietf-httpapi-idempotency-key-header): a client that retries a create
after a timeout sends the same key, and gets the first response back instead of a second object.

Keys are per user and remembered for settings.IDEMPOTENCY_KEY_TTL_S. The same key with a different request
(method, path or body) is a 422: the client is confused, and replaying either answer would be wrong."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import exceptions, status
from rest_framework.request import Request
from rest_framework.response import Response

from advisor.api.errors import FieldErrors
from advisor.models import IdempotentResponse
from core.auth import signed_in_user

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH: int = IdempotentResponse._meta.get_field("key").max_length or 255
REPLAYED_HEADERS = ("Location", "ETag")
# The key is a Structured Field sf-string (draft-ietf-httpapi-idempotency-key-header, RFC 8941 3.3.3): printable
# ASCII only. A NUL or a control character was stored on SQLite and answered 500 on PostgreSQL (an outsider's probe).
KEY_PATTERN = r"^[\x20-\x7E]*[\x21-\x7E][\x20-\x7E]*$"
_KEY = re.compile(KEY_PATTERN)

IDEMPOTENCY_PARAMETER = OpenApiParameter(
    HEADER,
    # What `idempotent` accepts: 1 to MAX_KEY_LENGTH printable ASCII characters, not all blank.
    {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH, "pattern": KEY_PATTERN},
    location=OpenApiParameter.HEADER,
    required=False,
    description=f"Any unique string (a UUID) of up to {MAX_KEY_LENGTH} characters. A retry with the same key and "
    "body within 24 hours returns the first response (header `Idempotent-Replayed: true`) and creates nothing; the "
    "same key with another body is a 422 (which keys were used is the server's state, not the schema's).",
)


# The 422 every keyed POST documents (one description, used by each view's schema)
KEY_REUSED_RESPONSE = OpenApiResponse(description=f"The {HEADER} was used for a different request.")


class KeyReused(exceptions.APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_detail = f"This {HEADER} was already used for a different request; use a new key for a new request."
    default_code = "idempotency_key_reused"


def _fingerprint(request: Request) -> str:
    body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(f"{request.method} {request.path}\n{body}".encode()).hexdigest()


def _replay(stored: IdempotentResponse, fingerprint: str) -> Response:
    if stored.fingerprint != fingerprint:
        raise KeyReused()
    return Response(stored.body, status=stored.status_code, headers={**stored.headers, "Idempotent-Replayed": "true"})


def idempotent(request: Request, create: Callable[[], Response]) -> Response:
    """Run `create` once per (user, key); a retry gets the stored first response. Without the header: plain."""
    key = request.headers.get(HEADER)
    if key is None:
        return create()
    if len(key) > MAX_KEY_LENGTH or not _KEY.fullmatch(key):
        detail = f"must be 1 to {MAX_KEY_LENGTH} printable ASCII characters, not all blank"
        raise FieldErrors(
            [{"pointer": "#", "parameter": HEADER, "detail": detail}],
            detail=f"The {HEADER} header is invalid.",
        )
    owner = signed_in_user(request)
    fingerprint = _fingerprint(request)
    cutoff = timezone.now() - dt.timedelta(seconds=settings.IDEMPOTENCY_KEY_TTL_S)
    mine = IdempotentResponse.objects.filter(owner=owner)
    mine.filter(created_at__lt=cutoff).delete()
    stored = mine.filter(key=key).first()
    if stored is not None:
        return _replay(stored, fingerprint)
    try:
        with transaction.atomic():
            response = create()
            if status.is_success(response.status_code):
                IdempotentResponse.objects.create(
                    owner=owner,
                    key=key,
                    fingerprint=fingerprint,
                    status_code=response.status_code,
                    body=response.data,
                    headers={name: response[name] for name in REPLAYED_HEADERS if response.has_header(name)},
                )
    except IntegrityError:
        # A concurrent request with the same key won the race; its create was kept and ours rolled back.
        return _replay(mine.get(key=key), fingerprint)
    return response
