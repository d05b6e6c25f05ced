"""What a finance approver reads in an issued proposal, parsed back from the real PDF and workbook: a buy that
rests on utilization the stated runs do not fill, a frozen fleet proposal, every input the advice used."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest

from advisor.scenarios import scenario_create
from tests.web.conftest import load_bundled_data

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def _example(name: str) -> dict[str, Any]:
    return json.loads((ROOT / "examples" / name).read_text())


def _issue(client, user, document: dict[str, Any]) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    load_bundled_data()
    saved = scenario_create(owner=user, name=document.get("name", "scenario"), document=document)
    response = client.post(f"/api/v1/scenarios/{saved.pk}/proposals")
    assert response.status_code == 201, response.content[:2000]
    return response.json()


def _pdf_pages(content: bytes) -> list[str]:
    from pypdf import PdfReader

    return [" ".join(page.extract_text().split()) for page in PdfReader(io.BytesIO(content)).pages]


def _buy70() -> dict[str, Any]:
    document = copy.deepcopy(_example("70b-training.json"))
    document.update({"cluster_sizes": [64, 128, 256, 512], "utilization": 0.8})
    document["workload"]["runs_per_year"] = 6
    return document


def test_a_buy_that_rests_on_utilization_the_stated_runs_do_not_fill_says_so(alice, user) -> None:  # type: ignore[no-untyped-def]
    # 6 runs of 1,063 h keep 512 GPUs busy 72.8% of the year, below the 77% break-even: at the runs' own utilization
    # owning costs ~$1.70M a run against $1.61M renting, so the buy at 80% rests on work nobody stated.
    issued = _issue(alice, user, _buy70())
    advice = issued["advice"]
    assert advice["recommendation"]["action"] == "buy"
    said = " ".join(advice["warnings"])
    assert "stated runs alone" in said and "73%" in said and "rent" in said
    assert any("stated runs alone" in reason for reason in advice["recommendation"]["reasons"])
    cover = _pdf_pages(alice.get(f"/api/v1/proposals/{issued['id']}/proposal.pdf").content)[0]
    assert "Decision: Buy 512" in cover
    assert "73% of the year" in cover and "stated runs alone" in cover and "would rent" in cover
