from __future__ import annotations

from collections.abc import Iterable

from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request


class ContentNegotiation(DefaultContentNegotiation):
    """`?format=` naming a representation the endpoint lacks is a 406 that lists the ones it has (DRF says 404)."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        if len(request.query_params.getlist(self.settings.URL_FORMAT_OVERRIDE or "format")) > 1:
            # Negotiation runs before authentication and read the last value alone (?format=json&format=pdf was a 406
            # where the reverse order was a 400). Negotiated as if no format were given, the parameter check
            # (core.api.query.KnownQueryParameters, after authentication: an anonymous caller gets its 401 first)
            # answers the 400 naming it beside the other bad parameters.
            listed = list(renderers)
            return listed[0], listed[0].media_type
        chosen: tuple[BaseRenderer, str] = super().select_renderer(request, renderers, format_suffix)
        return chosen

    def filter_renderers(self, renderers: Iterable[BaseRenderer], format: str) -> list[BaseRenderer]:
        renderers = list(renderers)  # read twice below
        matching = [renderer for renderer in renderers if renderer.format == format]
        if not matching:
            available = ", ".join(renderer.format for renderer in renderers)
            raise NotAcceptable(f"format={format!r} is not available here; available: {available}")
        return matching
