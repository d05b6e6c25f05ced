"""The serving (inference) calibration the advice cites: a read-only page, listed on /calibrations/, linked from the
results that name it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from advisor.web import forms

pytestmark = [pytest.mark.django_db]


def test_the_serving_calibration_has_a_read_only_page_with_its_parameters_and_held_out_error(client: Client) -> None:
    response = client.get("/calibrations/serving/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "trtllm-default" in html
    assert "323" in html and "14.2%" in html  # runs and held-out error, as the advice cites them
    assert "134.1%" in html  # the baseline held out the same way
    for name in ("mem_eff", "flop_eff_16", "flop_eff_8", "log10_step_overhead_s"):
        assert name in html, name
    assert 'data-testid="parameters"' in html and "trtllm_inference_throughput.csv" in html
    assert "<form" not in html.split("<main", 1)[1].split("</main>", 1)[0].replace('action="/accounts/logout/"', "")
    assert client.post("/calibrations/serving/").status_code == 405


def test_the_calibrations_list_shows_the_serving_calibration(client: Client, user: Any) -> None:
    client.force_login(user)
    html = client.get("/calibrations/").content.decode()
    listing = html.split('data-testid="serving-calibration"', 1)[1]
    assert 'href="/calibrations/serving/"' in listing and "trtllm-default" in listing and "14.2%" in listing


@pytest.mark.usefixtures("bundled_data")
def test_inference_results_link_the_calibration_they_cite(client: Client) -> None:
    html = client.post("/plan/results/", dict(forms.preset_initial("8b-serving"))).content.decode()
    line = re.search(r'data-testid="calibration-accuracy">(.*?)</span>', html, re.S)
    assert line and "trtllm-default" in line.group(1)
    assert 'href="/calibrations/serving/"' in line.group(1)
