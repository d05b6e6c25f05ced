"""Every endpoint x {anonymous, owner, other user, staff}. Objects belong to alice (the owner); bob is
another user; carol is staff (staff get no view of other users' objects through the API)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from advisor.api.tokens import api_token_create
from advisor.calibrations import default_calibration_row
from advisor.fleet.store import fleet_create
from advisor.models import Calibration
from advisor.proposals import issue_fleet_proposal, issue_proposal
from advisor.scenarios import scenario_create
from pricing.models import Offer, PriceObservation, Provider
from tests.advisor.fleet.figures import BASE_AND_WEEK
from tests.api.conftest import PROBLEM
from tests.api.examples import scenario

pytestmark = pytest.mark.django_db

OWNED, SHARED, STAFF_ONLY = "owned", "shared", "staff"
LAMBDA_RUNS = (
    "gpu,num_gpus,params_b,seq_len,global_batch,tokens_per_s\n"
    "h100-sxm,8,7,4096,512,90000\nh100-sxm,16,7,4096,512,170000\n"
)

# (method, path, body, content type, kind, owner's expected status)
ENDPOINTS: list[tuple[str, str, Any, str | None, str, int]] = [
    ("post", "/api/v1/advice", scenario(), "json", SHARED, 200),
    ("get", "/api/v1/scenarios", None, None, SHARED, 200),
    ("post", "/api/v1/scenarios", {"name": "n", "scenario": scenario()}, "json", SHARED, 201),
    ("get", "/api/v1/scenarios/{scenario}", None, None, OWNED, 200),
    ("put", "/api/v1/scenarios/{scenario}", {"name": "n", "scenario": scenario()}, "json", OWNED, 200),
    ("get", "/api/v1/scenarios/{scenario}/advice", None, None, OWNED, 200),
    ("get", "/api/v1/scenarios/{scenario}/proposal.pdf", None, None, OWNED, 200),
    ("post", "/api/v1/scenarios/{scenario}/proposals", None, None, OWNED, 201),
    ("get", "/api/v1/scenarios/{scenario}/proposals", None, None, OWNED, 200),
    ("get", "/api/v1/proposals/{proposal}", None, None, OWNED, 200),
    ("get", "/api/v1/proposals/{proposal}?format=xlsx", None, None, OWNED, 200),
    ("get", "/api/v1/proposals/{proposal}/proposal.pdf", None, None, OWNED, 200),
    ("delete", "/api/v1/scenarios/{scenario}", None, None, OWNED, 204),
    ("get", "/api/v1/gpus", None, None, SHARED, 200),
    ("get", "/api/v1/gpus/h100-sxm", None, None, SHARED, 200),
    ("get", "/api/v1/gpus/h100-sxm/price-history", None, None, SHARED, 200),
    ("get", "/api/v1/offers", None, None, SHARED, 200),
    ("get", "/api/v1/offers/{offer}/history", None, None, SHARED, 200),
    ("get", "/api/v1/hardware-quotes", None, None, SHARED, 200),
    ("get", "/api/v1/feeds", None, None, SHARED, 200),
    ("post", "/api/v1/feeds/lambda/refresh", None, None, STAFF_ONLY, 202),
    ("get", "/api/v1/tasks/00000000-task", None, None, STAFF_ONLY, 404),
    ("get", "/api/v1/calibrations", None, None, SHARED, 200),
    ("post", "/api/v1/calibrations?name=fit", LAMBDA_RUNS, "text/csv", SHARED, 201),
    ("get", "/api/v1/calibrations/{calibration}", None, None, OWNED, 200),
    ("get", "/api/v1/calibrations/{calibration}/residuals", None, None, OWNED, 200),
    ("post", "/api/v1/calibrations/{calibration}/activate", None, None, OWNED, 200),
    ("get", "/api/v1/calibrations/{default_calibration}", None, None, SHARED, 200),
    ("post", "/api/v1/estimate", LAMBDA_RUNS, "text/csv", SHARED, 200),
    ("get", "/api/v1/tokens", None, None, SHARED, 200),
    ("post", "/api/v1/tokens", {"name": "n"}, "json", SHARED, 201),
    ("get", "/api/v1/tokens/{token}", None, None, OWNED, 200),
    ("delete", "/api/v1/tokens/{token}", None, None, OWNED, 204),
    ("post", "/api/v1/fleets/{fleet}/proposals", None, None, OWNED, 201),
    ("get", "/api/v1/proposals/{fleet_proposal}", None, None, OWNED, 200),
    ("get", "/api/v1/proposals/{fleet_proposal}/proposal.pdf", None, None, OWNED, 200),
]


@pytest.fixture
def objects(user) -> dict[str, int]:  # type: ignore[no-untyped-def]
    default = default_calibration_row()
    mine = Calibration.objects.create(
        owner=user, name="alices", document=default.document, runs=default.runs, loo_mape=default.loo_mape
    )
    provider = Provider.objects.create(slug="aws", name="AWS")
    now = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    offer = Offer.objects.create(
        provider=provider,
        instance_type="p5.48xlarge",
        region="us-east-1",
        market="on_demand",
        gpu="h100-sxm",
        gpu_count=8,
        usd_per_hour=Decimal(80),
        usd_per_gpu_hour=Decimal(10),
        observed_at=now,
        source="test",
        feed="test",
        price_changed_at=now,
    )
    PriceObservation.objects.create(offer=offer, usd_per_hour=80, usd_per_gpu_hour=10, observed_at=now, source="t")
    saved = scenario_create(owner=user, name="alices", document=scenario()).pk
    return {
        "scenario": saved,
        "proposal": issue_proposal(user=user, scenario_id=saved).pk,
        "calibration": mine.pk,
        "default_calibration": default.pk,
        "token": api_token_create(user=user, name="alices").token.pk,
        "offer": offer.pk,
        "fleet": (fleet := fleet_create(owner=user, name="alices", document=BASE_AND_WEEK)).pk,
        "fleet_proposal": issue_fleet_proposal(user=user, fleet_id=fleet.pk).pk,
    }


def _call(client: APIClient, method: str, path: str, body: Any, content_type: str | None):  # type: ignore[no-untyped-def]
    if content_type == "json":
        return getattr(client, method)(path, body, format="json")
    if content_type:
        return getattr(client, method)(path, body, content_type=content_type)
    return getattr(client, method)(path)


def _expected(kind: str, who: str, owner_status: int) -> int:
    if who == "anonymous":
        return 401
    if kind == STAFF_ONLY:
        return owner_status if who == "staff" else 403
    if kind == OWNED and who != "owner":
        return 404
    return owner_status


@pytest.mark.parametrize("who", ["anonymous", "owner", "other", "staff"])
@pytest.mark.parametrize(("method", "template", "body", "content_type", "kind", "owner_status"), ENDPOINTS)
def test_auth_matrix(  # type: ignore[no-untyped-def]
    who, method, template, body, content_type, kind, owner_status, objects, user, other_user, staff_user, monkeypatch
) -> None:
    monkeypatch.delenv("PRICING_LAMBDA_API_KEY", raising=False)
    client = APIClient()
    if who != "anonymous":
        account = {"owner": user, "other": other_user, "staff": staff_user}[who]
        client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=account, name='matrix').key}")
    path = template.format(**objects)
    response = _call(client, method, path, body, content_type)
    expected = _expected(kind, who if who != "staff" or kind == STAFF_ONLY else "staff", owner_status)
    if kind == OWNED and who == "staff":
        expected = 404
    assert response.status_code == expected, (who, method, path, response.status_code, response.content[:500])
    if expected >= 400:
        assert response["Content-Type"].startswith(PROBLEM)
    if expected == 401:
        assert response["WWW-Authenticate"].startswith("Token")


def test_session_auth_works_and_needs_csrf(user, objects) -> None:  # type: ignore[no-untyped-def]
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.get(f"/api/v1/scenarios/{objects['scenario']}").status_code == 200
    response = client.post("/api/v1/scenarios", {"name": "n", "scenario": scenario()}, format="json")
    assert response.status_code == 403 and response["Content-Type"].startswith(PROBLEM)
    assert "CSRF" in response.json()["detail"]
