from __future__ import annotations

from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    """`?page=N&page_size=M` (M at most 500); responses carry count, next, previous, results."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
