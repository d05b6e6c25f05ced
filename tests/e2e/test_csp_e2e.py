"""The Content-Security-Policy in a real browser: every page, the planner's live results, a scenario,
a share link, the calibration report and /api/docs/ work under it with no violation in the console."""

from __future__ import annotations

import re
from typing import Any

import pytest

from advisor import scenarios as store
from tests.api.examples import scenario

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("bundled_data")]


def _violations(page: Any) -> list[str]:
    found: list[str] = []
    page.on(
        "console", lambda message: found.append(message.text) if "Content Security Policy" in message.text else None
    )
    # securitypolicyviolation events also catch what a console message would not (e.g. blocked inline styles).
    page.add_init_script(
        "document.addEventListener('securitypolicyviolation', e => "
        "console.error('Content Security Policy violation: ' + e.violatedDirective + ' ' + e.blockedURI));"
    )
    return found


def test_pages_work_under_the_csp_without_violations(page: Any, live_server: Any, user: Any) -> None:
    violations = _violations(page)
    saved = store.scenario_create(owner=user, name="csp", document=scenario())
    link = store.share_link_create(scenario=saved)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", "correct-horse-battery")
    page.locator("main form button[type=submit]").click()
    page.wait_for_url(re.compile(r"/$|/plan/|/scenarios/"))

    # The planner: its script runs (live results arrive) under script-src 'self'.
    page.goto(f"{live_server.url}/plan/")
    page.get_by_test_id("calculate").click()
    page.get_by_test_id("results-table").wait_for()
    for path in ["/", "/prices/", "/calibrations/", f"/scenarios/{saved.pk}/", f"/s/{link.token}/"]:
        response = page.goto(f"{live_server.url}{path}")
        assert response is not None and response.ok, path
        assert response.headers.get("content-security-policy"), path
    # The calibration report (chart and tables).
    page.goto(f"{live_server.url}/calibrations/")
    page.get_by_test_id("calibration-list").locator("a").first.click()
    page.get_by_test_id("chart-residuals").wait_for()
    # Swagger UI renders the operations from its split set-up script and the sidecar bundle.
    page.goto(f"{live_server.url}/api/docs/")
    page.locator(".opblock").first.wait_for()
    assert page.locator(".opblock").count() > 10
    page.wait_for_timeout(500)  # late violations (fonts, images) reach the console
    assert violations == []
