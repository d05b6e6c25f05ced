"""The /prices/ page, the offers/feeds API and the admin, on the bundled data."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
import responses
from django.conf import settings as django_settings
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from pricing.feeds.lambda_cloud import API_URL
from pricing.models import FeedRun, HardwareQuote, Offer, PriceObservation
from pricing.selectors import offer_history
from tests.pricing.helpers import FIXTURES, fixture_json, lambda_h100_catalog

pytestmark = pytest.mark.django_db
CONTRACT_FIELDS = [
    "provider",
    "instance",
    "region",
    "market",
    "gpu",
    "gpu_count",
    "usd_per_hour",
    "usd_per_gpu_hour",
    "observed_at",
    "source",
]


def test_price_page_lists_snapshot_offers_with_sources_and_dates(client: Client, bundled: str) -> None:
    response = client.get("/prices/")
    assert response.status_code == 200
    body = response.content.decode()
    assert 'data-testid="price-freshness"' in body
    assert "Bundled snapshot compiled 2026-12-02, not live prices" in body
    assert "date unknown (public catalog, compiled 2026-12-02)" in body
    assert "2026-01-21" in body  # dated AWS rows keep their own date
    assert "live feed" not in body
    assert "bundled, compiled 2026-12-02" in body  # the feed status names the snapshot's compile date
    assert "not configured" in body
    assert "Refresh now" not in body  # staff only


def test_filters_and_sort(client: Client, bundled: str) -> None:
    response = client.get(
        "/prices/", {"gpu": "h100-sxm", "provider": "aws", "market": "on_demand", "sort": "-usd_per_gpu_hour"}
    )
    assert response.status_code == 200
    offers = list(response.context["page"])
    assert offers and all(o.gpu == "h100-sxm" and o.provider.slug == "aws" and o.market == "on_demand" for o in offers)
    prices = [o.usd_per_gpu_hour for o in offers]
    assert prices == sorted(prices, reverse=True)
    regional = client.get("/prices/", {"gpu": "h100-sxm", "region": "us-east-1"})
    assert {o.region for o in regional.context["page"]} == {"us-east-1"}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"gpu": "h100-xl"}, "Select a valid choice"),
        ({"market": "forever"}, "Select a valid choice"),
        ({"provider": "nowhere"}, "Select a valid choice"),
        ({"region": "<script>"}, "A region is letters"),
        ({"sort": "drop table"}, "Select a valid choice"),
        # A hostile probe: ?gpu=h100-sxm&gpu=l4 showed the l4 offers alone (the API answers 400 since today).
        ({"gpu": ["h100-sxm", "l4"]}, "Given more than once"),
    ],
)
def test_bad_filters_answer_400_with_a_message_not_a_500(
    client: Client, bundled: str, params: dict, message: str
) -> None:
    response = client.get("/prices/", params)
    assert response.status_code == 400
    assert message in response.content.decode()


def test_page_number_out_of_range_shows_the_last_page(client: Client, bundled: str) -> None:
    assert client.get("/prices/", {"page": "9999"}).status_code == 200
    assert client.get("/prices/", {"page": "abc"}).status_code == 200


def test_offer_history_chart_is_inline_svg(client: Client, bundled: str) -> None:
    offer = Offer.objects.filter(provider__slug="aws").first()
    PriceObservation.objects.create(
        offer=offer, usd_per_hour=offer.usd_per_hour * 2, usd_per_gpu_hour=offer.usd_per_gpu_hour * 2, source="test"
    )
    response = client.get(f"/prices/offers/{offer.pk}/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "<svg" in body and "<polyline" in body and body.count("<circle") == 2
    assert "http://" not in body.split("<svg", 1)[1].split("</svg>")[0].replace("http://www.w3.org/2000/svg", "")
    assert client.get("/prices/offers/999999/").status_code == 404


def _history_everywhere(client: Client, offer: Offer) -> tuple[list[float], list[float], list[float], list[float]]:
    """USD per GPU-hour of each history point as the selector, the page's table, its chart and the API list them."""
    points = [price for _, price in offer_history(offer=offer)]
    body = client.get(f"/prices/offers/{offer.pk}/").content.decode()
    table = body.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = [float(row.split("</td><td>$")[2].split("<")[0]) for row in table.split("<tr>")[1:]]
    chart = [float(dot.split(": $", 1)[1].split("/")[0]) for dot in body.split("<circle")[1:]]
    api = [row["usd_per_gpu_hour"] for row in client.get(f"/api/v1/offers/{offer.pk}/history").json()["results"]]
    return points, rows, chart, api


def test_the_history_ends_at_the_current_price_not_at_the_snapshots_undated_row(
    client: Client,
    user,  # type: ignore[no-untyped-def]
    bundled: str,
    tmp_path: Path,
) -> None:
    # The bundled snapshot's undated $2.99 was placed at its recording time (bootstrap, after the files' dates), so
    # the chart ended at $2.99 while the page header said $2.20.
    now = timezone.now().replace(microsecond=0)
    for n, (price, age) in enumerate((("16.0", 2), ("17.6", 1))):
        path = lambda_h100_catalog(tmp_path / f"v{n}.csv", usd_per_hour=price, mtime=now - dt.timedelta(days=age))
        call_command("import_prices", "--feed", "skypilot", "--cloud", "lambda", str(path), stdout=StringIO())
    offer = Offer.objects.get(provider__slug="lambda", instance_type="gpu_8x_h100_sxm5", region="europe-central-1")
    assert float(offer.usd_per_gpu_hour) == 2.2
    client.force_login(user)
    assert _history_everywhere(client, offer) == ([2.99, 2.0, 2.2],) * 4
    moments = [when for when, _ in offer_history(offer=offer)]
    assert moments == sorted(moments) and moments[-1] == now - dt.timedelta(days=1)


def test_history_rows_recorded_out_of_observed_order_are_listed_in_observed_order(
    client: Client,
    user,  # type: ignore[no-untyped-def]
    bundled: str,
) -> None:
    # Rows an older import appended last (before such imports were refused) were listed in recording order by the
    # page's table and the API and in observed order by the chart.
    offer = Offer.objects.filter(provider__slug="aws").first()
    now = timezone.now()
    for days, price in ((1, "5"), (3, "4")):
        PriceObservation.objects.create(
            offer=offer,
            usd_per_hour=Decimal(price) * offer.gpu_count,
            usd_per_gpu_hour=Decimal(price),
            observed_at=now - dt.timedelta(days=days),
            source="test",
        )
    client.force_login(user)
    first = float(offer.history.order_by("id").first().usd_per_gpu_hour)
    assert _history_everywhere(client, offer) == ([first, 4.0, 5.0],) * 4


def test_only_staff_can_trigger_a_refresh(client: Client, user, bundled: str) -> None:  # type: ignore[no-untyped-def]
    client.force_login(user)
    response = client.post("/prices/refresh/", {"feed": "lambda"})
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert not FeedRun.objects.filter(feed="lambda").exists()
    assert client.get("/prices/refresh/").status_code == 405


@responses.activate
def test_staff_can_refresh_one_skypilot_cloud_from_the_page(
    client: Client,
    staff_user,  # type: ignore[no-untyped-def]
    bundled: str,
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    # The page offered the five feed names only, though the API and refresh_prices take skypilot:<cloud> (a feed
    # operator). No recorded response is registered: the fetch fails here, and the run says so for that cloud alone.
    client.force_login(staff_user)
    assert 'value="skypilot:runpod"' in client.get("/prices/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/prices/refresh/", {"feed": "skypilot:runpod"})
    assert response.status_code == 302 and response["Location"].endswith("/prices/#feeds")
    assert FeedRun.objects.filter(feed="skypilot:runpod").exists()
    assert not FeedRun.objects.filter(feed="skypilot:vast").exists()


@responses.activate
def test_staff_refresh_runs_the_feed_and_the_status_json_reports_it(
    client: Client,
    staff_user,  # type: ignore[no-untyped-def]
    bundled: str,
    settings,  # type: ignore[no-untyped-def]
    django_capture_on_commit_callbacks,  # type: ignore[no-untyped-def]
) -> None:
    settings.PRICING_LAMBDA_API_KEY = "recorded-test-key"
    responses.get(API_URL, json=fixture_json("written/lambda_instance_types.json"))
    client.force_login(staff_user)
    assert "Refresh now" in client.get("/prices/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/prices/refresh/", {"feed": "lambda"})
    assert response.status_code == 302 and response["Location"].endswith("/prices/#feeds")
    run = FeedRun.objects.get(feed="lambda")
    assert run.status == FeedRun.Status.SUCCESS
    status = client.get("/prices/feeds/status.json").json()
    lambda_feed = next(f for f in status["feeds"] if f["feed"] == "lambda")
    assert lambda_feed["last_run"]["status"] == "success" and lambda_feed["last_run"]["progress"]["done"] == 6
    assert status["running"] is False
    body = client.get("/prices/", {"provider": "lambda", "gpu": "h100-sxm"}).content.decode()
    assert "live feed" in body


def test_offers_api_needs_authentication(client: Client, bundled: str) -> None:
    assert client.get("/api/v1/offers").status_code in (401, 403)
    assert client.get("/api/v1/feeds").status_code in (401, 403)


def test_offers_api_fields_filters_and_pagination(client: Client, user, bundled: str) -> None:  # type: ignore[no-untyped-def]
    client.force_login(user)
    response = client.get("/api/v1/offers", {"gpu": "h100-sxm", "market": "on_demand"})
    assert response.status_code == 200
    data = response.json()
    assert data["count"] == Offer.objects.filter(gpu="h100-sxm", market="on_demand").count()
    first = data["results"][0]
    assert list(first) == ["id", *CONTRACT_FIELDS]
    assert first["gpu"] == "h100-sxm" and first["market"] == "on_demand"
    prices = [row["usd_per_gpu_hour"] for row in data["results"]]
    assert prices == sorted(prices)
    everything = client.get("/api/v1/offers").json()
    assert everything["count"] == Offer.objects.count() and everything["next"]
    aws = client.get("/api/v1/offers", {"provider": "aws", "gpu": "h100-sxm"}).json()["results"]
    assert {row["provider"] for row in aws} == {"aws"}
    assert all(row["observed_at"].startswith("2026-01-21") for row in aws)


@pytest.mark.parametrize(
    ("params", "field"),
    [({"gpu": "h100-xl"}, "gpu"), ({"market": "forever"}, "market"), ({"provider": "nowhere"}, "provider")],
)
def test_offers_api_rejects_bad_filters_naming_the_field(
    client: Client, user, bundled: str, params: dict, field: str
) -> None:  # type: ignore[no-untyped-def]
    client.force_login(user)
    response = client.get("/api/v1/offers", params)
    assert response.status_code == 400
    assert field in response.content.decode()


def test_feeds_api_lists_every_feed_and_the_snapshot(client: Client, user, bundled: str) -> None:  # type: ignore[no-untyped-def]
    client.force_login(user)
    FeedRun.objects.create(
        feed="aws",
        status=FeedRun.Status.FAILED,
        error="AWS get_products: ThrottlingException",
        finished_at=timezone.now(),
    )
    feeds = {feed["name"]: feed for feed in client.get("/api/v1/feeds").json()}
    clouds = {f"skypilot:{cloud}" for cloud in django_settings.PRICING_SKYPILOT_CLOUDS}
    assert set(feeds) == {"aws", "azure", "gcp", "lambda", "skypilot", "snapshot"} | clouds
    # A signed-in user sees a category; the error text can name hosts and exception details (staff only).
    assert feeds["aws"]["status"] == "failed" and feeds["aws"]["error"] == "failed"
    assert "Throttling" not in json.dumps(feeds)
    assert feeds["gcp"]["status"] == "never_run" and feeds["gcp"]["configured"] is False
    assert feeds["snapshot"]["status"] == "success" and feeds["snapshot"]["last_run"]["accepted"] == 485


def test_feeds_api_lists_a_skypilot_cloud_that_was_imported_though_not_configured(
    client: Client,
    user,  # type: ignore[no-untyped-def]
    bundled: str,
) -> None:
    # `import_prices --feed skypilot --cloud lambda` wrote offers of feed skypilot:lambda, which no list showed.
    assert "lambda" not in django_settings.PRICING_SKYPILOT_CLOUDS
    call_command(
        "import_prices",
        "--feed",
        "skypilot",
        "--cloud",
        "lambda",
        str(FIXTURES / "skypilot_lambda_v8_vms.csv"),
        stdout=StringIO(),
    )
    client.force_login(user)
    feeds = {feed["name"]: feed for feed in client.get("/api/v1/feeds").json()}
    assert feeds["skypilot:lambda"]["status"] == "success"
    assert feeds["skypilot:lambda"]["last_run"]["accepted"] == Offer.objects.filter(feed="skypilot:lambda").count() > 0
    names = list(feeds)
    assert names.index("skypilot") < names.index("skypilot:lambda") < names.index("snapshot")


def test_feeds_api_shows_staff_the_error_text(client: Client, staff_user, bundled: str) -> None:  # type: ignore[no-untyped-def]
    client.force_login(staff_user)
    FeedRun.objects.create(
        feed="aws",
        status=FeedRun.Status.FAILED,
        error="AWS get_products: ThrottlingException",
        finished_at=timezone.now(),
    )
    feeds = {feed["name"]: feed for feed in client.get("/api/v1/feeds").json()}
    assert "Throttling" in feeds["aws"]["error"] and "Throttling" in feeds["aws"]["last_run"]["error"]


def test_hardware_quotes_are_editable_in_the_admin(client: Client, staff_user, bundled: str) -> None:  # type: ignore[no-untyped-def]
    staff_user.is_superuser = True
    staff_user.save()
    client.force_login(staff_user)
    quote = HardwareQuote.objects.get(gpu="b200", gpus_per_server=8)
    page = client.get(f"/admin/pricing/hardwarequote/{quote.pk}/change/")
    assert page.status_code == 200
    form = {
        "gpu": "b200",
        "gpus_per_server": 8,
        "name": quote.name,
        "usd": "455000",
        "quoted_on": "2026-11-30",
        "source": "vendor quote #123",
        "power_kw": "14.3",
        "idle_power_kw": "",
        "networking_usd_per_node": "100000",
        "notes": "",
    }
    response = client.post(f"/admin/pricing/hardwarequote/{quote.pk}/change/", form)
    assert response.status_code == 302
    quote.refresh_from_db()
    assert quote.usd == Decimal("455000") and quote.source == "vendor quote #123"
    assert client.get("/admin/pricing/offer/").status_code == 200


def test_the_page_shows_a_failed_runs_category_to_everyone_and_its_error_to_staff(
    client: Client,
    staff_user,  # type: ignore[no-untyped-def]
    bundled: str,
) -> None:
    # An ops probe: /prices/ printed the raw error (host, port and URL of the price API) to anyone.
    error = (
        "Lambda instance-types: ConnectionError: HTTPConnectionPool(host='10.1.2.3', port=8731): Max retries "
        "exceeded with url: /api/v1/instance-types"
    )
    FeedRun.objects.create(feed="lambda", status=FeedRun.Status.FAILED, error=error, retryable=True)
    anonymous = client.get("/prices/").content.decode()
    assert "10.1.2.3" not in anonymous and "HTTPConnectionPool" not in anonymous
    assert "network error; will retry" in anonymous
    client.force_login(staff_user)
    assert "10.1.2.3" in client.get("/prices/").content.decode()


def test_a_skipped_duplicate_refresh_does_not_hide_the_failure_of_the_run_it_collided_with(
    client: Client,
    user,  # type: ignore[no-untyped-def]
    bundled: str,
) -> None:
    # An ops probe: a duplicate refresh, started while the real one ran, was listed as the feed's status
    # ("another refresh was running") until the next retry, hiding the real run's network failure.
    failed = FeedRun.objects.create(
        feed="lambda", status=FeedRun.Status.FAILED, error="Lambda: ConnectionError", retryable=True
    )
    skipped = "another refresh of this feed is running; this one did nothing"
    FeedRun.objects.create(feed="lambda", status=FeedRun.Status.SKIPPED, error=skipped)
    FeedRun.objects.create(feed="aws", status=FeedRun.Status.SKIPPED, error=skipped)
    client.force_login(user)
    feeds = {feed["name"]: feed for feed in client.get("/api/v1/feeds").json()}
    assert feeds["lambda"]["status"] == "failed" and feeds["lambda"]["last_run"]["id"] == failed.id
    assert feeds["lambda"]["error"] == "network error; will retry"
    # A feed whose only runs were skipped still says so.
    assert feeds["aws"]["status"] == "skipped"


@responses.activate
@pytest.mark.parametrize(
    ("feed", "command"),
    [("", "python manage.py refresh_prices"), ("skypilot", "python manage.py refresh_prices --feed skypilot")],
)
def test_without_a_task_queue_refreshing_every_feed_from_the_page_is_refused_naming_the_command(
    client: Client,
    staff_user,  # type: ignore[no-untyped-def]
    bundled: str,
    settings,  # type: ignore[no-untyped-def]
    feed: str,
    command: str,
) -> None:
    # An ops probe: without Redis (tasks in-process) "Refresh now" with "All feeds" ran every feed inside the request,
    # 159 s offline, then said "Refresh of all feeds started; progress shows under Feed status" though every feed had
    # already finished (and failed). No response is registered: a fetch would fail here, and none may start.
    settings.CELERY_TASK_ALWAYS_EAGER = True
    client.force_login(staff_user)
    before = FeedRun.objects.count()
    page = client.post("/prices/refresh/", {"feed": feed}, follow=True)
    assert page.status_code == 200 and page.redirect_chain[-1][0].endswith("/prices/#feeds")
    body = page.content.decode()
    assert f"`{command}`" in body and "not started" in body
    assert "started; progress shows" not in body
    assert FeedRun.objects.count() == before and not responses.calls


@responses.activate
def test_without_a_task_queue_one_feed_refreshed_from_the_page_says_it_has_finished(
    client: Client,
    staff_user,  # type: ignore[no-untyped-def]
    bundled: str,
    settings,  # type: ignore[no-untyped-def]
) -> None:
    # It runs inside the request (one feed, bounded by PRICING_HTTP_TIMEOUT_S and its retries), so by the time the
    # page shows the message it has finished: "started; progress shows under Feed status" was untrue.
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.PRICING_LAMBDA_API_KEY = "recorded-test-key"
    responses.get(API_URL, json=fixture_json("written/lambda_instance_types.json"))
    client.force_login(staff_user)
    body = client.post("/prices/refresh/", {"feed": "lambda"}, follow=True).content.decode()
    assert "Refresh of lambda ran in this request and has finished" in body and "progress shows" not in body
    assert FeedRun.objects.get(feed="lambda").status == FeedRun.Status.SUCCESS
