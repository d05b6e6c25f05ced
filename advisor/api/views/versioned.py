"""The API of a versioned, owner-scoped document (scenarios, fleets): list and create under ``/<nouns>``, read,
replace and delete under ``/<nouns>/<id>``. One implementation of the rules they share (an idempotent POST, an
ETag on every read and write, If-Match on replace, a 404 for another user's document); each kind only names its
store functions, serializers and URL names (``advisor.versioned`` is the store they share)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from django.contrib.auth.models import User
from django.db.models import Count, Model, QuerySet
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from advisor.api.errors import FieldErrors, name_field_errors, pointer
from advisor.api.idempotency import IDEMPOTENCY_PARAMETER, KEY_REUSED_RESPONSE, idempotent
from advisor.versioned import DocumentNameConflict, DocumentNameError, named_document
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
from core.auth import signed_in_user


@dataclass(frozen=True)
class VersionedDocumentApi:
    """What one kind of versioned document differs in; the views below do the rest."""

    noun: str  # "scenario": the summaries say "Save a scenario", "Your saved scenarios"
    document_field: str  # the body's document ("scenario"), whose own name must be the body's name
    model: type[Model]  # the stored item, whose name column bounds the name
    id_kwarg: str  # the URL's id ("scenario_id"), also the detail route's
    detail_route: str  # "v1:scenario-detail", the Location of a created document
    input_serializer: type[serializers.Serializer]
    output_serializer: type[serializers.Serializer]
    list_item_serializer: type[serializers.Serializer]
    validated_input: Callable[[Request], tuple[str, dict]]  # (name, document), or raises a 400
    for_user: Callable[..., QuerySet[Any]]  # (user=) -> the user's documents
    create: Callable[..., Model]  # (owner=, name=, document=)
    owned: Callable[[User, int], Model]  # (user, id) -> the user's document, or raises DoesNotExist (a 404)
    update: Callable[[Any, str, dict], Model]  # (document, name, document body)
    delete: Callable[[Any], None]

    def named_input(self, request: Request) -> tuple[str, dict]:
        """The validated (name, document), the document carrying the name (``advisor.versioned.named_document``);
        a bad name or a document naming itself otherwise is a 400 naming the field(s)."""
        name, document = self.validated_input(request)
        try:
            return named_document(name=name, document=document, model=self.model)
        except DocumentNameError as error:
            raise name_field_errors(error) from error
        except DocumentNameConflict as error:
            detail = str(error)
            raise FieldErrors(
                [
                    {"pointer": pointer("name"), "detail": detail, "code": "invalid"},
                    {"pointer": pointer(self.document_field, "name"), "detail": detail, "code": "invalid"},
                ]
            ) from error


class VersionedListView(GenericAPIView):
    api: ClassVar[VersionedDocumentApi]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        api = cls.api
        cls.serializer_class = api.list_item_serializer
        extend_schema_view(
            get=extend_schema(
                summary=f"Your saved {api.noun}s, newest first", responses=api.list_item_serializer(many=True)
            ),
            post=extend_schema(
                summary=f"Save a {api.noun}",
                request=api.input_serializer,
                parameters=[IDEMPOTENCY_PARAMETER, ETAG_HEADER],
                responses={
                    201: api.output_serializer,
                    422: KEY_REUSED_RESPONSE,
                },
            ),
        )(cls)

    def get_queryset(self) -> QuerySet[Any]:
        return self.api.for_user(user=signed_in_user(self.request))

    def get(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(self.api.list_item_serializer(page, many=True).data)

    def post(self, request: Request) -> Response:
        # A retried POST with the same key returns the first document (a hostile probe: two fleets were saved).
        return idempotent(request, lambda: self._create(request))

    def _create(self, request: Request) -> Response:
        name, document = self.api.named_input(request)
        try:
            item = self.api.create(owner=signed_in_user(request), name=name, document=document)
        except DocumentNameError as error:
            raise name_field_errors(error) from error
        location = reverse(self.api.detail_route, kwargs={self.api.id_kwarg: item.pk}, request=request)
        data = self.api.output_serializer(item).data
        return Response(data, status=status.HTTP_201_CREATED, headers={"Location": location, "ETag": entity_tag(data)})


class VersionedDetailView(GenericAPIView):
    api: ClassVar[VersionedDocumentApi]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        api = cls.api
        cls.serializer_class = api.output_serializer
        cls.lookup_url_kwarg = api.id_kwarg  # get_object() (also used by OPTIONS) looks up pk=<id> in get_queryset()
        extend_schema_view(
            get=extend_schema(
                summary=f"One of your {api.noun}s (its ETag goes in If-Match when you replace it)",
                parameters=[IF_NONE_MATCH_PARAMETER, ETAG_HEADER],
                responses={200: api.output_serializer, 304: NOT_MODIFIED_RESPONSE},
            ),
            put=extend_schema(
                summary=f"Replace a {api.noun}'s name and document (the previous state is kept as a version)",
                request=api.input_serializer,
                parameters=[IF_MATCH_PARAMETER, ETAG_HEADER],
                responses={
                    200: api.output_serializer,
                    412: PRECONDITION_FAILED_RESPONSE,
                },
            ),
            delete=extend_schema(summary=f"Delete a {api.noun} and its versions", responses={204: None}),
        )(cls)

    def get_queryset(self) -> QuerySet[Any]:
        return self.api.for_user(user=signed_in_user(self.request)).annotate(version_count=Count("versions"))

    def get(self, request: Request, **url: int) -> Response:
        return conditional_response(request, self.api.output_serializer(self.get_object()).data)

    def put(self, request: Request, **url: int) -> Response:
        # Guarded against a lost update (a hostile probe: PUT with a stale or bogus If-Match answered 200 and
        # overwrote): the ETag GET gives, checked before the body (RFC 9110 13.2.1).
        current = self.get_object()
        require_if_match(request, entity_tag(self.api.output_serializer(current).data))
        name, document = self.api.named_input(request)
        try:
            item = self.api.update(current, name, document)
        except DocumentNameError as error:
            raise name_field_errors(error) from error
        data = self.api.output_serializer(self.get_queryset().get(pk=item.pk)).data
        return Response(data, headers={"ETag": entity_tag(data)})

    def delete(self, request: Request, **url: int) -> Response:
        self.api.delete(self.api.owned(signed_in_user(request), url[self.api.id_kwarg]))
        return Response(status=status.HTTP_204_NO_CONTENT)
