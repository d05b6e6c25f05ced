"""The fleet plan as a PDF: the page's results partial and pictures, printed by WeasyPrint with the
proposal's stylesheet (``templates/proposal/print.css``)."""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

from django.template.loader import render_to_string
from django.utils import timezone

from advisor.advice.fleet.plan import LOAD_DURATION_METHOD
from advisor.advice.fleet.service import HELIOS_ATTRIBUTION
from advisor.fleet.charts import fleet_charts

METHOD_NOTES: Final[list[str]] = [
    "Demand: every run of every job on an hourly calendar of one 8760-hour year (runs start in their months or "
    "spread evenly), plus measured usage resampled to hours; the year repeats, so a run may wrap into January.",
    "Placement: whole runs go on owned GPUs when enough are free for the whole run, at the requested start or up "
    "to max_wait_days later; otherwise they are rented at the requested start. Measured usage is divisible.",
    "Tiers: owned (yearly fixed cost of ownership plus energy per busy GPU-hour), the cheaper reserved commitment "
    "at the level that minimises commitment plus on-demand cost, on demand, and spot for interruptible runs "
    "(with the Young/Daly interruption loss).",
    f"Load-duration answer: {LOAD_DURATION_METHOD}; the simulated answer is the cheapest candidate owned size.",
]


def render_fleet_html(*, plan: dict[str, Any], fleet_name: str, generated_on: dt.date | None = None) -> str:
    csv_text = (plan["fleet"].get("usage") or {}).get("csv") or ""
    context = {
        "plan": plan,
        "charts": fleet_charts(plan=plan),
        "fleet_name": fleet_name,
        "generated_on": (generated_on or timezone.now().date()).isoformat(),
        "method_notes": METHOD_NOTES,
        "attribution": HELIOS_ATTRIBUTION if "Helios trace" in csv_text else None,
    }
    return render_to_string("fleet/proposal.html", context)


def render_fleet_pdf(*, plan: dict[str, Any], fleet_name: str, generated_on: dt.date | None = None) -> bytes:
    from weasyprint import HTML  # imported here: loading Pango costs time the other pages need not pay

    return HTML(string=render_fleet_html(plan=plan, fleet_name=fleet_name, generated_on=generated_on)).write_pdf()
