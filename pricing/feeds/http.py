"""HTTP for the REST feeds: one place that turns transport failures into the feed errors.

Each request is retried by urllib3 on the spot (connection errors, 429 and 5xx), with exponential
backoff and the server's `Retry-After` honoured up to a cap, so one 503 on page 2 of a paged pull
costs a pause, not the pages already read; only when the retries run out does the run fail (and
the Celery task retry it later, from the start).
"""

from __future__ import annotations

from typing import Any

import requests
from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from core.jsontext import parse_json_text
from pricing.feeds.base import FeedDataError, FeedError, FeedNetworkError, FeedNotFound

USER_AGENT = "gpu-advisor-price-feed/1.0"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


def retry_policy() -> Retry:
    """The per-request retry: PRICING_HTTP_RETRIES attempts after the first. urllib3 retries the first failure at
    once, then waits PRICING_HTTP_BACKOFF_S x 2^(n-1) before the n-th retry (n >= 2), capped at its backoff_max
    (120 s); a Retry-After replaces the wait, honoured up to PRICING_HTTP_RETRY_AFTER_MAX_S."""
    return Retry(
        total=settings.PRICING_HTTP_RETRIES,
        backoff_factor=settings.PRICING_HTTP_BACKOFF_S,
        status_forcelist=RETRY_STATUSES,
        allowed_methods=frozenset({"GET"}),
        respect_retry_after_header=True,
        retry_after_max=settings.PRICING_HTTP_RETRY_AFTER_MAX_S,
        raise_on_status=False,  # the last 429/5xx response is returned, and get() names it
    )


def session() -> requests.Session:
    http = requests.Session()
    http.headers["User-Agent"] = USER_AGENT
    adapter = HTTPAdapter(max_retries=retry_policy())
    http.mount("https://", adapter)
    http.mount("http://", adapter)
    return http


def get(http: requests.Session, url: str, *, what: str, **kwargs: Any) -> requests.Response:
    """GET with the configured timeout and retries; network trouble, 429 and 5xx raise FeedNetworkError."""
    try:
        response = http.get(url, timeout=settings.PRICING_HTTP_TIMEOUT_S, **kwargs)
    except requests.Timeout as error:
        raise FeedNetworkError(f"{what}: timed out after {settings.PRICING_HTTP_TIMEOUT_S} s ({error})") from error
    except requests.RequestException as error:
        raise FeedNetworkError(f"{what}: {type(error).__name__}: {error}") from error
    if response.status_code == 429 or response.status_code >= 500:
        raise FeedNetworkError(f"{what}: HTTP {response.status_code} {response.reason}")
    if response.status_code in (401, 403):
        raise FeedError(f"{what}: HTTP {response.status_code}: credentials refused")
    if response.status_code == 404:
        raise FeedNotFound(f"{what}: HTTP 404 {response.reason} ({url})")
    if response.status_code >= 400:
        raise FeedError(f"{what}: HTTP {response.status_code} {response.reason}")
    return response


def get_json(http: requests.Session, url: str, *, what: str, **kwargs: Any) -> Any:
    response = get(http, url, what=what, **kwargs)
    try:
        return parse_json_text(response.content)  # bounded in depth and digits, as a saved payload is
    except ValueError as error:
        raise FeedDataError(f"{what}: malformed JSON ({error})") from error
