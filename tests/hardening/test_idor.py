"""No IDOR: every page and API endpoint that takes an object id refuses another user's object (404,
as if it did not exist), changes nothing of it, and no list shows it. The sweep is checked against
the URL configuration, so a new object route that nobody swept fails here.

API object endpoints are swept per role in tests/api/test_auth_matrix.py; here they are swept once
more as "bob with alice's ids" together with the pages, and every route is accounted for."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from advisor import proposals as proposal_store
from advisor import scenarios as store
from advisor.api.tokens import api_token_create
from advisor.calibrations import default_calibration_row
from advisor.fleet.store import fleet_create, fleet_update
from advisor.models import ActiveCalibration, ApiToken, Calibration, Fleet, Proposal, Scenario, ShareLink
from advisor.web import forms
from tests.advisor.fleet.figures import BASE_AND_WEEK
from tests.api.conftest import fast_password_hashing  # noqa: F401 (autouse: the users here set passwords)
from tests.api.examples import scenario

# Routes with an id that are not per-user objects, and why.
NOT_OWNED = {
    "password_reset_confirm": "Django's signed reset link",
    "v1:gpu-detail": "public GPU catalog",
    "v1:gpu-price-history": "public price history",
    "v1:offer-history": "public price history",
    "v1:gpu-price-history-csv": "public price history",
    "v1:offer-history-csv": "public price history",
    "pricing:offer": "public price catalog",
    "v1:feed-refresh": "staff only (tests/api/test_auth_matrix.py)",
    "v1:task-detail": "staff only (tests/api/test_auth_matrix.py)",
    "shared": "capability link: the unguessable token is the permission (test_security.py)",
    "shared-proposal": "capability link: the unguessable token is the permission (test_security.py)",
}


@pytest.fixture
def alices(user) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    saved = store.scenario_create(owner=user, name="secret-plan-of-alice", document=scenario())
    store.scenario_update(scenario=saved, name="secret-plan-of-alice v2")
    link = store.share_link_create(scenario=saved)
    default = default_calibration_row()
    calibration = Calibration.objects.create(
        owner=user,
        name="private-fit-of-alice",
        document=default.document,
        runs=default.runs,
        loo_mape=default.loo_mape,
    )
    token = api_token_create(user=user, name="token-of-alice").token
    proposal = proposal_store.issue_proposal(user=user, scenario_id=saved.pk)
    fleet = fleet_create(owner=user, name="secret-fleet-of-alice", document=BASE_AND_WEEK)
    fleet_update(fleet=fleet, name="secret-fleet-of-alice v2")
    fleet_proposal = proposal_store.issue_fleet_proposal(user=user, fleet_id=fleet.pk)
    return {
        "scenario": saved,
        "link": link,
        "calibration": calibration,
        "token": token,
        "proposal": proposal,
        "fleet": fleet,
        "fleet_proposal": fleet_proposal,
    }


def _sweep(ids: dict[str, int]) -> dict[str, list[tuple[str, str, dict[str, Any]]]]:
    s, link, c, t = ids["scenario"], ids["link"], ids["calibration"], ids["token"]
    p, f, fp = ids["proposal"], ids["fleet"], ids["fleet_proposal"]
    planner_form = {**forms.preset_initial("7b-pretrain"), "scenario_id": s}
    return {
        # pages
        "scenario-detail": [("get", f"/scenarios/{s}/", {})],
        "scenario-rename": [("post", f"/scenarios/{s}/rename/", {"name": "pwned"})],
        "scenario-duplicate": [("post", f"/scenarios/{s}/duplicate/", {})],
        "scenario-delete": [("post", f"/scenarios/{s}/delete/", {})],
        "scenario-restore": [("post", f"/scenarios/{s}/versions/1/restore/", {})],
        "scenario-proposal": [("get", f"/scenarios/{s}/proposal.pdf", {})],
        "share-create": [("post", f"/scenarios/{s}/share/", {})],
        "share-revoke": [("post", f"/scenarios/{s}/share/{link}/revoke/", {})],
        "proposal-issue": [("post", f"/scenarios/{s}/proposals/", {})],
        "proposal-detail": [("get", f"/proposals/{p}/", {}), ("get", f"/proposals/{fp}/", {})],
        "proposal-pdf": [("get", f"/proposals/{p}/proposal.pdf", {}), ("get", f"/proposals/{fp}/proposal.pdf", {})],
        "proposal-xlsx": [("get", f"/proposals/{p}/proposal.xlsx", {})],
        "proposal-recompute": [("post", f"/proposals/{p}/recompute/", {})],
        "proposal-share": [("post", f"/proposals/{p}/share/", {})],
        "calibration-detail": [("get", f"/calibrations/{c}/", {})],
        "calibration-activate": [("post", f"/calibrations/{c}/activate/", {})],
        # ids passed as parameters rather than in the path
        "planner": [("get", f"/plan/?scenario={s}", {})],
        "planner-results": [("post", "/plan/results/", planner_form)],
        "planner-save": [("post", "/plan/save/", planner_form)],
        "planner-proposal": [("post", "/plan/proposal.pdf", planner_form)],
        "scenario-compare": [("get", f"/scenarios/compare/?ids={s}&ids={ids['bobs_scenario']}", {})],
        "fleet": [("get", f"/fleet/?id={f}", {}), ("post", "/fleet/", {"fleet_id": f, "fleet": "{}"})],
        "fleet-proposal-issue": [("post", f"/fleet/{f}/proposals/", {})],
        # API
        "v1:scenario-detail": [
            ("get", f"/api/v1/scenarios/{s}", {}),
            ("put", f"/api/v1/scenarios/{s}", {"name": "pwned", "scenario": scenario()}),
            ("delete", f"/api/v1/scenarios/{s}", {}),
        ],
        "v1:scenario-advice": [("get", f"/api/v1/scenarios/{s}/advice", {})],
        "v1:scenario-proposal": [("get", f"/api/v1/scenarios/{s}/proposal.pdf", {})],
        "v1:scenario-versions": [("get", f"/api/v1/scenarios/{s}/versions", {})],
        "v1:scenario-version": [("get", f"/api/v1/scenarios/{s}/versions/1", {})],
        "v1:scenario-share-links": [("get", f"/api/v1/scenarios/{s}/share-links", {})],
        "v1:scenario-share-link": [("delete", f"/api/v1/scenarios/{s}/share-links/1", {})],
        "v1:scenario-proposals": [
            ("get", f"/api/v1/scenarios/{s}/proposals", {}),
            ("post", f"/api/v1/scenarios/{s}/proposals", {}),
        ],
        "v1:proposal-detail": [
            ("get", f"/api/v1/proposals/{p}", {}),
            ("get", f"/api/v1/proposals/{p}?format=xlsx", {}),
            ("get", f"/api/v1/proposals/{fp}", {}),
        ],
        "v1:proposal-pdf": [
            ("get", f"/api/v1/proposals/{p}/proposal.pdf", {}),
            ("get", f"/api/v1/proposals/{fp}/proposal.pdf", {}),
        ],
        "v1:proposal-xlsx": [
            ("get", f"/api/v1/proposals/{p}/proposal.xlsx", {}),
            ("get", f"/api/v1/proposals/{fp}/proposal.xlsx", {}),
        ],
        "v1:proposal-share-links": [("post", f"/api/v1/proposals/{p}/share-links", {})],
        "v1:calibration-detail": [("get", f"/api/v1/calibrations/{c}", {})],
        "v1:calibration-residuals": [("get", f"/api/v1/calibrations/{c}/residuals", {})],
        "v1:calibration-residuals-csv": [("get", f"/api/v1/calibrations/{c}/residuals.csv", {})],
        "v1:calibration-activate": [("post", f"/api/v1/calibrations/{c}/activate", {})],
        "v1:token-detail": [("get", f"/api/v1/tokens/{t}", {}), ("delete", f"/api/v1/tokens/{t}", {})],
        "v1:fleet-detail": [
            ("get", f"/api/v1/fleets/{f}", {}),
            ("put", f"/api/v1/fleets/{f}", {"name": "pwned", "fleet": BASE_AND_WEEK}),
            ("delete", f"/api/v1/fleets/{f}", {}),
        ],
        "v1:fleet-saved-plan": [("get", f"/api/v1/fleets/{f}/plan", {})],
        "v1:fleet-proposal": [("get", f"/api/v1/fleets/{f}/plan.pdf", {})],
        "v1:fleet-proposals": [("post", f"/api/v1/fleets/{f}/proposals", {})],
    }


def _routes_with_ids() -> set[str]:
    def walk(patterns: list[Any], prefix: str, namespace: str) -> Any:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                if str(pattern.pattern).startswith("admin"):
                    continue  # Django's admin: staff only, its own permission checks
                ns = f"{namespace}:{pattern.namespace}" if namespace and pattern.namespace else pattern.namespace
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern), ns or namespace)
            elif isinstance(pattern, URLPattern) and "<" in prefix + str(pattern.pattern):
                yield f"{namespace}:{pattern.name}" if namespace else str(pattern.name)

    return set(walk(get_resolver().url_patterns, "", ""))


@pytest.mark.django_db
def test_every_route_with_an_id_is_swept_or_explained() -> None:
    swept = set(
        _sweep(
            {
                "scenario": 1,
                "link": 1,
                "calibration": 1,
                "token": 1,
                "proposal": 1,
                "fleet": 1,
                "fleet_proposal": 1,
                "bobs_scenario": 2,
            }
        )
    )
    unaccounted = _routes_with_ids() - swept - set(NOT_OWNED)
    assert not unaccounted, f"object routes nobody checks for IDOR: {sorted(unaccounted)}"


@pytest.mark.django_db
def test_another_users_objects_answer_404_everywhere_and_stay_unchanged(alices, other_user) -> None:  # type: ignore[no-untyped-def]
    from pricing.services import load_bundled_data

    load_bundled_data()
    bobs = store.scenario_create(owner=other_user, name="bob's own", document=scenario())
    ids = {
        "scenario": alices["scenario"].pk,
        "link": alices["link"].pk,
        "calibration": alices["calibration"].pk,
        "token": alices["token"].pk,
        "proposal": alices["proposal"].pk,
        "fleet": alices["fleet"].pk,
        "fleet_proposal": alices["fleet_proposal"].pk,
        "bobs_scenario": bobs.pk,
    }
    web = Client()
    web.force_login(other_user)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=other_user, name='bob').key}")
    for route, requests in _sweep(ids).items():
        client = api if route.startswith("v1:") else web
        for method, url, data in requests:
            kwargs: dict[str, Any] = {"format": "json"} if client is api and method in ("put", "post") else {}
            response = getattr(client, method)(url, data, **kwargs)
            assert response.status_code == 404, f"{route}: {method.upper()} {url} answered {response.status_code}"
            assert b"of-alice" not in response.content, f"{route}: {url} shows alice's data"

    # The token page's revoke takes the id in the form: another user's token is "no such token".
    response = web.post("/account/tokens/", {"action": "revoke", "token_id": ids["token"]}, follow=True)
    assert "No such token." in response.content.decode()

    # Nothing of alice's changed.
    saved = Scenario.objects.get(pk=ids["scenario"])
    assert saved.name == "secret-plan-of-alice v2"
    assert saved.versions.count() == 2
    assert ShareLink.objects.get(pk=ids["link"]).revoked_at is None
    assert ApiToken.objects.get(pk=ids["token"]).revoked_at is None
    assert Calibration.objects.filter(pk=ids["calibration"]).exists()
    assert not ActiveCalibration.objects.filter(user=other_user, calibration_id=ids["calibration"]).exists()
    assert Scenario.objects.filter(owner=other_user).count() == 1  # no duplicate of alice's was made
    assert Proposal.objects.count() == 2  # alice's two; no proposal issued or recomputed from alice's
    assert not alices["proposal"].share_links.exists()
    fleet = Fleet.objects.get(pk=ids["fleet"])
    assert (fleet.name, fleet.versions.count()) == ("secret-fleet-of-alice v2", 2)
    assert not Fleet.objects.filter(owner=other_user).exists()

    # No list shows alice's objects to bob.
    for url in ("/scenarios/", "/calibrations/", "/account/tokens/"):
        assert b"of-alice" not in web.get(url).content, url
    for url in ("/api/v1/scenarios", "/api/v1/calibrations", "/api/v1/tokens", "/api/v1/fleets"):
        response = api.get(url)
        assert response.status_code == 200
        assert b"of-alice" not in response.content, url
    # Control: the owner does see them, so the checks above can fail.
    owner = Client()
    owner.force_login(alices["scenario"].owner)
    assert b"secret-plan-of-alice" in owner.get("/scenarios/").content
    assert owner.get(f"/scenarios/{ids['scenario']}/").status_code == 200
