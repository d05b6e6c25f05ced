"""Frozen proposals over the API: issue, read back (JSON, xlsx, PDF), and nothing moves when prices do."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.db.models import F

from advisor import formatting as fmt
from advisor.cash_flow import decision_amount, yearly_totals
from advisor.models import Proposal
from advisor.scenarios import scenario_create
from advisor.web.presenters import usd_exact
from pricing.models import Offer
from tests.api.conftest import assert_problem
from tests.api.examples import DESIGN_SCENARIO
from tests.web.conftest import load_bundled_data

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def saved(user) -> int:  # type: ignore[no-untyped-def]
    load_bundled_data()
    return scenario_create(owner=user, name="7B pretraining", document=DESIGN_SCENARIO).pk


def _issue(client, scenario_id: int) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    response = client.post(f"/api/v1/scenarios/{scenario_id}/proposals")
    assert response.status_code == 201, response.content[:2000]
    return response.json()


def _pdf_text(content: bytes) -> str:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(content))
    return "\n".join(page.extract_text() for page in reader.pages)


def _double_every_price() -> None:
    changed = Offer.objects.update(usd_per_gpu_hour=F("usd_per_gpu_hour") * 2, usd_per_hour=F("usd_per_hour") * 2)
    assert changed > 0


def test_issue_returns_the_contract_fields_and_stores_provenance(alice, saved) -> None:  # type: ignore[no-untyped-def]
    body = _issue(alice, saved)
    assert {"id", "scenario_id", "issued_at", "advice"} <= set(body)
    assert body["scenario_id"] == saved
    advice = body["advice"]
    assert advice["sizes"] and advice["recommendation"]["action"] in ("rent", "buy", "none")
    stored = Proposal.objects.get(pk=body["id"])
    assert stored.advice == advice
    provenance = stored.provenance
    assert provenance["calibration"]["name"] == advice["calibration"]["name"]
    assert provenance["calibration"]["id"] and len(provenance["calibration"]["document_sha256"]) == 64
    assert provenance["hardware_quote"] == advice["hardware_quote"] and provenance["hardware_quote"]["source"]
    chosen = advice["sizes"][0]["rent"]["offer"]
    keys = [(o["provider"], o["instance"], o["region"], o["market"]) for o in provenance["offers"]]
    assert (chosen["provider"], chosen["instance"], chosen["region"], chosen["market"]) in keys
    assert all(o["source"] for o in provenance["offers"])
    assert re.fullmatch(r"[0-9a-f]{64}", stored.content_hash)
    assert alice.get(f"/api/v1/scenarios/{saved}/proposals").json()["results"][0]["id"] == body["id"]


def test_numbers_and_pdf_do_not_change_after_prices_change(alice, saved) -> None:  # type: ignore[no-untyped-def]
    issued = _issue(alice, saved)
    pdf_before = _pdf_text(alice.get(f"/api/v1/proposals/{issued['id']}/proposal.pdf").content)

    _double_every_price()

    again = alice.get(f"/api/v1/proposals/{issued['id']}").json()
    assert again["advice"] == issued["advice"]
    assert again["issued_at"] == issued["issued_at"]
    assert _pdf_text(alice.get(f"/api/v1/proposals/{issued['id']}/proposal.pdf").content) == pdf_before
    # Control: the price change is real; a proposal issued now sees it.
    fresh = _issue(alice, saved)
    before = issued["advice"]["sizes"][0]["rent"]["offer"]["usd_per_gpu_hour"]
    after = fresh["advice"]["sizes"][0]["rent"]["offer"]["usd_per_gpu_hour"]
    assert after == pytest.approx(2 * before)


def test_pdf_has_cover_yearly_totals_approval_block_page_numbers_and_sources(alice, saved, user) -> None:  # type: ignore[no-untyped-def]
    issued = _issue(alice, saved)
    response = alice.get(f"/api/v1/proposals/{issued['id']}/proposal.pdf")
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    text = _pdf_text(response.content)
    flat = " ".join(text.split())
    advice = issued["advice"]
    action = {"buy": "Buy", "rent": "Rent"}[advice["recommendation"]["action"]]
    assert f"Decision: {action} {advice['recommendation']['gpus']}" in flat
    assert f"Proposal {issued['id']} issued {issued['issued_at'][:10]}" in flat
    amount = decision_amount(advice=advice)
    assert amount is not None and f"Amount: {usd_exact(amount['usd'])}" in flat
    totals = yearly_totals(advice=advice)
    assert totals is not None
    for row in totals["years"]:
        for key in ("rent_usd", "buy_usd", "rent_present_usd", "buy_present_usd"):
            assert usd_exact(row[key]) in flat, (row, key)
    assert "Total over 5 years" in flat
    for key in ("rent_usd", "buy_usd", "rent_present_usd", "buy_present_usd"):
        assert usd_exact(totals["total"][key]) in flat
    # The 5-year present costs are the Advice's own NPV figures.
    assert usd_exact(advice["npv"]["buy_present_cost_usd"]) in flat
    assert usd_exact(advice["npv"]["rent_present_cost_usd"]) in flat
    assert "Prepared by" in flat and "Approved by" in flat and user.get_username() in flat
    pages = len(re.findall(r"page \d+ of (\d+)", flat))
    assert pages >= 2
    # Cover (decision, amount, approval block), then a one-page summary that ends with the totals.
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(response.content))
    cover, summary = (" ".join(reader.pages[i].extract_text().split()) for i in (0, 1))
    assert "Decision:" in cover and "Amount:" in cover and "Approved by" in cover
    assert "Executive summary" in summary and "Total over 5 years" in summary
    # How accurate the throughput is for this scenario (no stack given): the held-out check that applies, the
    # constant-MFU guess beside it and the band the cost ranges use.
    assert "Throughput held out by software stack: median error" in summary
    assert "stack not given, so held out by software stack" in flat and "MFU guess" in flat
    offer = advice["sizes"][0]["rent"]["offer"]
    assert f"{fmt.price(offer['usd_per_gpu_hour'])} per GPU-hour" in flat
    assert advice["hardware_quote"]["quoted_on"] in flat
    # What the run hours leave out (an outsider: published GPU-hours of famous runs sat above every band, and nothing
    # said the figures were steady-state training), in the PDF and in the Advice.
    assert "Run hours are steady-state training at the predicted throughput:" in flat
    assert "466 interruptions in 54 days" in advice["uncertainty"]["method"]


def test_xlsx_opens_and_holds_the_stored_numbers(alice, saved) -> None:  # type: ignore[no-untyped-def]
    from openpyxl import load_workbook

    issued = _issue(alice, saved)
    response = alice.get(f"/api/v1/proposals/{issued['id']}?format=xlsx")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
    book = load_workbook(io.BytesIO(response.content))
    assert book.sheetnames == ["Summary", "Sizes", "Costs by market", "Cash flow by year", "Prices", "Assumptions"]
    summary = {row[0]: row[1] for row in book["Summary"].iter_rows(min_row=2, values_only=True)}
    assert summary["Proposal"] == issued["id"]
    assert summary["Decision"] == issued["advice"]["recommendation"]["action"]
    sizes = list(book["Sizes"].iter_rows(values_only=True))
    header = sizes[0]
    assert [row[header.index("gpus")] for row in sizes[1:]] == [s["gpus"] for s in issued["advice"]["sizes"]]
    run_hours = [row[header.index("run_hours")] for row in sizes[1:]]
    assert run_hours == pytest.approx([s["run_hours"] for s in issued["advice"]["sizes"]])
    cash = list(book["Cash flow by year"].iter_rows(values_only=True))
    totals = yearly_totals(advice=issued["advice"])
    assert totals is not None
    assert cash[-1][0] == "total over 5 years"
    assert cash[-1][4] == pytest.approx(totals["total"]["buy_present_usd"])
    markets = {row[1] for row in book["Costs by market"].iter_rows(min_row=2, values_only=True)}
    assert "owned" in markets and "on_demand" in markets
    sources = [row[3] for row in book["Assumptions"].iter_rows(min_row=2, values_only=True)]
    assert all(sources) and any("quote" in str(s).lower() for s in sources)
    prices = list(book["Prices"].iter_rows(min_row=2, values_only=True))
    assert prices and all(row[6] for row in prices)


def test_the_workbook_has_its_own_path_and_the_format_parameter_still_answers_it(alice, saved) -> None:  # type: ignore[no-untyped-def]
    """A client generated from the document could not read `?format=xlsx` (one operation, read as JSON: a
    UnicodeDecodeError); proposal.xlsx is an operation whose only answer is the workbook, whatever Accept says."""
    from openpyxl import load_workbook

    issued = _issue(alice, saved)
    own = alice.get(f"/api/v1/proposals/{issued['id']}/proposal.xlsx", HTTP_ACCEPT="application/json")
    assert own.status_code == 200
    assert own["Content-Type"] == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert own["Content-Disposition"] == f'attachment; filename="7b-pretraining-proposal-{issued["id"]}.xlsx"'
    by_format = alice.get(f"/api/v1/proposals/{issued['id']}?format=xlsx")
    assert by_format["Content-Type"] == own["Content-Type"]
    sheets = [list(load_workbook(io.BytesIO(r.content)).worksheets[0].values) for r in (own, by_format)]
    assert sheets[0] == sheets[1]
    assert alice.get(f"/api/v1/proposals/{issued['id']}")["Content-Type"] == "application/json"
    assert_problem(alice.options(f"/api/v1/proposals/{issued['id']}/proposal.xlsx"), 405)


def test_another_users_proposal_is_not_found(alice, bob, saved) -> None:  # type: ignore[no-untyped-def]
    issued = _issue(alice, saved)
    for path in (
        f"/api/v1/proposals/{issued['id']}",
        f"/api/v1/proposals/{issued['id']}/proposal.pdf",
        f"/api/v1/proposals/{issued['id']}?format=xlsx",
        f"/api/v1/proposals/{issued['id']}/proposal.xlsx",
    ):
        assert_problem(bob.get(path), 404)
    assert_problem(bob.post(f"/api/v1/scenarios/{saved}/proposals"), 404)
    assert Proposal.objects.count() == 1


def test_invalid_stored_scenario_is_a_conflict_and_stores_nothing(alice, user) -> None:  # type: ignore[no-untyped-def]
    load_bundled_data()
    broken = scenario_create(owner=user, name="old", document={**DESIGN_SCENARIO, "gpu": "no-such-gpu"})
    assert_problem(alice.post(f"/api/v1/scenarios/{broken.pk}/proposals"), 409, "#/scenario/gpu")
    assert not Proposal.objects.exists()


def test_proposal_survives_its_scenario(alice, saved) -> None:  # type: ignore[no-untyped-def]
    issued = _issue(alice, saved)
    assert alice.delete(f"/api/v1/scenarios/{saved}").status_code == 204
    body = alice.get(f"/api/v1/proposals/{issued['id']}").json()
    assert body["scenario_id"] is None and body["advice"] == issued["advice"]


def test_inference_proposal_pdf_and_workbook(alice, user) -> None:  # type: ignore[no-untyped-def]
    from openpyxl import load_workbook

    load_bundled_data()
    document = json.loads((ROOT / "examples" / "inference-service.json").read_text())
    saved = scenario_create(owner=user, name="chat", document=document).pk
    issued = _issue(alice, saved)
    advice = issued["advice"]
    assert advice["kind"] == "inference"
    flat = " ".join(_pdf_text(alice.get(f"/api/v1/proposals/{issued['id']}/proposal.pdf").content).split())
    totals = yearly_totals(advice=advice)
    assert totals is not None
    assert usd_exact(totals["total"]["rent_present_usd"]) in flat and "Approved by" in flat
    book = load_workbook(io.BytesIO(alice.get(f"/api/v1/proposals/{issued['id']}?format=xlsx").content))
    rows = list(book["Costs by market"].iter_rows(min_row=2, values_only=True))
    rented = [row for row in rows if row[1] != "owned" and row[2]]
    # provider, listed and billed price and source on every rented row
    assert rented and all(row[5] and row[6] and row[12] for row in rented)
    # What a GPU-hour the replicas use is billed there, beside the owned row's per busy GPU-hour: the listed per-GPU
    # price of an 8-GPU instance serving 3 GPUs' replicas read $5.50 where $24.85 is billed (an outsider's check).
    chosen = advice["sizes"][0]["rent"]["by_market"]["on_demand"]
    assert (advice["sizes"][0]["gpus"], "on_demand", chosen["provider"], chosen["usd_per_used_gpu_hour"]) in {
        (row[0], row[1], row[2], row[6]) for row in rows
    }


def test_workbook_text_is_never_a_formula(alice, user) -> None:  # type: ignore[no-untyped-def]
    from openpyxl import load_workbook

    load_bundled_data()
    saved = scenario_create(owner=user, name='=HYPERLINK("http://evil.example","x")', document=DESIGN_SCENARIO).pk
    issued = _issue(alice, saved)
    book = load_workbook(io.BytesIO(alice.get(f"/api/v1/proposals/{issued['id']}?format=xlsx").content))
    cell = next(row[1] for row in book["Summary"].iter_rows(min_row=2) if row[0].value == "Scenario")
    assert cell.value.startswith("=HYPERLINK") and cell.data_type == "s"


def test_the_fabric_cost_is_listed_beside_the_purchase_so_capex_is_recomputable(alice, saved) -> None:  # type: ignore[no-untyped-def]
    """An outsider's probe (#9): the capex of a cluster spanning nodes includes the quote's network fabric per node,
    but the price sources (PDF, page, workbook) listed only the server's purchase price."""
    from openpyxl import load_workbook

    issued = _issue(alice, saved)
    advice = issued["advice"]
    quote = advice["hardware_quote"]
    fabric = quote["networking_usd_per_node"]
    assert fabric > 0 and "networking" in quote["networking_source"]
    spanning = next(s for s in advice["sizes"] if s["nodes"] > 1)
    assert spanning["buy"]["capex_usd"] == pytest.approx(spanning["nodes"] * (quote["usd"] + fabric))
    flat = " ".join(_pdf_text(alice.get(f"/api/v1/proposals/{issued['id']}/proposal.pdf").content).split())
    listed = "network fabric per 8-GPU node, added to the purchase when the cluster spans nodes purchase"
    assert f"{listed} {usd_exact(fabric)}" in flat
    book = load_workbook(io.BytesIO(alice.get(f"/api/v1/proposals/{issued['id']}?format=xlsx").content))
    rows = {row[0]: row for row in book["Assumptions"].iter_rows(min_row=2, values_only=True)}
    assert (
        rows["network fabric"][1] == pytest.approx(fabric) and quote["networking_source"] in rows["network fabric"][3]
    )


def test_the_workbook_states_the_calibration_accuracy_the_pdf_and_page_state() -> None:
    """An outsider's probe (#15): the workbook's Summary said 'Calibration leave-one-out error 0.0822' where the PDF
    and the page state the held-out error that applies ('median error 4.6% of tokens/s')."""
    from advisor.web.presenters import calibration_line
    from advisor.xlsx import _summary_rows

    advice = json.loads((ROOT / "tests" / "fixtures" / "advice_training_example.json").read_text())
    rows = dict(_summary_rows({"id": 1, "advice": advice}))
    assert rows["Calibration accuracy"] == calibration_line(advice=advice)
    assert "median error 4.6% of tokens/s" in rows["Calibration accuracy"]
    assert "Calibration leave-one-out error" not in rows


def test_the_workbook_dates_the_defaults_and_calls_the_users_inputs_theirs() -> None:
    """An outsider's probe: the XLSX dropped the as-of dates the PDF gives defaults (colocation "(as of 2025-12-31)")
    and labelled the user's own discount rate and years "scenario (defaults filled in)"."""
    from openpyxl import load_workbook

    from advisor.xlsx import proposal_workbook

    advice = json.loads((ROOT / "tests" / "fixtures" / "advice_training_example.json").read_text())
    advice["assumptions"].append(
        {
            "pointer": "/buy/colo_usd_per_kw_month",
            "value": 150.0,
            "unit": "USD/kW-month",
            "source": "CBRE",
            "as_of": "2025-12-31",
        }
    )
    book = load_workbook(io.BytesIO(proposal_workbook(proposal={"id": 1, "advice": advice})))
    rows = [row for row in book["Assumptions"].iter_rows(min_row=2, values_only=True)]
    # Listed once, as the default it is, in the page's words (it was listed twice: dated, then "default (its source
    # is listed among the defaults above)").
    colo = [r for r in rows if r[0] == "/buy/colo_usd_per_kw_month"]
    assert colo == [("/buy/colo_usd_per_kw_month", 150.0, "USD/kW-month", "default: CBRE (as of 2025-12-31)")]
    assert next(r for r in rows if r[0] == "/buy/discount_rate")[3] == "your input"
    # An object is listed field by field (a reviewer: /rent/spot read "your input" with all three fields defaults).
    spot = {"checkpoint_s": 120.0, "restart_s": 300.0, "preemptions_per_day": 1.0}
    advice["scenario"]["rent"]["spot"] = spot
    advice["assumptions"] = [a for a in advice["assumptions"] if not a["pointer"].startswith("/rent/spot")]
    advice["assumptions"] += [
        {"pointer": f"/rent/spot/{k}", "value": v, "unit": "", "source": "x"} for k, v in spot.items()
    ]
    book = load_workbook(io.BytesIO(proposal_workbook(proposal={"id": 1, "advice": advice})))
    rows = [row for row in book["Assumptions"].iter_rows(min_row=2, values_only=True)]
    assert {r[0]: r[3] for r in rows if r[0].startswith("/rent/spot")} == {
        f"/rent/spot/{k}": "default: x" for k in spot
    }
    advice["assumptions"] = [a for a in advice["assumptions"] if a["pointer"] != "/rent/spot/checkpoint_s"]
    book = load_workbook(io.BytesIO(proposal_workbook(proposal={"id": 1, "advice": advice})))
    rows = [row for row in book["Assumptions"].iter_rows(min_row=2, values_only=True)]
    assert {r[0]: r[3] for r in rows if r[0].startswith("/rent/spot")} == {
        "/rent/spot/checkpoint_s": "your input",
        "/rent/spot/preemptions_per_day": "default: x",
        "/rent/spot/restart_s": "default: x",
    }
    assert next(r for r in rows if r[0] == "/rent/spot/checkpoint_s")[2] == "s"  # the field's unit, though given


def test_the_workbook_prices_inference_rent_per_used_gpu_hour() -> None:
    # An outsider's check: one 8-GPU B200 instance at $44/h serving 3 GPUs' replicas read $5.50 a GPU-hour, the
    # listed price, beside owning's $12.25 per busy GPU-hour, where $24.85 a used GPU-hour is billed.
    from advisor.xlsx import _market_rows

    offer = {"provider": "acme", "usd_per_gpu_hour": 5.5, "usd_per_used_gpu_hour": 24.85, "gpu_count": 8.0}
    size = {"gpus": 3, "rent": {"by_market": {"on_demand": offer}}, "buy": {"usd_per_gpu_hour_at_utilization": 12.25}}
    rows = _market_rows({"kind": "inference", "sizes": [size]})
    assert [row[5:7] for row in rows] == [[5.5, 24.85], [None, 12.25]]


# The finance analyst's scenario: rent gives only the markets, buy every ownership figure but no server.
GIVEN_OWNERSHIP = {
    "years": 6,
    "discount_rate": 0.1,
    "residual_fraction": 0.2,
    "colo_usd_per_kw_month": 200,
    "support_fraction_per_year": 0.15,
    "power_usd_per_kwh": 0.09,
    "pue": 1.2,
}
ANALYST_SCENARIO = {
    "name": "s4",
    "gpu": "h200",
    "workload": {"kind": "training", "model": {"name": "llama-2-13b"}, "tokens": 2e11},
    "cluster_sizes": [8, 16, 32, 64],
    "rent": {"markets": ["spot", "on_demand"]},
    "buy": GIVEN_OWNERSHIP,
}


def _analyst_assumptions(alice, user) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The analyst's proposal workbook read back: its Assumptions rows (cells) by input, and the inputs in order."""
    from openpyxl import load_workbook

    load_bundled_data()
    issued = _issue(alice, scenario_create(owner=user, name="s4", document=ANALYST_SCENARIO).pk)
    book = load_workbook(io.BytesIO(alice.get(f"/api/v1/proposals/{issued['id']}/proposal.xlsx").content))
    cells = list(book["Assumptions"].iter_rows(min_row=2))
    return {"rows": {row[0].value: row for row in cells}, "inputs": [row[0].value for row in cells]}


def test_the_workbook_calls_only_what_the_user_gave_your_input(alice, user) -> None:  # type: ignore[no-untyped-def]
    """An outsider's probe (a finance analyst): the Assumptions sheet called the null defaults the user never gave
    "your input": ['/rent/usd_per_gpu_hour', None, None, 'your input'] and ['/buy/server', None, None, 'your input']
    (null = the price catalog, the newest hardware quote)."""
    from advisor.scenario import DEFAULTS

    rows = _analyst_assumptions(alice, user)["rows"]
    given = {"/rent/markets", *(f"/buy/{key}" for key in GIVEN_OWNERSHIP)}
    sides = {key for key in rows if key.startswith(("/rent", "/buy"))}
    assert {key for key in sides if rows[key][3].value == "your input"} == given
    # A null default says what it stands for, in the words of the JSON assumptions and the page (scenario.DEFAULTS).
    for pointer in ("/rent/usd_per_gpu_hour", "/buy/server"):
        assert rows[pointer][3].value == f"default: {DEFAULTS[pointer].source}"
        assert rows[pointer][2].value == DEFAULTS[pointer].unit


def test_the_workbook_lists_each_rent_and_buy_field_once_with_its_unit(alice, user) -> None:  # type: ignore[no-untyped-def]
    """An outsider's probe (a finance analyst): no /rent or /buy row of the Assumptions sheet had a unit
    (/buy/colo_usd_per_kw_month 200, /buy/discount_rate 0.1, ... all None), /rent/price_decline_per_year was listed
    twice (once "fraction/year", once None), and every number was General."""
    from pricing.selectors import ownership_defaults

    read = _analyst_assumptions(alice, user)
    rows, inputs = read["rows"], read["inputs"]
    assert len(inputs) == len(set(inputs)), sorted({i for i in inputs if inputs.count(i) > 1})
    sides = {key for key in rows if key.startswith(("/rent", "/buy"))}
    assert all(rows[key][2].value for key in sides), sorted(key for key in sides if not rows[key][2].value)
    # The ownership figures with the catalog's units (those its defaults are listed with), whoever gave the value.
    units = ownership_defaults()
    for key, value in GIVEN_OWNERSHIP.items():
        assert (rows[f"/buy/{key}"][1].value, rows[f"/buy/{key}"][2].value) == (value, units[key]["unit"])
    # Money and fractions read as such; a count of years and a ratio stay plain numbers.
    for pointer in ("/buy/colo_usd_per_kw_month", "/buy/power_usd_per_kwh", "/buy/staff_usd_per_year"):
        assert "$" in rows[pointer][1].number_format, pointer
    for pointer in ("/buy/discount_rate", "/buy/residual_fraction", "/buy/support_fraction_per_year"):
        assert rows[pointer][1].number_format.endswith("%"), pointer
    assert rows["/rent/price_decline_per_year"][1].number_format.endswith("%")
    assert rows["/buy/years"][1].number_format == "General" and rows["/buy/pue"][1].number_format == "General"
    assert "$" in rows["hardware quote"][1].number_format


def test_the_content_hash_verifies_from_the_served_proposal_on_every_backend(alice, user) -> None:  # type: ignore[no-untyped-def]
    # An ops probe: on PostgreSQL, jsonb read the float 1e+16 (workload.tokens) back as the integer
    # 10000000000000000 and -0.0 as 0.0, so the hash of the served JSON did not match; SQLite kept the text.
    import hashlib

    from advisor.proposals import content_hash

    assert content_hash(advice={"tokens": 1e16, "x": -0.0, "y": [1.2345678901234567e20, 2.0]}, provenance={}) == (
        content_hash(advice={"tokens": 10**16, "x": 0.0, "y": [123456789012345670000, 2.0]}, provenance={})
    )
    load_bundled_data()
    document = json.loads(json.dumps(DESIGN_SCENARIO))
    document["workload"]["tokens"] = 1e16
    scenario_id = scenario_create(owner=user, name="largest run", document=document).pk
    issued = _issue(alice, scenario_id)
    served = alice.get(f"/api/v1/proposals/{issued['id']}").json()
    tokens = served["advice"]["scenario"]["workload"]["tokens"]
    assert tokens == 10**16 and isinstance(tokens, int), "the same number on SQLite and PostgreSQL"
    text = json.dumps(
        {"advice": served["advice"], "provenance": served["provenance"]}, sort_keys=True, separators=(",", ":")
    )
    assert hashlib.sha256(text.encode()).hexdigest() == served["content_hash"]


def test_an_issued_proposals_pdf_is_rendered_once(alice, saved, user, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Every download rendered the PDF again (5.75 s, 6.79 s, 6.78 s), though an issued proposal never changes.
    import advisor.proposal

    issued = _issue(alice, saved)
    url = f"/api/v1/proposals/{issued['id']}/proposal.pdf"
    first = alice.get(url).content
    rendered = advisor.proposal.render_proposal_pdf

    def not_again(**_: object) -> bytes:
        raise AssertionError("rendered again")

    monkeypatch.setattr(advisor.proposal, "render_proposal_pdf", not_again)
    assert alice.get(url).content == first
    # What the PDF prints besides the frozen numbers is part of the key: the preparer's name, and a share link's
    # "shared link" in its place.
    monkeypatch.setattr(advisor.proposal, "render_proposal_pdf", rendered)
    user.first_name, user.last_name = "Alice", "Renamed"
    user.save()
    assert "Alice Renamed" in _pdf_text(alice.get(url).content)


def test_the_pdf_and_workbook_word_the_reasons_and_warnings_without_market_ids_or_pointers(alice, user) -> None:  # type: ignore[no-untyped-def]
    """A CFO reading only the PDF (an outsider's probe): 'remove spot from /rent/markets', 'give /buy/capex_usd' and
    'eu-north1 on_demand' in the reasons and warnings. The PDF and the workbook word them; the API's JSON keeps
    them as they are (clients read them)."""
    from openpyxl import load_workbook

    load_bundled_data()
    document = json.loads((ROOT / "examples" / "inference-service.json").read_text())
    saved = scenario_create(owner=user, name="chat", document=document).pk
    issued = _issue(alice, saved)
    advice = issued["advice"]
    said = " ".join([*advice["recommendation"]["reasons"], *advice["warnings"]])
    assert "/rent/markets" in said and "on_demand" in said  # the JSON as API clients read it
    flat = " ".join(_pdf_text(alice.get(f"/api/v1/proposals/{issued['id']}/proposal.pdf").content).split())
    book = load_workbook(io.BytesIO(alice.get(f"/api/v1/proposals/{issued['id']}/proposal.xlsx").content))
    summary = [str(row[1]) for row in book["Summary"].iter_rows(min_row=2, values_only=True) if row[0] == "Warning"]
    for text in (flat, " ".join(summary)):
        assert "/rent/" not in text and "/buy/" not in text and "on_demand" not in text
        assert "remove spot from “Rent: markets”" in text and "give “Buy: capex USD”" in text
        assert "on-demand" in text


def test_your_proposals_are_listed_newest_first_and_paginated(alice, bob, saved) -> None:  # type: ignore[no-untyped-def]
    # An outside client could issue proposals but had no GET /api/v1/proposals to find them again (F1).
    issued = [_issue(alice, saved)["id"] for _ in range(2)]
    response = alice.get("/api/v1/proposals")
    assert response.status_code == 200, response.content
    page = response.json()
    assert page["count"] == 2 and [p["id"] for p in page["results"]] == issued[::-1]
    newest = page["results"][0]
    assert (newest["kind"], newest["scenario_id"], newest["fleet_id"], newest["scenario_name"]) == (
        "scenario",
        saved,
        None,
        "7B pretraining",
    )
    assert alice.get("/api/v1/proposals?page_size=1").json()["next"]
    assert bob.get("/api/v1/proposals").json()["count"] == 0
    assert_problem(alice.get("/api/v1/proposals?page=x"), 400, "#/page")


def test_the_proposal_lists_do_not_read_the_stored_advice(alice, saved) -> None:  # type: ignore[no-untyped-def]
    # A reviewer: GET /api/v1/proposals?page_size=500 read every proposal's whole Advice (tens of KB each) to show
    # seven fields (0.6 s against 0.005 s for the scenarios list). The list reads only its columns.
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    issued = _issue(alice, saved)
    for path in ["/api/v1/proposals", f"/api/v1/scenarios/{saved}/proposals"]:
        with CaptureQueriesContext(connection) as queries:
            page = alice.get(path)
        assert page.status_code == 200 and [item["id"] for item in page.json()["results"]] == [issued["id"]]
        assert set(page.json()["results"][0]) == {
            "id",
            "kind",
            "scenario_id",
            "fleet_id",
            "scenario_name",
            "issued_at",
            "content_hash",
        }
        proposal_reads = [q["sql"] for q in queries.captured_queries if 'FROM "advisor_proposal"' in q["sql"]]
        assert proposal_reads, path
        for sql in proposal_reads:
            for column in ("advice", "provenance", "scenario_document"):
                assert f'"advisor_proposal"."{column}"' not in sql, (path, column)
