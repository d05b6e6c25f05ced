"""The partial-catalog guard (PRICING_MIN_FRACTION_OF_LAST_RUN) with the real vast v8 rows
(fixtures/skypilot_vast_v8_vms.csv): imports never become its baseline, and an operator can accept a
catalog that shrank for good once (`refresh_prices --accept-smaller FEED`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import responses
from django.conf import settings
from django.core.management import CommandError, call_command

from pricing.models import FeedRun, Offer
from pricing.services import feed_import, feed_refresh
from tests.pricing.helpers import fixture_text

pytestmark = pytest.mark.django_db
LINES = fixture_text("skypilot_vast_v8_vms.csv").splitlines(keepends=True)
HEADER, ROWS = LINES[0], LINES[1:]  # 13 rows: 13 on-demand offers (SpotPrice 0.00: no spot offer)


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


def _live(rows: list[str], *, accept_smaller: bool = False) -> FeedRun:
    with _catalog(rows):
        return feed_refresh(name="skypilot:vast", accept_smaller=accept_smaller)


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
    assert "2 valid offers, 15% of the 13 of the last successful refresh" in run.error
    assert _live_offers() == 13


def test_a_catalog_that_shrank_for_good_is_refused_until_the_operator_accepts_it_once() -> None:
    _live(ROWS)
    for _ in range(3):
        refused = _live(ROWS[:5])
        assert refused.status == FeedRun.Status.REJECTED
    assert "If the catalog shrank for good" in refused.error
    assert "python manage.py refresh_prices --accept-smaller skypilot:vast" in refused.error
    accepted = _live(ROWS[:5], accept_smaller=True)
    assert (accepted.status, accepted.accepted, accepted.withdrawn) == (FeedRun.Status.SUCCESS, 5, 8)
    assert accepted.warnings[0].startswith("accepted on request (--accept-smaller): 5 valid offers, 38% of the 13")
    # The accepted run is the new baseline: the same catalog passes without the option.
    assert _live(ROWS[:5]).status == FeedRun.Status.SUCCESS
    assert _live_offers() == 5


def test_accepting_a_smaller_catalog_still_refuses_one_with_no_valid_offers() -> None:
    _live(ROWS)
    run = _live([], accept_smaller=True)
    assert run.status == FeedRun.Status.REJECTED and "no valid offers" in run.error
    assert _live_offers() == 13


def test_the_command_accepts_a_smaller_catalog_of_the_one_feed_it_names() -> None:
    _live(ROWS)
    with pytest.raises(CommandError, match="skypilot:vast"), _catalog(ROWS[:5]):
        call_command("refresh_prices", "--feed", "skypilot", stdout=StringIO())
    out = StringIO()
    with _catalog(ROWS[:5]):
        call_command("refresh_prices", "--accept-smaller", "skypilot:vast", stdout=out)
    assert (
        "skypilot:vast: Success: 5 fetched, 5 accepted, 0 rejected;" in out.getvalue()
        and "8 withdrawn" in out.getvalue()
    )
    assert _live_offers() == 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--accept-smaller", "skypilot"], "takes one feed; skypilot is refreshed as skypilot:vast"),
        (["--accept-smaller", "nosuch"], "unknown feed 'nosuch'"),
        (["--accept-smaller", "aws", "--feed", "aws"], "leave out --feed"),
    ],
)
def test_the_command_refuses_an_accept_smaller_that_names_no_single_feed(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("refresh_prices", *args, stdout=StringIO())
