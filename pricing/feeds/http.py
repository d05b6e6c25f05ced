"""HTTP for the REST feeds: one place that turns transport failures into the feed errors."""

from __future__ import annotations

from typing import Any

import requests
from django.conf import settings

from pricing.feeds.base import FeedDataError, FeedError, FeedNetworkError

USER_AGENT = "gpu-advisor-price-feed/1.0"


def session() -> requests.Session:
    http = requests.Session()
    http.headers["User-Agent"] = USER_AGENT
    return http


def get(http: requests.Session, url: str, *, what: str, **kwargs: Any) -> requests.Response:
    """GET with the configured timeout; network trouble, 429 and 5xx raise FeedNetworkError."""
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
    if response.status_code >= 400:
        raise FeedError(f"{what}: HTTP {response.status_code} {response.reason}")
    return response


def get_json(http: requests.Session, url: str, *, what: str, **kwargs: Any) -> Any:
    response = get(http, url, what=what, **kwargs)
    try:
        return response.json()
    except ValueError as error:  # requests' JSONDecodeError is a ValueError
        raise FeedDataError(f"{what}: malformed JSON ({error})") from error
