"""The band of a replica's capacity in the inference Advice: from the serving calibration's held-out-by-model errors
(estimator.inference.capacity_band), the GPUs the peak needs and the cost per million output tokens at its P10 and
P90 (a CFO's and an ML platform lead's probes: serving plans stated GPUs and costs with no uncertainty at all)."""

from __future__ import annotations

import json
import math

import pytest

from advisor.advice.documents import money
from advisor.advice.inference import advise_inference
from estimator import inference as inf
from tests.advisor.test_inference_advice import NOW, catalog, scenario  # noqa: F401 (catalog: a fixture)
from tests.advisor.test_inference_schema import VALIDATOR

pytestmark = pytest.mark.usefixtures("catalog")


def test_each_row_that_meets_the_targets_carries_its_capacity_band():
    doc = advise_inference(scenario(), now=NOW)
    m = inf.capacity_band(inf.default_calibration())
    assert m is not None
    peak = doc["scenario"]["workload"]["traffic"]["peak_requests_per_s"]
    for size in doc["sizes"]:
        band = size.get("capacity_band")
        if not (size["fits_memory"] and size["meets_latency"]):
            assert band is None
            continue
        rps = size["replica_requests_per_s"]
        assert band["replica_requests_per_s_p10"] == pytest.approx(rps * m["p10_multiplier"])
        assert band["replica_requests_per_s_p90"] == pytest.approx(rps * m["p90_multiplier"])
        assert band["gpus_at_p10"] == size["tp"] * math.ceil(peak / band["replica_requests_per_s_p10"] - 1e-9)
        assert band["gpus_at_p10"] >= size["gpus"] >= band["gpus_at_p90"]
        low, high = band["usd_per_million_output_tokens_at_p90"], band["usd_per_million_output_tokens_at_p10"]
        assert low <= size["usd_per_million_output_tokens"] <= high


def test_the_recommendation_says_what_one_chance_in_ten_costs():
    doc = advise_inference(scenario(), now=NOW)
    rec = doc["recommendation"]
    chosen = next(s for s in doc["sizes"] if s["tp"] == rec["tp"] and s["gpus"] == rec["gpus"])
    band = rec["capacity_band"]
    assert band == chosen["capacity_band"]
    assert band["gpus_at_p10"] > rec["gpus"]  # 8B at 50 requests/s: a 22% slower replica needs more of them
    assert band["usd_per_million_output_tokens_at_p10"] > chosen["usd_per_million_output_tokens"]
    said = [r for r in rec["reasons"] if r.startswith("1 chance in 10")]
    assert len(said) == 1
    assert f"needs {band['gpus_at_p10']} GPUs or more at the peak rather than {rec['gpus']}" in said[0]
    assert money(band["usd_per_million_output_tokens_at_p10"]) in said[0]
    VALIDATOR.validate(json.loads(json.dumps(doc)))


def test_a_calibration_without_held_out_errors_gives_no_band():
    cal = inf.default_calibration()
    older = inf.calibration_from_json(
        {k: v for k, v in inf.calibration_document(cal).items() if k != "held_out_by_model"}
    )
    doc = advise_inference(scenario(), now=NOW, calibration=older)
    assert all(s.get("capacity_band") is None for s in doc["sizes"])
    assert doc["recommendation"].get("capacity_band") is None
    assert not any(r.startswith("1 chance in 10") for r in doc["recommendation"]["reasons"])


def test_the_page_and_the_pdf_show_the_band_beside_the_recommendation():
    from advisor.web.presenters import headline, key_figures, usd_cents

    doc = advise_inference(scenario(), now=NOW)
    band = doc["recommendation"]["capacity_band"]
    figure = next(f for f in headline(advice=doc)["figures"] if f["key"] == "capacity_band")
    assert figure["value"] == f"{band['gpus_at_p90']}-{band['gpus_at_p10']} GPUs"
    low, high = band["usd_per_million_output_tokens_at_p90"], band["usd_per_million_output_tokens_at_p10"]
    assert f"{usd_cents(low)}-{usd_cents(high)} per million output tokens" in figure["note"]
    rows = dict(key_figures(advice=doc))
    assert rows["GPUs at the peak (P10-P90)"] == figure["value"]
    assert rows["Per million output tokens (P10-P90)"] == f"{usd_cents(low)}-{usd_cents(high)}"
