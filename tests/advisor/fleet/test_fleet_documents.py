"""A finance reviewer compared the fleet plan's PDF and workbook (probe_finance F2-F5, F8): every figure the plan
uses is cited with its source and date, and each document reads back what it says (the PDF parsed with pypdf, the
workbook with openpyxl)."""

from __future__ import annotations

import datetime as dt
import io
import re
from typing import Any

import pytest

from advisor.advice.fleet.service import fleet_plan
from advisor.fleet.proposal import render_fleet_pdf

# The reviewer's fleet 1 (probe_finance fleet.json): an inference job rents at a 1-GPU offer below the node's.
FLEET_1: dict[str, Any] = {
    "name": "FinReview fleet",
    "gpu": "h100-sxm",
    "jobs": [
        {"name": "chat serving", "gpus": 16, "hours": 8760},
        {"name": "fine-tunes", "gpus": 8, "hours": 48, "runs_per_year": 24, "max_wait_days": 3},
        {
            "name": "pretrain",
            "gpus": 32,
            "runs_per_year": 2,
            "months": [2, 8],
            "workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 2e11},
        },
        {
            "name": "inference svc",
            "gpus": 8,
            "workload": {
                "kind": "inference",
                "model": {"params_b": 8},
                "traffic": {
                    "peak_requests_per_s": 10,
                    "mean_requests_per_s": 4,
                    "input_tokens": 1000,
                    "output_tokens": 200,
                },
            },
        },
        {"name": "evals", "gpus": 16, "hours": 6, "runs_per_year": 100, "interruptible": True, "months": [1, 4, 7, 10]},
    ],
}
# fleet2.json: manual quotes, a declining rent price, software per GPU; renting everything is cheapest.
MANUAL_BUY: dict[str, Any] = {
    "capex_usd": 300000,
    "years": 4,
    "discount_rate": 0.1,
    "residual_fraction": 0.2,
    "power_usd_per_kwh": 0.15,
    "pue": 1.2,
    "colo_usd_per_kw_month": 200,
    "support_fraction_per_year": 0.15,
    "staff_usd_per_year": 50000,
    "software_usd_per_gpu_year": 4500,
}
MANUAL_JOBS: list[dict[str, Any]] = [
    {"name": "serving", "gpus": 16, "hours": 8760},
    {"name": "train", "gpus": 16, "hours": 500, "runs_per_year": 4, "months": [1, 4, 7, 10]},
    {"name": "batch", "gpus": 8, "hours": 100, "runs_per_year": 12, "max_wait_days": 5},
]
FLEET_2: dict[str, Any] = {
    "name": "FinReview fleet manual",
    "gpu": "h100-sxm",
    "rent": {"usd_per_gpu_hour": 2.5, "price_decline_per_year": 0.1},
    "buy": MANUAL_BUY,
    "jobs": MANUAL_JOBS,
}
# f3s.json: $4/GPU-h declining 10% a year, 16 owned forced into the candidates.
FLEET_3: dict[str, Any] = {
    **FLEET_2,
    "name": "FinReview forced16",
    "rent": {"usd_per_gpu_hour": 4.0, "price_decline_per_year": 0.1},
    "owned_gpus": [0, 16, 24],
}


@pytest.fixture(autouse=True)
def _catalog(db: None) -> None:
    from pricing.services import load_bundled_data

    load_bundled_data()


def _pdf_text(plan: dict[str, Any], *, name: str = "fleet", day: dt.date | None = None) -> str:
    from pypdf import PdfReader

    pdf = render_fleet_pdf(plan=plan, fleet_name=name, generated_on=day)
    text = "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages)
    return re.sub(r"\s+", " ", text)


def test_a_draft_fleet_pdf_says_it_was_computed_today_with_prices_of_the_snapshot_date() -> None:
    plan = fleet_plan(document=FLEET_1)
    text = _pdf_text(plan, day=dt.date(2026, 12, 6))
    assert plan["prices_as_of"] and plan["prices_as_of"] != "2026-12-06"
    from advisor.web.presenters import fleet_prices_as_of_text

    assert "with the prices of 2026-12-06" not in text and "with prices as of" not in text
    assert f"A draft computed on 2026-12-06 ({fleet_prices_as_of_text(plan=plan)})" in text


def test_the_fleet_pdf_prints_software_the_decline_and_says_where_a_price_is_levelized() -> None:
    # The reviewer's f3s.json: $4/GPU-h falling 10% a year was billed at $3.48 with no word of levelizing, and the
    # $4,500 software per owned GPU ($72,000 a year for 16) was printed nowhere.
    plan = fleet_plan(document=FLEET_3)
    billed = plan["tier_prices"]["on_demand_usd_per_gpu_hour"]
    assert billed == pytest.approx(3.482, abs=1e-3)
    text = _pdf_text(plan)
    assert "Software $4,500 per owned GPU a year" in text
    assert "Rent price decline 10% a year" in text
    assert "Your rental quote $4.00 per GPU-hour today" in text
    levelized = re.search(
        r"\$(3\.48\d*) per GPU-hour levelized over 4 years at a 10% discount rate from \$4\.00 today, "
        r"falling 10% a year",
        text,
    )
    assert levelized is not None and float(levelized.group(1)) == pytest.approx(billed, abs=1e-6)


def _workbook(plan: dict[str, Any]) -> Any:
    from openpyxl import load_workbook

    from advisor.xlsx import fleet_workbook

    proposal = {"id": 1, "kind": "fleet", "scenario_name": "fleet", "issued_at": None, "advice": plan}
    return load_workbook(io.BytesIO(fleet_workbook(proposal=proposal)))


def test_a_fleet_that_rents_everything_states_its_yearly_rent_as_the_amount() -> None:
    # The reviewer's fleet2.json: own 0, $395,556 a year, and no amount on the cover or in the Summary.
    plan = fleet_plan(document=FLEET_2)
    recommendation = plan["recommendation"]
    assert recommendation["owned_gpus"] == 0
    usd = f"${recommendation['usd_per_year']:,.0f}"
    text = _pdf_text(plan)
    assert f"Amount: {usd} (rent a year for the whole fleet" in text
    assert f"{usd} a year for the whole fleet" in text
    summary = {row[0]: row[1] for row in _workbook(plan)["Summary"].iter_rows(min_row=2, values_only=True)}
    assert summary["Amount to approve (USD)"] == pytest.approx(recommendation["usd_per_year"])
    assert str(summary["Amount is"]).startswith("rent a year for the whole fleet")


def test_the_fleet_workbook_cites_the_ownership_defaults_with_source_and_date() -> None:
    # The reviewer's fleet 1: /buy/pue, /buy/discount_rate, ... read only "given, or its default".
    from pricing import selectors

    catalog = selectors.ownership_defaults()
    plan = fleet_plan(document=FLEET_1)
    rows = {row[0]: row for row in _workbook(plan)["Assumptions"].iter_rows(min_row=2, values_only=True)}
    for key in ("pue", "colo_usd_per_kw_month", "power_usd_per_kwh", "discount_rate", "residual_fraction", "years"):
        _, value, unit, source = rows[f"/buy/{key}"]
        assert value == pytest.approx(catalog[key]["value"]), key
        assert unit == catalog[key]["unit"], key
        assert catalog[key]["source"] in source and "given, or its default" not in source, (key, source)
    dated = [
        key
        for key in catalog
        if catalog[key]["as_of"] and f"(as of {catalog[key]['as_of']})" in rows.get(f"/buy/{key}", ("",) * 4)[3]
    ]
    assert "discount_rate" in dated


def test_the_offers_each_line_rents_at_are_cited_in_the_pdf_and_the_workbook() -> None:
    # The reviewer's fleet 1: "inference svc" rents 70,080 GPU-h at cudo's 1-GPU offer ($1.8528), cited nowhere.
    plan = fleet_plan(document=FLEET_1)
    line = next(j for j in plan["jobs"] if j["name"] == "inference svc")
    offer = line["rent_offers"]["on_demand"]
    assert offer != plan["tier_prices"]["offers"]["on_demand"]
    prices = [dict(zip(_PRICE_HEADER, row, strict=False)) for row in _price_rows(plan)]
    assert any(
        p["provider"] == offer["provider"]
        and p["instance"] == offer["instance"]
        and p["usd_per_gpu_hour"] == pytest.approx(offer["usd_per_gpu_hour"])
        and p["market"] == "on_demand"
        for p in prices
    ), prices
    text = _pdf_text(plan)
    assert f"{offer['provider']} {offer['instance']}" in text.replace("- ", "-")
    assert "rented by inference svc" in text


_PRICE_HEADER = ("provider", "instance", "region", "market", "usd_per_gpu_hour", "observed_at", "source", "gpu", "usd")


def _price_rows(plan: dict[str, Any]) -> list[tuple[Any, ...]]:
    return list(_workbook(plan)["Prices"].iter_rows(min_row=2, values_only=True))
