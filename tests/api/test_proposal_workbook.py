"""The proposal workbook read back with openpyxl: every size's costs, what each price is, the spot loss and the
compared GPUs, as an outsider comparing page, PDF, workbook and API found them missing or mislabelled."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from advisor.models import Proposal
from advisor.scenarios import scenario_create
from advisor.web.planning import advice_for
from tests.web.conftest import load_bundled_data

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "advice_training_example.json"

# 70B on [8, 16, 64]: 8 GPUs cannot hold it, so the first size has no costs.
SEVENTY_B_SMALL_FIRST = {
    "name": "70B small first",
    "workload": {"kind": "training", "model": {"name": "llama-3.1-70b"}, "tokens": 2e11, "runs_per_year": 1},
    "gpu": "h100-sxm",
    "cluster_sizes": [8, 16, 64],
}
# 70B serving: the first deployment (TP 1) does not fit.
SEVENTY_B_CHAT = {
    "name": "70B chat serving",
    "workload": {
        "kind": "inference",
        "model": {"name": "llama-3.1-70b"},
        "precision": "bf16",
        "traffic": {"peak_requests_per_s": 20, "mean_requests_per_s": 8, "input_tokens": 2000, "output_tokens": 300},
        "latency": {"ttft_p95_s": 2.0, "tpot_p95_s": 0.05},
    },
    "gpu": "h100-sxm",
}


def _book(advice: dict[str, Any], **proposal: Any) -> Any:
    from openpyxl import load_workbook

    from advisor.xlsx import proposal_workbook

    return load_workbook(io.BytesIO(proposal_workbook(proposal={"id": 1, "scenario_name": "x", "advice": advice})))


def _records(book: Any, sheet: str) -> list[dict[str, Any]]:
    """A sheet's rows as {header: value}."""
    rows = list(book[sheet].iter_rows(values_only=True))
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


def _sized(advice: dict[str, Any], book: Any) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    records = _records(book, "Sizes")
    assert len(records) == len(advice["sizes"])
    return list(zip(advice["sizes"], records, strict=True))


def test_every_sizes_costs_are_listed_when_the_first_size_has_none() -> None:
    """An outsider's probe: 70B on [8, 16, 64] (8 does not fit) gave a Sizes sheet without rent.usd_per_run,
    buy.usd_per_run, buy.break_even_utilization or buy.usd_per_gpu_hour_at_utilization for any row (the columns came
    from the first size alone, its None values skipped); 64 GPUs costs $154,248 rented, $1,201,144 owned, u* 0.772."""
    load_bundled_data()
    advice = advice_for(document=SEVENTY_B_SMALL_FIRST)
    assert advice["sizes"][0]["rent"]["usd_per_run"] is None
    book = _book(advice)
    keys = ("usd_per_gpu_hour_at_utilization", "usd_per_run", "break_even_utilization")
    for size, record in _sized(advice, book):
        assert record["rent.usd_per_run"] == pytest.approx(size["rent"]["usd_per_run"])
        for key in keys:
            assert record[f"buy.{key}"] == pytest.approx(size["buy"][key])
    assert [r["buy.usd_per_run"] is None for r in _records(book, "Sizes")] == [True, False, False]


def test_every_deployments_costs_are_listed_when_the_first_does_not_fit() -> None:
    """The same for serving: 70B's first deployment (TP 1) does not fit, and the sheet had no rent or buy column at
    all; the example service's first deployment never breaks even (null), and buy.break_even_utilization was dropped."""
    load_bundled_data()
    for document in (SEVENTY_B_CHAT, json.loads((ROOT / "examples" / "inference-service.json").read_text())):
        advice = advice_for(document=document)
        book = _book(advice)
        for size, record in _sized(advice, book):
            assert record["rent.usd_per_month"] == pytest.approx(size["rent"]["usd_per_month"])
            assert record["buy.usd_per_month"] == pytest.approx(size["buy"]["usd_per_month"])
            assert record["buy.break_even_utilization"] == pytest.approx(size["buy"]["break_even_utilization"])
        assert any(size["rent"]["usd_per_month"] for size in advice["sizes"])


def test_inference_costs_by_market_name_the_listed_price_and_the_billed_rate() -> None:
    """An outsider's probe: 70B serving's nebius spot row read usd_per_gpu_hour 1.5204 where the listed price (the
    Prices sheet, the PDF, the API's offer) is $1.25: the column held what a used GPU-hour is billed."""
    load_bundled_data()
    advice = advice_for(document=SEVENTY_B_CHAT)
    rows = _records(_book(advice), "Costs by market")
    assert "usd_per_gpu_hour" not in rows[0]
    rented = [r for r in rows if r["market"] != "owned" and r["provider"]]
    offers = [(s["gpus"], m, o) for s in advice["sizes"] for m, o in s["rent"]["by_market"].items() if o]
    assert offers and len(rented) == len(offers)
    assert any(o["usd_per_used_gpu_hour"] != pytest.approx(o["usd_per_gpu_hour"]) for *_, o in offers)
    for (gpus, market, offer), row in zip(offers, rented, strict=True):
        assert (row["gpus"], row["market"], row["provider"]) == (gpus, market, offer["provider"])
        assert row["listed_usd_per_gpu_hour"] == pytest.approx(offer["usd_per_gpu_hour"])
        assert row["usd_per_used_gpu_hour"] == pytest.approx(offer["usd_per_used_gpu_hour"])
    owned = [r for r in rows if r["market"] == "owned"]
    for size, row in zip(advice["sizes"], owned, strict=True):
        assert row["usd_per_used_gpu_hour"] == pytest.approx(size["buy"].get("usd_per_gpu_hour_at_utilization"))
        assert row["usd_per_month"] == pytest.approx(size["buy"]["usd_per_month"])
        assert row["listed_usd_per_gpu_hour"] is None


def test_training_rent_re_adds_from_the_workbook_with_the_spot_loss_and_names_each_market() -> None:
    """An outsider's probe: 128 GPUs x 274.312 run hours x spot $1.25 = $43,889.91, where the Sizes sheet says
    $44,753.05: the 2.0% spot interruption loss (wall hours) was not in the workbook, nor which market the rent and
    the break-even are against."""
    advice = json.loads(FIXTURE.read_text())
    book = _book(advice)
    for size, record in _sized(advice, book):
        rent, buy = size["rent"], size["buy"]
        chosen = rent["by_market"][rent["market"]]
        assert record["rent.market"] == record["rent.offer.market"] == rent["market"] == "spot"
        assert record["rent.lost_fraction"] == pytest.approx(chosen["lost_fraction"]) and chosen["lost_fraction"] > 0
        assert record["rent.wall_hours"] > record["run_hours"]
        assert record["gpus"] * record["rent.wall_hours"] * record["rent.usd_per_busy_gpu_hour"] == pytest.approx(
            record["rent.usd_per_run"]
        )
        assert record["rent.offer.usd_per_gpu_hour"] == pytest.approx(chosen["offer"]["usd_per_gpu_hour"])
        assert record["buy.break_even_against.market"] == buy["break_even_against"]["market"] == "on_demand"
        assert record["buy.break_even_against.usd_per_gpu_hour"] == pytest.approx(
            buy["break_even_against"]["usd_per_gpu_hour"]
        )
        assert record["buy.break_even_by_market.on_demand"] == pytest.approx(buy["break_even_utilization"])
    rented = [r for r in _records(book, "Costs by market") if r["market"] != "owned" and r["provider"]]
    assert {r["market"] for r in rented} == {"on_demand", "spot"}
    for row in rented:
        assert row["gpus"] * row["wall_hours"] * row["usd_per_used_gpu_hour"] == pytest.approx(row["usd_per_run"])
        assert (row["lost_fraction"] or 0) > 0 if row["market"] == "spot" else row["lost_fraction"] is None


def test_the_compared_gpus_have_their_own_sheet() -> None:
    """An outsider's probe: compare_gpus [a100-80gb, h200, mi300x] gave the API's alternatives and the PDF's table
    ('mi300x cheapest 64 GPUs ... $45,818 $178,778 63%'), and nothing of them in the workbook."""
    load_bundled_data()
    document = {
        "name": "7B compare GPUs",
        "workload": {"kind": "training", "model": {"name": "llama-2-7b"}, "tokens": 1e12, "runs_per_year": 4},
        "gpu": "h100-sxm",
        "cluster_sizes": [8, 64],
        "compare_gpus": ["a100-80gb", "mi300x"],
    }
    advice = advice_for(document=document)
    book = _book(advice)
    rows = _records(book, "Alternatives")
    assert [r["gpu"] for r in rows] == [a["gpu"] for a in advice["alternatives"]] and len(rows) == 3
    for alternative, row in zip(advice["alternatives"], rows, strict=True):
        for key in ("gpus", "run_hours", "rent_usd_per_run", "rent_market", "buy_usd_per_run"):
            assert row[key] == pytest.approx(alternative[key])
        assert row["break_even_utilization"] == pytest.approx(alternative["break_even_utilization"])
    assert sum(bool(r["cheapest"]) for r in rows) == 1
    assert "Alternatives" not in _book(json.loads(FIXTURE.read_text())).sheetnames


def test_the_compared_gpus_warnings_are_worded_as_the_summarys() -> None:
    """A CFO reading the workbook: a compared GPU's warnings named /rent/markets and on_demand where the Summary's
    say "“Rent: markets”" and "on-demand"; a path, a URL or a pointer the Scenario does not define stays as it is."""
    load_bundled_data()
    document = {
        "name": "7B compare GPUs",
        "workload": {"kind": "training", "model": {"name": "llama-2-7b"}, "tokens": 1e12, "runs_per_year": 4},
        "gpu": "h100-sxm",
        "cluster_sizes": [8, 64],
        "compare_gpus": ["a100-80gb"],
    }
    advice = advice_for(document=document)
    said = "Priced reserved_1y and on_demand; remove spot from /rent/markets (pricing/data/caps.csv, n/a, /nope)."
    advice["alternatives"][0]["warnings"] = [said]
    advice["warnings"] = [*advice["warnings"], said]
    book = _book(advice)
    worded = (
        "Priced 1-year reserved and on-demand; remove spot from “Rent: markets” (pricing/data/caps.csv, n/a, /nope)."
    )
    assert _records(book, "Alternatives")[0]["warnings"] == worded
    assert worded in [row[1] for row in book["Summary"].iter_rows(min_row=2, values_only=True) if row[0] == "Warning"]
    assert advice["alternatives"][0]["warnings"] == [said]


def _issued_at(content: bytes) -> Any:
    from openpyxl import load_workbook

    summary = load_workbook(io.BytesIO(content))["Summary"]
    cells = [row[1] for row in summary.iter_rows(min_row=2) if row[0].value == "Issued at (UTC)"]
    assert len(cells) == 1
    return cells[0]


def test_the_issue_time_is_one_excel_date_in_utc_from_the_api_and_the_web(alice, user) -> None:  # type: ignore[no-untyped-def]
    """An outsider's probe: the API's workbook read '2026-12-05T14:56:05.011292Z' and the web's
    '2026-12-05T14:56:14.380791+00:00', both text."""
    load_bundled_data()
    saved = scenario_create(owner=user, name="s", document=SEVENTY_B_SMALL_FIRST).pk
    issued = alice.post(f"/api/v1/scenarios/{saved}/proposals").json()
    stored = Proposal.objects.get(pk=issued["id"]).issued_at.astimezone(UTC).replace(tzinfo=None)
    web = Client()
    web.force_login(user)
    cells = [
        _issued_at(alice.get(f"/api/v1/proposals/{issued['id']}/proposal.xlsx").content),
        _issued_at(web.get(f"/proposals/{issued['id']}/proposal.xlsx").content),
    ]
    for cell in cells:
        assert isinstance(cell.value, datetime) and cell.is_date
        assert abs((cell.value - stored).total_seconds()) < 0.001
        assert cell.number_format == cells[0].number_format and "ss" in cell.number_format


def test_the_summary_says_what_its_price_date_is_as_the_pdf_cover_does() -> None:
    """An outside tester: the Summary's 'Prices as of 2026-12-02' was the snapshot's compile date while every offer
    used was undated; the PDF cover now says so (presenters.prices_as_of_text) and the workbook read the bare date."""
    from advisor.web.presenters import prices_as_of_text

    advice = json.loads(FIXTURE.read_text())
    summary = dict(_book(advice)["Summary"].iter_rows(min_row=2, values_only=True))
    assert summary["Prices"] == prices_as_of_text(advice=advice)
    assert "Prices as of" not in summary


EIGHT_B_GEOMETRY_CHAT = {
    "name": "8B chat service",
    "workload": {
        "kind": "inference",
        "model": {"params_b": 8, "layers": 32, "hidden": 4096, "heads": 32, "seq_len": 4096},
        "precision": "bf16",
        "traffic": {"peak_requests_per_s": 50, "mean_requests_per_s": 20, "input_tokens": 1000, "output_tokens": 200},
        "latency": {"ttft_p95_s": 1.0, "tpot_p95_s": 0.05},
    },
    "gpu": "h100-sxm",
}


def test_the_assumptions_sheet_says_which_model_fields_and_engine_were_assumed_not_given() -> None:
    """A finance probe: the Assumptions sheet said "your input" for vocab 128256, ffn_hidden 14336, kv_heads 8,
    experts 0 and active_experts 0 (the assumed llama-3.1-8b shape and a dense model) and for the serving engine
    trtllm that nobody chose, while the PDF and page said assumed/defaulted."""
    load_bundled_data()
    advice = advice_for(document=EIGHT_B_GEOMETRY_CHAT)
    rows = {r[0]: r for r in list(_book(advice)["Assumptions"].iter_rows(values_only=True))[1:]}
    assumed = advice["model"]["assumed"]
    assert any(note.startswith("shape of llama-3.1-8b") for note in assumed)
    for field in ("vocab", "ffn_hidden", "kv_heads", "experts", "active_experts"):
        source = rows[f"/workload/model/{field}"][-1]
        assert source != "your input" and source.startswith("assumed"), (field, source)
    assert "shape of llama-3.1-8b" in rows["/workload/model/vocab"][-1]
    assert "dense" in rows["/workload/model/experts"][-1]
    assert rows["/workload/model/params_b"][-1] == "your input"
    # The engine's origin is the /serving/engine row's (given or defaulted), as on the page: not a second row.
    assert "/workload/serving_engine" not in rows
    assert "defaulted" in rows["/serving/engine"][-1]


def test_a_catalog_models_geometry_is_the_catalogs_not_your_input() -> None:
    load_bundled_data()
    advice = advice_for(document=SEVENTY_B_SMALL_FIRST)
    rows = {r[0]: r for r in list(_book(advice)["Assumptions"].iter_rows(values_only=True))[1:]}
    assert rows["/workload/model/name"][-1] == "your input"
    for field in ("layers", "hidden", "vocab", "ffn_hidden", "kv_heads"):
        assert rows[f"/workload/model/{field}"][-1].startswith("catalog: llama-3.1-70b"), field


def test_a_training_workbook_issued_before_the_yearly_cost_change_labels_its_fixed_cost_as_such() -> None:
    # A finance probe: buy.usd_per_year held the fixed owned cost alone in documents issued before 2026-12-06 and the
    # whole owned cost since, and the two workbooks showed $2,381,488 and $2,515,301 under one header.
    new = json.loads(FIXTURE.read_text())
    old = json.loads(FIXTURE.read_text())
    for size in old["sizes"]:
        buy = size.get("buy") or {}
        if "fixed_usd_per_year" in buy:
            buy["usd_per_year"] = buy.pop("fixed_usd_per_year")
    for advice, whole in ((new, True), (old, False)):
        for size, record in _sized(advice, _book(advice)):
            buy = size.get("buy") or {}
            if buy.get("usd_per_year") is None and buy.get("fixed_usd_per_year") is None:
                continue
            if whole:
                assert record["buy.usd_per_year"] == pytest.approx(buy["usd_per_year"], rel=1e-12)
                assert record["buy.fixed_usd_per_year"] == pytest.approx(buy["fixed_usd_per_year"], rel=1e-12)
            else:
                assert "buy.usd_per_year" not in record
                assert record["buy.fixed_usd_per_year"] == pytest.approx(buy["usd_per_year"], rel=1e-12)


def test_an_owned_cost_per_run_that_cannot_finish_the_runs_is_marked_in_the_workbook() -> None:
    """An outsider's probe (F2): Sizes and Costs by market priced owning 8 GPUs per run (utilization 1) with nothing
    saying one cluster cannot finish the year's runs; the workbook carries the Advice's buy.finishes_runs."""
    advice = json.loads(FIXTURE.read_text())
    book = _book(advice)
    for size, record in _sized(advice, book):
        assert record["buy.finishes_runs"] is size["buy"]["finishes_runs"]
        assert record["buy.runs_per_year_fit"] == pytest.approx(size["buy"]["runs_per_year_fit"])
    owned = [r for r in _records(book, "Costs by market") if r["market"] == "owned"]
    assert [r["finishes_runs"] for r in owned] == [False, True]


def test_the_summary_has_no_empty_runs_a_year_row_and_the_inputs_have_units() -> None:
    """An outsider's probe (F10): 'The runs a year alone, rented' was empty in every proposal issued, and the
    Assumptions sheet gave /workload/tokens and /workload/model/params_b (in billions) no unit."""
    advice = json.loads(FIXTURE.read_text())
    book = _book(advice)
    summary = dict(book["Summary"].iter_rows(min_row=2, values_only=True))
    assert "The runs a year alone, rented (USD a year)" not in summary
    rows = {r[0]: r for r in list(book["Assumptions"].iter_rows(values_only=True))[1:]}
    assert rows["/workload/tokens"][2] == "tokens"
    assert rows["/workload/model/params_b"][2] == "billions of parameters"


def test_inference_costs_by_market_carry_tp_and_the_plans_month() -> None:
    """An outsider's probe (F10): TP 2 and TP 4 deployments both read gpus=4 with no tp column, and no rented row had
    a usd_per_month: the plan's rent a month (rent.usd_per_month, base and burst) is a row of its own."""
    load_bundled_data()
    advice = advice_for(document=json.loads((ROOT / "examples" / "inference-service.json").read_text()))
    rows = _records(_book(advice), "Costs by market")
    tps = [s["tp"] for s in advice["sizes"]]
    assert sorted({r["tp"] for r in rows}) == sorted(set(tps))
    plans = [r for r in rows if r["market"] == "rented plan (base + burst)"]
    priced = [s for s in advice["sizes"] if s["rent"]["usd_per_month"] is not None]
    assert priced and [(r["tp"], r["usd_per_month"]) for r in plans] == [
        (s["tp"], pytest.approx(s["rent"]["usd_per_month"])) for s in priced
    ]


def test_the_workbook_writes_no_float_noise() -> None:
    """A first-time user: the Summary read "Amount to approve" 18523545.60000001 and a utilization of
    0.7000000000000001; every number is written at 14 significant digits, which keeps every cent and share digit."""
    from advisor.xlsx import CELL_SIGNIFICANT_DIGITS

    assert float(f"{18523545.60000001:.{CELL_SIGNIFICANT_DIGITS}g}") == 18523545.6
    assert float(f"{0.7000000000000001:.{CELL_SIGNIFICANT_DIGITS}g}") == 0.7
    book = _book(json.loads(FIXTURE.read_text()))
    noisy = [
        (sheet.title, cell)
        for sheet in book.worksheets
        for row in sheet.iter_rows(values_only=True)
        for cell in row
        if isinstance(cell, float) and float(f"{cell:.14g}") != cell
    ]
    assert not noisy, noisy[:5]
