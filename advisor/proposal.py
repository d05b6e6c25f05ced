"""The PDF proposal: the same Advice, the same partials and charts as the page, printed by WeasyPrint.

``render_proposal_pdf`` is a plain function so the web pages and the API call the same thing.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import mimetypes
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.cache import cache
from django.core.exceptions import SuspiciousFileOperation
from django.template.loader import render_to_string
from django.utils import timezone

from advisor import formatting as fmt
from advisor.advice.models import RUN_TIME_SCOPE, SCALING_EFFICIENCY_MEANING
from advisor.cash_flow import decision_amount, owning_cash_parts, yearly_totals
from advisor.fleet.proposal import render_fleet_pdf
from advisor.web.presenters import plain_words, results_context, risk_words, usd_exact
from pricing.models import MARKET_PHRASES

METHOD_NOTES = [
    "Run time comes from a step-time model (compute, memory and communication per optimizer step) "
    "evaluated for each cluster size and layout, calibrated on profiled runs; the held-out error that "
    "applies to this scenario (by software stack when its stack is not given or has no runs) is stated "
    "above. P10/P90 run times and costs sample the throughput within that band (P10-P90 of measured over "
    "predicted tokens/s) and, for break-even, the next-cheapest offers.",
    "Rented cost per run = GPUs x run hours x the cheapest matching offer per GPU-hour in the chosen "
    "markets (reserved terms are paid whether used or not).",
    "Owned cost per busy GPU-hour = A / (N x 8760 x u) + v, where A is the yearly fixed cost of owning "
    "(capex as an annuity over the service life at the discount rate, less the discounted residual "
    "value, plus colocation, support, staff, software and idle energy), N the GPUs, u the utilization "
    "and v the energy of a busy GPU-hour.",
    "Break-even utilization u* = A / (N x 8760 x (r - v)) against the rental price r: the share of the "
    "year the owned cluster must be busy to cost the same per GPU-hour as renting.",
    f"Scaling efficiency is {SCALING_EFFICIENCY_MEANING} (100% there); the "
    "recommendation takes the largest size up to which every step's added GPUs deliver at least 80% of the "
    "throughput they would ideally add ((dtps / tps) / (dgpus / gpus)).",
    RUN_TIME_SCOPE,
]


INFERENCE_METHOD_NOTES = [
    "Each deployment (a tensor-parallel degree and a number of replicas) is sized by the serving model, "
    "calibrated on published throughput tables, to serve the peak request rate within the time-to-first-token "
    "and time-per-output-token targets; its leave-one-out error is stated above.",
    "Renting follows the day in whole instances (an instance of g GPUs holds g / tp replicas and is billed "
    "whole): a base of instances on the cheaper of a reserved term and on-demand billed all month, and the "
    "replicas above it on instances of the cheaper of on-demand and spot, billed while needed.",
    "Owning buys servers for the peak. Owned cost per busy GPU-hour = A / (N x 8760 x u) + v as for training, "
    "with u the share of the year the traffic keeps the owned GPUs busy.",
    "Break-even utilization u* = A / (N x 8760 x (r - v)) against the rent as priced, r = the monthly rent / "
    "the GPU-hours the replicas are busy in a month: owning breaks even exactly where it costs less than renting. "
    "This r scales the whole rent with the busy hours; where the rent's base is billed all month whatever the "
    "traffic, the reasons also say when owning is cheaper at any utilization.",
    "Cost per million output tokens = monthly cost / output tokens served in a month at the mean request rate.",
]


def _proposal_context(
    *, advice: dict[str, Any], scenario_name: str, generated_on: dt.date, issued: dict[str, Any] | None
) -> dict[str, Any]:
    context = results_context(advice=advice)
    # The reasons, warnings and price notes in words for a reader of the PDF alone (the JSON keeps the ids).
    headline = context["headline"]
    context.update(
        {
            "headline": {**headline, "reasons": [plain_words(reason) for reason in headline["reasons"]]},
            "warnings": [plain_words(warning) for warning in context["warnings"]],
            "alternatives": [{**row, "note": plain_words(row["note"])} for row in context["alternatives"]],
            "price_sources": [{**row, "source": plain_words(str(row["source"]))} for row in context["price_sources"]],
            "scenario_name": scenario_name,
            "generated_on": generated_on.isoformat(),
            # The draft's day is not its prices' date (a finance reviewer, F8): the approval block names both, the
            # prices' in results_context's prices_as_of_text.
            "printing": True,
            "method_notes": method_notes(advice=advice),
            "yearly": yearly_table(yearly=yearly_totals(advice=advice), advice=advice),
            "owning_parts_text": owning_parts_text(advice=advice),
            "amount": amount_text(amount=decision_amount(advice=advice)),
            # A frozen proposal names itself (number, who prepared it, hash); a scenario PDF is a draft.
            "issued": issued,
            "compared_sources_note": compared_sources_note(advice=advice),
            "risk_text": risk_words(advice=advice),
        }
    )
    return context


def compared_sources_note(*, advice: dict[str, Any]) -> str:
    """A compared GPU priced at offers or quotes its row does not record (an Advice issued before alternatives
    carried them) is not in the sources table: say so, rather than let the table look complete."""
    gpu = (advice.get("gpu") or {}).get("id") or (advice.get("scenario") or {}).get("gpu")
    others = [
        a.get("gpu")
        for a in advice.get("alternatives") or []
        if a.get("gpu")
        and a.get("gpu") != gpu
        and (
            (a.get("rent_usd_per_run") is not None and not a.get("offer"))
            or (a.get("buy_usd_per_run") is not None and not a.get("hardware_quote"))
        )
    ]
    if not others:
        return ""
    return (
        f"The GPUs compared, {', '.join(others)}, are priced at their own cheapest catalog offers and server quotes; "
        "this proposal does not record those (each row's note names any undated or stale one): ask for them before "
        "relying on those rows."
    )


def owning_parts_text(*, advice: dict[str, Any]) -> str:
    """advisor.cash_flow.owning_cash_parts as one sentence under the cash table: the parts re-add to a full year."""
    parts = owning_cash_parts(advice=advice)
    if not parts:
        return ""
    quote, terms = advice.get("hardware_quote") or {}, (advice.get("scenario") or {}).get("buy") or {}
    idle = (
        "idle draw included"
        if quote.get("idle_power_kw") is not None
        else "the quote states no idle draw, so energy counts busy hours only"
    )
    return (
        "Buying, cash in a full year: "
        + " + ".join(f"{name} {usd_exact(usd)}" for name, usd in parts)
        + f" = {usd_exact(sum(usd for _, usd in parts))} a year (colocation billed on {quote.get('power_kw'):g} kW "
        f"per server whether busy or not; energy at PUE {terms.get('pue'):g}, {idle}); the last year is net of the "
        "resale value."
    )


# Inference documents issued before 2026-12-06 computed u* with the rent's always-on base as a fixed cost; their
# stored figures stay as issued, so their note says how those were made (a finance probe: re-rendered old proposals
# printed 86% beside a note whose formula gives 71%).
COMMITTED_BASE_NOTE = (
    "Break-even utilization (as issued, before 2026-12-06) counted the rent's always-on base as a fixed cost: "
    "u* = (A - C) / (N x 8760 x (r' - v)), with C the base's yearly rent and r' the rest of the rent per busy "
    "GPU-hour; documents issued since use u* = A / (N x 8760 x (r - v)) against the whole rent as priced."
)


def committed_base_break_even(advice: dict[str, Any]) -> bool:
    """Whether an inference document's break-evens were computed the pre-2026-12-06 way: it prices owning and
    lacks the field the documents since carry beside u* (buy.break_even_utilization_with_committed_base)."""
    buys = [size.get("buy") or {} for size in advice.get("sizes") or []]
    priced = [buy for buy in buys if buy.get("break_even_utilization") is not None]
    return bool(priced) and not any("break_even_utilization_with_committed_base" in buy for buy in priced)


def method_notes(*, advice: dict[str, Any]) -> list[str]:
    """The method notes, with the owned-cost note true for the quote used: idle energy only where it states an idle
    draw (an outsider's probe: the note counted idle energy where the quote's idle power was none)."""
    if advice.get("kind") == "inference":
        if committed_base_break_even(advice):
            return [COMMITTED_BASE_NOTE if note.startswith("Break-even") else note for note in INFERENCE_METHOD_NOTES]
        return INFERENCE_METHOD_NOTES
    notes = list(METHOD_NOTES)
    if (advice.get("hardware_quote") or {}).get("idle_power_kw") is None:
        idle = "idle energy (zero here: the quote's idle draw is not stated, so energy counts busy hours only)"
        notes = [note.replace("idle energy", idle, 1) for note in notes]
    if any(_get_market(size) == "spot" for size in advice.get("sizes") or []):
        # A spot rental's cost counts the run time its interruptions lose (wall hours): say so, not "not included".
        notes = [note.replace(SPOT_NOT_COUNTED, SPOT_COUNTED, 1) for note in notes]
    return notes


SPOT_NOT_COUNTED = (
    "job interruptions, restarts from the last checkpoint, checkpoint saves and evaluation are not included"
)
SPOT_COUNTED = (
    "a spot rental's cost per run includes the run time spot interruptions lose (restarts from the last checkpoint), "
    "as stated beside it; other job interruptions, checkpoint saves and evaluation are not included"
)


def _get_market(size: Mapping[str, Any]) -> Any:
    return (size.get("rent") or {}).get("market")


def yearly_table(*, yearly: dict[str, Any] | None, advice: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """advisor.cash_flow.yearly_totals as printed: whole dollars, one row per year and a total row."""
    if yearly is None:
        return None
    keys = ("rent_usd", "buy_usd", "rent_present_usd", "buy_present_usd")
    return {
        **yearly,
        "rows": [(str(row["year"]), *(usd_exact(row[k]) for k in keys)) for row in yearly["years"]],
        "total_row": (f"Total over {yearly['horizon_years']:g} years", *(usd_exact(yearly["total"][k]) for k in keys)),
        "rate_text": f"{yearly['discount_rate'] * 100:g}%",
        "gpus_text": gpus_rented_and_bought(yearly=yearly, advice=advice or {}),
        "market_text": MARKET_PHRASES.get(yearly.get("rent_market") or "", "chosen"),
    }


def gpus_rented_and_bought(*, yearly: Mapping[str, Any], advice: Mapping[str, Any]) -> str:
    """The GPUs the cash table's columns are for: serving buys whole servers for the peak, so it may buy more than
    it rents (a finance approver: "3 GPUs" above a buying column that buys one 8-GPU server)."""
    rented = yearly.get("gpus")
    owned = (advice.get("cumulative_cost") or {}).get("gpus_owned")
    if owned is None or owned == rented:
        return fmt.count(rented, "GPU")
    per_server = (advice.get("hardware_quote") or {}).get("gpus_per_server")
    servers = f" ({fmt.count(owned // per_server, 'server')} of {per_server} GPUs)" if per_server else ""
    return f"Renting {fmt.count(rented, 'GPU')}, buying {fmt.count(owned, 'GPU')}{servers}"


def amount_text(*, amount: dict[str, Any] | None) -> dict[str, Any] | None:
    """advisor.cash_flow.decision_amount with its figures as printed."""
    if amount is None:
        return None
    return {
        **amount,
        "usd_text": usd_exact(amount["usd"]),
        "horizon_cash_text": usd_exact(amount["horizon_cash_usd"]),
        "horizon_present_text": usd_exact(amount["horizon_present_usd"]),
        "horizon_years_text": f"{amount['horizon_years']:g}",
        "other_text": (
            f"{'Renting' if amount['other_action'] == 'rent' else 'Buying'} instead: "
            f"{usd_exact(amount['other_horizon_cash_usd'])} cash over {amount['horizon_years']:g} years; present cost "
            f"{usd_exact(amount['other_horizon_present_usd'])}: {'buying' if amount['action'] == 'buy' else 'renting'}"
            f" {'saves' if amount['present_saving_usd'] >= 0 else 'costs'} "
            f"{usd_exact(abs(amount['present_saving_usd']))} in present cost"
            + ("" if amount["present_saving_usd"] >= 0 else " more")
            + "."
        )
        if "other_action" in amount
        else "",
    }


def render_proposal_html(
    *,
    advice: dict[str, Any],
    scenario_name: str,
    generated_on: dt.date | None = None,
    issued: dict[str, Any] | None = None,
) -> str:
    """The proposal as HTML (what WeasyPrint prints); handy for previews and tests.

    ``issued`` ({"id", "prepared_by", "issued_at", "content_hash"}) marks a frozen proposal."""
    day = generated_on or timezone.now().date()
    context = _proposal_context(advice=advice, scenario_name=scenario_name, generated_on=day, issued=issued)
    return render_to_string("proposal/proposal.html", context)


# Debian/Ubuntu package names; the Makefile's pdf-deps target installs or names the same ones.
PDF_UNAVAILABLE = (
    "PDF proposals are unavailable on this server: WeasyPrint needs the Pango library "
    "(Debian/Ubuntu: apt-get install libpango-1.0-0 libpangoft2-1.0-0; `make run` installs or names it)"
)


class PdfUnavailable(RuntimeError):
    """The PDF renderer cannot run here (a system library is missing); every other page still works."""


def render_proposal_pdf(
    *,
    advice: dict[str, Any],
    scenario_name: str,
    generated_on: dt.date | None = None,
    issued: dict[str, Any] | None = None,
) -> bytes:
    """The PDF proposal of one Advice dict (``Advice.to_dict()``): cover (decision, amount, date), summary,
    totals per year and over the horizon, approval block, assumptions, charts, per-size table, price
    sources, calibration accuracy and method notes; page numbers in the footer."""
    try:
        from weasyprint import HTML  # imported here: loading Pango costs time the other pages need not pay
    except (ImportError, OSError) as error:  # WeasyPrint raises OSError when it cannot load Pango
        raise PdfUnavailable(f"{PDF_UNAVAILABLE} ({error})") from error

    html = render_proposal_html(advice=advice, scenario_name=scenario_name, generated_on=generated_on, issued=issued)
    return HTML(string=html, base_url=PROPOSAL_BASE_URL, url_fetcher=static_only_fetcher()).write_pdf()


# Seconds the rendered PDF of an issued proposal is kept in the cache (rendering takes 2-7 s).
FROZEN_PDF_CACHE_S = 24 * 3600


def frozen_proposal_pdf(*, proposal: Any, shared: bool = False) -> bytes:
    """The PDF of an issued proposal (advisor.models.Proposal): its stored Advice (or Fleet Plan), dated the day
    it was issued. Rendered once and kept in the cache, keyed by everything it prints (the content hash of its
    numbers, its id, name and issue date, who prepared it), so repeated downloads are cheap.

    ``shared``: read through a share link, so the owner's account name is left out (it was not shared)."""
    fleet = proposal.kind == "fleet"
    issued = issued_fields(proposal=proposal, shared=shared)
    printed = [proposal.kind, proposal.pk, proposal.content_hash, proposal.scenario_name, str(proposal.issued_at)]
    key = "frozen-pdf:" + hashlib.sha256(json.dumps([*printed, issued], sort_keys=True).encode()).hexdigest()
    cached = cache.get(key)
    if isinstance(cached, bytes):
        return cached
    if fleet:
        pdf = render_fleet_pdf(
            plan=proposal.advice,
            fleet_name=proposal.scenario_name,
            generated_on=proposal.issued_at.date(),
            issued=issued,
        )
    else:
        pdf = render_proposal_pdf(
            advice=proposal.advice,
            scenario_name=proposal.scenario_name,
            generated_on=proposal.issued_at.date(),
            issued=issued,
        )
    cache.set(key, pdf, timeout=FROZEN_PDF_CACHE_S)
    return pdf


SHARED_PREPARED_BY = "shared link"


def issued_fields(*, proposal: Any, shared: bool = False) -> dict[str, Any]:
    owner = proposal.owner
    return {
        "id": proposal.pk,
        "prepared_by": SHARED_PREPARED_BY if shared else owner.get_full_name() or owner.get_username(),
        "issued_at": proposal.issued_at.strftime("%Y-%m-%d %H:%M UTC"),
        "content_hash": proposal.content_hash,
    }


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
