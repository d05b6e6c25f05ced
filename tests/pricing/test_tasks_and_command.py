"""Celery tasks (retry wiring, eager fan-out) and the refresh_prices command's progress output."""

from __future__ import annotations

import datetime as dt
from io import StringIO
from unittest import mock

import pytest
import responses
from celery.exceptions import Retry
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command

from pricing import tasks
from pricing.feeds.lambda_cloud import API_URL
from pricing.feeds.skypilot import COMMITS_API, catalog_version
from pricing.models import FeedRun, Offer
from tests.pricing.helpers import fixture_json, fixture_text

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _only_lambda_configured(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PRICING_LAMBDA_API_KEY = "recorded-test-key"
    settings.PRICING_AZURE_ENABLED = False
    settings.PRICING_SKYPILOT_ENABLED = False
    settings.PRICING_GCP_API_KEY = ""
    settings.PRICING_AWS_REGIONS = []


@responses.activate
@pytest.mark.parametrize(("retries", "countdown"), [(0, 60), (2, 240), (5, 1920), (6, 3600), (20, 3600)])
def test_the_retry_countdown_celery_computes_doubles_and_is_capped(retries: int, countdown: int) -> None:
    # The countdown Celery's autoretry_for computes from the task's retry_backoff and retry_backoff_max, on the
    # task's retries-th failure (a worker's request), not a copy of the schedule.
    responses.get(API_URL, status=503)
    task = tasks.refresh_feed
    assert task.max_retries == tasks.MAX_RETRIES and task.autoretry_for == (tasks.FeedRunRetryable,)
    task.push_request(retries=retries, is_eager=False)
    try:
        with mock.patch.object(task, "retry", side_effect=Retry()) as retry, pytest.raises(Retry):
            task.run("lambda")
    finally:
        task.pop_request()
    assert retry.call_args.kwargs["countdown"] == countdown


def test_the_refresh_task_runs_under_the_named_time_limits_the_lock_outlasts() -> None:
    # The refresh task's limits were hard-coded (600/660 s) and the lock TTL could be set below them.
    task = tasks.refresh_feed
    assert task.soft_time_limit == django_settings.PRICING_REFRESH_SOFT_TIME_LIMIT_S
    assert task.time_limit == django_settings.PRICING_REFRESH_TIME_LIMIT_S
    assert task.time_limit <= django_settings.PRICING_LOCK_TTL_S


@responses.activate
def test_a_network_failure_asks_celery_to_retry_with_backoff() -> None:
    responses.get(API_URL, status=503)
    with mock.patch.object(tasks.refresh_feed, "retry", side_effect=Retry()) as retry, pytest.raises(Retry):
        tasks.refresh_feed("lambda")  # called as a worker would, not eagerly
    assert retry.call_args.kwargs["countdown"] >= 60
    assert isinstance(retry.call_args.kwargs["exc"], tasks.FeedRunRetryable)  # Celery's autoretry_for
    assert FeedRun.objects.get(feed="lambda").status == FeedRun.Status.FAILED
    assert len(responses.calls) == 1 + django_settings.PRICING_HTTP_RETRIES  # urllib3 retried each request first


@responses.activate
def test_the_last_retry_records_that_nothing_retries_until_the_next_scheduled_refresh() -> None:
    # An ops probe: after Celery used all retries the run still said "network error; will retry", while nothing
    # retried until beat's next tick (24 h for azure, 6 h for lambda).
    from pricing.selectors import run_error_category

    responses.get(API_URL, status=503)
    task = tasks.refresh_feed
    task.push_request(retries=tasks.MAX_RETRIES - 1, is_eager=False)
    try:
        with mock.patch.object(task, "retry", side_effect=Retry()), pytest.raises(Retry):
            task.run("lambda")
    finally:
        task.pop_request()
    before_last = FeedRun.objects.get(feed="lambda")
    assert before_last.retryable and run_error_category(before_last) == "network error; will retry"

    task.push_request(retries=tasks.MAX_RETRIES, is_eager=False)
    try:
        with pytest.raises(tasks.FeedRunRetryable):  # Celery's own retry() gives up and raises the error
            task.run("lambda")
    finally:
        task.pop_request()
    last = FeedRun.objects.filter(feed="lambda").latest("id")
    assert last.id != before_last.id and not last.retryable
    hours = django_settings.PRICING_REFRESH_HOURS["lambda"]
    expected = f"{(last.finished_at + dt.timedelta(hours=hours)):%Y-%m-%d %H:%M} UTC"
    assert last.error.endswith(f"; retries exhausted; next scheduled refresh by {expected}")
    assert run_error_category(last) == f"network error; retries exhausted; next scheduled refresh by {expected}"


@responses.activate
@pytest.mark.parametrize("how", ["refresh_prices", "eager task"])
def test_a_network_failure_nothing_retries_does_not_say_will_retry(how: str) -> None:
    # A hostile probe: `refresh_prices` and the in-process refresh (no Redis) said "network error; will retry",
    # though only a Celery worker's task retries.
    from pricing.selectors import run_error_category

    responses.get(API_URL, status=503)
    if how == "refresh_prices":
        with pytest.raises(CommandError):
            call_command("refresh_prices", "--feed", "lambda", stdout=StringIO())
    else:
        tasks.refresh_feed.apply(args=("lambda",))  # eager, as the page's refresh button runs it without Redis
    run = FeedRun.objects.get(feed="lambda")
    assert run.status == FeedRun.Status.FAILED and not run.retryable
    assert run_error_category(run) == "network error; not retried; refresh again"


def test_retries_exhausted_without_a_schedule_says_so_without_a_time(settings) -> None:  # type: ignore[no-untyped-def]
    from pricing.selectors import run_error_category
    from pricing.services import record_retries_exhausted

    settings.PRICING_REFRESH_HOURS = {}
    run = FeedRun.objects.create(feed="lambda", status=FeedRun.Status.FAILED, error="Lambda: 503", retryable=True)
    run = record_retries_exhausted(run=run)
    assert not run.retryable and FeedRun.objects.get(id=run.id).error == "Lambda: 503; retries exhausted"
    assert run_error_category(run) == "network error; retries exhausted"


@responses.activate
def test_a_data_failure_is_not_retried() -> None:
    responses.get(API_URL, body="{not json")
    with mock.patch.object(tasks.refresh_feed, "retry") as retry:
        result = tasks.refresh_feed("lambda")
    retry.assert_not_called()
    assert result["status"] == FeedRun.Status.FAILED


@responses.activate
def test_refresh_all_runs_every_feed_in_eager_mode() -> None:
    responses.get(API_URL, json=fixture_json("written/lambda_instance_types.json"))
    assert tasks.refresh_all.delay().get() == list(django_settings.PRICING_REFRESH_HOURS)
    statuses = dict(FeedRun.objects.values_list("feed", "status"))
    assert statuses["lambda"] == FeedRun.Status.SUCCESS
    assert statuses["aws"] == statuses["gcp"] == statuses["azure"] == FeedRun.Status.NOT_CONFIGURED
    assert Offer.objects.filter(feed="lambda").count() == 6


def test_beat_has_one_entry_per_feed() -> None:
    schedule = django_settings.CELERY_BEAT_SCHEDULE
    for feed in ("aws", "azure", "gcp", "lambda", "skypilot"):
        entry = schedule[f"refresh-prices-{feed}"]
        assert entry["task"] == "pricing.tasks.refresh_feed" and entry["args"] == (feed,)
        assert entry["schedule"] >= 3600


@responses.activate
def test_command_prints_progress_and_a_summary() -> None:
    responses.get(API_URL, json=fixture_json("written/lambda_instance_types.json"))
    out = StringIO()
    call_command("refresh_prices", "--feed", "lambda", stdout=out)
    text = out.getvalue()
    assert "lambda    [" in text and "100%" in text
    assert "lambda: Success: 8 fetched, 6 accepted, 2 rejected; 6 new" in text
    assert "unknown_gpu x1" in text


@responses.activate
def test_command_fails_loudly_when_a_feed_fails_and_keeps_offers() -> None:
    responses.get(API_URL, json=fixture_json("written/lambda_instance_types.json"))
    call_command("refresh_prices", "--feed", "lambda", stdout=StringIO())
    responses.replace(responses.GET, API_URL, status=500)
    out = StringIO()
    with pytest.raises(CommandError, match="lambda"):
        call_command("refresh_prices", "--feed", "lambda", stdout=out)
    assert "HTTP 500" in out.getvalue()
    assert Offer.objects.filter(feed="lambda", withdrawn_at__isnull=True).count() == 6


@responses.activate
def test_command_refreshes_each_skypilot_cloud_and_names_the_one_that_failed(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PRICING_SKYPILOT_ENABLED = True
    settings.PRICING_SKYPILOT_CLOUDS = ["cudo", "runpod"]
    base = settings.PRICING_SKYPILOT_CATALOG_URL
    responses.get(f"{base}/v8/cudo/vms.csv", body=fixture_text("skypilot_cudo_v8_vms.csv"))
    responses.get(f"{base}/v8/runpod/vms.csv", status=404)
    responses.get(COMMITS_API, status=403)  # rate-limited: the offers stay, their date is unknown
    out = StringIO()
    call_command("refresh_prices", "--feed", "skypilot", stdout=out)
    text = out.getvalue()
    assert "skypilot:cudo: Success: 6 fetched, 6 accepted" in text
    assert "skypilot:runpod: Not configured" in text and "no v8 catalog for 'runpod'" in text
    assert "catalog file date unknown" in Offer.objects.filter(feed="skypilot:cudo").first().source


@responses.activate
def test_command_refreshes_one_skypilot_cloud_by_the_name_the_feeds_list_gives_it(settings) -> None:  # type: ignore[no-untyped-def]
    # README and /api/v1/feeds name each cloud `skypilot:<cloud>`; `--feed skypilot:lambda` was an argparse error.
    settings.PRICING_SKYPILOT_ENABLED = True
    base = settings.PRICING_SKYPILOT_CATALOG_URL
    responses.get(f"{base}/{catalog_version('lambda')}/lambda/vms.csv", body=fixture_text("skypilot_lambda_v8_vms.csv"))
    responses.get(COMMITS_API, status=403)
    out = StringIO()
    call_command("refresh_prices", "--feed", "skypilot:lambda", stdout=out)
    assert "skypilot:lambda: Success: " in out.getvalue()
    assert Offer.objects.filter(feed="skypilot:lambda", instance_type="gpu_1x_h100_sxm5").exists()


@pytest.mark.parametrize(
    ("name", "message"),
    [("skypilot:vst", r"--feed: skypilot has no part 'vst'; known: .*skypilot:vast"), ("nosuch", "unknown feed")],
)
def test_command_refuses_a_feed_or_cloud_it_does_not_know_naming_the_known_ones(name: str, message: str) -> None:
    with pytest.raises(CommandError, match=message) as caught:
        call_command("refresh_prices", "--feed", name, stdout=StringIO())
    assert caught.value.returncode == 2
    assert not FeedRun.objects.exists()


@responses.activate
def test_a_database_error_while_saving_is_one_line_and_the_next_feed_still_runs(settings, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # An ops probe: a statement timeout while saving printed 14 traceback frames ending in QueryCanceled, not the
    # README's 'N feed(s) did not refresh' line; the run itself was recorded failed and the offers kept.
    from django.db import OperationalError

    import pricing.services

    settings.PRICING_SKYPILOT_ENABLED = True
    settings.PRICING_SKYPILOT_CLOUDS = ["cudo", "runpod"]
    base = settings.PRICING_SKYPILOT_CATALOG_URL
    responses.get(f"{base}/v8/cudo/vms.csv", body=fixture_text("skypilot_cudo_v8_vms.csv"))
    responses.get(f"{base}/v8/runpod/vms.csv", body=fixture_text("skypilot_cudo_v8_vms.csv").replace("cudo", "runpod"))
    responses.get(COMMITS_API, status=403)
    real = pricing.services.ingest_offers

    def timing_out(**kwargs):  # type: ignore[no-untyped-def]
        if kwargs["feed"] == "skypilot:cudo":
            raise OperationalError("canceling statement due to statement timeout\nCONTEXT:  COPY pricing_offer, line 1")
        return real(**kwargs)

    monkeypatch.setattr(pricing.services, "ingest_offers", timing_out)
    out = StringIO()
    with pytest.raises(CommandError, match=r"^1 feed\(s\) did not refresh: skypilot:cudo \(previous offers kept\)$"):
        call_command("refresh_prices", "--feed", "skypilot", stdout=out)
    text = out.getvalue()
    assert (
        "skypilot:cudo: Failed - database error, nothing changed: OperationalError: canceling statement due to "
        "statement timeout\n" in text
    )
    assert "CONTEXT" not in text and "skypilot:runpod: Success" in text
    assert FeedRun.objects.get(feed="skypilot:cudo").status == FeedRun.Status.FAILED
    assert not Offer.objects.filter(feed="skypilot:cudo").exists()
