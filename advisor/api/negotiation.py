from __future__ import annotations

from collections.abc import Iterable

from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer


class ContentNegotiation(DefaultContentNegotiation):
    """`?format=` naming a representation the endpoint lacks is a 406 that lists the ones it has (DRF says 404)."""

    def filter_renderers(self, renderers: Iterable[BaseRenderer], format: str) -> list[BaseRenderer]:
        renderers = list(renderers)  # read twice below
        matching = [renderer for renderer in renderers if renderer.format == format]
        if not matching:
            available = ", ".join(renderer.format for renderer in renderers)
            raise NotAcceptable(f"format={format!r} is not available here; available: {available}")
        return matching
