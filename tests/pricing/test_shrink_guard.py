"""The partial-catalog guard (PRICING_MIN_FRACTION_OF_LAST_RUN) with the real vast v8 rows
(fixtures/skypilot_vast_v8_vms.csv): imports never become its baseline."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import responses
from django.conf import settings

from pricing.models import FeedRun, Offer
from pricing.services import feed_import, feed_refresh
from tests.pricing.helpers import fixture_text

pytestmark = pytest.mark.django_db
LINES = fixture_text("skypilot_vast_v8_vms.csv").splitlines(keepends=True)
HEADER, ROWS = LINES[0], LINES[1:]  # 13 rows: 13 on-demand offers (SpotPrice 0.00: non_positive_price)


@pytest.fixture(autouse=True)
def _vast(settings: Any) -> None:  # pytest-django's settings fixture
    settings.PRICING_SKYPILOT_ENABLED = True
    settings.PRICING_SKYPILOT_CLOUDS = ["vast"]
    settings.PRICING_HTTP_RETRIES = 0


@contextlib.contextmanager
def _catalog(rows: list[str]) -> Iterator[None]:
    """The vast catalog with these rows, from SkyPilot's GitHub and its mirror, dated by Last-Modified."""
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        for base in (settings.PRICING_SKYPILOT_CATALOG_URL, settings.PRICING_SKYPILOT_MIRROR_URL):
            mock.get(
                f"{base.rstrip('/')}/v8/vast/vms.csv",
                body=HEADER + "".join(rows),
                headers={"Last-Modified": "Tue, 01 Dec 2026 10:00:00 GMT"},
            )
        yield


def _live(rows: list[str]) -> FeedRun:
    with _catalog(rows):
        return feed_refresh(name="skypilot:vast")


def _live_offers() -> int:
    return Offer.objects.filter(feed="skypilot:vast", withdrawn_at__isnull=True).count()


def test_an_import_is_not_the_size_a_later_live_refresh_is_checked_against(tmp_path: Path) -> None:
    assert _live(ROWS).accepted == 13
    sheet = tmp_path / "one.csv"
    sheet.write_text(HEADER + ROWS[3])  # a one-row price sheet
    imported = feed_import(name="skypilot", paths=[sheet], cloud="vast").run
    assert (imported.status, imported.kind, imported.accepted) == (FeedRun.Status.SUCCESS, FeedRun.Kind.IMPORT, 1)
    # A truncated catalog (2 of 13 rows, HTTP 200): it passed against the import's 1 and withdrew 11 good offers.
    run = _live(ROWS[:2])
    assert run.status == FeedRun.Status.REJECTED, run.error
    assert "2 valid offers, 15% of the 13 of the last successful run" in run.error
    assert _live_offers() == 13
