"""With one output token a request has no time per output token: the reasons said "TPOT of 0 s (targets 1 s /
0.05 s)" and the sizes table "TPOT 0 ms" (a serving lead's probe). Every place that prints a TPOT figure says "no
TPOT: one output token" instead (advisor.advice.inference.tpot_words, one rule)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from advisor.advice.inference import NO_TPOT, advise_inference
from advisor.web.presenters import headline, inference_rows
from tests.advisor.test_inference_advice import NOW, catalog, scenario  # noqa: F401 (catalog: a fixture)

pytestmark = pytest.mark.usefixtures("catalog")

ONE_TOKEN = {"peak_requests_per_s": 50, "mean_requests_per_s": 20, "input_tokens": 1000, "output_tokens": 1}
# A zero TPOT as any of the wordings print it: "TPOT of 0 s", "TPOT 0 ms", "0 ms per token".
ZERO_TPOT = re.compile(r"TPOT (of )?0 m?s\b|\b0 m?s per token")


def _printed(doc: dict[str, Any]) -> str:
    return json.dumps(
        {"advice": doc, "rows": inference_rows(advice=doc), "headline": headline(advice=doc)}, default=str
    )


def test_a_served_answer_of_one_token_says_it_has_no_tpot():
    doc = advise_inference(scenario(traffic=ONE_TOKEN), now=NOW)
    assert NO_TPOT == "no TPOT: one output token"
    assert any(NO_TPOT in r for r in doc["recommendation"]["reasons"])
    assert all(NO_TPOT in row["latency"] for row in inference_rows(advice=doc) if row["fits_memory"])
    assert not ZERO_TPOT.search(_printed(doc))


def test_one_token_that_misses_the_ttft_target_says_it_has_no_tpot():
    doc = advise_inference(scenario(traffic=ONE_TOKEN, latency={"ttft_p95_s": 0.001, "tpot_p95_s": 0.05}), now=NOW)
    assert doc["recommendation"]["action"] == "none"
    assert NO_TPOT in " ".join(doc["recommendation"]["reasons"])
    assert not ZERO_TPOT.search(_printed(doc))


def test_two_output_tokens_keep_their_tpot():
    two = {**ONE_TOKEN, "output_tokens": 2}
    doc = advise_inference(scenario(traffic=two), now=NOW)
    assert NO_TPOT not in _printed(doc)
    assert "TPOT of " in " ".join(doc["recommendation"]["reasons"])
