"""Web pages under the API's limits and headers (issue 18): PDFs and the planner fragment throttled
per client before any work with the API's scope rates; Content-Security-Policy on every page;
`Cache-Control: no-store` on share and scenario pages; no `Server: gunicorn`."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from advisor import scenarios as store
from advisor.web import forms
from tests.api.examples import scenario

pytestmark = pytest.mark.django_db


@pytest.fixture
def rates(settings) -> None:  # type: ignore[no-untyped-def]
    framework = dict(settings.REST_FRAMEWORK)
    framework["DEFAULT_THROTTLE_RATES"] = {**framework["DEFAULT_THROTTLE_RATES"], "pdf": "2/hour", "advice": "3/hour"}
    settings.REST_FRAMEWORK = framework


@pytest.fixture
def pdf_calls(monkeypatch) -> list[Any]:  # type: ignore[no-untyped-def]
    """Counts the PDFs actually rendered (each one stands for ~2 s of CPU)."""
    calls: list[Any] = []

    def render(**kwargs: Any) -> bytes:
        calls.append(kwargs)
        return b"%PDF-1.7 stub"

    monkeypatch.setattr("advisor.web.views.render_proposal_pdf", render)
    return calls


def _assert_throttled(response: Any) -> None:
    assert response.status_code == 429, response.status_code
    assert int(response["Retry-After"]) > 0
    assert "Too many requests" in response.content.decode()


def test_web_pdfs_share_the_api_pdf_rate_per_client_and_refuse_before_rendering(rates, pdf_calls, user) -> None:  # type: ignore[no-untyped-def]
    saved = store.scenario_create(owner=user, name="pdf", document=scenario())
    link = store.share_link_create(scenario=saved)
    owner = Client()
    owner.force_login(user)
    assert owner.get(f"/scenarios/{saved.pk}/proposal.pdf").status_code == 200
    assert owner.get(f"/scenarios/{saved.pk}/proposal.pdf").status_code == 200
    _assert_throttled(owner.get(f"/scenarios/{saved.pk}/proposal.pdf"))
    _assert_throttled(owner.post("/plan/proposal.pdf", dict(forms.preset_initial("7b-pretrain"))))
    assert len(pdf_calls) == 2
    # Another client (an anonymous visitor of the share link) has its own count.
    visitor = Client(REMOTE_ADDR="198.51.100.7")
    assert visitor.get(f"/s/{link.token}/proposal.pdf").status_code == 200
    assert len(pdf_calls) == 3


def test_the_planner_fragment_uses_the_advice_rate(rates) -> None:  # type: ignore[no-untyped-def]
    web = Client()
    form = dict(forms.preset_initial("7b-pretrain"))
    for _ in range(3):
        assert web.post("/plan/results/", form).status_code == 200
    _assert_throttled(web.post("/plan/results/", form))
