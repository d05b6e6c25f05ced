"""Frozen fleet proposals: a saved fleet's Fleet Plan issued through the scenario proposals' path
(POST /api/v1/fleets/{id}/proposals -> 201, read back at /api/v1/proposals/{id} and its PDF); the numbers stay as
issued when prices change; owner-scoped; a stored fleet that no longer plans is a 409 with nothing stored."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.db.models import F

from advisor.fleet.store import fleet_create
from advisor.models import Proposal
from pricing.models import Offer
from tests.advisor.fleet.figures import BASE_AND_WEEK
from tests.api.conftest import assert_problem
from tests.web.conftest import load_bundled_data

pytestmark = pytest.mark.django_db

# Catalog prices (the bundled snapshot), so that a change of prices can move a fresh plan.
CATALOG_FLEET: dict[str, Any] = {
    "name": "2027 fleet",
    "gpu": "h100-sxm",
    "rent": {"markets": ["on_demand"]},
    "jobs": [{"name": "base", "gpus": 32, "hours": 8760}, {"name": "big week", "gpus": 256, "hours": 168}],
}


def _issue(client, fleet_id: int) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    response = client.post(f"/api/v1/fleets/{fleet_id}/proposals")
    assert response.status_code == 201, response.content[:2000]
    assert response["Location"].endswith(f"/api/v1/proposals/{response.json()['id']}")
    return response.json()


def _pdf_text(content: bytes) -> str:
    from pypdf import PdfReader

    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(content)).pages)


def test_issue_freezes_the_fleet_plan_with_its_provenance(alice, user) -> None:  # type: ignore[no-untyped-def]
    fleet = fleet_create(owner=user, name="2027 base", document=BASE_AND_WEEK)
    body = _issue(alice, fleet.pk)
    assert body["kind"] == "fleet" and body["fleet_id"] == fleet.pk and body["scenario_id"] is None
    assert body["scenario_name"] == "2027 base"
    plan = body["advice"]
    assert plan["recommendation"]["owned_gpus"] == 32
    assert plan["recommendation"]["usd_per_year"] == pytest.approx(457_920)
    stored = Proposal.objects.get(pk=body["id"])
    assert stored.advice == plan and stored.scenario_document == BASE_AND_WEEK
    assert stored.provenance["hardware_quote"] == plan["tier_prices"]["hardware_quote"]
    assert stored.provenance["offers"] and stored.provenance["offers"][0]["provider"] == "manual quote"
    assert stored.provenance["calibration"]["name"]
    assert alice.get(f"/api/v1/proposals/{body['id']}").json() == body
    pdf = alice.get(f"/api/v1/proposals/{body['id']}/proposal.pdf")
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    assert "457,920" in _pdf_text(pdf.content)
    # Its workbook (tests/api/test_fleet_workbook.py checks the figures in it).
    for url in (f"/api/v1/proposals/{body['id']}?format=xlsx", f"/api/v1/proposals/{body['id']}/proposal.xlsx"):
        assert alice.get(url)["Content-Type"] == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def test_numbers_and_pdf_do_not_change_after_prices_change(alice, user) -> None:  # type: ignore[no-untyped-def]
    load_bundled_data()
    fleet = fleet_create(owner=user, name="catalog fleet", document=CATALOG_FLEET)
    issued = _issue(alice, fleet.pk)
    price = issued["advice"]["tier_prices"]["on_demand_usd_per_gpu_hour"]
    assert price and issued["advice"]["recommendation"]["usd_per_year"]
    pdf_before = _pdf_text(alice.get(f"/api/v1/proposals/{issued['id']}/proposal.pdf").content)

    changed = Offer.objects.update(usd_per_gpu_hour=F("usd_per_gpu_hour") * 2, usd_per_hour=F("usd_per_hour") * 2)
    assert changed > 0

    again = alice.get(f"/api/v1/proposals/{issued['id']}").json()
    assert again["advice"] == issued["advice"] and again["content_hash"] == issued["content_hash"]
    assert _pdf_text(alice.get(f"/api/v1/proposals/{issued['id']}/proposal.pdf").content) == pdf_before
    # Control: the change is real; a proposal issued now sees it.
    fresh = _issue(alice, fleet.pk)
    assert fresh["advice"]["tier_prices"]["on_demand_usd_per_gpu_hour"] == pytest.approx(2 * price)
    assert fresh["advice"]["recommendation"]["usd_per_year"] != issued["advice"]["recommendation"]["usd_per_year"]


def test_another_users_fleet_or_fleet_proposal_is_404(alice, bob, user) -> None:  # type: ignore[no-untyped-def]
    fleet = fleet_create(owner=user, name="alices", document=BASE_AND_WEEK)
    issued = _issue(alice, fleet.pk)
    assert_problem(bob.post(f"/api/v1/fleets/{fleet.pk}/proposals"), 404)
    assert_problem(bob.get(f"/api/v1/proposals/{issued['id']}"), 404)
    assert_problem(bob.get(f"/api/v1/proposals/{issued['id']}/proposal.pdf"), 404)
    assert Proposal.objects.count() == 1


def test_a_stored_fleet_that_no_longer_plans_is_a_conflict_and_stores_nothing(alice, user) -> None:  # type: ignore[no-untyped-def]
    too_long = {
        **BASE_AND_WEEK,
        "jobs": [{"gpus": 8, "workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1e15}}],
    }
    fleet = fleet_create(owner=user, name="stored before the rule", document=too_long)  # the store trusts its caller
    assert_problem(alice.post(f"/api/v1/fleets/{fleet.pk}/proposals"), 409, "#/fleet/jobs/0/workload")
    assert Proposal.objects.count() == 0


def test_one_idempotency_key_saves_one_fleet_and_issues_one_proposal(alice) -> None:  # type: ignore[no-untyped-def]
    # A hostile probe: the key was honoured on scenarios and their proposals but ignored on fleets.
    from advisor.fleet.models import Fleet

    load_bundled_data()
    body = {"name": "keyed", "fleet": {**BASE_AND_WEEK, "name": "keyed"}}  # one name (a second is refused)
    first = alice.post("/api/v1/fleets", body, format="json", HTTP_IDEMPOTENCY_KEY="fleet-1")
    second = alice.post("/api/v1/fleets", body, format="json", HTTP_IDEMPOTENCY_KEY="fleet-1")
    assert first.status_code == second.status_code == 201, first.content[:500]
    assert second["Idempotent-Replayed"] == "true" and Fleet.objects.count() == 1
    fleet_id = first.json()["id"]
    issued = [alice.post(f"/api/v1/fleets/{fleet_id}/proposals", HTTP_IDEMPOTENCY_KEY="proposal-1") for _ in range(2)]
    assert [r.status_code for r in issued] == [201, 201] and issued[0].json() == issued[1].json()
    assert Proposal.objects.count() == 1


def test_a_service_with_peak_hours_issues_and_prints(alice, user) -> None:  # type: ignore[no-untyped-def]
    from tests.advisor.fleet.test_inference_jobs import serving

    fleet = fleet_create(owner=user, name="chat", document=serving(400, 100))
    body = _issue(alice, fleet.pk)
    names = [j["name"] for j in body["advice"]["jobs"]]
    assert names[0] == "chat API" and set(names[1:]) == {"chat API (peak hours)"}
    pdf = alice.get(f"/api/v1/proposals/{body['id']}/proposal.pdf")
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    text = _pdf_text(pdf.content)
    assert "chat API (peak hours)" in text and f"{body['advice']['recommendation']['usd_per_year']:,.0f}" in text
