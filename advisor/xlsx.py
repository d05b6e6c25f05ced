"""A proposal as an Excel workbook (openpyxl): summary, sizes, costs by market, cash flow by year,
prices and assumptions with their sources. It writes the stored Advice; it computes nothing new
beyond cutting the stored cash flow into years (advisor.cash_flow)."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from advisor.advice.documents import defaulted_fields
from advisor.cash_flow import decision_amount, yearly_totals
from advisor.scenario import DEFAULTS
from advisor.web.presenters import _default_source, calibration_line

MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
_SIZE_SKIP = {"rent", "buy", "layout"}


# What XML 1.0, so an XLSX cell, cannot hold (openpyxl raises IllegalCharacterError on it). Names are refused with
# them now (core.textcheck), but a proposal is frozen: one stored before must still download, so each is written
# as a visible escape ("\x1b") instead.
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _cell_text(text: str) -> str:
    return _ILLEGAL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def _cell_value(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, int | float):
        return value
    if isinstance(value, Mapping | list | tuple):
        return _cell_text(
            ", ".join(f"{k}={v}" for k, v in value.items())
            if isinstance(value, Mapping)
            else ", ".join(str(v) for v in value)
        )
    return _cell_text(str(value))


def _sheet(workbook: Any, title: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    sheet = workbook.create_sheet(title)
    sheet.append([_cell_value(v) for v in header])
    for row in rows:
        sheet.append([_cell_value(v) for v in row])
    for cells in sheet.iter_rows():
        for cell in cells:
            # A text cell starting with "=" would be written as a formula: keep everything we write as data.
            if isinstance(cell.value, str) and cell.value.startswith("="):
                cell.data_type = "s"
    sheet.freeze_panes = "A2"


def _size_rows(advice: Mapping[str, Any]) -> tuple[list[str], list[list[Any]]]:
    sizes = advice.get("sizes") or []
    scalar = [k for k in (sizes[0] if sizes else {}) if k not in _SIZE_SKIP]
    money: list[str] = []
    for size in sizes[:1]:
        for side in ("rent", "buy"):
            money += [f"{side}.{k}" for k, v in (size.get(side) or {}).items() if isinstance(v, int | float | bool)]
    layout = ["layout"] if sizes and "layout" in sizes[0] else []
    rows = []
    for size in sizes:
        side_values = [(size.get(col.split(".")[0]) or {}).get(col.split(".")[1]) for col in money]
        rows.append([size.get(k) for k in scalar] + side_values + [size.get("layout") for _ in layout])
    return scalar + money + layout, rows


def _market_rows(advice: Mapping[str, Any]) -> list[list[Any]]:
    inference = advice.get("kind") == "inference"
    rows = []
    for size in advice.get("sizes") or []:
        rent = size.get("rent") or {}
        markets = rent.get("by_market") or {rent.get("market") or (rent.get("offer") or {}).get("market"): rent}
        for market, entry in markets.items():
            # Training nests each market's offer under "offer" with its cost; inference lists the offers themselves.
            offer = (entry or {}).get("offer") or (entry if (entry or {}).get("usd_per_gpu_hour") is not None else {})
            # Inference rents whole instances: what a GPU-hour its replicas use is billed, comparable with the owned
            # row's per busy GPU-hour (an outsider's check: an 8-GPU B200 instance serving 3 GPUs' replicas read
            # $5.50, the listed per-GPU price, where $24.85 is billed, twice owning's $12.25).
            price = offer.get(
                "usd_per_used_gpu_hour" if inference else "usd_per_gpu_hour", offer.get("usd_per_gpu_hour")
            )
            rows.append(
                [
                    size.get("gpus"),
                    market,
                    offer.get("provider"),
                    offer.get("instance"),
                    offer.get("region"),
                    price,
                    (entry or {}).get("usd_per_run"),
                    (entry or {}).get("usd_per_month"),
                    offer.get("observed_at"),
                    offer.get("source"),
                ]
            )
        buy = size.get("buy") or {}
        rows.append(
            [
                size.get("gpus"),
                "owned",
                None,
                None,
                None,
                buy.get("usd_per_gpu_hour_at_utilization"),
                buy.get("usd_per_run"),
                buy.get("usd_per_month"),
                None,
                "hardware quote (see Assumptions)",
            ]
        )
    return rows


def _summary_rows(proposal: Mapping[str, Any]) -> list[list[Any]]:
    advice = proposal["advice"]
    recommendation = advice.get("recommendation") or {}
    amount = decision_amount(advice=advice) or {}
    calibration = advice.get("calibration") or {}
    rows = [
        ["Proposal", proposal.get("id")],
        ["Scenario", proposal.get("scenario_name")],
        ["Issued at", proposal.get("issued_at")],
        ["Decision", recommendation.get("action")],
        ["GPUs", recommendation.get("gpus")],
        ["GPU", (advice.get("gpu") or {}).get("id")],
        ["Amount to approve (USD)", amount.get("usd")],
        ["Amount is", amount.get("label")],
        ["Stated runs alone, rented (USD a year)", amount.get("stated_runs_usd")],
        # The cash-flow sheet is undiscounted and may favour the other option: say which figures decide.
        ["Decision basis", (yearly_totals(advice=advice) or {}).get("basis")],
        ["Prices as of", advice.get("prices_as_of")],
        ["Calibration", calibration.get("name")],
        # The same accuracy statement as the PDF and the page (the held-out error that applies to this scenario).
        ["Calibration accuracy", calibration_line(advice=advice)],
        ["Content hash (SHA-256)", proposal.get("content_hash")],
    ]
    rows += [["Reason", reason] for reason in recommendation.get("reasons") or []]
    rows += [["Warning", warning] for warning in advice.get("warnings") or []]
    return rows


def _cash_rows(advice: Mapping[str, Any]) -> list[list[Any]]:
    totals = yearly_totals(advice=advice)
    if totals is None:
        return []
    keys = ("rent_usd", "buy_usd", "rent_present_usd", "buy_present_usd")
    rows = [[row["year"], *(row[k] for k in keys)] for row in totals["years"]]
    rows.append([f"total over {totals['horizon_years']:g} years", *(totals["total"][k] for k in keys)])
    return rows


def _quote_origin(quote: Mapping[str, Any], source: Any) -> str:
    """Which quote, when and where from; a manual quote has no catalog name or date to give."""
    parts = [quote.get("name"), f"quoted {quote['quoted_on']}" if quote.get("quoted_on") else None, source]
    return "; ".join(str(part) for part in parts if part)


def _assumption_rows(advice: Mapping[str, Any]) -> list[list[Any]]:
    assumptions = advice.get("assumptions") or []
    # The default's date, as the PDF gives it (an outsider's probe: colocation "(as of 2025-12-31)" in the PDF, none
    # here).
    rows = [
        [a.get("pointer"), a.get("value"), a.get("unit"), _dated(a.get("source"), a.get("as_of"))] for a in assumptions
    ]
    defaulted = {a.get("pointer") for a in assumptions}
    quote = advice.get("hardware_quote") or {}
    if quote:
        rows.append(
            [
                "hardware quote",
                quote.get("usd"),
                f"USD per {quote.get('gpus_per_server')}-GPU server",
                _quote_origin(quote, quote.get("source")),
            ]
        )
        if quote.get("networking_usd_per_node"):
            rows.append(
                [
                    "network fabric",
                    quote["networking_usd_per_node"],
                    f"USD per {quote.get('gpus_per_server')}-GPU node, added when the cluster spans nodes",
                    _quote_origin(quote, quote.get("networking_source") or quote.get("source")),
                ]
            )
    gpu = advice.get("gpu") or {}
    if gpu:
        rows.append(["gpu", gpu.get("id"), gpu.get("name"), gpu.get("source")])
    for section in ("rent", "buy"):
        for key, value in ((advice.get("scenario") or {}).get(section) or {}).items():
            pointer = f"/{section}/{key}"
            null = _null_default(pointer, value, defaulted)
            if null:
                rows.append([pointer, None, null["unit"], _default_source(null)])
            else:
                rows.append([pointer, value, None, _origin(pointer, value, defaulted)])
    return rows


def _null_default(pointer: str, value: Any, defaulted: set[Any]) -> dict[str, Any] | None:
    """The default a null field stands for, as the assumptions list one (pointer, value, unit, source). Null is no
    one's input, but the parser records a nullable field left out (/rent/usd_per_gpu_hour: the price catalog;
    /buy/server: the newest hardware quote) as no default, so the Advice's assumptions never list it."""
    if value is not None or pointer in defaulted or pointer not in DEFAULTS:
        return None
    default = DEFAULTS[pointer]
    return {"pointer": pointer, "value": None, "unit": default.unit, "source": default.source}


def _origin(pointer: str, value: Any, defaulted: set[Any]) -> str:
    """Who gave a /rent or /buy value: only the pointers listed among the assumptions were filled in by a default.
    An object (/rent/spot) is defaulted field by field (a reviewer found it labelled "your input" though all three
    of its fields were defaults)."""
    fields = defaulted_fields(pointer, defaulted)
    if pointer in defaulted or (isinstance(value, dict) and fields and len(fields) >= len(value)):
        return "default (its source is listed among the defaults above)"
    return "your input, with defaults for " + ", ".join(fields) if fields else "your input"


def _dated(source: Any, as_of: Any) -> Any:
    return f"{source} (as of {as_of})" if as_of and source else source


def proposal_workbook(*, proposal: Mapping[str, Any]) -> bytes:
    """The workbook of one proposal document (the API's JSON: id, scenario_name, issued_at, advice, ...)."""
    from openpyxl import Workbook  # only the xlsx download pays for loading openpyxl

    advice = proposal["advice"]
    workbook = Workbook()
    workbook.remove(workbook.active)
    _sheet(workbook, "Summary", ["Item", "Value"], _summary_rows(proposal))
    header, rows = _size_rows(advice)
    _sheet(workbook, "Sizes", header, rows)
    _sheet(
        workbook,
        "Costs by market",
        [
            "gpus",
            "market",
            "provider",
            "instance",
            "region",
            "usd_per_gpu_hour",
            "usd_per_run",
            "usd_per_month",
            "observed_at",
            "source",
        ],
        _market_rows(advice),
    )
    _sheet(
        workbook,
        "Cash flow by year",
        ["year", "rent_cash_usd", "buy_cash_usd", "rent_present_usd", "buy_present_usd"],
        _cash_rows(advice),
    )
    offers = (proposal.get("provenance") or {}).get("offers") or []
    _sheet(
        workbook,
        "Prices",
        ["provider", "instance", "region", "market", "usd_per_gpu_hour", "observed_at", "source"],
        (
            [
                o.get(k)
                for k in ("provider", "instance", "region", "market", "usd_per_gpu_hour", "observed_at", "source")
            ]
            for o in offers
        ),
    )
    _sheet(workbook, "Assumptions", ["input", "value", "unit", "source"], _assumption_rows(advice))
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()
