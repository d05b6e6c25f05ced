from __future__ import annotations

from typing import Any

from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param

from advisor.api.errors import QueryParameterErrors
from core.ids import parse_id


class Pagination(PageNumberPagination):
    """`?page=N&page_size=M` (M from 1 to 500, default 50); responses carry count, next, previous, results.
    A page size out of range or a page number below 1 is a 400 naming the parameter, not a silent default; a page
    past the end is an empty page (count still says how many there are). Both are read as ids are (core.ids: ASCII
    digits only), not by int(), which took Arabic-Indic and fullwidth digits, '+1' and ' 1'."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    past_end: tuple[int, int] | None = None  # (count, last page) when the page asked for is past the end

    def get_page_size(self, request: Request) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        size = parse_id(raw) or 0
        if not 1 <= size <= self.max_page_size:
            raise QueryParameterErrors(
                {
                    self.page_size_query_param: [
                        f"must be an integer from 1 to {self.max_page_size}, in ASCII digits; got {raw!r}"
                    ]
                }
            )
        return size

    def paginate_queryset(self, queryset: Any, request: Request, view: Any = None) -> list[Any] | None:
        raw = request.query_params.get(self.page_query_param)
        number = self._requested_page(raw)
        self.past_end = None
        if number is not None:
            paginator = self.django_paginator_class(queryset, self.get_page_size(request))
            if number > paginator.num_pages:
                # Past the end is an empty page, not an error: a client paging while rows are deleted, or asking
                # for page 2 of what just became one page, reads "nothing more" rather than failing.
                self.request = request
                self.past_end = (paginator.count, paginator.num_pages)
                return []
        return super().paginate_queryset(queryset, request, view)

    def _requested_page(self, raw: str | None) -> int | None:
        if raw is None or raw in self.last_page_strings:
            return None
        number = parse_id(raw) or 0
        if number < 1:
            raise QueryParameterErrors(
                {self.page_query_param: [f"must be a page number from 1 (or 'last'), in ASCII digits; got {raw!r}"]}
            )
        return number

    def get_paginated_response(self, data: Any) -> Response:
        if self.past_end is None:
            return super().get_paginated_response(data)
        count, last = self.past_end
        assert self.request is not None  # set by paginate_queryset
        url = self.request.build_absolute_uri()
        previous = replace_query_param(url, self.page_query_param, last) if count else None
        return Response({"count": count, "next": None, "previous": previous, "results": data})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        """DRF writes next and previous with OpenAPI 3.0's `nullable: true`; the served document is 3.1 (JSON
        Schema 2020-12), which ignores it, so a validator refused the null of a first or last page."""
        paginated = super().get_paginated_response_schema(schema)
        for name in ("next", "previous"):
            link = {key: value for key, value in paginated["properties"][name].items() if key != "nullable"}
            paginated["properties"][name] = {**link, "type": [link["type"], "null"]}
        return paginated

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        """Document the ranges enforced above, so a schema-valid page number is never refused as malformed."""
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_query_param:
                parameter["schema"] = {**parameter["schema"], "minimum": 1}
            elif parameter["name"] == self.page_size_query_param:
                parameter["schema"] = {**parameter["schema"], "minimum": 1, "maximum": self.max_page_size}
        return parameters
