"""The calibration page in a browser: read the shipped fit, upload runs, make the new fit active."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from advisor.models import ActiveCalibration

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("bundled_data")]

RUNS = """gpu,num_gpus,params_b,seq_len,global_batch,tokens_per_s,source
h100-sxm,8,7,4096,1024,76000,ours
h100-sxm,16,7,4096,1024,148000,ours
a100-80gb,8,7,4096,1024,26000,ours
"""


def test_upload_read_the_report_and_activate(page: Any, live_server: Any, user: Any, artifacts: Path) -> None:
    page.goto(f"{live_server.url}/accounts/login/?next=/calibrations/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", "correct-horse-battery")
    page.locator("main form button[type=submit]").click()
    page.wait_for_url(re.compile(r"/calibrations/$"))

    # The shipped calibration's report: per-GPU errors and the residuals plot.
    page.get_by_test_id("calibration-list").locator("a").first.click()
    page.get_by_test_id("chart-residuals").wait_for()
    assert page.get_by_test_id("per-gpu").locator("tbody tr").count() >= 3
    summary = page.get_by_test_id("fit-summary").inner_text()
    loo = float(re.search(r"tokens/s: ([\d.]+)%", summary).group(1))
    assert 0 < loo < 100, summary
    page.screenshot(path=str(artifacts / "calibration-default.png"), full_page=True)

    page.goto(f"{live_server.url}/calibrations/")
    page.get_by_label("Name").fill("our runs")
    csv_path = artifacts / "upload-runs.csv"
    csv_path.write_text(RUNS)
    page.get_by_label("Profiled runs (CSV)").set_input_files(str(csv_path))
    page.get_by_role("button", name="Fit calibration").click()
    page.wait_for_url(re.compile(r"/calibrations/\d+/$"), timeout=120_000)
    assert "3" in page.get_by_test_id("fit-summary").inner_text()
    page.get_by_test_id("activate-calibration").click()
    page.locator("text=Active: your scenarios use this calibration.").wait_for()
    assert ActiveCalibration.objects.get(user=user).calibration.name == "our runs"
