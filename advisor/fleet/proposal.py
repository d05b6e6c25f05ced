"""The fleet plan as a PDF: the page's results partial and pictures, printed by WeasyPrint with the
proposal's stylesheet (``templates/proposal/print.css``)."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any, Final

from django.template.loader import render_to_string
from django.utils import timezone

from advisor import formatting as fmt
from advisor.advice.documents import levelized_words
from advisor.advice.fleet.plan import LOAD_DURATION_METHOD
from advisor.advice.fleet.pricing import PEAK_HOURS
from advisor.advice.fleet.service import HELIOS_ATTRIBUTION
from advisor.cash_flow import fleet_owned_parts, fleet_purchase
from advisor.fleet.charts import fleet_charts
from advisor.web.presenters import (
    fleet_calibration_lines,
    fleet_prices_as_of_text,
    offer_key,
    offer_source,
    ownership_rows,
    quote_sources,
    usd_exact,
)
from pricing.models import FLOATING_MARKETS, MARKET_PHRASES

# Jobs listed by name on the fleet page, the fleet proposal page and the PDF (a hostile probe, F3: 10,000 jobs,
# MAX_JOBS, took 74-75 s per PDF GET and 3 s / 2.3 MB per page GET): the largest by GPU-hours, the rest counted in one
# row. The Fleet Plan JSON and the workbook list every job.
FLEET_JOBS_SHOWN: Final[int] = 50

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


def fleet_assumptions(*, plan: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) of what the plan's owning is priced on: the ownership terms and the server bought."""
    fleet = plan.get("fleet") or {}
    rows = [("GPU", str(plan.get("gpu") or fleet.get("gpu") or "n/a"))]
    quote = (plan.get("tier_prices") or {}).get("hardware_quote") or {}
    if quote.get("power_kw") is not None:
        rows.append(
            (
                "Server power",
                f"{fmt.plain(quote['power_kw'])} kW per {fmt.plain(quote.get('gpus_per_server'))}-GPU server",
            )
        )
    rent = fleet.get("rent") or {}
    if rent.get("usd_per_gpu_hour") is not None:
        rows.append(("Your rental quote", f"{fmt.price(rent['usd_per_gpu_hour'])} per GPU-hour today"))
    # The decline levelizes the on-demand and spot prices (the price sources say at what): a finance reviewer found
    # $3.48 beside a $4.00 quote and no decline printed.
    decline = rent.get("price_decline_per_year") or 0.0
    rows.append(
        (
            "Rent price decline",
            f"{fmt.percent(decline)} a year"
            + (", on-demand and spot prices levelized over the horizon (Price sources)" if decline else ""),
        )
    )
    return rows + ownership_rows(buy=fleet.get("buy") or {})


def billed_price_text(*, plan: dict[str, Any], market: str, listed: float, billed: float | None) -> str:
    """The price an offer is listed at, and, where the plan bills it levelized (a floating market under a yearly
    price decline), the levelized price with the decline and horizon it levelizes (documents.levelized_words)."""
    if billed is None or market not in FLOATING_MARKETS or math.isclose(billed, listed, rel_tol=1e-9):
        return f"{fmt.price(listed)} per GPU-hour"
    return levelized_words(
        levelized=f"{fmt.price(billed)} per GPU-hour", today=fmt.price(listed), scenario=plan.get("fleet") or {}
    )


def line_offers(*, plan: dict[str, Any]) -> list[tuple[str, dict[str, Any], list[str]]]:
    """(market, offer, the job lines rented at it) of each per-line offer (jobs[].rent_offers) other than the node's
    offer its tier is priced at (tier_prices.offers): a finance reviewer could not tie the on-demand tier's $190,875 to
    any cited price, 70,080 GPU-h of it being at a 1-GPU offer named only inside a reason."""
    node = {market: offer_key(o) for market, o in ((plan.get("tier_prices") or {}).get("offers") or {}).items() if o}
    found: dict[tuple[Any, ...], tuple[str, dict[str, Any], list[str]]] = {}
    for line in plan.get("jobs") or []:
        for market, offer in (line.get("rent_offers") or {}).items():
            if offer and offer_key(offer) != node.get(market):
                entry = found.setdefault(offer_key(offer), (market, offer, []))
                if line.get("name") not in entry[2]:
                    entry[2].append(str(line.get("name")))
    return list(found.values())


def fleet_price_sources(*, plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Every offer the plan's tiers are priced at, and the hardware quote with its fabric, as price-source rows."""
    prices = plan.get("tier_prices") or {}
    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for market, offer in (prices.get("offers") or {}).items():
        if offer:
            listed = offer.get("usd_per_used_gpu_hour", offer.get("usd_per_gpu_hour", 0.0))
            billed = prices.get(f"{market}_usd_per_gpu_hour")
            price = billed_price_text(plan=plan, market=market, listed=listed, billed=billed)
            seen.setdefault(offer_key(offer), {**offer_source(offer), "price": price})
    for market, offer, names in line_offers(plan=plan):
        listed = offer.get("usd_per_used_gpu_hour", offer.get("usd_per_gpu_hour", 0.0))
        price = billed_price_text(
            plan=plan, market=market, listed=listed, billed=line_billed_price(prices, market, listed)
        )
        row = offer_source(offer)
        seen.setdefault(
            offer_key(offer), {**row, "what": f"{row['what']}, rented by {', '.join(names)}", "price": price}
        )
    quote = prices.get("hardware_quote")
    fabric = (quote or {}).get("networking_usd_per_node") or None
    return [*seen.values(), *quote_sources(quote=quote, fabric=fabric)]


def line_billed_price(prices: dict[str, Any], market: str, listed: float) -> float | None:
    """A per-line offer's price as billed: levelized as its tier's node offer is (the same factor for every offer of
    a floating market; plan.TierPrices.line_price)."""
    node = (prices.get("offers") or {}).get(market) or {}
    node_listed = node.get("usd_per_used_gpu_hour", node.get("usd_per_gpu_hour"))
    billed = prices.get(f"{market}_usd_per_gpu_hour")
    if not node_listed or billed is None:
        return None
    return float(listed) * float(billed) / float(node_listed)


def purchase_text(*, plan: dict[str, Any]) -> dict[str, Any] | None:
    """advisor.cash_flow.fleet_purchase as the cover prints it."""
    purchase = fleet_purchase(plan=plan)
    if purchase is None:
        return None
    what = (
        f"{purchase['nodes']} server{'' if purchase['nodes'] == 1 else 's'} of {purchase['gpus_per_node']} GPUs at "
        f"{usd_exact(purchase['usd_per_node'])}"
    )
    if purchase["fabric_per_node"]:
        what += f" plus {usd_exact(purchase['fabric_per_node'])} network fabric each"
    return {**purchase, "usd_text": usd_exact(purchase["usd"]), "label": f"purchase price, paid up front: {what}"}


def amount_text(*, plan: dict[str, Any]) -> dict[str, Any] | None:
    """The sum an approver signs for, by the scenario's rule (cash_flow.decision_amount): the purchase when the plan
    owns GPUs, else the rent (a finance reviewer: a fleet renting everything had no amount on the cover or in the
    workbook). The plan has no first year's cash: the rent is its yearly cost, levelized where the price declines."""
    purchase = purchase_text(plan=plan)
    usd = (plan.get("recommendation") or {}).get("usd_per_year")
    if purchase is not None or usd is None:
        return purchase
    decline = ((plan.get("fleet") or {}).get("rent") or {}).get("price_decline_per_year")
    label = "rent a year for the whole fleet: the plan owns nothing" + (
        f"; on-demand and spot prices falling {fmt.percent(decline)} a year, levelized over the horizon"
        if decline
        else ""
    )
    return {"usd": float(usd), "usd_text": usd_exact(usd), "label": label}


def owned_parts(*, plan: dict[str, Any]) -> list[tuple[str, float]] | None:
    """(part, USD a year) of the recommended owned tier (cash_flow.fleet_owned_parts, the split the fleet workbook
    prints too), or None without an owned tier or when the parts do not re-add to it within $1 (a quote this split
    cannot read): a finance probe had to rebuild $651,128 from capex, annuity, colocation, support and energy by
    hand."""
    parts = fleet_owned_parts(plan=plan)
    rec = plan.get("recommendation") or {}
    option = next((o for o in plan.get("options") or [] if o.get("owned_gpus") == rec.get("owned_gpus")), None)
    owned = ((option or {}).get("by_tier") or {}).get("owned") or {}
    if not parts or owned.get("usd_per_year") is None:
        return None
    if abs(sum(usd for _, usd in parts) - float(owned["usd_per_year"])) > 1.0:
        return None
    return parts


def owned_parts_text(*, plan: dict[str, Any]) -> str:
    """``owned_parts`` as one sentence, as the scenario PDF prints its owning parts (proposal.owning_parts_text)."""
    parts = owned_parts(plan=plan)
    if not parts:
        return ""
    terms = (plan.get("fleet") or {}).get("buy") or {}
    purchase = fleet_purchase(plan=plan) or {}
    capital = (
        f"capital (the {usd_exact(purchase.get('usd'))} purchase over {fmt.plain(terms.get('years'))} years at "
        f"{fmt.percent(terms.get('discount_rate'))}, less the discounted {fmt.percent(terms.get('residual_fraction'))}"
        " residual)"
    )
    words = [capital if name == "capital" else name for name, _ in parts]
    return (
        "Owning, a year: "
        + " + ".join(f"{word} {usd_exact(usd)}" for word, (_, usd) in zip(words, parts, strict=True))
        + f" = {usd_exact(sum(usd for _, usd in parts))}, the owned tier."
    )


def shown_jobs(*, plan: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, float] | None]:
    """The jobs the page and the PDF list (the FLEET_JOBS_SHOWN largest by GPU-hours a year, in the plan's order so
    a service's lines stay together) and, when some are left out, their count and GPU-hours a year."""
    jobs = plan.get("jobs") or []
    if len(jobs) <= FLEET_JOBS_SHOWN:
        return list(jobs), None
    gpu_hours = [j["gpus"] * j["run_hours"] * j["runs_per_year"] for j in jobs]
    largest = set(sorted(range(len(jobs)), key=lambda k: -gpu_hours[k])[:FLEET_JOBS_SHOWN])
    rest = [k for k in range(len(jobs)) if k not in largest]
    return [jobs[k] for k in sorted(largest)], {"jobs": len(rest), "gpu_hours": sum(gpu_hours[k] for k in rest)}


def fleet_results_context(*, plan: dict[str, Any]) -> dict[str, Any]:
    """What templates/fleet/_results.html reads besides the plan, for the page, the proposal page and the PDF alike
    (the amount, assumptions and price sources too, which the PDF prints outside it): each per-job part bounded
    (FLEET_JOBS_SHOWN), so their work does not grow with the number of jobs."""
    jobs, more = shown_jobs(plan=plan)
    calibrations = fleet_calibration_lines(plan=plan)
    csv_text = (plan["fleet"].get("usage") or {}).get("csv") or ""
    tiers = (plan.get("recommendation") or {}).get("tiers") or []
    # A service's lines above its base ("(peak hours)") add GPUs on top of its all-year line for some hours a day:
    # the table says so ("+1", "1.4 h a day"), where bare "1" and "1" read as a job of their own (a new user's probe).
    shown = [{**j, "peak": str(j.get("name", "")).endswith(f" ({PEAK_HOURS})")} for j in jobs]
    return {
        "charts": fleet_charts(plan=plan),
        # Tiers named as the scenario pages name markets ("on-demand", not the id "on_demand"; a new user's probe).
        "tiers_shown": [{**t, "name": MARKET_PHRASES.get(t.get("tier"), t.get("tier"))} for t in tiers],
        "jobs_shown": shown,
        "peak_lines": any(j["peak"] for j in shown),
        "jobs_more": more,
        "job_calibrations": calibrations[:FLEET_JOBS_SHOWN],
        "job_calibrations_more": max(0, len(calibrations) - FLEET_JOBS_SHOWN),
        "attribution": HELIOS_ATTRIBUTION if "Helios trace" in csv_text else None,
        "prices_as_of_text": fleet_prices_as_of_text(plan=plan),
        # What each dollar total is traced to, on the pages as in the PDF (a finance auditor found the pages' totals
        # with no price, provider, date, quote, purchase or owned split beside them).
        "amount": amount_text(plan=plan),
        "owned_parts_text": owned_parts_text(plan=plan),
        "assumption_rows": fleet_assumptions(plan=plan),
        "price_sources": fleet_price_sources(plan=plan),
    }


def render_fleet_html(
    *,
    plan: dict[str, Any],
    fleet_name: str,
    generated_on: dt.date | None = None,
    issued: dict[str, Any] | None = None,
) -> str:
    """``issued`` ({"id", "prepared_by", "issued_at", "content_hash"}) marks a frozen proposal: its number, issue
    time, hash, approval block, purchase, assumptions and price sources, as a scenario proposal prints them."""
    context = {
        "plan": plan,
        **fleet_results_context(plan=plan),
        "fleet_name": fleet_name,
        "generated_on": (generated_on or timezone.now().date()).isoformat(),
        "method_notes": METHOD_NOTES,
        "issued": issued,
        # The amount sits on the cover and the assumptions and price sources in sections of their own.
        "printing": True,
    }
    return render_to_string("fleet/proposal.html", context)


def render_fleet_pdf(
    *,
    plan: dict[str, Any],
    fleet_name: str,
    generated_on: dt.date | None = None,
    issued: dict[str, Any] | None = None,
) -> bytes:
    from weasyprint import HTML  # imported here: loading Pango costs time the other pages need not pay

    html = render_fleet_html(plan=plan, fleet_name=fleet_name, generated_on=generated_on, issued=issued)
    return HTML(string=html).write_pdf()
