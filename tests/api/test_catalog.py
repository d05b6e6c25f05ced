"""GPUs, hardware quotes and price history: filters, validation, CSV that parses back."""

from __future__ import annotations

import csv
import datetime as dt
import io
from decimal import Decimal

import pytest

from pricing.models import HardwareQuote, Offer, PriceObservation, Provider
from tests.api.conftest import assert_problem

pytestmark = pytest.mark.django_db

UTC = dt.UTC


def _offer(provider: Provider, instance: str, market: str = "on_demand", gpu: str = "h100-sxm") -> Offer:
    now = dt.datetime(2026, 11, 1, tzinfo=UTC)
    return Offer.objects.create(
        provider=provider,
        instance_type=instance,
        region="us-east-1",
        market=market,
        gpu=gpu,
        gpu_count=Decimal(8),
        usd_per_hour=Decimal("80"),
        usd_per_gpu_hour=Decimal("10"),
        observed_at=now,
        source="test",
        feed="test",
        price_changed_at=now,
    )


def _observe(offer: Offer, when: dt.datetime, usd_per_gpu_hour: float) -> None:
    row = PriceObservation.objects.create(
        offer=offer,
        usd_per_hour=Decimal(str(usd_per_gpu_hour * 8)),
        usd_per_gpu_hour=Decimal(str(usd_per_gpu_hour)),
        observed_at=when,
        source="test",
    )
    PriceObservation.objects.filter(pk=row.pk).update(recorded_at=when)


@pytest.fixture
def history() -> dict[str, Offer]:
    aws = Provider.objects.create(slug="aws", name="AWS")
    lam = Provider.objects.create(slug="lambda", name="Lambda")
    a = _offer(aws, "p5.48xlarge")
    b = _offer(lam, "gpu_8x_h100", market="spot")
    _observe(a, dt.datetime(2026, 11, 1, 12, tzinfo=UTC), 10.0)
    _observe(a, dt.datetime(2026, 11, 3, 12, tzinfo=UTC), 8.0)
    _observe(b, dt.datetime(2026, 11, 2, 6, tzinfo=UTC), 4.0)
    # Withdrawn at the start of Nov 4: not in effect at the end of Nov 4.
    Offer.objects.filter(pk=b.pk).update(withdrawn_at=dt.datetime(2026, 11, 4, 1, tzinfo=UTC))
    return {"a": a, "b": b}


def test_gpu_daily_series_carries_prices_forward(alice, history) -> None:  # type: ignore[no-untyped-def]
    response = alice.get("/api/v1/gpus/h100-sxm/price-history?since=2026-10-31&until=2026-11-05")
    assert response.status_code == 200, response.content
    got = {
        row["date"]: (row["min_usd_per_gpu_hour"], row["max_usd_per_gpu_hour"], row["offers"])
        for row in response.json()
    }
    assert got == {
        "2026-11-01": (10.0, 10.0, 1),
        "2026-11-02": (4.0, 10.0, 2),
        "2026-11-03": (4.0, 8.0, 2),
        "2026-11-04": (8.0, 8.0, 1),
        "2026-11-05": (8.0, 8.0, 1),
    }
    spot_only = alice.get("/api/v1/gpus/h100-sxm/price-history?since=2026-11-01&until=2026-11-03&market=spot").json()
    assert [row["date"] for row in spot_only] == ["2026-11-02", "2026-11-03"]
    aws_only = alice.get("/api/v1/gpus/h100-sxm/price-history?since=2026-11-01&until=2026-11-02&provider=aws").json()
    assert [row["max_usd_per_gpu_hour"] for row in aws_only] == [10.0, 10.0]


def test_gpu_series_as_csv_parses_back(alice, history) -> None:  # type: ignore[no-untyped-def]
    url = "/api/v1/gpus/h100-sxm/price-history?since=2026-11-01&until=2026-11-05"
    as_json = alice.get(url).json()
    response = alice.get(url, HTTP_ACCEPT="text/csv")
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == len(as_json)
    for row, expected in zip(rows, as_json, strict=True):
        assert row["date"] == expected["date"]
        assert float(row["median_usd_per_gpu_hour"]) == expected["median_usd_per_gpu_hour"]
        assert int(row["offers"]) == expected["offers"]


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("since=yesterday", "since"),
        ("until=2026-13-01", "until"),
        ("since=2026-11-05&until=2026-11-01", "since"),
        ("since=2020-01-01&until=2026-11-01", "since"),
        ("market=cheap", "market"),
        # A hostile probe: date.fromisoformat took these though the message says YYYY-MM-DD.
        ("since=2026-W45", "since"),
        ("since=20261101", "since"),
        ("since=\uff12\uff10\uff12\uff16-11-01", "since"),
        ("until=2026-11-01T00:00:00Z", "until"),
    ],
)
def test_price_history_query_errors_name_the_parameter(alice, query, parameter) -> None:  # type: ignore[no-untyped-def]
    body = assert_problem(alice.get(f"/api/v1/gpus/h100-sxm/price-history?{query}"), 400, f"#/{parameter}")
    assert body["errors"][0]["parameter"] == parameter
    if "-W45" in query or "1101" in query or "\uff12" in query:
        assert "YYYY-MM-DD" in body["errors"][0]["detail"], body


def test_unknown_gpu_is_404(alice) -> None:  # type: ignore[no-untyped-def]
    assert_problem(alice.get("/api/v1/gpus/h900/price-history"), 404)
    assert_problem(alice.get("/api/v1/gpus/h900"), 404)


def test_offer_history(alice, history) -> None:  # type: ignore[no-untyped-def]
    body = alice.get(f"/api/v1/offers/{history['a'].pk}/history").json()
    assert [row["usd_per_gpu_hour"] for row in body["results"]] == [10.0, 8.0]
    assert_problem(alice.get("/api/v1/offers/999999/history"), 404)


def test_gpus_list_and_csv(alice) -> None:  # type: ignore[no-untyped-def]
    gpus = alice.get("/api/v1/gpus").json()
    ids = {gpu["id"] for gpu in gpus}
    assert {"h100-sxm", "a100-80gb", "mi300x", "rtx4090"} <= ids
    rows = list(csv.DictReader(io.StringIO(alice.get("/api/v1/gpus?format=csv").content.decode())))
    assert {row["id"] for row in rows} == ids
    h100 = next(row for row in rows if row["id"] == "h100-sxm")
    assert float(h100["peak_tflops.bf16"]) == next(g for g in gpus if g["id"] == "h100-sxm")["peak_tflops"]["bf16"]


def test_hardware_quotes_filter_and_paginate(alice) -> None:  # type: ignore[no-untyped-def]
    for gpu, n in (("h100-sxm", 3), ("a100-80gb", 2)):
        for i in range(n):
            HardwareQuote.objects.create(
                gpu=gpu,
                gpus_per_server=8,
                name=f"{gpu} server {i}",
                usd=Decimal("250000") + i,
                quoted_on=dt.date(2026, 1, 1 + i),
                source="test",
                power_kw=Decimal("10.2"),
            )
    all_quotes = alice.get("/api/v1/hardware-quotes").json()
    assert all_quotes["count"] == 5
    h100 = alice.get("/api/v1/hardware-quotes?gpu=h100-sxm&page_size=2").json()
    assert h100["count"] == 3 and len(h100["results"]) == 2 and {q["gpu"] for q in h100["results"]} == {"h100-sxm"}
    assert_problem(alice.get("/api/v1/hardware-quotes?gpu=h900"), 400, "#/gpu")
    rows = list(csv.DictReader(io.StringIO(alice.get("/api/v1/hardware-quotes?format=csv").content.decode())))
    assert len(rows) == 5 and {float(row["usd"]) for row in rows} >= {250000.0, 250001.0}


def test_every_gpu_id_an_offer_carries_has_a_price_history(alice, client) -> None:  # type: ignore[no-untyped-def]
    """A probe: offers carry ids /api/v1/gpus does not list (t4, a10, l40...); price-history answered 404 for them,
    pointing to GET /api/v1/gpus, a list that lacks them, while /api/v1/offers/{id}/history worked."""
    aws = Provider.objects.create(slug="aws", name="AWS")
    offer = _offer(aws, "g4dn.12xlarge", gpu="t4")
    _observe(offer, dt.datetime(2026, 11, 1, 12, tzinfo=UTC), 1.0)
    response = alice.get("/api/v1/gpus/t4/price-history?since=2026-11-01&until=2026-11-02")
    assert response.status_code == 200, response.content
    assert response.json()[0]["median_usd_per_gpu_hour"] == 1.0
    detail = assert_problem(alice.get("/api/v1/gpus/h900/price-history"), 404)["detail"]
    assert "t4" in detail and "/api/v1/gpus " not in detail
    gpu = client.get("/api/schema/?format=json").json()["components"]["schemas"]["Offer"]["properties"]["gpu"]
    assert "/api/v1/gpus" in gpu["description"] and "superset" in gpu["description"]
