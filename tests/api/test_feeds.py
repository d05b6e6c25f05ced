"""Feeds: status for everyone signed in; refresh (a Celery task with a status URL) for staff only."""

from __future__ import annotations

import csv
import io

import pytest

from pricing.models import FeedRun
from tests.api.conftest import assert_problem

pytestmark = pytest.mark.django_db


def test_staff_refresh_returns_task_and_status_url(carol, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("django.conf.settings.PRICING_LAMBDA_API_KEY", "")
    response = carol.post("/api/v1/feeds/lambda/refresh")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["task_id"] and body["status_url"].endswith(f"/api/v1/tasks/{body['task_id']}")
    assert response["Location"] == body["status_url"]
    status = carol.get(body["status_url"]).json()
    assert status["status"] == "SUCCESS" and status["result"]["feed"] == "lambda"
    assert FeedRun.objects.get(pk=status["result"]["run_id"]).feed == "lambda"
    feeds = {feed["name"]: feed for feed in carol.get("/api/v1/feeds").json()}
    assert feeds["lambda"]["status"] == status["result"]["status"]


def test_refresh_is_staff_only_and_names_known_feeds(alice, carol) -> None:  # type: ignore[no-untyped-def]
    assert assert_problem(alice.post("/api/v1/feeds/lambda/refresh"), 403)["type"] == "/problems/permission-denied"
    assert_problem(alice.get("/api/v1/tasks/some-id"), 403)
    body = assert_problem(carol.post("/api/v1/feeds/nope/refresh"), 404)
    assert "lambda" in body["detail"]
    # An id the app never issued is not found (Celery alone would read it as PENDING).
    assert "never issued" in assert_problem(carol.get("/api/v1/tasks/unknown-id"), 404)["detail"]


def test_an_issued_task_without_a_result_after_the_result_expiry_is_unknown(
    carol, staff_user, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    from celery.result import AsyncResult

    monkeypatch.setattr("django.conf.settings.PRICING_LAMBDA_API_KEY", "")
    task = carol.post("/api/v1/feeds/lambda/refresh").json()
    from core.models import IssuedTask

    issued = IssuedTask.objects.get(pk=task["task_id"])
    assert (issued.kind, issued.owner) == ("pricing.tasks.refresh_feed", staff_user)
    AsyncResult(task["task_id"]).forget()  # the result store lost it (a Redis flush, or it expired)
    assert carol.get(task["status_url"]).json()["status"] == "PENDING"  # within the expiry it may still be queued
    settings.CELERY_RESULT_EXPIRES = 0
    body = carol.get(task["status_url"]).json()
    assert body["status"] == "unknown"
    assert "expired or was lost" in body["detail"] and "feed status" in body["detail"]


def test_staff_refresh_of_one_skypilot_cloud_runs_that_cloud(carol, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Off, so the run records "not configured" without the network; the name is the catalog's longest cloud.
    monkeypatch.setattr("django.conf.settings.PRICING_SKYPILOT_ENABLED", False)
    response = carol.post("/api/v1/feeds/skypilot:primeintellect/refresh")
    assert response.status_code == 202, response.content
    result = carol.get(response.json()["status_url"]).json()["result"]
    assert result["feed"] == "skypilot:primeintellect"
    run = FeedRun.objects.get(pk=result["run_id"])
    assert (run.feed, run.status) == ("skypilot:primeintellect", FeedRun.Status.NOT_CONFIGURED)


def test_refresh_of_an_unknown_part_is_400_naming_the_known_ones(carol) -> None:  # type: ignore[no-untyped-def]
    body = assert_problem(carol.post("/api/v1/feeds/skypilot:nosuchcloud/refresh"), 400)
    assert "'nosuchcloud'" in body["detail"]
    assert "skypilot:cudo" in body["detail"] and "skypilot:runpod" in body["detail"]
    body = assert_problem(carol.post("/api/v1/feeds/aws:us-east-1/refresh"), 400)
    assert "'aws' has no parts" in body["detail"]
    assert not FeedRun.objects.exists()


def test_feeds_and_offers_as_csv(alice) -> None:  # type: ignore[no-untyped-def]
    from pricing.services import load_bundled_data

    load_bundled_data()
    feeds = list(csv.DictReader(io.StringIO(alice.get("/api/v1/feeds?format=csv").content.decode())))
    assert "snapshot" in {row["name"] for row in feeds}
    as_json = alice.get("/api/v1/offers?gpu=h100-sxm&market=on_demand&page_size=20").json()
    response = alice.get("/api/v1/offers?gpu=h100-sxm&market=on_demand&page_size=20", HTTP_ACCEPT="text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == len(as_json["results"]) > 0
    for row, offer in zip(rows, as_json["results"], strict=True):
        assert row["provider"] == offer["provider"] and row["instance"] == offer["instance"]
        assert float(row["usd_per_gpu_hour"]) == offer["usd_per_gpu_hour"]
        assert row["gpu"] == "h100-sxm" and row["market"] == "on_demand"
    assert_problem(alice.get("/api/v1/offers?market=cheap"), 400, "#/market")


def test_feed_dates_and_price_history_filters_are_typed(client) -> None:  # type: ignore[no-untyped-def]
    """A probe: Feed.last_success_at was a plain string (Offer.observed_at is a date-time), and price-history's
    market was a free string while the server enforces the market enum /api/v1/offers declares."""
    document = client.get("/api/schema/?format=json").json()
    feed = document["components"]["schemas"]["Feed"]["properties"]["last_success_at"]
    assert feed["type"] == ["string", "null"] and feed["format"] == "date-time"
    offers = {p["name"]: p for p in document["paths"]["/api/v1/offers"]["get"]["parameters"]}
    history = {p["name"]: p for p in document["paths"]["/api/v1/gpus/{gpu_id}/price-history"]["get"]["parameters"]}
    assert history["market"]["schema"]["items"]["enum"] == offers["market"]["schema"]["enum"]
    assert history["market"]["explode"] is False and history["market"]["style"] == "form"
