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


@register.filter
def hours_number(value: Any) -> str:
    """``{{ job.run_hours|hours_number }}``: a tenth below ten hours ("1.4", "0.6"), whole above ("1,234"), as the
    advice's sentences write hours (whole hours read 1.42 h and 0.58 h both as "1")."""
    return fmt.hours_number(value)
