"""Serving requests a hostile outsider sent (a generated client): a one-token answer with latency targets no
deployment meets answered 500 everywhere the advice is rendered (``round_up(0)`` took the logarithm of the zero
TPOT a request without a decode step reaches)."""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from advisor.web import forms
from estimator.catalog import longest_catalog_context

pytestmark = pytest.mark.django_db

EXAMPLE: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[2] / "examples" / "inference-service.json").read_text()
)


@pytest.fixture
def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


def _serving(*, traffic: dict[str, Any], latency: dict[str, float] | None = None) -> dict[str, Any]:
    doc = copy.deepcopy(EXAMPLE)
    doc["workload"]["traffic"].update(traffic)
    if latency is not None:
        doc["workload"]["latency"] = latency
    return doc


UNREACHABLE = {"ttft_p95_s": 0.0001, "tpot_p95_s": 0.0001}


def test_a_one_token_answer_with_unreachable_targets_is_advice_with_relax_options(api) -> None:  # type: ignore[no-untyped-def]
    body = json.dumps(_serving(traffic={"input_tokens": 1000, "output_tokens": 1}, latency=UNREACHABLE))
    response = api.post("/api/v1/advice", body, content_type="application/json")
    assert response.status_code == 200, response.content[:500]
    advice = response.json()
    assert advice["recommendation"]["action"] == "none"
    looser = [o for o in advice["recommendation"]["relax"] if o["change"] == "latency_targets"]
    assert looser, advice["recommendation"]
    # No decode step: the TPOT target is met as it stands and only the TTFT is loosened.
    assert looser[0]["tpot_p95_s"] == UNREACHABLE["tpot_p95_s"]
    assert looser[0]["ttft_p95_s"] > UNREACHABLE["ttft_p95_s"]
    assert looser[0]["meets_latency"] is True, looser[0]
    assert "no decode step" in looser[0]["text"]


def test_the_planner_answers_a_one_token_answer_signed_out() -> None:
    form = dict(forms.preset_initial("8b-serving"))
    form.update(output_tokens=1, ttft_p95_s=0.0001, tpot_p95_s=0.0001)
    response = Client().post("/plan/results/", form)
    assert response.status_code == 200
    assert "TTFT" in response.content.decode()


# --- a request longer than the model's context -----------------------------------------------------------


def _pointer_and_detail(response: Any) -> tuple[str, str]:
    assert response.status_code == 400, response.content[:300]
    (error,) = response.json()["errors"]
    return error["pointer"], error["detail"]


def test_a_request_longer_than_any_catalog_context_is_refused_naming_the_limit(api) -> None:  # type: ignore[no-untyped-def]
    # The example's model is a geometry: a 10,000,000-token prompt took 11.5 s of simulation (26.8 s with
    # compare_gpus). A model the catalog does not name serves up to the longest context of a catalog model.
    longest, model = longest_catalog_context()
    body = json.dumps(_serving(traffic={"input_tokens": 10**7, "output_tokens": 1}))
    pointer, detail = _pointer_and_detail(api.post("/api/v1/advice", body, content_type="application/json"))
    assert pointer == "#/workload/traffic/input_tokens"
    assert f"context of {longest:,} tokens" in detail and model in detail


def test_a_params_b_only_model_takes_a_prompt_past_its_training_seq_len(api) -> None:  # type: ignore[no-untyped-def]
    # seq_len is a training sequence (default 4,096): a 4,000-token prompt with a 200-token answer is served.
    doc = _serving(traffic={"input_tokens": 4000, "output_tokens": 200})
    doc["workload"]["model"] = {"params_b": 8}
    assert api.post("/api/v1/advice", json.dumps(doc), content_type="application/json").status_code == 200
    longest, _ = longest_catalog_context()
    doc["workload"]["traffic"].update(input_tokens=longest - 100, output_tokens=200)
    pointer, detail = _pointer_and_detail(api.post("/api/v1/advice", json.dumps(doc), content_type="application/json"))
    assert pointer == "#/workload/traffic/output_tokens" and "the prompt leaves 100 for the answer" in detail


def test_the_planner_refuses_a_request_longer_than_the_context_signed_out() -> None:
    longest, _ = longest_catalog_context()
    form = dict(forms.preset_initial("8b-serving"))
    form.update(input_tokens=10**7, output_tokens=1)
    response = Client().post("/plan/results/", form)
    page = response.content.decode()
    assert f"context of {longest:,} tokens" in page


def test_estimate_inference_refuses_a_geometry_point_longer_than_any_catalog_context(tmp_path: Path) -> None:
    longest, _ = longest_catalog_context()
    path = tmp_path / "points.csv"
    path.write_text(
        "gpu,precision,params_b,layers,hidden,heads,tp,concurrency,input_tokens,output_tokens\n"
        "h100-sxm,bf16,8,32,4096,32,1,1,10000000,1\n"
    )
    with pytest.raises(CommandError) as caught:
        call_command("estimate_inference", "--points", str(path), stdout=io.StringIO())
    assert caught.value.returncode == 2
    assert "row 1, column input_tokens" in str(caught.value) and f"context of {longest:,} tokens" in str(caught.value)


def test_estimate_inference_writes_formula_like_cells_as_text_as_estimate_does(tmp_path: Path) -> None:
    path = tmp_path / "points.csv"
    path.write_text(
        "gpu,precision,model,tp,concurrency,input_tokens,output_tokens,note\n"
        'h100-sxm,fp8,llama-3.1-8b,1,1,1000,200,"=HYPERLINK(""x"")"\n'
    )
    out = io.StringIO()
    call_command("estimate_inference", "--points", str(path), stdout=out)
    (row,) = csv.DictReader(io.StringIO(out.getvalue()))
    assert row["note"] == '\'=HYPERLINK("x")'
