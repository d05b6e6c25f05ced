from __future__ import annotations

from typing import Any

from rest_framework.exceptions import NotFound
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request

from advisor.api.errors import QueryParameterErrors


class Pagination(PageNumberPagination):
    """`?page=N&page_size=M` (M from 1 to 500, default 50); responses carry count, next, previous, results.
    A page or page size out of range is a 400 naming the parameter, not a silent default."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            size = int(raw)
        except ValueError:
            size = 0
        if not 1 <= size <= self.max_page_size:
            raise QueryParameterErrors(
                {self.page_size_query_param: [f"must be an integer from 1 to {self.max_page_size}; got {raw!r}"]}
            )
        return size

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any] | None:
        try:
            return super().paginate_queryset(queryset, request, view)
        except NotFound as error:
            pages = self.django_paginator_class(queryset, self.get_page_size(request)).num_pages
            raw = request.query_params.get(self.page_query_param)
            detail = f"must be a page number from 1 to {pages} (or 'last'); got {raw!r}"
            raise QueryParameterErrors({self.page_query_param: [detail]}) from error

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        """Document the ranges enforced above, so a schema-valid page number is never refused as malformed."""
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"] = {**parameter["schema"], "minimum": 1}
            elif parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {**parameter["schema"], "minimum": 1, "maximum": self.max_page_size}
        return parameters
