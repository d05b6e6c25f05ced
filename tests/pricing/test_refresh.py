"""The refresh service through the real Lambda adapter and `requests`, answered by recorded responses.

Faults: timeout, HTTP 5xx, malformed JSON, a truncated body, a run with 10% of last run's offers.
In every case the previous offers stay and the FeedRun says why.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
import requests
import responses
from django.utils import timezone

from pricing.feeds.lambda_cloud import API_URL
from pricing.models import FeedLock, FeedRun, Offer, PriceObservation
from pricing.selectors import current_offers
from pricing.services import feed_lock_acquire, feed_refresh
from tests.pricing.helpers import fixture_json, fixture_text, lambda_payload_with_regions

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _lambda_key(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PRICING_LAMBDA_API_KEY = "recorded-test-key"


def _snapshot_of_offers() -> list[tuple]:
    return list(
        Offer.objects.order_by("id").values_list(
            "id", "instance_type", "region", "market", "gpu", "usd_per_hour", "withdrawn_at"
        )
    )


@responses.activate
def test_a_good_run_validates_every_record_and_reports_rejections() -> None:
    responses.get(API_URL, json=fixture_json("written/lambda_instance_types.json"))
    run = feed_refresh(name="lambda")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    assert (run.fetched, run.accepted, run.rejected, run.created) == (8, 6, 2, 6)
    assert run.rejections["unknown_gpu"]["count"] == 1
    assert "Quantum X9" in run.rejections["unknown_gpu"]["examples"][0]
    assert run.rejections["non_positive_price"]["count"] == 1
    assert responses.calls[0].request.headers["Authorization"] == "Bearer recorded-test-key"
    h100 = Offer.objects.get(instance_type="gpu_8x_h100_sxm5", region="us-east-1")
    assert (h100.gpu, h100.gpu_count, h100.usd_per_hour, h100.usd_per_gpu_hour) == (
        "h100-sxm",
        Decimal(8),
        Decimal("23.92"),
        Decimal("2.99"),
    )
    assert h100.observed_at is not None and not h100.is_snapshot and h100.provider.slug == "lambda"
    assert Offer.objects.get(instance_type="gpu_8x_a100_80gb_sxm4").region == ""
    assert PriceObservation.objects.count() == 6


@responses.activate
def test_the_same_refresh_twice_changes_nothing_and_appends_no_history() -> None:
    responses.get(API_URL, json=fixture_json("written/lambda_instance_types.json"))
    feed_refresh(name="lambda")
    before = _snapshot_of_offers()
    history = PriceObservation.objects.count()
    second = feed_refresh(name="lambda")
    assert second.status == FeedRun.Status.SUCCESS
    assert (second.created, second.changed, second.unchanged, second.withdrawn) == (0, 0, 6, 0)
    assert _snapshot_of_offers() == before
    assert PriceObservation.objects.count() == history


@responses.activate
def test_a_price_change_appends_one_history_row() -> None:
    payload = fixture_json("written/lambda_instance_types.json")
    responses.get(API_URL, json=payload)
    feed_refresh(name="lambda")
    payload["data"]["gpu_1x_gh200"]["instance_type"]["price_cents_per_hour"] = 199
    responses.replace(responses.GET, API_URL, json=payload)
    run = feed_refresh(name="lambda")
    assert (run.created, run.changed, run.unchanged) == (0, 1, 5)
    gh200 = Offer.objects.get(instance_type="gpu_1x_gh200")
    assert [float(h.usd_per_hour) for h in gh200.history.order_by("id")] == [1.49, 1.99]
    assert PriceObservation.objects.count() == 7


@responses.activate
def test_an_offer_the_feed_stops_listing_is_withdrawn_not_deleted() -> None:
    payload = fixture_json("written/lambda_instance_types.json")
    responses.get(API_URL, json=payload)
    feed_refresh(name="lambda")
    del payload["data"]["gpu_1x_a10"]
    responses.replace(responses.GET, API_URL, json=payload)
    run = feed_refresh(name="lambda")
    assert run.withdrawn == 1
    a10 = Offer.objects.get(instance_type="gpu_1x_a10")
    assert a10.withdrawn_at is not None and a10.history.count() == 1
    assert not current_offers(gpu="a10").exists()


def _good_first_run() -> list[tuple]:
    responses.get(API_URL, json=fixture_json("written/lambda_instance_types.json"))
    assert feed_refresh(name="lambda").status == FeedRun.Status.SUCCESS
    responses.reset()
    return _snapshot_of_offers()


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (lambda: responses.get(API_URL, body=requests.ReadTimeout("read timed out")), "timed out"),
        (lambda: responses.get(API_URL, body=requests.ConnectionError("connection refused")), "ConnectionError"),
        (lambda: responses.get(API_URL, status=503, body="Service Unavailable"), "HTTP 503"),
        (lambda: responses.get(API_URL, status=502, body="<html>bad gateway</html>"), "HTTP 502"),
    ],
    ids=["timeout", "connection-error", "http-503", "http-502"],
)
@responses.activate
def test_network_faults_keep_the_previous_offers_and_are_retryable(fault, expected: str) -> None:  # type: ignore[no-untyped-def]
    before = _good_first_run()
    fault()
    run = feed_refresh(name="lambda", worker_retries=True)  # retryable only where a Celery worker retries it
    assert run.status == FeedRun.Status.FAILED
    assert expected in run.error and run.retryable
    assert _snapshot_of_offers() == before


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"data": {"gpu_8x_h100_sxm5": {"instance_type": ', "malformed JSON"),
        (fixture_text("written/lambda_instance_types.json")[:900], "malformed JSON"),
        ("<html><body>Maintenance</body></html>", "malformed JSON"),
        ('{"error": {"code": "global/unknown"}}', "no 'data' object"),
    ],
    ids=["malformed", "truncated-body", "html-instead-of-json", "error-envelope"],
)
@responses.activate
def test_bad_payloads_keep_the_previous_offers_and_say_why(body: str, expected: str) -> None:
    before = _good_first_run()
    responses.get(API_URL, body=body, content_type="application/json")
    run = feed_refresh(name="lambda")
    assert run.status == FeedRun.Status.FAILED
    assert expected in run.error and not run.retryable
    assert _snapshot_of_offers() == before


@responses.activate
def test_a_feed_returning_ten_percent_of_last_runs_offers_is_rejected() -> None:
    responses.get(API_URL, json=lambda_payload_with_regions(30))
    assert feed_refresh(name="lambda").accepted == 30
    before = _snapshot_of_offers()
    responses.replace(responses.GET, API_URL, json=lambda_payload_with_regions(3))
    run = feed_refresh(name="lambda")
    assert run.status == FeedRun.Status.REJECTED
    assert "3 valid offers, 10% of the 30" in run.error
    assert run.accepted == 3 and run.created == 0
    assert _snapshot_of_offers() == before
    assert current_offers(gpu="h100-sxm").count() == 30


@responses.activate
def test_a_feed_returning_no_valid_offers_is_rejected() -> None:
    before = _good_first_run()
    responses.get(API_URL, json={"data": {}})
    run = feed_refresh(name="lambda")
    assert run.status == FeedRun.Status.REJECTED and "no valid offers" in run.error
    assert _snapshot_of_offers() == before


def test_without_an_api_key_the_feed_is_not_configured_rather_than_failed(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PRICING_LAMBDA_API_KEY = ""
    run = feed_refresh(name="lambda")
    assert run.status == FeedRun.Status.NOT_CONFIGURED
    assert "PRICING_LAMBDA_API_KEY" in run.error


@responses.activate
def test_a_second_refresh_while_one_holds_the_lock_does_nothing() -> None:
    before = _good_first_run()
    token = feed_lock_acquire(feed="lambda")
    assert token is not None
    run = feed_refresh(name="lambda")
    assert run.status == FeedRun.Status.SKIPPED and "another refresh" in run.error
    assert run.finished_at is not None and run.finished_at >= run.started_at  # it finished before it started
    assert len(responses.calls) == 0  # it never fetched
    assert _snapshot_of_offers() == before
    assert FeedLock.objects.get(feed="lambda").token == token


@responses.activate
def test_an_expired_lock_is_taken_over_and_released_afterwards() -> None:
    FeedLock.objects.create(feed="lambda", token="crashed-worker", expires_at=timezone.now() - dt.timedelta(seconds=1))
    responses.get(API_URL, json=fixture_json("written/lambda_instance_types.json"))
    assert feed_refresh(name="lambda").status == FeedRun.Status.SUCCESS
    assert not FeedLock.objects.filter(feed="lambda").exists()


@responses.activate
def test_a_live_feed_takes_over_a_snapshot_offer_and_the_snapshot_never_overwrites_it(bundled: str) -> None:
    from pricing.services import load_bundled_data

    snap = Offer.objects.get(provider__slug="lambda", instance_type="gpu_8x_h100_sxm5", region="us-east-1")
    assert snap.is_snapshot
    responses.get(API_URL, json=fixture_json("written/lambda_instance_types.json"))
    feed_refresh(name="lambda")
    snap.refresh_from_db()
    assert not snap.is_snapshot and snap.feed == "lambda"
    # Snapshot rows of Lambda that the live feed did not list are superseded, not left beside live prices.
    stale_snapshot = Offer.objects.filter(provider__slug="lambda", feed="snapshot")
    assert stale_snapshot.exists() and not stale_snapshot.filter(withdrawn_at__isnull=True).exists()
    assert Offer.objects.filter(provider__slug="runpod", feed="snapshot", withdrawn_at__isnull=True).exists()
    load_bundled_data()  # bootstrap again: neither overwrites the live offer nor revives superseded rows
    snap.refresh_from_db()
    assert not snap.is_snapshot and snap.feed == "lambda"
    assert not stale_snapshot.filter(withdrawn_at__isnull=True).exists()


def _cudo_catalog_dated(settings, last_modified: str) -> str:  # type: ignore[no-untyped-def]
    """The real Cudo v8 catalog as SkyPilot's S3 mirror serves it, with its Last-Modified date."""
    url = f"{settings.PRICING_SKYPILOT_MIRROR_URL}/v8/cudo/vms.csv"
    responses.get(f"{settings.PRICING_SKYPILOT_CATALOG_URL}/v8/cudo/vms.csv", status=429)  # rate-limited: the mirror
    responses.get(url, body=fixture_text("skypilot_cudo_v8_vms.csv"), headers={"Last-Modified": last_modified})
    return url


@responses.activate
def test_a_catalog_dated_in_the_future_is_refused_per_record_and_the_offers_kept(settings) -> None:  # type: ignore[no-untyped-def]
    # A Last-Modified of 2031 was stored as observed_at: the advice called the prices fresh until 2031.
    _cudo_catalog_dated(settings, "Wed, 01 Jan 2031 00:00:00 GMT")
    run = feed_refresh(name="skypilot:cudo")
    assert run.status == FeedRun.Status.REJECTED and "no valid offers" in run.error
    assert (run.accepted, run.rejections["observed_in_future"]["count"]) == (0, 6)
    assert not Offer.objects.filter(observed_at__year=2031).exists()


@responses.activate
def test_a_catalog_older_than_the_stored_one_keeps_the_newer_prices_and_withdraws_nothing(settings) -> None:  # type: ignore[no-untyped-def]
    url = _cudo_catalog_dated(settings, "Wed, 25 Nov 2026 07:00:00 GMT")
    assert feed_refresh(name="skypilot:cudo").status == FeedRun.Status.SUCCESS
    before = _snapshot_of_offers()
    older = fixture_text("skypilot_cudo_v8_vms.csv").replace(",3.9504,", ",2.0,")  # a mirror serving an old copy
    responses.replace(responses.GET, url, body=older, headers={"Last-Modified": "Fri, 20 Nov 2026 07:00:00 GMT"})
    run = feed_refresh(name="skypilot:cudo")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    assert (run.accepted, run.rejected, run.changed, run.withdrawn) == (0, 6, 0, 0)
    assert run.rejections["older_than_stored"]["count"] == 6
    assert _snapshot_of_offers() == before
    assert set(Offer.objects.values_list("observed_at", flat=True)) == {dt.datetime(2026, 11, 25, 7, tzinfo=dt.UTC)}
    assert set(Offer.objects.values_list("last_run", flat=True)) == {run.id}


@responses.activate
def test_a_long_refresh_keeps_its_lock_alive_and_one_that_lost_it_saves_nothing(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Left alone in two sessions: a command-line refresh has no time limit, and one that outlived PRICING_LOCK_TTL_S
    # let a scheduled refresh take its lock over and run beside it. Its progress reports now renew the lock.
    from pricing import services

    monkeypatch.setattr(services, "LOCK_RENEW_EVERY_S", 0.0)
    live: list[bool] = []

    def expire_during_fetch(request):  # type: ignore[no-untyped-def]
        # The fetch took longer than the lock's TTL: the lock has expired by the time the offers are saved.
        FeedLock.objects.filter(feed="lambda").update(expires_at=timezone.now() - dt.timedelta(seconds=1))
        return 200, {}, fixture_text("written/lambda_instance_types.json")

    def progress(done: int, total: int, note: str) -> None:
        live.append(FeedLock.objects.get(feed="lambda").expires_at > timezone.now())

    responses.add_callback(responses.GET, API_URL, callback=expire_during_fetch)
    run = feed_refresh(name="lambda", progress=progress)
    assert run.status == FeedRun.Status.SUCCESS, run.error
    assert live and all(live)  # renewed before every report after the fetch
    # A refresh whose lock another one took over saves nothing and says why.
    before = _snapshot_of_offers()

    def taken_over(request):  # type: ignore[no-untyped-def]
        FeedLock.objects.filter(feed="lambda").update(token="another-refresh")
        return 200, {}, fixture_text("written/lambda_instance_types.json")

    responses.reset()
    responses.add_callback(responses.GET, API_URL, callback=taken_over)
    lost = feed_refresh(name="lambda")
    assert lost.status == FeedRun.Status.FAILED and "took this feed's lock over" in lost.error
    assert _snapshot_of_offers() == before
    assert FeedLock.objects.get(feed="lambda").token == "another-refresh"  # the other refresh's lock is left alone
