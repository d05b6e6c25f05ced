"""Serving requests a hostile outsider sent (a generated client): a one-token answer with latency targets no
deployment meets answered 500 everywhere the advice is rendered (``round_up(0)`` took the logarithm of the zero
TPOT a request without a decode step reaches)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from advisor.web import forms

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
