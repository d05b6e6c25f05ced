"""Desktop: at 1280x900 the sizes table of an own-plus-overflow scenario fits its box (its red note wraps).
Screenshot goes to test-artifacts/desktop-overflow-table.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from advisor import scenarios as store
from advisor.web import forms

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("bundled_data")]

MEASURE = """() => {
  const box = document.querySelector('.table-scroll'), table = box.querySelector('table.sizes');
  return {box: box.getBoundingClientRect().width, table: table.scrollWidth,
          notes: document.querySelectorAll('[data-testid=owned-fit]').length};
}"""


def test_the_overflow_note_wraps_and_the_sizes_table_fits(
    page: Any, live_server: Any, user: Any, artifacts: Path
) -> None:
    # A new user's probe (F3): "only 1.07 of 6 runs a year fit on one cluster; ..." did not wrap, so the table was
    # 1,892 px in a 1,168 px box and Own per run, MFU, ... sat off screen at 1280 px.
    initial = {**forms.preset_initial("70b-pretrain"), "runs_per_year": 6, "cluster_sizes": "64, 128, 256"}
    form = forms.PlannerForm(initial)
    assert form.is_valid(), form.errors
    scenario = store.scenario_create(owner=user, name="70B, 6 runs a year", document=form.to_scenario())
    client = Client()
    client.force_login(user)
    host = live_server.url.split("//", 1)[1].split(":")[0]
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "domain": host, "path": "/"}]
    )
    page.goto(f"{live_server.url}/scenarios/{scenario.pk}/")
    page.get_by_test_id("results-table").wait_for()
    page.screenshot(path=str(artifacts / "desktop-overflow-table.png"), full_page=True)
    measured = page.evaluate(MEASURE)
    assert measured["notes"] >= 1, measured  # the scenario overflows: the note is there
    assert measured["table"] <= measured["box"] + 1, measured
