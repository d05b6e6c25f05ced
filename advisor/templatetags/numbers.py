"""Template filters for numbers, so that a page or PDF prints a figure as the advice's sentences do: one formatter
(advisor.formatting) for both."""

from __future__ import annotations

from typing import Any

from django import template

from advisor import formatting as fmt

register = template.Library()


@register.filter
def plain(value: Any) -> str:
    """``{{ gpus|plain }}``: "65,536" (grouped, as the reasons write it), "n/a" for a figure that does not exist."""
    return fmt.plain(value)
