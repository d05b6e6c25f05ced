"""Proposal pages: issue from the scenario and planner pages, frozen share links, recompute with
today's prices as a new proposal with the difference shown, PDF and xlsx downloads."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.db.models import F
from django.test import Client

from advisor import scenarios as store
from advisor.models import Proposal
from advisor.web import forms
from pricing.models import Offer

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("bundled_data")]


@pytest.fixture
def alice(client: Client, user: Any) -> Client:
    client.force_login(user)
    return client


@pytest.fixture
def saved(user: Any, scenario_document: dict[str, Any]) -> Any:
    return store.scenario_create(owner=user, name="7B pretraining", document=scenario_document)


def _double_prices() -> None:
    assert Offer.objects.update(usd_per_gpu_hour=F("usd_per_gpu_hour") * 2, usd_per_hour=F("usd_per_hour") * 2)


def _rented_price(proposal: Proposal) -> float:
    size = next(s for s in proposal.advice["sizes"] if s["gpus"] == proposal.advice["recommendation"]["gpus"])
    return size["rent"]["offer"]["usd_per_gpu_hour"]


def test_issue_from_the_scenario_page(alice: Client, saved: Any) -> None:
    page = alice.get(f"/scenarios/{saved.pk}/").content.decode()
    assert 'data-testid="issue-proposal"' in page
    response = alice.post(f"/scenarios/{saved.pk}/proposals/")
    proposal = Proposal.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/proposals/{proposal.pk}/"
    html = alice.get(response["Location"]).content.decode()
    assert f"Proposal {proposal.pk}" in html and 'data-testid="proposal-recompute"' in html
    assert f"${_rented_price(proposal):,.2f}" in html
    assert f"/proposals/{proposal.pk}/" in alice.get(f"/scenarios/{saved.pk}/").content.decode()


def test_issue_from_the_planner_saves_then_freezes(alice: Client) -> None:
    page = alice.get("/plan/").content.decode()
    assert 'data-testid="issue-proposal"' in page
    response = alice.post("/plan/save/", {**forms.preset_initial("7b-pretrain"), "then": "issue"})
    proposal = Proposal.objects.get()
    assert response["Location"] == f"/proposals/{proposal.pk}/"
    assert proposal.scenario is not None and proposal.scenario_document == proposal.scenario.document


def test_recompute_makes_a_new_proposal_and_shows_what_moved(alice: Client, saved: Any) -> None:
    alice.post(f"/scenarios/{saved.pk}/proposals/")
    first = Proposal.objects.get()
    as_issued = (first.advice, first.content_hash)
    _double_prices()
    response = alice.post(f"/proposals/{first.pk}/recompute/")
    second = Proposal.objects.exclude(pk=first.pk).get()
    assert response["Location"] == f"/proposals/{second.pk}/"
    assert second.recomputed_from_id == first.pk
    assert _rented_price(second) == pytest.approx(2 * _rented_price(first))
    first.refresh_from_db()
    assert (first.advice, first.content_hash) == as_issued  # the earlier proposal is untouched
    html = alice.get(f"/proposals/{second.pk}/").content.decode()
    assert 'data-testid="proposal-difference"' in html
    row = re.search(r"Rented price per GPU-hour \(USD\)</th><td>([^<]+)</td><td>([^<]+)</td><td>([^<]+)</td>", html)
    assert row is not None
    assert row.groups() == (
        f"{_rented_price(first):,.2f}",
        f"{_rented_price(second):,.2f}",
        f"{_rented_price(second) - _rented_price(first):+,.2f}",
    )
    assert f"/proposals/{second.pk}/" in alice.get(f"/proposals/{first.pk}/").content.decode()  # "newer exists"


def test_share_links_point_at_frozen_proposals_and_old_links_still_work(
    alice: Client, saved: Any, client: Client
) -> None:
    old_link = store.share_link_create(scenario=saved)  # made before proposals existed: live
    alice.post(f"/scenarios/{saved.pk}/share/")
    proposal = Proposal.objects.get()
    link = proposal.share_links.get()
    price = f"${_rented_price(proposal):,.2f}"
    _double_prices()
    anonymous = Client()
    frozen = anonymous.get(f"/s/{link.token}/").content.decode()
    assert price in frozen and "frozen" in frozen
    pdf = anonymous.get(f"/s/{link.token}/proposal.pdf")
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    from pypdf import PdfReader

    text = " ".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf.content)).pages)
    assert f"Proposal {proposal.pk} issued" in " ".join(text.split())
    live = anonymous.get(f"/s/{old_link.token}/")
    assert live.status_code == 200
    assert f"${2 * _rented_price(proposal):,.2f}" in live.content.decode()


def test_xlsx_download_opens(alice: Client, saved: Any) -> None:
    from openpyxl import load_workbook

    alice.post(f"/scenarios/{saved.pk}/proposals/")
    proposal = Proposal.objects.get()
    response = alice.get(f"/proposals/{proposal.pk}/proposal.xlsx")
    assert response.status_code == 200
    book = load_workbook(io.BytesIO(response.content))
    summary = {r[0]: r[1] for r in book["Summary"].iter_rows(min_row=2, values_only=True)}
    assert summary["Proposal"] == proposal.pk and summary["Content hash (SHA-256)"] == proposal.content_hash


def test_admin_shows_proposals_read_only(client: Client, staff_user: Any, saved: Any, user: Any) -> None:
    from advisor.proposals import issue_proposal

    proposal = issue_proposal(user=user, scenario_id=saved.pk)
    staff_user.is_superuser = True
    staff_user.save()
    client.force_login(staff_user)
    assert str(proposal.pk) in client.get("/admin/advisor/proposal/").content.decode()
    response = client.post(f"/admin/advisor/proposal/{proposal.pk}/change/", {"scenario_name": "edited"})
    assert response.status_code == 403
    proposal.refresh_from_db()
    assert proposal.scenario_name == "7B pretraining"


def test_the_cash_flow_caption_counts_gpus_and_names_the_market_in_words() -> None:
    """An outsider's probe (#18): the PDF's cash-flow caption read '1 GPUs; renting on the on_demand market'."""
    from advisor.proposal import yearly_table

    total = dict.fromkeys(("rent_usd", "buy_usd", "rent_present_usd", "buy_present_usd"), 0.0)
    totals = {"years": [], "total": total, "horizon_years": 5, "discount_rate": 0.08, "rent_market": "on_demand"}
    one = yearly_table(yearly={**totals, "gpus": 1})
    assert one is not None and (one["gpus_text"], one["market_text"]) == ("1 GPU", "on-demand")
    many = yearly_table(yearly={**totals, "gpus": 16, "rent_market": "reserved_1y"})
    assert many is not None and (many["gpus_text"], many["market_text"]) == ("16 GPUs", "1-year reserved")


def test_the_proposal_says_its_cash_is_undiscounted_and_present_cost_decides(alice: Client, saved: Any) -> None:
    """An outsider's probe: the 70B proposal said "Rent" under a chart ("Buying becomes cheaper in month 60") and a cash
    table favouring buying, and nothing said those figures are undiscounted nor which ones the decision uses."""
    import json
    from pathlib import Path

    from openpyxl import load_workbook

    from advisor.charts import chart_cumulative
    from advisor.proposal import render_proposal_html

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "advice_training_example.json"
    advice = json.loads(fixture.read_text())
    html = render_proposal_html(advice=advice, scenario_name="example")
    basis = re.search(r'data-testid="decision-basis">([^<]*)<', html)
    assert basis and "undiscounted" in basis.group(1) and "decision compares present costs" in basis.group(1)
    caption = chart_cumulative(advice=advice).caption
    assert "Undiscounted cash; the decision compares present costs (discounted at" in caption
    alice.post(f"/scenarios/{saved.pk}/proposals/")
    response = alice.get(f"/proposals/{Proposal.objects.get().pk}/proposal.xlsx")
    summary = {r[0]: r[1] for r in load_workbook(io.BytesIO(response.content))["Summary"].iter_rows(values_only=True)}
    assert "undiscounted" in summary["Decision basis"]


def test_negative_money_puts_the_sign_first_and_a_range_keeps_one_unit() -> None:
    """An outsider's probe: "$-2,282,882" (a buying year net of its resale value) and "2.5 d, P10-P90 45.6 h to
    3.4 d"."""
    from advisor.web.presenters import hours_in_one_unit, size_rows, usd_cents, usd_exact

    # Cents below $100 (an outside tester: "$4" a run beside the reasons' "$4.26"), never "-$0.00".
    assert (usd_exact(-2_282_882.3), usd_exact(-0.4), usd_exact(1_234_567.4)) == ("-$2,282,882", "-$0.40", "$1,234,567")
    assert usd_exact(-0.001) == "$0.00"
    assert usd_cents(-3.5) == "-$3.50"
    assert hours_in_one_unit(60.0, 45.6, 81.6) == ["2.5 d", "1.9 d", "3.4 d"]
    assert hours_in_one_unit(10.0, 8.0, None) == ["10.0 h", "8.0 h", "n/a"]
    size = {"gpus": 8, "run_hours": 60.0, "run_hours_p10": 45.6, "run_hours_p90": 81.6}
    row = size_rows(advice={"sizes": [size]})[0]
    assert (row["run_time"], row["run_time_band"]) == ("2.5 d", "1.9 d to 3.4 d")


def test_the_cover_says_what_its_price_date_is(example_advice: dict[str, Any]) -> None:
    """An outside tester: the cover's 'Prices as of 2026-12-02' was the snapshot's compile date while every offer used
    was undated; '(an upper bound)' came only in a late warning."""
    from advisor.proposal import render_proposal_html
    from advisor.web.presenters import prices_as_of_text

    html = render_proposal_html(advice=example_advice, scenario_name="example")
    assert "Prices as of 2026-12-02" not in html
    words = "Prices: snapshot compiled 2026-12-02; the offers used carry no observation date"
    assert prices_as_of_text(advice=example_advice) == words and words in html
    head = example_advice["sizes"][0]["rent"]["offer"]
    for size in example_advice["sizes"]:  # the headline offer, wherever it is quoted
        for offer in [size["rent"]["offer"], *(m["offer"] for m in size["rent"]["by_market"].values() if m)]:
            if offer and (offer["provider"], offer["instance"]) == (head["provider"], head["instance"]):
                offer["observed_at"] = "2026-11-30T12:00:00Z"
    dated = {**example_advice, "prices_as_of": "2026-11-30"}
    assert prices_as_of_text(advice=dated).startswith("Prices as of 2026-11-30, the oldest observation among the")
    manual = {**example_advice, "price_freshness": {**example_advice["price_freshness"], "kind": "manual"}}
    assert prices_as_of_text(advice=manual) == "Prices: your own rental quote (2026-12-02)"


def test_the_risk_sentence_writes_each_sensitivity_input_in_its_own_unit() -> None:
    # A finance probe: the PDF's Risk sentence read "throughput (8.1e+07%-1.22e+08%)", tokens/s formatted as a percent
    # (7B example at 128 GPUs); a PUE of 1.3 would have read "130%".
    from advisor.web.presenters import risk_words

    def row(name: str, unit: str, low: float, base: float, high: float, *, flip_high: bool = False) -> dict[str, Any]:
        return {
            "input": name,
            "unit": unit,
            "base_input": base,
            "low_input": low,
            "high_input": high,
            "base": -1000.0,
            "low": -900.0,
            "high": 500.0 if flip_high else -1100.0,
        }

    advice = {
        "sizes": [],
        "sensitivity": [
            row("throughput", "tokens/s", 810_107.76, 1_012_634.7, 1_215_161.64),
            row("utilization", "fraction", 0.48, 0.6, 0.72),
            row("PUE", "ratio", 1.04, 1.3, 1.56),
            row("throughput", "tokens/s", 810_107.76, 1_012_634.7, 1_215_161.64, flip_high=True),
        ],
    }
    words = risk_words(advice=advice)
    assert "throughput (810,108 tokens/s-1,215,162 tokens/s)" in words
    assert "utilization (48%-72%)" in words
    assert "PUE (1.04-1.56)" in words
    assert "a throughput of 1,215,162 tokens/s (+20%)" in words
    assert "e+0" not in words


def test_an_owned_cost_per_run_that_cannot_finish_the_runs_is_marked(example_advice: dict[str, Any]) -> None:
    """An outsider's probe (F2): 'Own per run' was priced unmarked at sizes one cluster cannot finish the year's runs
    on (utilization capped at 1), while the reasons skipped them. The page and the PDF say so from the Advice."""
    from advisor.proposal import render_proposal_html
    from advisor.web.presenters import size_rows

    rows = size_rows(advice=example_advice)
    # 8 GPUs: 3,756 h a run, 2.33 of the 4 runs a year fit; 16 GPUs finish them.
    # With the other 1.67 runs rented (buy.overflow, finance probe F2): the own option's figures beside the mark.
    assert rows[0]["owned_fit"] == (
        "only 2.33 of 4 runs a year fit on one cluster; with the rest rented $50,232 a run, $200,927 a year"
    )
    assert rows[1]["owned_fit"] == ""
    assert "only 2.33 of 4 runs a year fit on one cluster" in render_proposal_html(
        advice=example_advice, scenario_name="example"
    )


def test_the_per_million_tokens_column_says_it_is_the_cheaper_of_rent_and_own() -> None:
    """An outsider's probe (F9): 8B chat's TP 8 row showed $1.09 per million output tokens, the owned figure, beside
    rented figures in the other rows, under a header that did not say which."""
    from django.template.loader import render_to_string

    from advisor.web.presenters import inference_rows

    def size(tp: int, rent: float, own: float) -> dict[str, Any]:
        return {
            "tp": tp,
            "gpus": tp,
            "fits_memory": True,
            "rent": {"usd_per_month": rent * 10, "usd_per_million_output_tokens": rent},
            "buy": {"usd_per_month": own * 10, "usd_per_million_output_tokens": own},
            "usd_per_million_output_tokens": min(rent, own),
        }

    advice = {"kind": "inference", "sizes": [size(1, 0.18, 1.2), size(8, 1.19, 1.09)]}
    rows = inference_rows(advice=advice)
    assert [(r["per_million"], r["per_million_side"]) for r in rows] == [("$0.18", "rented"), ("$1.09", "owned")]
    html = render_to_string("partials/sizes_table_inference.html", {"rows": rows})
    assert "Per million output tokens (cheaper of rent and own)" in html
    assert '$1.09<br><small class="muted">owned</small>' in html


def test_a_stored_version_1_advice_still_renders(example_advice: dict[str, Any]) -> None:
    """Review2 F9: the Advice went to version 2 (TrainingBuy's finishes_runs and runs_per_year_fit); a proposal frozen
    at version 1, without them, renders its page, PDF HTML and workbook unmarked."""
    from advisor.proposal import render_proposal_html
    from advisor.web.presenters import size_rows
    from advisor.xlsx import proposal_workbook

    stored = {**example_advice, "advice_version": 1}
    stored["sizes"] = [
        {**size, "buy": {k: v for k, v in size["buy"].items() if k not in {"finishes_runs", "runs_per_year_fit"}}}
        for size in example_advice["sizes"]
    ]
    assert [row["owned_fit"] for row in size_rows(advice=stored)] == ["", ""]
    assert "runs a year fit on one cluster" not in render_proposal_html(advice=stored, scenario_name="example")
    assert proposal_workbook(proposal={"id": 1, "scenario_name": "x", "advice": stored})


def test_a_draft_says_it_was_computed_today_with_prices_as_of_their_date(example_advice: dict[str, Any]) -> None:
    """A finance reviewer (F8): 'A draft computed with the prices of <today>' beside 'snapshot compiled <date>'."""
    import datetime as dt

    from advisor.proposal import render_proposal_html

    html = render_proposal_html(advice=example_advice, scenario_name="example", generated_on=dt.date(2026, 12, 6))
    from advisor.web.presenters import prices_as_of_text

    assert "with the prices of 2026-12-06" not in html and "with prices as of" not in html
    # The prices' date in the words every output uses (an auditor read "prices as of <compile date>" as an observation).
    assert f"A draft computed on 2026-12-06 ({prices_as_of_text(advice=example_advice)})" in html


def test_a_proposal_page_says_when_its_prices_were_observed_not_that_they_were_the_days(
    alice: Client, saved: Any
) -> None:
    """An auditor: every proposal page said "issued <date> with the prices of that day" where the prices were the
    snapshot compiled days before and its offers undated; the page now states the prices' date as the PDF cover does
    (presenters.prices_as_of_text), and the recompute comparison does too."""
    from advisor.web.presenters import prices_as_of_text

    alice.post(f"/scenarios/{saved.pk}/share/")
    proposal = Proposal.objects.get()
    words = prices_as_of_text(advice=proposal.advice)
    assert words.startswith("Prices: snapshot compiled ")
    pages = {
        "owner's": alice.get(f"/proposals/{proposal.pk}/").content.decode(),
        "shared": Client().get(f"/s/{proposal.share_links.get().token}/").content.decode(),
    }
    for name, html in pages.items():
        issued = re.search(r'data-testid="proposal-issued">(.*?)</p>', html, re.S)
        assert issued is not None, name
        line = " ".join(issued.group(1).split())
        assert "prices of that day" not in line and words in line, (name, line)
    alice.post(f"/proposals/{proposal.pk}/recompute/")
    again = Proposal.objects.exclude(pk=proposal.pk).get()
    html = alice.get(f"/proposals/{again.pk}/").content.decode()
    row = re.search(r"<th[^>]*>Prices</th><td>([^<]+)</td><td>([^<]+)</td>", html)
    assert row is not None and row.groups() == (words, prices_as_of_text(advice=again.advice))
