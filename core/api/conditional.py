"""HTTP validators (RFC 9110 section 8.8 and 13): an `ETag` computed from the representation a client
gets, `If-None-Match` -> 304 on reads, `If-Match` -> 412 on writes when the client's copy is stale."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import TYPE_CHECKING, Any

from django.utils.http import http_date
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import exceptions, status
from rest_framework.response import Response

if TYPE_CHECKING:
    from rest_framework.request import Request


class PreconditionFailed(exceptions.APIException):
    status_code = status.HTTP_412_PRECONDITION_FAILED
    default_detail = "If-Match does not match the current version: read it again (GET gives its ETag) and retry."
    default_code = "precondition_failed"


# How the operations that use these helpers document them (one definition for every view): one that answers with
# conditional_response lists IF_NONE_MATCH_PARAMETER, ETAG_HEADER (LAST_MODIFIED_HEADER when it passes
# last_modified) and 304: NOT_MODIFIED_RESPONSE; one that calls require_if_match lists IF_MATCH_PARAMETER and
# 412: PRECONDITION_FAILED_RESPONSE. A generated client knows only the answers listed: an undocumented 304 went to
# its `default` branch, which parsed the empty body as a problem and raised.
ETAG_HEADER = OpenApiParameter(
    "ETag",
    OpenApiTypes.STR,
    location=OpenApiParameter.HEADER,
    response=[200, 201, 304],
    description="The version of this representation: send it as If-None-Match to be answered 304 while it has not "
    "changed, and (for a resource you can replace) as If-Match to replace it.",
)
LAST_MODIFIED_HEADER = OpenApiParameter(
    "Last-Modified",
    OpenApiTypes.STR,
    location=OpenApiParameter.HEADER,
    response=[200, 304],
    description="When the data in this representation last changed (an HTTP date).",
)
IF_NONE_MATCH_PARAMETER = OpenApiParameter(
    "If-None-Match",
    OpenApiTypes.STR,
    location=OpenApiParameter.HEADER,
    required=False,
    description="The ETag(s) of copies you hold, or `*`: when one names the current version the answer is a 304 "
    "with no body.",
)
IF_MATCH_PARAMETER = OpenApiParameter(
    "If-Match",
    OpenApiTypes.STR,
    location=OpenApiParameter.HEADER,
    required=False,
    description="The ETag of the version you edited: a stale one is a 412 and nothing is saved. Without it the "
    "write goes ahead whatever the current version is.",
)
NOT_MODIFIED_RESPONSE = OpenApiResponse(
    description="Not modified: If-None-Match names the current version. No body: keep using your copy."
)
PRECONDITION_FAILED_RESPONSE = OpenApiResponse(
    description="If-Match names a version that is no longer the current one; nothing was saved."
)


def entity_tag(data: Any, *, variant: str = "") -> str:
    """A strong ETag of a representation: the same data in the same media type, the same tag."""
    canonical = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
    return '"' + hashlib.sha256(f"{variant}\n{canonical}".encode()).hexdigest()[:32] + '"'


def _tags(header: str, *, weak: bool) -> list[str]:
    """The tags a header lists; a weak one (W/"...") counts only where weak comparison is allowed: If-None-Match, not
    If-Match, which RFC 9110 section 13.1.1 compares strongly (a weak tag names no exact version to write over)."""
    listed = [tag.strip() for tag in header.split(",") if tag.strip()]
    return [tag.removeprefix("W/") for tag in listed] if weak else [tag for tag in listed if not tag.startswith("W/")]


def require_if_match(request: Request, current: str) -> None:
    """Without If-Match the write goes ahead (the header is optional); with it, only when it names `current`."""
    header = request.headers.get("If-Match")
    if header is None:
        return
    tags = _tags(header, weak=False)
    if "*" not in tags and current not in tags:
        raise PreconditionFailed()


def conditional_response(
    request: Request, data: Any, *, variant: str = "", last_modified: dt.datetime | None = None
) -> Response:
    """200 with ETag (and Last-Modified), or 304 without a body when If-None-Match already names the tag."""
    tag = entity_tag(data, variant=variant)
    # A 304 carries the Vary its 200 would (RFC 9110 section 15.4.5), so a cache keys both alike.
    headers = {"ETag": tag, "Vary": "Accept"}
    if last_modified is not None:
        headers["Last-Modified"] = http_date(last_modified.timestamp())
    if_none_match = request.headers.get("If-None-Match")
    if if_none_match is not None and {"*", tag} & set(_tags(if_none_match, weak=True)):
        return Response(status=status.HTTP_304_NOT_MODIFIED, headers=headers)
    return Response(data, headers=headers)
