"""The fleet pages' assumptions and price sources (the fleet PDF's, traced beside the dollar totals) stay inside
the page: at 1280x900 their tables fit the results box, and on a phone (390 px) they scroll inside their own box,
never the page. Screenshots go to test-artifacts/fleet-sources-*.png."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from advisor.fleet.store import fleet_create
from advisor.proposals import issue_fleet_proposal

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("bundled_data")]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fleet-2027.json"
PHONE = {"width": 390, "height": 844}

MEASURE = """() => {
  const details = document.querySelector('[data-testid=fleet-sources]');
  details.open = true;
  const box = document.querySelector('[data-testid=fleet-results]').getBoundingClientRect();
  const tables = [...details.querySelectorAll('table')].map(t => t.getBoundingClientRect());
  return {box: box.right, tables: tables.map(r => r.right), count: tables.length,
          page: document.scrollingElement.scrollWidth, inner: window.innerWidth};
}"""


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 900}, PHONE], ids=["desktop", "phone"])
def test_the_fleet_pages_price_sources_fit(
    browser: Any, live_server: Any, user: Any, artifacts: Path, viewport: dict[str, int]
) -> None:
    fleet = fleet_create(owner=user, name="2027 program", document=json.loads(EXAMPLE.read_text()))
    proposal = issue_fleet_proposal(user=user, fleet_id=fleet.pk)
    client = Client()
    client.force_login(user)
    context = browser.new_context(viewport=viewport)
    context.set_default_timeout(30_000)
    host = live_server.url.split("//", 1)[1].split(":")[0]
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "domain": host, "path": "/"}]
    )
    page = context.new_page()
    try:
        for name, path in (("proposal", f"/proposals/{proposal.pk}/"), ("fleet", f"/fleet/?id={fleet.pk}")):
            response = page.goto(f"{live_server.url}{path}")
            assert response is not None and response.status == 200, name
            measured = page.evaluate(MEASURE)
            page.screenshot(path=str(artifacts / f"fleet-sources-{name}-{viewport['width']}.png"), full_page=True)
            assert measured["count"] == 2, measured  # the assumptions and the price sources
            assert all(right <= measured["box"] + 1 for right in measured["tables"]), (name, measured)
            assert measured["page"] <= measured["inner"], (name, measured)
    finally:
        context.close()
