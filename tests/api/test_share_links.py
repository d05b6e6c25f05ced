"""Share links through the API: share an issued proposal, list a scenario's active links, revoke one; owner-only."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.scenarios import scenario_create, scenario_delete
from tests.api.conftest import assert_problem
from tests.api.examples import DESIGN_SCENARIO
from tests.web.conftest import load_bundled_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def issued(user, alice) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    load_bundled_data()
    scenario = scenario_create(owner=user, name="7B pretraining", document=DESIGN_SCENARIO)
    response = alice.post(f"/api/v1/scenarios/{scenario.pk}/proposals")
    assert response.status_code == 201, response.content[:500]
    return response.json()


def test_share_list_and_revoke_a_link(alice, anon, issued) -> None:  # type: ignore[no-untyped-def]
    # An outside client could make, list or revoke no share link without the web's session and CSRF form (F1).
    made = alice.post(f"/api/v1/proposals/{issued['id']}/share-links")
    assert made.status_code == 201, made.content
    link = made.json()
    assert link["proposal_id"] == issued["id"] and link["url"].startswith("http") and "/s/" in link["url"]
    assert anon.get(link["url"]).status_code == 200  # the web's shared page opens for anyone with the link
    links_url = f"/api/v1/scenarios/{issued['scenario_id']}/share-links"
    listed = alice.get(links_url).json()
    assert listed["count"] == 1 and listed["results"] == [link]
    assert alice.delete(f"{links_url}/{link['id']}").status_code == 204
    assert alice.get(links_url).json()["count"] == 0
    assert anon.get(link["url"]).status_code == 404


def test_another_users_links_and_proposals_are_not_found(alice, bob, issued) -> None:  # type: ignore[no-untyped-def]
    link = alice.post(f"/api/v1/proposals/{issued['id']}/share-links").json()
    links_url = f"/api/v1/scenarios/{issued['scenario_id']}/share-links"
    assert_problem(bob.post(f"/api/v1/proposals/{issued['id']}/share-links"), 404)
    assert_problem(bob.get(links_url), 404)
    assert_problem(bob.delete(f"{links_url}/{link['id']}"), 404)
    assert_problem(alice.delete(f"{links_url}/{link['id'] + 1000}"), 404)
    assert alice.get(links_url).json()["count"] == 1


def test_a_proposal_whose_scenario_was_deleted_cannot_be_shared(alice, user, issued) -> None:  # type: ignore[no-untyped-def]
    from advisor.models import Scenario

    scenario_delete(scenario=Scenario.objects.get(pk=issued["scenario_id"]))
    body = assert_problem(alice.post(f"/api/v1/proposals/{issued['id']}/share-links"), 409)
    assert "deleted" in body["detail"]


@pytest.mark.django_db(transaction=True)  # the foreign key is checked when the insert commits, as in production
@pytest.mark.parametrize("headers", [{}, {"HTTP_IDEMPOTENCY_KEY": "share-race"}], ids=["plain", "idempotent"])
def test_a_scenario_deleted_while_its_proposal_is_shared_is_a_409(alice, issued, headers) -> None:  # type: ignore[no-untyped-def]
    # A reviewer's concurrent DELETE of the scenario and POSTs of share links gave 16 answers of 500 (a foreign-key
    # IntegrityError): the scenario went between the service's check and the link's insert. That moment, made
    # deterministic: the scenario is deleted just before the insert.
    from unittest import mock

    from advisor.models import Scenario, ShareLink

    insert = ShareLink.objects.create

    def delete_then_insert(**fields: Any) -> ShareLink:
        Scenario.objects.filter(pk=issued["scenario_id"]).delete()
        return insert(**fields)

    with mock.patch.object(ShareLink.objects, "create", side_effect=delete_then_insert):
        response = alice.post(f"/api/v1/proposals/{issued['id']}/share-links", **headers)
    body = assert_problem(response, 409)
    assert "deleted" in body["detail"]
    assert not ShareLink.objects.exists()


def test_a_fleet_proposal_is_not_shared_and_the_reason_keeps_its_capitals(alice, user) -> None:  # type: ignore[no-untyped-def]
    # A reviewer: the 409 said "... send its pdf." (str.capitalize() lowercased the service's "PDF").
    from advisor.fleet.store import fleet_create
    from tests.advisor.fleet.figures import BASE_AND_WEEK

    fleet = fleet_create(owner=user, name="done-when", document=BASE_AND_WEEK)
    issued = alice.post(f"/api/v1/fleets/{fleet.pk}/proposals")
    assert issued.status_code == 201, issued.content[:500]
    body = assert_problem(alice.post(f"/api/v1/proposals/{issued.json()['id']}/share-links"), 409)
    assert body["detail"] == "A fleet proposal is not shared by link; send its PDF."
