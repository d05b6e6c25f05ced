"""The browser journey: plan, see results and charts, recalculate live, save, compare, share, download the PDF."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfReader

from advisor import scenarios as store
from advisor.web import forms
from advisor.web.planning import advice_for
from advisor.web.presenters import key_figures

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("bundled_data")]

CHARTS = ("chart-cost", "chart-runtime", "chart-scaling", "chart-breakeven", "chart-cumulative", "chart-sensitivity")
PASSWORD = "correct-horse-battery"


def _figure(page: Any, key: str) -> str:
    return page.locator(f'[data-figure="{key}"] dd strong').inner_text()


def _calculate(page: Any) -> None:
    page.get_by_test_id("calculate").click()
    page.get_by_test_id("results-table").wait_for()


def test_plan_results_charts_and_live_update(page: Any, live_server: Any, artifacts: Path) -> None:
    page.goto(f"{live_server.url}/plan/")
    page.get_by_test_id("scenario-form").wait_for()
    page.screenshot(path=str(artifacts / "planner.png"), full_page=True)

    # Fill the form.
    page.get_by_label("Scenario name").fill("13B on H100")
    page.get_by_label("Model size (billions of parameters)").fill("13")
    page.get_by_label("Training tokens (billions)").fill("500")
    page.get_by_label("GPU", exact=True).select_option("h100-sxm")
    page.get_by_label("Cluster sizes (GPUs)").fill("8, 16, 32, 64")
    page.get_by_label("Utilization (% of the year busy)").fill("70")
    page.get_by_text("More owning options").click()
    page.get_by_label("PUE").fill("1.2")
    _calculate(page)
    for testid in CHARTS:
        chart = page.get_by_test_id(testid)
        assert chart.is_visible(), testid
        assert chart.locator("svg").count() == 1, testid
    rows = page.get_by_test_id("results-table").locator("tbody tr")
    assert [rows.nth(i).get_attribute("data-gpus") for i in range(rows.count())] == ["8", "16", "32", "64"]
    assert "planned 70%" in page.locator('[data-figure="break_even"]').inner_text()
    freshness = page.get_by_test_id("price-freshness").inner_text()
    dated = r"(Snapshot|Live) prices, quoted offers (observed \d{4}-\d{2}-\d{2}|undated)"
    assert re.search(dated, freshness), freshness
    accuracy = page.get_by_test_id("calibration-accuracy").inner_text()
    assert "stack not given, so held out by software stack: median error" in accuracy, accuracy
    assert "P10-P90 x" in accuracy, accuracy
    page.screenshot(path=str(artifacts / "results.png"), full_page=True)

    # Change an input: the numbers follow without a page load.
    before_cost, before_time = _figure(page, "cost_per_run"), _figure(page, "run_time")
    page.evaluate("window.__same_page = true")
    page.get_by_label("Training tokens (billions)").fill("1500")
    page.wait_for_function(
        "([before]) => { const el = document.querySelector('[data-figure=\"run_time\"] dd strong');"
        " return el && el.textContent !== before; }",
        arg=[before_time],
    )
    assert page.evaluate("window.__same_page") is True
    assert _figure(page, "cost_per_run") != before_cost

    # Bad input: an inline error next to the field, the typed text kept.
    page.get_by_label("Model size (billions of parameters)").fill("-3")
    error = page.locator("#error-params_b")
    error.wait_for(state="visible")
    assert error.inner_text()
    assert page.get_by_label("Model size (billions of parameters)").input_value() == "-3"

    # Keyboard only: fix the field and press Enter in it; the results come back.
    field = page.get_by_label("Model size (billions of parameters)")
    field.fill("13")
    field.press("Enter")
    page.wait_for_function("() => !document.querySelector('#error-params_b').textContent")
    page.get_by_test_id("results-table").wait_for()


def test_phone_width_keeps_the_planner_usable(browser: Any, live_server: Any, artifacts: Path) -> None:
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    page = ctx.new_page()
    page.goto(f"{live_server.url}/plan/")
    _calculate(page)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 400, f"the page scrolls sideways on a phone ({width}px)"
    page.screenshot(path=str(artifacts / "results-phone.png"), full_page=True)
    ctx.close()


def test_download_pdf_matches_the_advice(page: Any, live_server: Any, artifacts: Path) -> None:
    page.goto(f"{live_server.url}/plan/?preset=8b-finetune")
    _calculate(page)
    with page.expect_download() as info:
        page.get_by_test_id("download-pdf").click()
    download = info.value
    assert download.suggested_filename.endswith(".pdf")
    path = artifacts / "proposal-8b-finetune.pdf"
    download.save_as(str(path))
    text = "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(path.read_bytes())).pages)

    # The same scenario through the pipeline directly: the PDF's key figures are this Advice's.
    form = forms.PlannerForm(forms.preset_initial("8b-finetune"))
    assert form.is_valid()
    advice = advice_for(document=form.to_scenario(), user=None)
    assert "8B fine-tune" in text
    for label, value in key_figures(advice=advice):
        assert f"{label} {value}" in text, (label, value)
    recommendation = advice["recommendation"]
    assert f"{recommendation['gpus']} " in text
    for reason in recommendation["reasons"][:1]:
        assert reason[:40] in text.replace("\n", " ")
    assert advice["calibration"]["name"] in text


def test_save_after_login_then_compare_and_share(
    page: Any, browser: Any, live_server: Any, user: Any, artifacts: Path
) -> None:
    # Anonymous save: log in, come back with the inputs, save.
    page.goto(f"{live_server.url}/plan/")
    page.get_by_label("Scenario name").fill("Alice 7B")
    page.get_by_test_id("save-scenario").click()
    page.wait_for_url(re.compile(r"/accounts/login/"))
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", PASSWORD)
    page.locator("main form button[type=submit]").click()
    page.wait_for_url(re.compile(r"/plan/\?restore=1"))
    assert page.get_by_label("Scenario name").input_value() == "Alice 7B"
    page.get_by_test_id("save-scenario").click()
    page.wait_for_url(re.compile(r"/scenarios/\d+/$"))
    page.get_by_test_id("results-table").wait_for()

    # A second scenario from another preset.
    page.goto(f"{live_server.url}/plan/?preset=70b-pretrain")
    page.get_by_test_id("save-scenario").click()
    page.wait_for_url(re.compile(r"/scenarios/\d+/$"))
    assert store.scenarios_for_user(user=user).count() == 2

    # Compare the two side by side.
    page.goto(f"{live_server.url}/scenarios/")
    for box in page.locator("input[name=ids]").all():
        box.check()
    page.get_by_test_id("compare").click()
    table = page.get_by_test_id("compare-table")
    table.wait_for()
    header = table.locator("thead").inner_text()
    assert "Alice 7B" in header
    assert "70B pretraining" in header
    assert table.locator("tr.differs").count() >= 3
    page.screenshot(path=str(artifacts / "compare.png"), full_page=True)

    # Share the first one and open the link logged out.
    scenario = store.scenarios_for_user(user=user).get(name="Alice 7B")
    page.goto(f"{live_server.url}/scenarios/{scenario.pk}/")
    page.get_by_test_id("share-create").click()
    share_url = page.get_by_test_id("share-link").first.get_attribute("href")
    page.screenshot(path=str(artifacts / "scenario-detail.png"), full_page=True)
    stranger = browser.new_context()
    shared = stranger.new_page()
    shared.goto(f"{live_server.url}{share_url}")
    shared.get_by_test_id("results-table").wait_for()
    assert shared.locator("text=Alice 7B").first.is_visible()
    assert shared.get_by_test_id("save-scenario").count() == 0
    assert "Log in" in shared.locator("header").inner_text()
    shared.screenshot(path=str(artifacts / "shared.png"), full_page=True)
    stranger.close()


def test_inference_preset_and_kind_switch(page: Any, live_server: Any, artifacts: Path) -> None:
    page.goto(f"{live_server.url}/plan/")
    assert page.get_by_label("Training tokens (billions)").is_visible()
    assert not page.get_by_label("Peak traffic (requests per second)").is_visible()
    page.get_by_label("Workload kind").select_option("inference")
    assert page.get_by_label("Peak traffic (requests per second)").is_visible()
    assert not page.get_by_label("Training tokens (billions)").is_visible()

    page.get_by_role("link", name="8B chat serving, 50 req/s peak").click()
    page.wait_for_url(re.compile(r"preset=8b-serving"))
    _calculate(page)
    table = page.get_by_test_id("results-table")
    assert "Per million output tokens" in table.inner_text()
    assert "output tokens" in page.locator('[data-figure="usd_per_million_output_tokens"]').inner_text()
    for testid in CHARTS:
        assert page.get_by_test_id(testid).is_visible(), testid
    page.screenshot(path=str(artifacts / "results-inference.png"), full_page=True)


def test_size_change_derives_geometry_and_the_break_even_market_is_named(
    page: Any, live_server: Any, artifacts: Path
) -> None:
    """Issue 15 in the browser: typing 70 into the 7B preset clears its 7B geometry (the server derives the 70B
    shape and the results say which size it implies); headline, chart and PDF name the break-even market."""
    page.goto(f"{live_server.url}/plan/")
    page.get_by_test_id("scenario-form").wait_for()
    page.get_by_text("More workload options").click()
    assert page.get_by_label("Layers").input_value() == "32"
    page.get_by_label("Model size (billions of parameters)").fill("70")
    for label in ("Layers", "Hidden size", "Attention heads"):
        assert page.get_by_label(label).input_value() == "", label
    page.get_by_label("Cluster sizes (GPUs)").fill("64, 128, 256")
    _calculate(page)
    implied = page.get_by_test_id("model-implied")
    implied.wait_for()
    page.wait_for_function(
        "() => (document.querySelector('[data-testid=model-implied]') || {}).textContent.includes('80 layers')"
    )
    assert "80 layers x 8192 hidden" in implied.inner_text()
    label = page.locator('[data-figure="break_even"] dt').inner_text()
    assert re.search(r"Break-even utilization vs (on-demand|1-year reserved|3-year reserved)", label), label
    market = label.split(" vs ", 1)[1]
    note = page.locator('[data-figure="break_even"] dd span').inner_text()
    assert "implied by 4 runs a year" in note
    chart = page.get_by_test_id("chart-breakeven").inner_html()
    assert f"rent {market}" in chart
    page.screenshot(path=str(artifacts / "planner-70b.png"), full_page=True)
    with page.expect_download() as info:
        page.get_by_test_id("download-pdf").click()
    text = "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(Path(info.value.path()).read_bytes())).pages)
    assert f"Break-even utilization vs {market}" in text
    assert "None" not in text
