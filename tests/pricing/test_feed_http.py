"""Feed HTTP: urllib3 retries each request (backoff, Retry-After), so a paged pull survives a 503."""

from __future__ import annotations

from pathlib import Path

import pytest
import responses
from urllib3.util.retry import Retry

from pricing.feeds import azure, http
from pricing.feeds.azure import API_URL, AzureFeed
from pricing.models import FeedRun, Offer
from pricing.services import feed_refresh
from tests.pricing.helpers import fixture_json

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db
NEXT = "https://prices.azure.com:443/api/retail/prices"


@responses.activate
def test_one_503_on_page_2_is_retried_in_place_without_restarting_the_pull(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(azure, "from_settings", lambda: AzureFeed(enabled=True, regions=["eastus"], page_size=5))
    responses.get(API_URL, json=fixture_json("written/azure_page1.json"))
    responses.get(NEXT, status=503, headers={"Retry-After": "1"})  # page 2, first try
    responses.get(NEXT, json=fixture_json("written/azure_page2_empty_next_link.json"))  # page 2, the retry
    responses.get(NEXT, json=fixture_json("written/azure_page3_empty.json"))
    run = feed_refresh(name="azure")
    assert run.status == FeedRun.Status.SUCCESS, run.error
    urls = [call.request.url for call in responses.calls]
    assert len(urls) == 4 and urls[0].startswith(API_URL)
    assert [call.response.status_code for call in responses.calls] == [200, 503, 200, 200]
    assert urls[1] == urls[2]  # the same page asked again, page 1 not asked again
    assert sum(url.startswith(API_URL + "?") for url in urls) == 1
    assert run.accepted == 6 and Offer.objects.count() == 6


@responses.activate
def test_when_the_retries_run_out_the_run_fails_as_retryable(monkeypatch: pytest.MonkeyPatch, settings) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(azure, "from_settings", lambda: AzureFeed(enabled=True, regions=["eastus"], page_size=5))
    responses.get(API_URL, json=fixture_json("written/azure_page1.json"))
    responses.get(NEXT, status=503)
    run = feed_refresh(name="azure", worker_retries=True)  # retryable only where a Celery worker retries it
    assert run.status == FeedRun.Status.FAILED and run.retryable
    assert "page 2" in run.error and "HTTP 503" in run.error
    assert len(responses.calls) == 1 + 1 + settings.PRICING_HTTP_RETRIES


def test_the_policy_backs_off_exponentially_and_honours_retry_after_up_to_a_cap(settings) -> None:  # type: ignore[no-untyped-def]
    settings.PRICING_HTTP_BACKOFF_S = 2
    settings.PRICING_HTTP_RETRY_AFTER_MAX_S = 120
    policy = http.retry_policy()
    adapter = http.session().get_adapter("https://prices.azure.com/")
    assert isinstance(adapter.max_retries, Retry) and adapter.max_retries.total == settings.PRICING_HTTP_RETRIES
    assert policy.is_retry("GET", 503, has_retry_after=True) and policy.is_retry("GET", 429)
    assert not policy.is_retry("GET", 404) and not policy.is_retry("POST", 503)
    assert policy.respect_retry_after_header
    assert policy.parse_retry_after("7") == 7
    assert policy.parse_retry_after("86400") == 120  # a server asking for a day waits the cap
    later = policy.increment("GET", "/x").increment("GET", "/x")
    assert later.get_backoff_time() == 4  # 2 s x 2^(2-1)


@pytest.mark.parametrize(("factor", "waits"), [(2, [0, 4, 8, 16]), (30, [0, 60, 120, 120])])
def test_the_backoff_waits_are_the_ones_env_example_documents(settings, factor: int, waits: list[float]) -> None:  # type: ignore[no-untyped-def]
    # .env.example said "the first retry's backoff, doubled for each further retry": urllib3 retries the first failure
    # at once, then waits 2x, 4x... the factor, each capped at 120 s (worker log: 0, 4, 8 s with the default 2).
    settings.PRICING_HTTP_RETRIES = 4
    settings.PRICING_HTTP_BACKOFF_S = factor
    policy, seen = http.retry_policy(), []
    for _ in waits:
        policy = policy.increment("GET", "/x")
        seen.append(policy.get_backoff_time())
    assert seen == waits
    documented = (ROOT / ".env.example").read_text()
    assert "the first retry follows at once, the next after 2x this" in documented
    assert "capped at 120 s" in documented and "Default 2: waits 0, 4, 8 s" in documented
