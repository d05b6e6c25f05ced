"""Two refreshes of one feed at the same time, in two threads with their own database connections:
the second sees the lock and does nothing; the first finishes normally."""

from __future__ import annotations

import threading

import pytest
import responses
from django.db import connection

from pricing.feeds.lambda_cloud import API_URL
from pricing.models import FeedLock, FeedRun, Offer
from pricing.services import feed_refresh
from tests.pricing.helpers import as_json, fixture_json


@pytest.mark.django_db(transaction=True)
@responses.activate
def test_a_concurrent_refresh_of_the_same_feed_is_skipped(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PRICING_LAMBDA_API_KEY = "recorded-test-key"
    fetching, release = threading.Event(), threading.Event()
    body = as_json(fixture_json("written/lambda_instance_types.json"))

    def slow_answer(request: object) -> tuple[int, dict[str, str], str]:
        fetching.set()
        assert release.wait(timeout=30)
        return 200, {"Content-Type": "application/json"}, body

    responses.add_callback(responses.GET, API_URL, callback=slow_answer)
    results: dict[str, FeedRun] = {}

    def first() -> None:
        try:
            results["first"] = feed_refresh(name="lambda")
        finally:
            connection.close()

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert fetching.wait(timeout=30), "the first refresh never started fetching"
        second = feed_refresh(name="lambda")
    finally:
        release.set()
        thread.join(timeout=60)
    assert second.status == FeedRun.Status.SKIPPED
    assert results["first"].status == FeedRun.Status.SUCCESS
    assert len(responses.calls) == 1
    assert Offer.objects.filter(feed="lambda").count() == 6
    assert not FeedLock.objects.exists()
