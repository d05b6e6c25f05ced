"""A fleet proposal as a workbook (DESIGN.md: `GET /api/v1/proposals/{id}` `?format=xlsx` a workbook, no exception
for fleets). A finance reviewer got 406 and rebuilt the owned tier by hand: every figure here is read off the stored
Fleet Plan JSON and compared with the workbook's cell, none is typed in."""

from __future__ import annotations

import io
import math
from typing import Any

import pytest

from advisor.fleet.store import fleet_create
from advisor.models import Proposal
from tests.web.conftest import load_bundled_data

pytestmark = pytest.mark.django_db

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

# Catalog prices and the bundled hardware quote: 32 GPUs busy all year are owned (a priced owned tier with capex,
# colocation, support and energy), and an inference job sized by the inference path (its base and peak-hours lines).
OWNED_AND_SERVING: dict[str, Any] = {
    "name": "2027 serving and base",
    "gpu": "h100-sxm",
    "jobs": [
        {"name": "base", "gpus": 32, "hours": 8760},
        {
            "name": "8B serving",
            "workload": {
                "kind": "inference",
                "model": {"params_b": 8},
                "traffic": {
                    "peak_requests_per_s": 40,
                    "mean_requests_per_s": 15,
                    "input_tokens": 1000,
                    "output_tokens": 200,
                },
            },
        },
        {"name": "evals", "gpus": 16, "hours": 6, "runs_per_year": 300, "interruptible": True, "months": [2, 5]},
    ],
}


def _issued(client, user) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    load_bundled_data()
    fleet = fleet_create(owner=user, name="2027 serving and base", document=OWNED_AND_SERVING)
    response = client.post(f"/api/v1/fleets/{fleet.pk}/proposals")
    assert response.status_code == 201, response.content[:2000]
    return response.json()


def _book(response) -> Any:  # type: ignore[no-untyped-def]
    from openpyxl import load_workbook

    assert response.status_code == 200, response.content[:2000]
    assert response["Content-Type"] == XLSX
    assert response["Content-Disposition"].endswith('.xlsx"')
    return load_workbook(io.BytesIO(response.content))


def _records(sheet: Any) -> list[dict[str, Any]]:
    rows = list(sheet.iter_rows(values_only=True))
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


def same(cell: Any, value: Any) -> bool:
    """A cell holds the document's figure to the workbook's 14 significant digits (advisor.xlsx writes no float noise:
    1403448.455760582 is written 1403448.4557606)."""
    if isinstance(value, float) and not isinstance(cell, str):
        return bool(cell == pytest.approx(value, rel=1e-13, abs=1e-9))
    return bool(cell == value)


def _items(sheet: Any) -> dict[str, Any]:
    return {row[0]: row[1] for row in sheet.iter_rows(min_row=2, values_only=True)}


def test_a_fleet_proposal_exports_its_figures_as_a_workbook(alice, user, client) -> None:  # type: ignore[no-untyped-def]
    body = _issued(alice, user)
    plan = body["advice"]
    recommendation = plan["recommendation"]
    owned_tier = next(t for t in recommendation["tiers"] if t["tier"] == "owned")
    assert recommendation["owned_gpus"] > 0 and owned_tier["usd_per_year"] > 0  # the case the reviewer rebuilt
    book = _book(alice.get(f"/api/v1/proposals/{body['id']}?format=xlsx"))
    assert book.sheetnames == ["Summary", "Jobs", "Tiers", "Options", "Owned tier a year", "Prices", "Assumptions"]

    summary = _items(book["Summary"])
    assert summary["Proposal"] == body["id"] and summary["Fleet"] == body["scenario_name"]
    assert summary["Owned GPUs"] == recommendation["owned_gpus"]
    assert same(summary["Recommended: yearly cost (USD)"], recommendation["usd_per_year"])
    assert same(summary["Renting everything: yearly cost (USD)"], recommendation["all_rent_usd_per_year"])
    assert same(summary["Owning the peak: yearly cost (USD)"], recommendation["own_peak_usd_per_year"])
    assert same(summary["Saving against renting everything (USD a year)"], recommendation["saving_vs_all_rent_usd"])
    assert plan["prices_as_of"] in summary["Prices"]

    jobs = _records(book["Jobs"])
    assert [j["name"] for j in jobs] == [j["name"] for j in plan["jobs"]]
    for row, line in zip(jobs, plan["jobs"], strict=True):
        for key in ("gpus", "run_hours", "runs_per_year", "owned_runs", "rented_runs", "spot_runs"):
            assert same(row[key], line[key]), key
    # The inference job is its base all year and its peak hours daily; evals start in the months given.
    assert any(j["runs_per_year"] == 365 for j in jobs)
    assert next(j for j in jobs if j["name"] == "evals")["months"] == "2, 5"

    # The tier rows (each followed by its parts where it is not one price: tests/api/test_fleet_workbook_rows_multiply).
    tiers = [row for row in _records(book["Tiers"]) if row["row"] == "tier"]
    assert [t["tier"] for t in tiers] == [t["tier"] for t in recommendation["tiers"]]
    for row, tier in zip(tiers, recommendation["tiers"], strict=True):
        assert same(row["gpus"], tier["gpus"]) and same(row["usd_per_year"], tier["usd_per_year"])
    offers = plan["tier_prices"]["offers"]
    for row in tiers:
        if row["tier"] in offers:
            assert row["provider"] == offers[row["tier"]]["provider"]
            assert row["listed_usd_per_gpu_hour"] == offers[row["tier"]]["usd_per_gpu_hour"]

    options = _records(book["Options"])
    assert [o["owned_gpus"] for o in options] == [o["owned_gpus"] for o in plan["options"]]
    for row, option in zip(options, plan["options"], strict=True):
        assert same(row["usd_per_year"], option["usd_per_year"])
        assert same(row["rented_gpu_hours"], option["rented_gpu_hours"])
        for tier, use in option["by_tier"].items():
            assert same(row[f"{tier}.gpu_hours"], use["gpu_hours"])
    assert [o["recommended"] for o in options].count(True) == 1

    # The owned tier's yearly cost in its parts: they add up to the tier as issued (the reviewer's $651,128).
    parts = {row[0]: row[1] for row in book["Owned tier a year"].iter_rows(min_row=2, values_only=True)}
    assert same(parts["owned tier, as issued"], owned_tier["usd_per_year"])
    assert {"capital", "colocation", "support", "energy"} <= set(parts)
    summed = [v for k, v in parts.items() if k in ("capital", "support", "colocation", "staff", "software", "energy")]
    assert math.isclose(sum(summed), parts["total of the parts"], rel_tol=1e-12)
    assert math.isclose(parts["total of the parts"], owned_tier["usd_per_year"], rel_tol=1e-9)
    quote = plan["tier_prices"]["hardware_quote"]
    nodes = math.ceil(recommendation["owned_gpus"] / plan["tier_prices"]["gpus_per_node"])
    fabric = quote["networking_usd_per_node"] if nodes > 1 else 0.0
    assert same(parts["purchase"], nodes * (quote["usd"] + fabric))

    assumptions = {row[0]: row[1:] for row in book["Assumptions"].iter_rows(min_row=2, values_only=True)}
    assert assumptions["/buy/discount_rate"][0] == plan["fleet"]["buy"]["discount_rate"]
    assert assumptions["/buy/colo_usd_per_kw_month"][1]  # a unit
    # Formatted by unit as the scenario workbook's: a fraction as a percentage, USD as money.
    formats = {row[0].value: row[1].number_format for row in book["Assumptions"].iter_rows(min_row=2)}
    assert formats["/buy/discount_rate"] == "0.0#%" and formats["/buy/colo_usd_per_kw_month"].startswith('"$"')
    prices = _records(book["Prices"])
    # The tiers' node offers and the offers job lines rent at instead (jobs[].rent_offers).
    lines = {o["provider"] for j in plan["jobs"] for o in (j.get("rent_offers") or {}).values() if o}
    assert {p["provider"] for p in prices if p["market"] != "purchase"} == {
        o["provider"] for o in offers.values()
    } | lines
    assert any(p["market"] == "purchase" and p["usd"] == quote["usd"] for p in prices)

    # The same workbook at proposal.xlsx, and from the proposal page's link.
    assert (
        alice.get(f"/api/v1/proposals/{body['id']}/proposal.xlsx").content
        == alice.get(f"/api/v1/proposals/{body['id']}?format=xlsx").content
    )
    client.force_login(user)
    page = _book(client.get(f"/proposals/{body['id']}/proposal.xlsx"))
    assert _items(page["Summary"])["Owned GPUs"] == recommendation["owned_gpus"]


def test_a_fleet_proposal_issued_before_still_exports(alice, user) -> None:  # type: ignore[no-untyped-def]
    # A stored plan lacking what later versions added (tier offers and quote, uncertainty, per-run placements, the
    # answers and their comparisons) still opens: frozen proposals are never rewritten.
    body = _issued(alice, user)
    plan = body["advice"]
    old = {k: v for k, v in plan.items() if k not in ("uncertainty",)}
    old["tier_prices"] = {
        k: v for k, v in plan["tier_prices"].items() if k not in ("offers", "hardware_quote", "owned_usd_per_year_base")
    }
    old["jobs"] = [{k: v for k, v in line.items() if k not in ("runs", "spot_runs")} for line in plan["jobs"]]
    old["recommendation"] = {
        k: v
        for k, v in plan["recommendation"].items()
        if k not in ("load_duration_answer", "simulated_answer", "all_rent_usd_per_year", "own_peak_usd_per_year")
    }
    Proposal.objects.filter(pk=body["id"]).update(advice=old)
    book = _book(alice.get(f"/api/v1/proposals/{body['id']}?format=xlsx"))
    summary = _items(book["Summary"])
    assert same(summary["Recommended: yearly cost (USD)"], plan["recommendation"]["usd_per_year"])
    tier_rows = [row for row in _records(book["Tiers"]) if row["row"] == "tier"]
    for row, tier in zip(tier_rows, plan["recommendation"]["tiers"], strict=True):
        assert same(row["usd_per_year"], tier["usd_per_year"])
    assert [j["name"] for j in _records(book["Jobs"])] == [j["name"] for j in plan["jobs"]]


def test_a_proposals_workbook_is_stamped_with_its_issue_time_not_the_download(alice, user) -> None:  # type: ignore[no-untyped-def]
    # Two downloads of one frozen proposal a second apart differed in their ZIP headers' times (a flaky byte
    # comparison above found it): the file is a function of the proposal alone.
    import zipfile
    from datetime import UTC, datetime

    from openpyxl import load_workbook

    body = _issued(alice, user)
    issued = datetime.fromisoformat(body["issued_at"].replace("Z", "+00:00")).astimezone(UTC).replace(tzinfo=None)
    content = alice.get(f"/api/v1/proposals/{body['id']}/proposal.xlsx").content
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        # ZIP headers keep even seconds (MS-DOS time).
        assert {entry.date_time for entry in archive.infolist()} == {
            issued.replace(second=issued.second - issued.second % 2).timetuple()[:6]
        }
    properties = load_workbook(io.BytesIO(content)).properties
    assert properties.created == properties.modified == issued.replace(microsecond=0)


def test_a_workbook_downloaded_at_another_moment_has_the_same_bytes(alice, user, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # openpyxl stamps the core properties' modified time with the clock when it saves: two downloads a second apart
    # (the fresh-clone CI, under load) differed in docProps/core.xml. Here the clock openpyxl reads moves a year.
    import datetime as dt
    import types

    import openpyxl.writer.excel as excel

    body = _issued(alice, user)
    first = alice.get(f"/api/v1/proposals/{body['id']}/proposal.xlsx").content

    class NextYear(dt.datetime):
        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> NextYear:  # type: ignore[override]
            return cls(2027, 12, 6, tzinfo=tz)

    monkeypatch.setattr(excel, "datetime", types.SimpleNamespace(datetime=NextYear, timezone=dt.timezone))
    assert alice.get(f"/api/v1/proposals/{body['id']}/proposal.xlsx").content == first
