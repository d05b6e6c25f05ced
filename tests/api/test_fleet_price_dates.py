"""An auditor: the fleet's PDF, pages and proposal page printed the plan's raw ``prices_as_of`` as "Prices as of
2026-12-02", an observation date, while every offer the plan used was undated (the snapshot's compile date) and the
same proposal's workbook said so; the plan carried no warning of its undated offers where scenario advice does; and
every proposal page said it was "issued ... with the prices of that day"."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from openpyxl import load_workbook

from advisor.web.presenters import fleet_prices_as_of_text
from tests.api.examples import issue_fleet_2027

pytestmark = pytest.mark.django_db

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fleet-2027.json"
# What the bundled snapshot's undated offers are dated by: only the snapshot's compile date bounds them.
UNDATED_WORDS = "the offers used carry no observation date"
RAW_DATE = "Prices as of 20"  # any "Prices as of <date>" without saying what the date is
ISSUED_WITH_TODAYS_PRICES = "with the prices of that day"


def _pdf_text(content: bytes) -> str:
    from pypdf import PdfReader

    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(content)).pages)


def _plain(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def issued(alice, user) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    return issue_fleet_2027(alice)


def test_the_fleet_plan_warns_its_offers_are_undated_as_scenario_advice_does(issued: dict[str, Any]) -> None:
    plan = issued["advice"]
    freshness = plan["price_freshness"]
    n = freshness["undated_offers"]
    assert n and freshness["kind"] == "snapshot" and len(freshness["undated"]) == n
    assert plan["prices_as_of"] == freshness["snapshot_compiled_on"]  # no offer dated: the compile date
    warning = next(w for w in plan["warnings"] if "carry no observation date" in w)
    assert warning.startswith(f"{n} of the {n} offers quoted carry no observation date")
    assert "is the snapshot's compile date (an upper bound)" in warning


def test_the_fleet_pdf_and_pages_say_what_the_price_date_is(alice, user, issued: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    plan = issued["advice"]
    pdf = _plain(_pdf_text(alice.get(f"/api/v1/proposals/{issued['id']}/proposal.pdf").content))
    assert RAW_DATE not in pdf, pdf[:3000]
    words = fleet_prices_as_of_text(plan=plan)
    assert words == f"Prices: snapshot compiled {plan['prices_as_of']}; {UNDATED_WORDS}"
    # The PDF: its cover and the line after its Options table.
    assert pdf.count(words) == 2, pdf[:3000]
    # The workbook says the same words (advisor.xlsx).
    book = load_workbook(io.BytesIO(alice.get(f"/api/v1/proposals/{issued['id']}/proposal.xlsx").content))
    assert words in [row[1] for row in book["Summary"].iter_rows(values_only=True) if row and row[0] == "Prices"]
    web = Client()
    web.force_login(user)
    page = web.get(f"/proposals/{issued['id']}/").content.decode()
    assert RAW_DATE not in page and words in page
    assert ISSUED_WITH_TODAYS_PRICES not in page and "Issued " in page
    results = web.post("/fleet/", {"fleet": EXAMPLE.read_text(), "action": "plan"}).content.decode()
    assert RAW_DATE not in results and words in results


def test_a_fleet_plan_stored_before_its_price_freshness_still_says_what_its_date_is(issued: dict[str, Any]) -> None:
    old = {k: v for k, v in issued["advice"].items() if k != "price_freshness"}
    assert fleet_prices_as_of_text(plan=old) == fleet_prices_as_of_text(plan=issued["advice"])
    manual = {**old, "fleet": {**old["fleet"], "rent": {**old["fleet"]["rent"], "usd_per_gpu_hour": 2.0}}}
    assert fleet_prices_as_of_text(plan=manual).startswith("Prices: your own rental quote")
