"""Two refreshes of one feed at the same time, in two threads with their own database connections:
the second sees the lock and does nothing; the first finishes normally."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
import responses
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from pricing.feeds.lambda_cloud import API_URL
from pricing.models import FeedLock, FeedRun, Offer
from pricing.services import ImportResult, feed_import, feed_refresh
from tests.conftest import IN_CI, uses_postgres
from tests.pricing.helpers import as_json, fixture_json, lambda_h100_catalog


def _postgres_only() -> None:
    if not uses_postgres():
        reason = "needs PostgreSQL (DATABASE_URL=postgres://...): two sessions, row locks, COPY"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(reason)


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


@pytest.mark.django_db(transaction=True)
@responses.activate
def test_two_feeds_writing_the_same_new_offer_at_once_both_succeed(settings, tmp_path: Path, bundled: str) -> None:  # type: ignore[no-untyped-def]
    """`lambda` and `skypilot:lambda` are different lock units writing the same provider's offers. Under
    PostgreSQL READ COMMITTED both saw a new identity as missing and the second COPY ended in UniqueViolation
    (an ops probe); the second writer now waits for the first and updates the row the first committed.
    PostgreSQL only: the suite's SQLite database (in memory, shared cache) refuses a second writer at once."""
    _postgres_only()
    settings.PRICING_LAMBDA_API_KEY = "recorded-test-key"
    payload = fixture_json("written/lambda_instance_types.json")
    payload["data"]["gpu_8x_h100_sxm5"]["regions_with_capacity_available"] = [{"name": "us-south-9"}]
    responses.get(API_URL, json=payload)
    saved, release = threading.Event(), threading.Event()

    def hold_before_commit(done: int, total: int, note: str) -> None:
        if note.startswith("saved"):  # inside the refresh's transaction, its offers written, not committed
            saved.set()
            assert release.wait(timeout=30)

    results: dict[str, object] = {}

    def run(name: str, work: Callable[[], object]) -> None:
        try:
            results[name] = work()
        except Exception as error:
            results[name] = error
        finally:
            connection.close()

    refresh = threading.Thread(
        target=run, args=("refresh", lambda: feed_refresh(name="lambda", progress=hold_before_commit))
    )
    refresh.start()
    try:
        assert saved.wait(timeout=30), "the refresh never wrote its offers"
        catalog = lambda_h100_catalog(tmp_path / "lambda.csv", usd_per_hour="16.0", mtime=timezone.now())
        # An identity neither the snapshot nor the refresh had before; written now: dated after the refresh's prices.
        catalog.write_text(catalog.read_text().replace("europe-central-1", "us-south-9"))
        paths = [catalog]
        importer = threading.Thread(
            target=run, args=("import", lambda: feed_import(name="skypilot", paths=paths, cloud="lambda"))
        )
        importer.start()
        time.sleep(1.5)  # the import reads the stored offers and tries to insert while the refresh holds its rows
    finally:
        release.set()
        refresh.join(timeout=60)
    importer.join(timeout=60)
    assert isinstance(results["refresh"], FeedRun) and results["refresh"].status == FeedRun.Status.SUCCESS
    assert isinstance(results["import"], ImportResult), results["import"]
    assert results["import"].run.status == FeedRun.Status.SUCCESS
    offers = Offer.objects.filter(instance_type="gpu_8x_h100_sxm5", region="us-south-9")
    assert [(offer.feed, float(offer.usd_per_gpu_hour)) for offer in offers] == [("skypilot:lambda", 2.0)]


@pytest.mark.django_db(transaction=True)
@responses.activate
def test_a_statement_timeout_while_copying_is_one_line_and_keeps_the_offers(settings) -> None:  # type: ignore[no-untyped-def]
    """An ops probe: another session locked the history table and `refresh_prices` under a statement timeout
    printed 14 traceback frames ending in psycopg's QueryCanceled (the COPY bypassed Django's error wrapping)."""
    _postgres_only()
    import psycopg

    settings.PRICING_LAMBDA_API_KEY = "recorded-test-key"
    responses.get(API_URL, json=fixture_json("written/lambda_instance_types.json"))
    db = connection.settings_dict
    with psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"],
        password=db["PASSWORD"],
        dbname=db["NAME"],
    ) as other:
        other.execute("LOCK TABLE pricing_priceobservation IN SHARE MODE")  # held until `other` ends its transaction
        with connection.cursor() as cursor:
            cursor.execute("SET statement_timeout = 1000")
        out = StringIO()
        try:
            with pytest.raises(CommandError, match=r"^1 feed\(s\) did not refresh: lambda \(previous offers kept\)$"):
                call_command("refresh_prices", "--feed", "lambda", stdout=out)
        finally:
            with connection.cursor() as cursor:
                cursor.execute("SET statement_timeout = 0")
            other.rollback()
    assert (
        "lambda: Failed - database error, nothing changed: OperationalError: canceling statement due to statement "
        "timeout\n" in out.getvalue()
    )
    assert not Offer.objects.filter(feed="lambda").exists()
    assert FeedRun.objects.get(feed="lambda").status == FeedRun.Status.FAILED
