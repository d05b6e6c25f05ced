"""Phones: at 390x844 CSS pixels the main pages never scroll sideways as a whole (wide tables scroll
inside their own box), and chart text stays readable. Screenshots go to test-artifacts/phone-*.png."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from advisor import scenarios as store
from advisor.api.tokens import api_token_create
from advisor.models import Calibration
from advisor.proposals import issue_proposal
from advisor.web import forms
from pricing.models import Offer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("bundled_data")]

PHONE = {"width": 390, "height": 844}
# Smallest rendered font size (CSS px) of a chart label. SVG text scales with the chart's width, so a chart
# squeezed to a phone's width would print its 11-unit labels at under 6 px.
MIN_CHART_TEXT_PX = 9.5

OVERFLOW = """() => ({
  scrollWidth: document.scrollingElement.scrollWidth,
  innerWidth: window.innerWidth,
  wide: [...document.querySelectorAll('body *')]
    .filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.right > window.innerWidth + 1
                   && !e.closest('.table-scroll, .chart, details:not([open])'); })
    .slice(0, 5).map(e => e.tagName + '.' + e.className + ' right=' + Math.round(e.getBoundingClientRect().right)),
})"""
CHART_TEXT = """() => [...document.querySelectorAll('.chart svg')].flatMap(svg => {
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return [...svg.querySelectorAll('text')].map(t => parseFloat(t.getAttribute('font-size') || 16) * scale);
})"""


@pytest.fixture
def phone(browser: Any, live_server: Any, user: Any) -> Iterator[Any]:
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
    context.set_default_timeout(30_000)
    host = live_server.url.split("//", 1)[1].split(":")[0]
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "domain": host, "path": "/"}]
    )
    yield context.new_page()
    context.close()


def _check(page: Any, name: str, artifacts: Path) -> None:
    page.screenshot(path=str(artifacts / f"phone-{name}.png"), full_page=True)
    measured = page.evaluate(OVERFLOW)
    # A mobile browser zooms out to fit a page wider than the screen, which widens innerWidth with it:
    # the layout viewport must stay the phone's width, and the page must not be wider than that.
    assert measured["innerWidth"] == PHONE["width"], (name, measured)
    assert measured["scrollWidth"] <= measured["innerWidth"], (name, measured)


def _check_charts(page: Any, name: str) -> None:
    heights = page.evaluate(CHART_TEXT)
    assert heights, f"{name}: no chart text found"
    assert min(heights) >= MIN_CHART_TEXT_PX, (name, sorted(heights)[:5])


def test_pages_fit_a_phone(phone: Any, live_server: Any, user: Any, artifacts: Path) -> None:
    document = forms.PlannerForm(forms.preset_initial("7b-pretrain"))
    assert document.is_valid(), document.errors
    first = store.scenario_create(owner=user, name="7B pretraining", document=document.to_scenario())
    second = store.scenario_create(owner=user, name="7B pretraining, spot only", document=document.to_scenario())
    proposal = issue_proposal(user=user, scenario_id=first.pk)
    api_token_create(user=user, name="procurement tool (nightly export)")
    page = phone

    page.goto(f"{live_server.url}/plan/")
    page.get_by_test_id("scenario-form").wait_for()
    _check(page, "planner", artifacts)

    page.get_by_test_id("calculate").click()
    page.get_by_test_id("results-table").wait_for()
    _check(page, "results", artifacts)
    _check_charts(page, "results")

    pages = {
        "prices": "/prices/",
        "scenarios": "/scenarios/",
        "scenario": f"/scenarios/{first.pk}/",
        "compare": f"/scenarios/compare/?ids={first.pk}&ids={second.pk}",
        "tokens": "/account/tokens/",
        # An outsider's probe: the fleet JSON textarea (cols=100) was 852 px wide; an offer's long source string and
        # its unwrapped history table 830-862 px; calibration reports were never checked.
        "fleet": "/fleet/",
        "calibrations": "/calibrations/",
        "calibration": f"/calibrations/{Calibration.objects.get(is_default=True).pk}/",
        "serving-calibration": "/calibrations/serving/",
        "offer": f"/prices/offers/{Offer.objects.order_by('pk').first().pk}/",
        "offer-long-source": f"/prices/offers/{max(Offer.objects.all(), key=lambda o: len(o.source)).pk}/",
        "proposal": f"/proposals/{proposal.pk}/",  # last: its charts are checked below
    }
    for name, path in pages.items():
        response = page.goto(f"{live_server.url}{path}")
        assert response is not None and response.status == 200, (name, response and response.status)
        _check(page, name, artifacts)
    _check_charts(page, "proposal")
