"""The PDF proposal: the same Advice, the same partials and charts as the page, printed by WeasyPrint.

``render_proposal_pdf`` is a plain function so the web pages and the API call the same thing.
"""

from __future__ import annotations

import datetime as dt
import functools
import mimetypes
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.exceptions import SuspiciousFileOperation
from django.template.loader import render_to_string
from django.utils import timezone

from advisor.web.presenters import results_context

METHOD_NOTES = [
    "Run time comes from a step-time model (compute, memory and communication per optimizer step) "
    "evaluated for each cluster size and layout, calibrated on profiled runs; the calibration's "
    "leave-one-out error is stated above. P10/P90 figures, where shown, come from sampling the "
    "uncertain inputs.",
    "Rented cost per run = GPUs x run hours x the cheapest matching offer per GPU-hour in the chosen "
    "markets (reserved terms are paid whether used or not).",
    "Owned cost per busy GPU-hour = A / (N x 8760 x u) + v, where A is the yearly fixed cost of owning "
    "(capex as an annuity over the service life at the discount rate, less the discounted residual "
    "value, plus colocation, support, staff, software and idle energy), N the GPUs, u the utilization "
    "and v the energy of a busy GPU-hour.",
    "Break-even utilization u* = A / (N x 8760 x (r - v)) against the rental price r: the share of the "
    "year the owned cluster must be busy to cost the same per GPU-hour as renting.",
    "Scaling efficiency is throughput per GPU relative to the smallest candidate size; the "
    "recommendation prefers the size where adding GPUs stops paying.",
]


INFERENCE_METHOD_NOTES = [
    "Each deployment (a tensor-parallel degree and a number of replicas) is sized by the serving model, "
    "calibrated on published throughput tables, to serve the peak request rate within the time-to-first-token "
    "and time-per-output-token targets; its leave-one-out error is stated above.",
    "Renting follows the day: a base of replicas on the cheapest reserved term (else on-demand) billed all "
    "month, and the replicas above it on the cheaper of on-demand and spot, billed while needed.",
    "Owning buys servers for the peak. Owned cost per busy GPU-hour = A / (N x 8760 x u) + v as for training, "
    "with u the share of the year the traffic keeps the owned GPUs busy.",
    "Break-even utilization u* = A / (N x 8760 x (r - v)) against the on-demand price r.",
    "Cost per million output tokens = monthly cost / output tokens served in a month at the mean request rate.",
]


def _proposal_context(*, advice: dict[str, Any], scenario_name: str, generated_on: dt.date) -> dict[str, Any]:
    context = results_context(advice=advice)
    context.update(
        {
            "scenario_name": scenario_name,
            "generated_on": generated_on.isoformat(),
            "printing": True,
            "method_notes": INFERENCE_METHOD_NOTES if advice.get("kind") == "inference" else METHOD_NOTES,
        }
    )
    return context


def render_proposal_html(*, advice: dict[str, Any], scenario_name: str, generated_on: dt.date | None = None) -> str:
    """The proposal as HTML (what WeasyPrint prints); handy for previews and tests."""
    day = generated_on or timezone.now().date()
    return render_to_string(
        "proposal/proposal.html", _proposal_context(advice=advice, scenario_name=scenario_name, generated_on=day)
    )


def render_proposal_pdf(*, advice: dict[str, Any], scenario_name: str, generated_on: dt.date | None = None) -> bytes:
    """The PDF proposal of one Advice dict (``Advice.to_dict()``): cover, summary, assumptions,
    charts, per-size table, price sources, calibration accuracy and method notes."""
    from weasyprint import HTML  # imported here: loading Pango costs time the other pages need not pay

    html = render_proposal_html(advice=advice, scenario_name=scenario_name, generated_on=generated_on)
    return HTML(string=html, base_url=PROPOSAL_BASE_URL, url_fetcher=static_only_fetcher()).write_pdf()


# Relative URLs in the proposal resolve against this origin, which proposal_url_fetcher maps to static files.
PROPOSAL_BASE_URL = "https://proposal.invalid/"


class RefusedURL(ValueError):
    """WeasyPrint logs it and leaves the resource out."""


def static_file_for(url: str) -> Path:
    """The static file a proposal URL names; RefusedURL for anything else (no file://, no network, no traversal).

    The proposal escapes every value today; this keeps a future template slip from reading the server's files or
    making the server fetch URLs."""
    parts = urlsplit(url)
    prefix = urlsplit(settings.STATIC_URL).path
    if f"{parts.scheme}://{parts.netloc}/" != PROPOSAL_BASE_URL or not parts.path.startswith(prefix):
        raise RefusedURL(f"the proposal may load only static files, not {url[:200]!r}")
    try:
        found = finders.find(unquote(parts.path.removeprefix(prefix)))
    except SuspiciousFileOperation:
        found = None
    if not found or isinstance(found, list):
        raise RefusedURL(f"no static file {parts.path[:200]!r}")
    return Path(found)


@functools.cache
def static_only_fetcher() -> Any:
    """WeasyPrint's URL fetcher narrowed to static_file_for (built on first use: importing WeasyPrint is slow)."""
    from weasyprint.urls import URLFetcher, URLFetcherResponse

    class StaticOnlyFetcher(URLFetcher):
        def fetch(self, url: str, headers: Any = None) -> URLFetcherResponse:
            path = static_file_for(url)
            mime_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            return URLFetcherResponse(url, path.read_bytes(), {"Content-Type": mime_type})

    return StaticOnlyFetcher()
