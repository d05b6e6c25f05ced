"""The PDF of a serving plan no deployment meets: short, a summary with body text, every alternative legible."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.test import Client
from pypdf import PdfReader

from advisor.web import forms
from advisor.web.planning import advice_for

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("bundled_data")]

# The outsider's probe: 70B served within a 0.1 s TTFT and a 5 ms TPOT at p95, which no deployment reaches.
UNREACHABLE = {
    "model_name": "llama-3.1-70b",
    "params_b": "",
    "layers": "",
    "hidden": "",
    "heads": "",
    "ttft_p95_s": "0.1",
    "tpot_p95_s": "0.005",
}


def _data() -> dict[str, Any]:
    return {**forms.preset_initial("8b-serving"), **UNREACHABLE}


def _words(text: str) -> list[str]:
    return text.split()


def test_the_unreachable_plans_pdf_is_short_and_lists_every_alternative_legibly(client: Client) -> None:
    response = client.post("/plan/proposal.pdf", _data())
    assert response.status_code == 200, response.content[:2000]
    pages = [page.extract_text() for page in PdfReader(io.BytesIO(response.content)).pages]
    # Ten pages before (the summary heading alone on page 2, the verdict alone on page 3, the alternatives in one row
    # of cards a few mm wide, the last cut off); eight after, fewer than a plan that meets its targets (eleven).
    assert len(pages) <= 8, len(pages)
    # The cover said "Prices: n/a (no rental offer quoted)" above alternatives priced at $50k-$303k a month.
    cover = " ".join(pages[0].split())
    assert "no rental offer quoted" not in cover
    assert "no deployment meeting the targets is quoted; the 6 priced alternatives" in cover, cover
    summary = next(page for page in pages if "Executive summary" in page)
    assert "No deployment meets the targets" in summary
    assert "Nearest deployment" in summary
    printed = " ".join(" ".join(pages).split())
    form = forms.PlannerForm(_data())
    assert form.is_valid(), form.errors
    advice = advice_for(document=form.to_scenario())
    relax = [r for r in advice["recommendation"]["relax"] if r.get("meets_latency")]
    assert len(relax) >= 4
    for entry in relax:
        # Each alternative's words in order on the page, not one word a line in a card a few mm wide.
        assert " ".join(_words(entry["text"])) in printed, entry["text"]


def test_the_prices_line_of_an_unmet_plan_names_what_prices_its_alternatives() -> None:
    from advisor.web.presenters import prices_as_of_text

    relax = [
        {"change": "precision", "text": "serve FP8 weights", "meets_latency": True, "action": "rent"},
        {"change": "gpu", "text": "a faster GPU", "meets_latency": True, "action": None},
    ]
    advice = {
        "kind": "inference",
        "sizes": [],
        "price_freshness": {"kind": "none", "label": "Bundled snapshot compiled 2026-12-02, not live prices"},
        "recommendation": {"action": "none", "gpus": None, "relax": relax},
    }
    assert prices_as_of_text(advice=advice) == (
        "Prices: no deployment meeting the targets is quoted; the 1 priced alternative below uses the catalog's "
        "current prices (this GPU's: bundled snapshot compiled 2026-12-02, not live prices)"
    )
    advice["recommendation"]["relax"] = relax[1:]
    assert prices_as_of_text(advice=advice) == "Prices: n/a (no rental offer quoted)"
