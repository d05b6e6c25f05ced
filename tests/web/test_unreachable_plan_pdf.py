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
