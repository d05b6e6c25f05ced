"""Saved fleets in the browser (probe "pages" F6): /fleet/ lists the user's saved fleets and their proposals, a saved
fleet (/fleet/?id=N) issues a proposal by a POST with CSRF through the API's service, and another user's fleet is a
404 on every door."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from advisor.fleet.store import fleet_create
from advisor.models import Proposal
from tests.advisor.fleet.figures import BASE_AND_WEEK

pytestmark = pytest.mark.django_db


def test_the_fleet_page_lists_the_users_saved_fleets_only(client, user, other_user) -> None:  # type: ignore[no-untyped-def]
    mine = fleet_create(owner=user, name="2027 base", document={**BASE_AND_WEEK, "name": "2027 base"})
    fleet_create(owner=other_user, name="bob's fleet", document={**BASE_AND_WEEK, "name": "bob's fleet"})
    client.force_login(user)
    html = client.get("/fleet/").content.decode()
    listing = html.split('data-testid="saved-fleets"')[1].split("</section>")[0]
    assert f'href="/fleet/?id={mine.pk}"' in listing and "2027 base" in listing
    assert "bob" not in listing
    assert 'data-testid="saved-fleets"' not in Client().get("/fleet/").content.decode()  # anonymous: nothing saved


def test_issue_proposal_from_a_saved_fleet_goes_to_its_page(user) -> None:  # type: ignore[no-untyped-def]
    fleet = fleet_create(owner=user, name="2027 base", document={**BASE_AND_WEEK, "name": "2027 base"})
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    page = client.get(f"/fleet/?id={fleet.pk}").content.decode()
    form = re.search(
        r'<form method="post" action="([^"]+)"[^>]*data-testid="issue-fleet-proposal">(.*?)</form>', page, re.S
    )
    assert form is not None and form.group(1) == f"/fleet/{fleet.pk}/proposals/"
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.group(2))
    assert token is not None
    assert client.post(form.group(1)).status_code == 403  # no CSRF token: refused
    issued = client.post(form.group(1), {"csrfmiddlewaretoken": token.group(1)})
    proposal = Proposal.objects.get()
    assert issued.status_code == 302 and issued["Location"] == f"/proposals/{proposal.pk}/"
    assert proposal.kind == Proposal.KIND_FLEET and proposal.fleet_id == fleet.pk and proposal.owner_id == user.pk
    assert "Own 32 GPUs: $457,920 a year" in client.get(issued["Location"]).content.decode()
    # The saved fleet lists its proposal.
    again = client.get(f"/fleet/?id={fleet.pk}").content.decode()
    assert f'href="/proposals/{proposal.pk}/"' in again.split('data-testid="fleet-proposals"')[1]


def test_another_users_fleet_issues_nothing(client, user, other_user) -> None:  # type: ignore[no-untyped-def]
    fleet = fleet_create(owner=user, name="2027 base", document=BASE_AND_WEEK)
    client.force_login(other_user)
    assert client.post(f"/fleet/{fleet.pk}/proposals/").status_code == 404
    assert client.get(f"/fleet/?id={fleet.pk}").status_code == 404
    assert Proposal.objects.count() == 0
    client.logout()
    assert client.post(f"/fleet/{fleet.pk}/proposals/").status_code == 302  # to the login page
    assert Proposal.objects.count() == 0
