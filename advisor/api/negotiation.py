from __future__ import annotations

from collections.abc import Iterable

from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request

from core.api.query import RepeatedQueryParameters


class ContentNegotiation(DefaultContentNegotiation):
    """`?format=` naming a representation the endpoint lacks is a 406 that lists the ones it has (DRF says 404).
    `?format=` given twice is the 400 any repeated parameter gets: negotiation runs before the parameter check, and
    it read the last value alone (`?format=json&format=csv` was a 406 where `?format=csv&format=json` was a 400)."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        name = self.settings.URL_FORMAT_OVERRIDE or "format"
        given = len(request.query_params.getlist(name))
        if given > 1:
            raise RepeatedQueryParameters({name: given})
        chosen: tuple[BaseRenderer, str] = super().select_renderer(request, renderers, format_suffix)
        return chosen

    def filter_renderers(self, renderers: Iterable[BaseRenderer], format: str) -> list[BaseRenderer]:
        renderers = list(renderers)  # read twice below
        matching = [renderer for renderer in renderers if renderer.format == format]
        if not matching:
            available = ", ".join(renderer.format for renderer in renderers)
            raise NotAcceptable(f"format={format!r} is not available here; available: {available}")
        return matching
