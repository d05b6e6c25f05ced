"""A finance auditor: the fleet results page (POST /fleet/) and a fleet proposal's page (/proposals/{id}/) showed
dollar totals with nothing to trace them to: the spot price nowhere, the on-demand price only inside the break-even
sentence without provider, instance or date, no Price sources table, the hardware quote only in a staleness warning,
no purchase Amount and no split of the owned tier, while the fleet PDF printed all of them and the footer said
"Prices show where and when they were observed". The pages now print the PDF's own partials and figures."""

from __future__ import annotations

import html
import io
import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from advisor.fleet.proposal import amount_text, fleet_price_sources, owned_parts_text
from tests.api.examples import issue_fleet_2027

pytestmark = pytest.mark.django_db

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fleet-2027.json"


def _pdf_text(content: bytes) -> str:
    from pypdf import PdfReader

    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(content)).pages)


def _plain(text: str) -> str:
    return " ".join(text.split())


def _page_text(content: bytes) -> str:
    """The page's text as a reader sees it: tags dropped, entities decoded, whitespace folded."""
    return _plain(html.unescape(re.sub(r"<[^>]+>", " ", content.decode())))


@pytest.fixture
def issued(alice) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return issue_fleet_2027(alice)


def test_the_fleet_pages_print_the_pdfs_price_sources_amount_and_owned_parts(  # type: ignore[no-untyped-def]
    alice, user, issued: dict[str, Any]
) -> None:
    plan = issued["advice"]
    pdf = _plain(_pdf_text(alice.get(f"/api/v1/proposals/{issued['id']}/proposal.pdf").content))
    sources = fleet_price_sources(plan=plan)
    markets: dict[str, dict[str, Any]] = {}
    for source in sources:  # the tiers' node offers come first, then the per-line offers
        markets.setdefault(source["market"], source)
    # The example's figures the auditor could not find on the pages: spot $1.25, on demand $2.95, the $317,000 quote
    # of 2024-08-01, the $1,565,432 purchase and the owned tier's four parts.
    assert {"spot", "on-demand", "purchase"} <= set(markets), sources
    assert markets["spot"]["price"].startswith("$1.25") and markets["on-demand"]["price"].startswith("$2.95")
    assert markets["purchase"]["price"] == "$317,000" and markets["purchase"]["observed_at"] == "2024-08-01"
    amount = amount_text(plan=plan)
    assert amount is not None and amount["usd_text"] == "$1,565,432"
    parts = owned_parts_text(plan=plan)
    assert "$365,389" in parts and "$55,756" in parts
    # The PDF prints them (its figures are the ones the pages must show).
    for source in sources:
        for cell in (source["price"], source["observed_at"]):
            assert cell in pdf, (cell, pdf[:4000])
    assert f"Amount: {amount['usd_text']} ({amount['label']})" in pdf
    assert parts in pdf

    web = Client()
    web.force_login(user)
    proposal_page = web.get(f"/proposals/{issued['id']}/")
    results_page = web.post("/fleet/", {"fleet": EXAMPLE.read_text(), "action": "plan"})
    assert proposal_page.status_code == 200 and results_page.status_code == 200
    for page in (proposal_page, results_page):
        body = page.content.decode()
        text = _page_text(page.content)
        assert 'class="sources"' in body and "Price sources" in text
        for source in sources:
            row = " ".join(str(source[k]) for k in ("what", "market", "price", "observed_at", "source"))
            assert _plain(row) in text, (row, text[:6000])
        assert f"Amount: {amount['usd_text']} ({amount['label']})" in text, text[:6000]
        assert parts in text, text[:6000]
