"""A proposal as an Excel workbook (openpyxl): summary, sizes, costs by market, the compared GPUs (with
compare_gpus), cash flow by year, prices and assumptions with their sources. It writes the stored Advice; it
computes nothing new beyond cutting the stored cash flow into years (advisor.cash_flow)."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from advisor import formatting as fmt
from advisor.advice.documents import NOT_SERVING_PREFIXES
from advisor.advice.models import Alternative, InferenceAlternative
from advisor.advice.recommendation import cheapest_marks
from advisor.cash_flow import decision_amount, fleet_owned_parts, fleet_purchase, yearly_totals
from advisor.fleet.proposal import amount_text, line_billed_price, line_offers, purchase_text
from advisor.models import Proposal
from advisor.scenario import DEFAULTS, OWNERSHIP_KEYS
from advisor.web.presenters import (
    SHOWN_IN_OTHER_ROWS,
    alternative_finishes,
    calibration_line,
    default_source,
    fabric_usd_per_node,
    fleet_prices_as_of_text,
    offer_key,
    offer_source,
    plain_words,
    prices_as_of_text,
    quote_sources,
    scenario_inputs,
)
from estimator.catalog import DENSE_ASSUMED
from pricing import selectors

FLEET_KIND: Final[str] = Proposal.KIND_FLEET
MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
_SIZE_SKIP = {"rent", "buy", "layout"}


# What XML 1.0, so an XLSX cell, cannot hold (openpyxl raises IllegalCharacterError on it). Names are refused with
# them now (core.textcheck), but a proposal is frozen: one stored before must still download, so each is written
# as a visible escape ("\x1b") instead.
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _cell_text(text: str) -> str:
    return _ILLEGAL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


# Significant digits a number is written with: a float64 carries 15-17, and its binary noise sits in the last of them
# (a first-time user: "Amount to approve" 18523545.60000001, utilization 0.7000000000000001); 14 drop it and keep
# every cent of amounts below $1 trillion and every digit a share or a price per GPU-hour is given with.
CELL_SIGNIFICANT_DIGITS: Final[int] = 14


def _cell_value(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.{CELL_SIGNIFICANT_DIGITS}g}")
    if isinstance(value, bool) or value is None or isinstance(value, int | datetime):
        return value
    if isinstance(value, Mapping | list | tuple):
        return _cell_text(
            ", ".join(f"{k}={v}" for k, v in value.items())
            if isinstance(value, Mapping)
            else ", ".join(str(v) for v in value)
        )
    return _cell_text(str(value))


def _sheet(workbook: Any, title: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Any:
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
    return sheet


# An offer on the Sizes sheet: which market, whose, and its prices (listed per GPU-hour, billed per used GPU-hour,
# per instance-hour of gpu_count GPUs); "Costs by market" and "Prices" give each offer in full, with its source.
_OFFER_FIELDS: Final[tuple[str, ...]] = (
    "market",
    "provider",
    "gpu_count",
    "usd_per_hour",
    "usd_per_gpu_hour",
    "usd_per_used_gpu_hour",
)
# What the run costs on training's chosen market (rent.market), from its rent.by_market entry: a busy GPU-hour, and
# the wall hours with spot's interruption loss, so that gpus x wall_hours x usd_per_busy_gpu_hour = usd_per_run.
_CHOSEN_FIELDS: Final[tuple[str, ...]] = ("usd_per_busy_gpu_hour", "wall_hours", "lost_fraction")


def _size_rows(advice: Mapping[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """One row per size; the columns are every size's, in the order first met, blank where a size has none (an
    outsider's probe: they were the first size's alone, so a first size that does not fit lost every cost column)."""
    sizes = list(advice.get("sizes") or [])
    if advice.get("kind") != "inference":
        sizes = [_as_issued(size) for size in sizes]
    scalar = list(dict.fromkeys(k for size in sizes for k in size if k not in _SIZE_SKIP))
    cells = [_side_cells(size) for size in sizes]
    met = list(dict.fromkeys(column for side in cells for column in side))
    money: list[str] = []
    for column in met:
        # A field null in one size and an object in another (a deployment that does not fit has no offer) is the
        # object's fields, where the null stood.
        fields = [other for other in met if other.startswith(f"{column}.")]
        money += [field for field in fields or [column] if field not in money]
    layout = ["layout"] if any("layout" in size for size in sizes) else []
    rows = []
    for size, side in zip(sizes, cells, strict=True):
        rows.append([size.get(k) for k in scalar] + [side.get(c) for c in money] + [size.get("layout") for _ in layout])
    return scalar + money + layout, rows


def _as_issued(size: Mapping[str, Any]) -> Mapping[str, Any]:
    """A training size under the column its figures mean: documents issued before 2026-12-06 held only the fixed
    owned cost in buy.usd_per_year (no buy.fixed_usd_per_year beside it), so their workbook says fixed_usd_per_year
    (a finance probe: an old and a new workbook showed $2,381,488 and $2,515,301 under one header)."""
    buy = size.get("buy")
    if not isinstance(buy, Mapping) or "usd_per_year" not in buy or "fixed_usd_per_year" in buy:
        return size
    renamed = {("fixed_usd_per_year" if key == "usd_per_year" else key): value for key, value in buy.items()}
    return {**size, "buy": renamed}


def _side_cells(size: Mapping[str, Any]) -> dict[str, Any]:
    """A size's rent and buy figures by column ("rent.usd_per_run"), null ones included; an object's fields each in
    a column ("buy.break_even_against.market"), an offer's by _OFFER_FIELDS. rent.by_market is on "Costs by market",
    but the chosen market's run is here (an outsider's probe: spot's rent did not re-add from the sheet, and no
    market was named beside the rent or the break-even)."""
    cells: dict[str, Any] = {}
    for side in ("rent", "buy"):
        values = size.get(side) or {}
        for key, value in values.items():
            if key == "by_market":
                continue
            if isinstance(value, Mapping):
                fields = _OFFER_FIELDS if "provider" in value else value
                cells.update({f"{side}.{key}.{field}": value.get(field) for field in fields})
            else:
                cells[f"{side}.{key}"] = value
        market = values.get("market")
        chosen = (values.get("by_market") or {}).get(market) if side == "rent" and isinstance(market, str) else None
        if isinstance(chosen, Mapping):
            cells.update({f"rent.{field}": chosen[field] for field in _CHOSEN_FIELDS if field in chosen})
    return cells


# "Costs by market": each rented market's offer and cost, then the owned row, per size.
MARKET_HEADER: Final[tuple[str, ...]] = (
    "gpus",
    "market",
    "provider",
    "instance",
    "region",
    "listed_usd_per_gpu_hour",
    "usd_per_used_gpu_hour",
    "wall_hours",
    "lost_fraction",
    "usd_per_run",
    "usd_per_month",
    "observed_at",
    "source",
    # Added last, so that a reader of the earlier columns by position still finds them. Inference: the deployment's
    # tensor parallelism (an outsider's probe: TP 2 and TP 4 both read gpus=4).
    "tp",
    # The owned row: whether one cluster finishes the year's runs (buy.finishes_runs); its usd_per_run assumes the
    # cluster busy all year where it does not (an outsider's probe: 64 GPUs at $1.21M a run for 4 runs of 340 days).
    "finishes_runs",
)


# The row of an inference deployment's rent a month as planned: its base billed all month and its burst while needed,
# each offer a row of its own (an outsider's probe: no rented row had a usd_per_month).
RENTED_PLAN: Final[str] = "rented plan (base + burst)"


def _plan_row(size: Mapping[str, Any]) -> list[list[Any]]:
    """An inference deployment's rent.usd_per_month as the Advice states it; none for training or an unpriced plan."""
    rent = size.get("rent") or {}
    if rent.get("usd_per_month") is None:
        return []
    row: list[Any] = [size.get("gpus"), RENTED_PLAN, *([None] * (len(MARKET_HEADER) - 2))]
    row[MARKET_HEADER.index("tp")] = size.get("tp")
    row[MARKET_HEADER.index("usd_per_month")] = rent["usd_per_month"]
    row[MARKET_HEADER.index("source")] = "base_offer and burst_offer (see Prices)"
    return [row]


def _market_rows(advice: Mapping[str, Any]) -> list[list[Any]]:
    rows = []
    for size in advice.get("sizes") or []:
        rent = size.get("rent") or {}
        markets = rent.get("by_market") or {rent.get("market") or (rent.get("offer") or {}).get("market"): rent}
        gpus, tp = size.get("gpus"), size.get("tp")
        rows += [_rented_row(gpus, tp, market, entry or {}) for market, entry in markets.items()]
        if advice.get("kind") == "inference":
            rows += _plan_row(size)
        buy = size.get("buy") or {}
        rows.append(
            [
                gpus,
                "owned",
                None,
                None,
                None,
                None,
                buy.get("usd_per_gpu_hour_at_utilization"),
                None,
                None,
                buy.get("usd_per_run"),
                buy.get("usd_per_month"),
                None,
                "hardware quote (see Assumptions)",
                tp,
                buy.get("finishes_runs"),
            ]
        )
    return rows


def _rented_row(gpus: Any, tp: Any, market: Any, entry: Mapping[str, Any]) -> list[Any]:
    """One rented market of a size: the offer's listed price per GPU-hour, and what a GPU-hour the work uses is
    billed, comparable with the owned row's per busy GPU-hour. Training bills a busy GPU-hour (a reserved market's
    commitment over the utilization); inference rents whole instances, billed over the GPUs its replicas use (an
    outsider's check: an 8-GPU B200 instance serving 3 GPUs' replicas is billed $24.85 a used GPU-hour, listed at
    $5.50; and a probe: that billed rate sat under the header usd_per_gpu_hour, beside the listed price elsewhere)."""
    # Training nests each market's offer under "offer" with its cost; inference lists the offers themselves.
    offer = entry.get("offer") or (entry if entry.get("usd_per_gpu_hour") is not None else {})
    return [
        gpus,
        market,
        offer.get("provider"),
        offer.get("instance"),
        offer.get("region"),
        offer.get("usd_per_gpu_hour"),
        entry.get("usd_per_busy_gpu_hour", offer.get("usd_per_used_gpu_hour")),
        # Training's run on this market: its wall hours, with spot's interruption loss (gpus x wall_hours x the
        # billed rate = usd_per_run).
        entry.get("wall_hours"),
        entry.get("lost_fraction"),
        entry.get("usd_per_run"),
        entry.get("usd_per_month"),
        offer.get("observed_at"),
        offer.get("source"),
        tp,
        None,
    ]


def _cell(value: Any) -> Any:
    """A value a cell can hold: a list (an alternative's warnings) joined with "; "; an alternative's offer or
    hardware quote as the price sources word it (each is also a row of the Prices sheet)."""
    if isinstance(value, Mapping):
        row = (
            (quote_sources(quote=value, fabric=None) or [{}])[0] if "gpus_per_server" in value else offer_source(value)
        )
        return ", ".join(str(row[k]) for k in ("what", "market", "price", "observed_at") if row.get(k))
    return "; ".join(map(str, value)) if isinstance(value, list) else value


def _worded(alternative: Mapping[str, Any], key: str) -> Any:
    """An alternative's field, its warnings in words as the Summary's (plain_words)."""
    value = alternative.get(key)
    return [plain_words(str(w)) for w in value] if key == "warnings" and isinstance(value, list) else value


def _alternative_rows(advice: Mapping[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """With compare_gpus, one row per GPU at its recommended size as the Advice states it, and which is cheapest
    as the page and the PDF mark it (an outsider's probe: the workbook had no GPU comparison at all)."""
    alternatives = advice.get("alternatives") or []
    # The schema's order (gpu first), then any field it does not name.
    model = InferenceAlternative if advice.get("kind") == "inference" else Alternative
    # cheapest last, as the Advice states it or (a document issued before it) by the same rule.
    met = {key for alternative in alternatives for key in alternative} - {"cheapest"}
    header = [key for key in model.model_fields if key in met] + sorted(met - set(model.model_fields))
    marked = cheapest_marks(advice)
    rows = [
        [_cell(_worded(a, k)) for k in header] + [cheapest] for a, cheapest in zip(alternatives, marked, strict=True)
    ]
    if model is InferenceAlternative:
        return [*header, "cheapest"], rows
    # Whether each GPU's size finishes the year's runs, as the PDF's note says (an A100 needing 18,018 h a year).
    finishes = [alternative_finishes(advice=advice, alternative=a) for a in alternatives]
    rows = [[*row, f["buy"], f["rent"]] for row, f in zip(rows, finishes, strict=True)]
    return [*header, "cheapest", "owning_finishes_runs", "renting_finishes_runs"], rows


PRICE_KEYS: Final = ("provider", "instance", "region", "market", "usd_per_gpu_hour", "observed_at", "source")


def _price_rows(proposal: Mapping[str, Any]) -> list[list[Any]]:
    """The offers the proposal quotes (provenance), then those the compared GPUs are priced at and their server
    quotes (market "purchase", the price per server in usd), each once, with the GPU each prices (an outsider's
    probe: the compared GPUs' offers and quotes were listed nowhere)."""
    advice = proposal["advice"]
    gpu = (advice.get("gpu") or {}).get("id")
    rows = [
        [o.get(k) for k in PRICE_KEYS] + [gpu, None] for o in (proposal.get("provenance") or {}).get("offers") or []
    ]
    seen = {tuple(row[:4]) for row in rows}
    for alternative in advice.get("alternatives") or []:
        offer, quote = alternative.get("offer"), alternative.get("hardware_quote")
        if offer and tuple(offer.get(k) for k in PRICE_KEYS[:4]) not in seen:
            seen.add(tuple(offer.get(k) for k in PRICE_KEYS[:4]))
            rows.append([offer.get(k) for k in PRICE_KEYS] + [alternative.get("gpu"), None])
        if quote and ("purchase", quote.get("gpu"), quote.get("quoted_on")) not in seen:
            seen.add(("purchase", quote.get("gpu"), quote.get("quoted_on")))
            rows.append(_quote_price_row(quote))
    return rows


def _quote_price_row(quote: Mapping[str, Any]) -> list[Any]:
    """A hardware quote as a Prices row (PRICE_KEYS, gpu, usd): market "purchase", the price per server in usd."""
    name = quote.get("name") or f"{quote.get('gpus_per_server')}-GPU server"
    dated = (quote.get("quoted_on"), quote.get("source"), quote.get("gpu"), quote.get("usd"))
    return [name, None, None, "purchase", None, *dated]


DATETIME_FORMAT: Final[str] = "yyyy-mm-dd hh:mm:ss"


def _utc(value: Any) -> Any:
    """An ISO time as an Excel date and time in UTC (a cell holds no time zone: its label says UTC). The API's
    document writes it "...Z", the web's "+00:00" (an outsider's probe: the two workbooks held the two texts)."""
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    except ValueError:
        return value
    if not isinstance(moment, datetime):
        return value
    return (moment.astimezone(UTC) if moment.tzinfo else moment).replace(tzinfo=None)


def _format_dates(sheet: Any) -> None:
    for cells in sheet.iter_rows():
        for cell in cells:
            if isinstance(cell.value, datetime):
                cell.number_format = DATETIME_FORMAT


def _issue_rows(proposal: Mapping[str, Any], *, named: str) -> list[list[Any]]:
    """The Summary's first rows, scenario or fleet: which proposal, of what (``named``: "Scenario", "Fleet"), when."""
    return [
        ["Proposal", proposal.get("id")],
        [named, proposal.get("scenario_name")],
        ["Issued at (UTC)", _utc(proposal.get("issued_at"))],
    ]


def _summary_rows(proposal: Mapping[str, Any]) -> list[list[Any]]:
    advice = proposal["advice"]
    recommendation = advice.get("recommendation") or {}
    amount = decision_amount(advice=advice) or {}
    calibration = advice.get("calibration") or {}
    rows = [
        *_issue_rows(proposal, named="Scenario"),
        ["Decision", recommendation.get("action")],
        # What is bought: a serving deployment is owned in whole servers (a finance probe: GPUs 12 beside the
        # $634,000 of 16 GPUs in 2 servers).
        ["GPUs", recommendation.get("gpus_owned") or recommendation.get("gpus")],
        *(
            [["Servers", recommendation["nodes"]], ["GPUs the deployment uses", recommendation.get("gpus")]]
            if recommendation.get("gpus_owned")
            else []
        ),
        ["GPU", (advice.get("gpu") or {}).get("id")],
        ["Amount to approve (USD)", amount.get("usd")],
        ["Amount is", amount.get("label")],
        # Only where the Advice has the figure (an outsider's probe: empty in every proposal, meaningless for serving).
        *(
            [["The runs a year alone, rented (USD a year)", amount["stated_runs_usd"]]]
            if amount.get("stated_runs_usd") is not None
            else []
        ),
        # Buying a cluster that cannot finish the year's runs rents the rest beside it every year (buy.overflow).
        *(
            [["Beside it, the overflow runs rented (USD a year)", amount["overflow_rent_usd_per_year"]]]
            if amount.get("overflow_rent_usd_per_year") is not None
            else []
        ),
        # The cash-flow sheet is undiscounted and may favour the other option: say which figures decide.
        ["Decision basis", (yearly_totals(advice=advice) or {}).get("basis")],
        # The PDF cover's words: the date alone read as an observation date where it was the snapshot's compile date.
        ["Prices", prices_as_of_text(advice=advice)],
        ["Calibration", calibration.get("name")],
        # The same accuracy statement as the PDF and the page (the held-out error that applies to this scenario).
        ["Calibration accuracy", calibration_line(advice=advice)],
        ["Content hash (SHA-256)", proposal.get("content_hash")],
    ]
    rows += [["Reason", plain_words(reason)] for reason in recommendation.get("reasons") or []]
    rows += [["Warning", plain_words(warning)] for warning in advice.get("warnings") or []]
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
    """The defaults the Advice assumed, the hardware quote and the GPU, then each /rent and /buy field once."""
    assumptions = [a for a in advice.get("assumptions") or [] if isinstance(a, Mapping)]
    rows = [_default_row(a) for a in assumptions if not str(a.get("pointer")).startswith(_SIDES)]
    rows += _quote_rows(advice.get("hardware_quote") or {}, fabric=fabric_usd_per_node(advice=advice))
    gpu = advice.get("gpu") or {}
    if gpu:
        rows.append(["gpu", gpu.get("id"), gpu.get("name"), gpu.get("source")])
    defaults = {a.get("pointer"): a for a in assumptions}
    return rows + _input_rows(advice=advice, defaults=defaults) + _side_rows(advice=advice, defaults=defaults)


def _quote_rows(quote: Mapping[str, Any], *, fabric: float | None) -> list[list[Any]]:
    """The hardware quote, and its network fabric per node where the plan buys it, as Assumptions rows."""
    if not quote:
        return []
    server = f"{quote.get('gpus_per_server')}-GPU"
    rows = [["hardware quote", quote.get("usd"), f"USD per {server} server", _quote_origin(quote, quote.get("source"))]]
    if fabric is not None:
        rows.append(
            [
                "network fabric",
                fabric,
                f"USD per {server} node, added when the cluster spans nodes",
                _quote_origin(quote, quote.get("networking_source") or quote.get("source")),
            ]
        )
    return rows


def _input_rows(*, advice: Mapping[str, Any], defaults: Mapping[Any, Any]) -> list[list[Any]]:
    """Each scenario input outside /rent and /buy that no default row lists (presenters.scenario_inputs, the list the
    PDF's table is drawn from): a finance approver found no utilization, runs per year, tokens or cluster sizes. An
    input another row shows (presenters.SHOWN_IN_OTHER_ROWS: the serving engine, given or defaulted, is the
    /serving/engine row) is not listed again."""
    catalog: dict[str, Any] = {}
    return [
        [
            pointer,
            ", ".join(str(v) for v in value) if isinstance(value, list) else value,
            _unit(pointer=pointer, catalog=catalog),
            _input_origin(advice=advice, pointer=pointer),
        ]
        for pointer, value in scenario_inputs(advice=advice)
        if pointer not in defaults and pointer not in SHOWN_IN_OTHER_ROWS and not pointer.startswith(_SIDES)
    ]


_MODEL_POINTER: Final[str] = "/workload/model/"


def _input_origin(*, advice: Mapping[str, Any], pointer: str) -> str:
    """Where a scenario input with no default row came from. The normalized scenario carries the whole model
    geometry, given or not; what was not given is what the PDF's model row says was assumed (model.assumed: a dense
    model, the shape of the nearest catalog size) or the catalog model's own (a finance probe: vocab, ffn_hidden,
    kv_heads and the experts of an assumed llama-3.1-8b shape read "your input")."""
    field = pointer.removeprefix(_MODEL_POINTER) if pointer.startswith(_MODEL_POINTER) else None
    if field is None or field in ("name", "seq_len"):
        return "your input"
    name = ((advice.get("scenario") or {}).get("workload") or {}).get("model", {}).get("name")
    if name:
        return f"catalog: {name} (your input: {_MODEL_POINTER}name)"
    notes = [str(note) for note in (advice.get("model") or {}).get("assumed") or []]
    if field in ("experts", "active_experts") and DENSE_ASSUMED in notes:
        return f"assumed: {DENSE_ASSUMED}"
    shape = [note for note in notes if note != DENSE_ASSUMED]
    if field == "params_b" or not shape:
        return "your input"
    return f"assumed unless given: {'; '.join(shape)}"


# The Scenario's rent and buy sections: the sheet lists them field by field, whoever gave each.
_SIDES: Final[tuple[str, ...]] = ("/rent/", "/buy/")


def _side_rows(*, advice: Mapping[str, Any], defaults: Mapping[Any, Mapping[str, Any]]) -> list[list[Any]]:
    """Each /rent and /buy field of the scenario once, with its unit: the default it took, else the user's value (an
    outsider's probe: these rows had no unit, and a default was listed twice, once above with its unit and once here
    without). An object (/rent/spot) is listed field by field, each given or defaulted on its own."""
    scenario = advice.get("scenario") or {}
    inference = advice.get("kind") == "inference"
    catalog: dict[str, Any] = {}
    rows, listed = [], set()
    for section in ("rent", "buy"):
        for pointer, value in _fields(pointer=f"/{section}", value=scenario.get(section) or {}):
            # Serving never reads these, and its assumptions leave their defaults out (documents.assumptions_used).
            if inference and pointer.startswith(NOT_SERVING_PREFIXES):
                continue
            listed.add(pointer)
            default = defaults.get(pointer) or _null_default(pointer=pointer, value=value)
            if default is not None:
                rows.append(_default_row(default, unit=_unit(pointer=pointer, catalog=catalog)))
            else:
                rows.append([pointer, value, _unit(pointer=pointer, catalog=catalog), "your input"])
    # A default under /rent or /buy that is no field of the stored scenario is still listed, once.
    rows += [
        _default_row(a)
        for pointer, a in defaults.items()
        if isinstance(pointer, str) and pointer.startswith(_SIDES) and pointer not in listed
    ]
    return rows


def _fields(*, pointer: str, value: Any) -> Iterator[tuple[str, Any]]:
    """The pointer and value of each field under ``pointer``, objects opened field by field."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _fields(pointer=f"{pointer}/{key}", value=inner)
    else:
        yield pointer, value


def _default_row(default: Mapping[str, Any], *, unit: Any = None) -> list[Any]:
    """An assumption's row, its source in the page's and the PDF's words ("default: ... (as of ...)")."""
    return [default.get("pointer"), default.get("value"), default.get("unit") or unit, default_source(dict(default))]


# Units of the inputs that have no default to carry one (an outsider's probe: /workload/tokens 2000000000000 and
# /workload/model/params_b 70.6, in billions, had an empty unit).
INPUT_UNITS: Final[Mapping[str, str]] = {
    "/workload/tokens": "tokens",
    "/workload/model/params_b": "billions of parameters",
}


def _default_of(*, pointer: str, catalog: dict[str, Any]) -> dict[str, Any] | None:
    """A Scenario or fleet field's default as documents.assumptions_used cites it ({"pointer", "unit", "source",
    "as_of"}): advisor.scenario's DEFAULTS, else the ownership-defaults catalog (read once per workbook, only for a
    field whose default is not stored with the document). None for a field with no default. A unit and a source are
    labels, not figures: the proposal's numbers stay as issued."""
    if pointer in DEFAULTS:
        default = DEFAULTS[pointer]
        return {"pointer": pointer, "unit": default.unit, "source": default.source, "as_of": default.as_of}
    key = pointer.removeprefix("/buy/")
    if not pointer.startswith("/buy/") or key not in OWNERSHIP_KEYS:
        return None
    if not catalog:
        catalog.update(selectors.ownership_defaults())
    row = catalog.get(key) or {}
    return {"pointer": pointer, "unit": row.get("unit"), "source": row.get("source"), "as_of": row.get("as_of")}


def _unit(*, pointer: str, catalog: dict[str, Any]) -> Any:
    """A Scenario field's unit from where its default's comes from (``_default_of``), else INPUT_UNITS."""
    if pointer in INPUT_UNITS and pointer not in DEFAULTS:
        return INPUT_UNITS[pointer]
    return (_default_of(pointer=pointer, catalog=catalog) or {}).get("unit")


def _null_default(*, pointer: str, value: Any) -> dict[str, Any] | None:
    """The default a null field stands for, as the assumptions list one (pointer, value, unit, source). Null is no
    one's input, but the parser records a nullable field left out (/rent/usd_per_gpu_hour: the price catalog;
    /buy/server: the newest hardware quote) as no default, so the Advice's assumptions never list it."""
    if value is not None or pointer not in DEFAULTS:
        return None
    default = DEFAULTS[pointer]
    return {"pointer": pointer, "value": None, "unit": default.unit, "source": default.source}


MONEY_FORMAT: Final[str] = '"$"#,##0.00##'
FRACTION_FORMAT: Final[str] = "0.0#%"


def _number_format(unit: Any) -> str | None:
    """How a number in ``unit`` reads: money where the unit is in USD, a percentage where it is a fraction (the
    catalog's discount rate is "per year": a fraction per year). The cell keeps the exact value."""
    text = str(unit or "")
    if text.startswith("USD"):
        return MONEY_FORMAT
    if text.startswith("fraction") or text == "per year":
        return FRACTION_FORMAT
    return None


def _format_by_unit(sheet: Any) -> None:
    """Give each number of an (input, value, unit, source) sheet its unit's number format."""
    for _, value, unit, _ in sheet.iter_rows(min_row=2, max_col=4):
        number_format = _number_format(unit.value)
        if number_format and isinstance(value.value, int | float) and not isinstance(value.value, bool):
            value.number_format = number_format


# The time a workbook is stamped with when its proposal has none (a draft): the ZIP format's earliest date.
ZIP_EPOCH: Final[datetime] = datetime(1980, 1, 1, tzinfo=UTC).replace(tzinfo=None)  # naive UTC, as _utc answers


def _saved(workbook: Any, *, proposal: Mapping[str, Any]) -> bytes:
    """The file's bytes, a function of the proposal alone: the document properties and every ZIP entry carry the
    proposal's issue time, not the moment of the download (two downloads of one frozen proposal a second apart
    differed in the ZIP headers' times)."""
    from openpyxl.xml.constants import ARC_CORE
    from openpyxl.xml.functions import tostring

    moment = _utc(proposal.get("issued_at"))
    moment = moment if isinstance(moment, datetime) and moment >= ZIP_EPOCH else ZIP_EPOCH
    written = io.BytesIO()
    workbook.save(written)
    # openpyxl's save stamps the properties' modified time with the clock whatever was set before it (writer/excel.py
    # save_workbook): the core properties are written again afterwards, created and modified at the issue time (the
    # fresh-clone CI compared two downloads of one fleet proposal a second apart and found docProps/core.xml differ).
    workbook.properties.created = workbook.properties.modified = moment
    core = tostring(workbook.properties.to_tree())
    stamped = io.BytesIO()
    with zipfile.ZipFile(written) as source, zipfile.ZipFile(stamped, "w", zipfile.ZIP_DEFLATED) as target:
        for entry in source.infolist():
            copy = zipfile.ZipInfo(entry.filename, date_time=moment.timetuple()[:6])
            copy.compress_type = zipfile.ZIP_DEFLATED
            copy.external_attr = entry.external_attr
            target.writestr(copy, core if entry.filename == ARC_CORE else source.read(entry.filename))
    return stamped.getvalue()


def _new_workbook() -> Any:
    from openpyxl import Workbook  # only the xlsx download pays for loading openpyxl

    workbook = Workbook()
    workbook.remove(workbook.active)
    return workbook


def proposal_workbook(*, proposal: Mapping[str, Any]) -> bytes:
    """The workbook of one proposal document (the API's JSON: id, kind, scenario_name, issued_at, advice, ...); a
    fleet proposal's (kind "fleet": its advice is the Fleet Plan) is ``fleet_workbook``."""
    if proposal.get("kind") == FLEET_KIND:
        return fleet_workbook(proposal=proposal)
    advice = proposal["advice"]
    workbook = _new_workbook()
    _format_dates(_sheet(workbook, "Summary", ["Item", "Value"], _summary_rows(proposal)))
    header, rows = _size_rows(advice)
    _sheet(workbook, "Sizes", header, rows)
    _sheet(workbook, "Costs by market", MARKET_HEADER, _market_rows(advice))
    if advice.get("alternatives"):
        _sheet(workbook, "Alternatives", *_alternative_rows(advice))
    _sheet(
        workbook,
        "Cash flow by year",
        ["year", "rent_cash_usd", "buy_cash_usd", "rent_present_usd", "buy_present_usd"],
        _cash_rows(advice),
    )
    _sheet(workbook, "Prices", [*PRICE_KEYS, "gpu", "usd"], _price_rows(proposal))
    _format_by_unit(_sheet(workbook, "Assumptions", ["input", "value", "unit", "source"], _assumption_rows(advice)))
    return _saved(workbook, proposal=proposal)


# --- a fleet proposal (its advice is the Fleet Plan JSON) ---------------------------------------------------------


def _fleet_summary_rows(proposal: Mapping[str, Any]) -> list[list[Any]]:
    """The decision and the yearly cost of each answer the plan compares, as issued."""
    plan = proposal["advice"]
    recommendation = plan.get("recommendation") or {}
    demand = plan.get("demand") or {}
    owned = recommendation.get("owned_gpus")
    amount = amount_text(plan=dict(plan)) or {}
    rows = [
        *_issue_rows(proposal, named="Fleet"),
        ["Decision", f"own {owned} GPUs, rent the rest" if owned else "rent everything"],
        ["GPU", plan.get("gpu")],
        ["Owned GPUs", owned],
        ["Amount to approve (USD)", amount.get("usd")],
        ["Amount is", amount.get("label")],
        ["Recommended: yearly cost (USD)", recommendation.get("usd_per_year")],
        ["Renting everything: yearly cost (USD)", recommendation.get("all_rent_usd_per_year")],
        ["Owning the peak: yearly cost (USD)", recommendation.get("own_peak_usd_per_year")],
        ["Saving against renting everything (USD a year)", recommendation.get("saving_vs_all_rent_usd")],
        ["Saving against owning the peak (USD a year)", recommendation.get("saving_vs_own_peak_usd")],
        ["Owned GPUs busy (fraction of the year)", recommendation.get("owned_utilization")],
        ["Break-even utilization (fraction of the year)", recommendation.get("break_even_utilization")],
        ["Break-even is against", _break_even_against(plan)],
        ["Peak demand (GPUs)", demand.get("peak_gpus")],
        ["Demand (GPU-hours a year)", demand.get("gpu_hours_per_year")],
        ["Prices", fleet_prices_as_of_text(plan=plan)],
        ["Content hash (SHA-256)", proposal.get("content_hash")],
    ]
    rows += [["Reason", plain_words(reason)] for reason in recommendation.get("reasons") or []]
    rows += [["Warning", plain_words(warning)] for warning in plan.get("warnings") or []]
    return rows


def _break_even_against(plan: Mapping[str, Any]) -> str | None:
    """The price the break-even utilization is against (plan.TierPrices.floating): the on-demand node offer's price
    the tier is priced at, else the cheapest commitment's; job lines renting cheaper offers are not in it (the Tiers
    sheet's offer rows)."""
    prices = plan.get("tier_prices") or {}
    on_demand = prices.get("on_demand_usd_per_gpu_hour")
    reserved = prices.get("reserved_usd_per_gpu_hour") or {}
    if on_demand is not None:
        market, price = "on_demand", on_demand
    elif reserved:
        market = min(reserved, key=lambda term: reserved[term])
        price = reserved[market]
    else:
        return None
    offer = (prices.get("offers") or {}).get(market) or {}
    named = " ".join(str(offer[k]) for k in ("provider", "instance") if offer.get(k))
    return (
        f"the {market.replace('_', '-')} price of a whole node, {fmt.price(price)} per GPU-hour"
        + (f" ({named})" if named else "")
        + ", not the cheaper offers some job lines rent at (Tiers)"
    )


FLEET_JOB_HEADER: Final[tuple[str, ...]] = (
    "name",
    "part",
    "gpus",
    "run_hours",
    "runs_per_year",
    "months",
    "max_wait_days",
    "interruptible",
    "owned_runs",
    "rented_runs",
    "spot_runs",
    "calibration",
    "calibration_held_out_median_ape",
    "calibration_loo_mape",
    "calibration_accuracy",
)


def _fleet_job_rows(plan: Mapping[str, Any]) -> list[list[Any]]:
    """Each jobs[] line as planned. Its months, wait and spot permission are the input job's where the line does
    not carry them (a line named like one input job only: an inference job's peak-hours lines run daily); its
    calibration (optional: plans issued before it carry none) by name and held-out error, in the page's words."""
    inputs = [job for job in (plan.get("fleet") or {}).get("jobs") or [] if isinstance(job, Mapping)]
    names = [job.get("name") for job in inputs]
    by_name = {job.get("name"): job for job in inputs if names.count(job.get("name")) == 1}
    rows = []
    for line in plan.get("jobs") or []:
        given = by_name.get(line.get("name")) or {}
        calibration = line.get("calibration") or {}
        row = {**{k: line.get(k, given.get(k)) for k in FLEET_JOB_HEADER}, "calibration": calibration.get("name")}
        if calibration:
            row["calibration_held_out_median_ape"] = calibration.get("held_out_median_ape")
            row["calibration_loo_mape"] = calibration.get("loo_mape")
            row["calibration_accuracy"] = calibration_line(advice={"calibration": calibration})
        rows.append([row[k] for k in FLEET_JOB_HEADER])
    return rows


def _recommended_option(plan: Mapping[str, Any]) -> Mapping[str, Any]:
    owned = (plan.get("recommendation") or {}).get("owned_gpus")
    return next((o for o in plan.get("options") or [] if o.get("owned_gpus") == owned), {})


FLEET_TIER_HEADER: Final[tuple[str, ...]] = (
    "tier",
    "gpus",
    "gpu_hours",
    "usd_per_year",
    "usd_per_gpu_hour",
    "price_is",
    "provider",
    "instance",
    "region",
    "listed_usd_per_gpu_hour",
    "observed_at",
    "source",
    # Added last: whether the row is a tier (as issued) or a part of the tier row above it (an offer its job lines
    # rent at, the owned tier's fixed cost and energy), and the job lines an offer's GPU-hours are.
    "row",
    "job_lines",
)
TIER_ROW: Final[str] = "tier"
OFFER_ROW: Final[str] = "offer"
PART_ROW: Final[str] = "part"
# The difference under which a tier's parts are its figures: float noise of sums over a million GPU-hours (1e-9 of
# the GPU-hours), and a cent of the dollars (the workbook's amounts are to the cent).
_HOURS_REL: Final[float] = 1e-9
_CENT: Final[float] = 0.005
MEAN_PRICE_IS: Final[str] = "USD a year / GPU-hours: the GPU-hour-weighted mean of the rows below (their sum)"


def _tier_price(prices: Mapping[str, Any], tier: str) -> tuple[Any, str]:
    """(USD per GPU-hour, what it is) the plan prices a tier at (tier_prices)."""
    if tier == "owned":
        return prices.get("owned_variable_usd_per_gpu_hour"), "energy per busy GPU-hour; fixed cost: Owned tier a year"
    if tier in ("on_demand", "spot"):
        return prices.get(f"{tier}_usd_per_gpu_hour"), "per GPU-hour, levelized over the horizon"
    return (prices.get("reserved_usd_per_gpu_hour") or {}).get(tier), "per GPU-hour of the term, billed every hour"


def _fleet_tier_rows(plan: Mapping[str, Any]) -> list[list[Any]]:
    """The recommendation's tiers as issued (adding up to its usd_per_year), each with its GPU-hours (the
    recommended option's by_tier), its price and the offer it is priced at. Where the tier is not one price (job
    lines rent on demand at their own cheaper offers; the owned tier is a fixed cost and its energy), its price is
    its GPU-hour-weighted mean and its parts follow it, each GPU-hours x price = USD a year (a finance auditor:
    1,113,027.03 GPU-h x the node's $2.95 = $3,283,430 on a row of $3,270,314, the 8B assistant's 11,953.75 GPU-h at
    cudo's $1.8528 shown nowhere)."""
    prices = plan.get("tier_prices") or {}
    offers = prices.get("offers") or {}
    by_tier = _recommended_option(plan).get("by_tier") or {}
    rows = []
    for line in (plan.get("recommendation") or {}).get("tiers") or []:
        tier = line.get("tier")
        price, price_is = _tier_price(prices, tier)
        offer = offers.get(tier) or {}
        hours, usd = (by_tier.get(tier) or {}).get("gpu_hours"), line.get("usd_per_year")
        parts = _tier_parts(plan, tier=tier, gpu_hours=hours, usd_per_year=usd)
        if (parts or not _multiplies(hours, price, usd)) and hours and isinstance(usd, int | float):
            price, price_is = usd / hours, MEAN_PRICE_IS if parts else "USD a year / GPU-hours used"
        rows.append(
            [
                tier,
                line.get("gpus"),
                hours,
                usd,
                price,
                price_is,
                *(offer.get(k) for k in ("provider", "instance", "region", "usd_per_gpu_hour", "observed_at")),
                offer.get("source") or ("hardware quote (see Prices)" if tier == "owned" else None),
                TIER_ROW,
                None,
            ]
        )
        rows += parts
    return rows


def _multiplies(hours: Any, price: Any, usd: Any) -> bool:
    """Whether GPU-hours x the price per GPU-hour is the amount, to the cent."""
    numbers = all(isinstance(v, int | float) for v in (hours, price, usd))
    return numbers and abs(hours * price - usd) < _CENT


def _tier_parts(plan: Mapping[str, Any], *, tier: Any, gpu_hours: Any, usd_per_year: Any) -> list[list[Any]]:
    """The rows a tier's figures are the sum of, where it is not one price: the owned tier's fixed cost and energy;
    the on-demand tier's GPU-hours at each offer its job lines rent at (jobs[].rent_offers, billed as the node's
    offer is levelized). None where the tier is one price, or its parts do not add up to it as issued (commitments
    cover a share of the rented hours, measured usage: the plan keeps no split of those by offer)."""
    if not isinstance(gpu_hours, int | float) or not isinstance(usd_per_year, int | float):
        return []
    prices = plan.get("tier_prices") or {}
    if tier == "owned":
        variable = prices.get("owned_variable_usd_per_gpu_hour") or 0.0
        energy = gpu_hours * variable
        fixed = ["owned", None, None, usd_per_year - energy, None, "fixed cost a year (Owned tier a year)"]
        busy = ["owned", None, gpu_hours, energy, variable, "energy per busy GPU-hour"]
        return [[*row, *([None] * 6), PART_ROW, None] for row in (fixed, busy)]
    if tier != "on_demand":
        return []
    node = (prices.get("offers") or {}).get(tier)
    billed = prices.get(f"{tier}_usd_per_gpu_hour")
    if not node or billed is None:
        return []
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for line in plan.get("jobs") or []:
        offer = (line.get("rent_offers") or {}).get(tier) or node
        on_demand_runs = (line.get("rented_runs") or 0) - (line.get("spot_runs") or 0)
        hours = (line.get("gpus") or 0) * (line.get("run_hours") or 0) * on_demand_runs
        if hours <= 0:
            continue
        group = groups.setdefault(offer_key(offer), [offer, 0.0, []])
        group[1] += hours
        group[2].append(str(line.get("name")))
    if len(groups) < 2:
        return []
    rows = []
    for key, (offer, hours, names) in groups.items():
        listed = offer.get("usd_per_used_gpu_hour", offer.get("usd_per_gpu_hour"))
        price = billed if key == offer_key(node) else line_billed_price(dict(prices), tier, float(listed))
        rows.append(
            [
                tier,
                None,
                hours,
                hours * price,
                price,
                "per GPU-hour of this offer, levelized as the tier's",
                *(offer.get(k) for k in ("provider", "instance", "region", "usd_per_gpu_hour", "observed_at")),
                offer.get("source"),
                OFFER_ROW,
                ", ".join(names),
            ]
        )
    column = FLEET_TIER_HEADER.index
    hours_sum = sum(row[column("gpu_hours")] for row in rows)
    usd_sum = sum(row[column("usd_per_year")] for row in rows)
    if abs(hours_sum - gpu_hours) > _HOURS_REL * max(gpu_hours, 1.0) or abs(usd_sum - usd_per_year) >= _CENT:
        return []
    return rows


def _fleet_option_rows(plan: Mapping[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """One row per candidate owned size: its yearly cost and each tier's GPUs, GPU-hours and cost (the rented
    GPU-hours by market), the recommended one marked."""
    options = list(plan.get("options") or [])
    tiers = list(dict.fromkeys(tier for option in options for tier in option.get("by_tier") or {}))
    fields = ("gpus", "gpu_hours", "usd_per_year")
    header = ["owned_gpus", "recommended", "owned_utilization", "rented_gpu_hours", "usd_per_year"]
    header += [f"{tier}.{field}" for tier in tiers for field in fields]
    # Added last: what a GPU-hour of each tier cost, its USD a year / its GPU-hours, so that each tier's GPU-hours x
    # it = its cost (an auditor: the all-rent option's 1,393,347 h x the node's $2.95 = $4,110,374, printed
    # $4,097,258, its job lines renting at their own offers; the owned tier's fixed cost, a term's idle hours).
    header += [f"{tier}.usd_per_gpu_hour" for tier in tiers]
    owned = (plan.get("recommendation") or {}).get("owned_gpus")
    rows = []
    for option in options:
        by_tier = option.get("by_tier") or {}
        row = [option.get("owned_gpus"), option.get("owned_gpus") == owned]
        row += [option.get(k) for k in ("owned_utilization", "rented_gpu_hours", "usd_per_year")]
        row += [(by_tier.get(tier) or {}).get(field) for tier in tiers for field in fields]
        rows.append(row + [_mean_price(by_tier.get(tier) or {}) for tier in tiers])
    return header, rows


def _mean_price(use: Mapping[str, Any]) -> float | None:
    """A tier's USD a year per GPU-hour of it (None where it has no GPU-hours)."""
    hours, usd = use.get("gpu_hours"), use.get("usd_per_year")
    return usd / hours if isinstance(usd, int | float) and isinstance(hours, int | float) and hours > 0 else None


# What each part of the owned tier's yearly cost is, from the plan's fields (advisor.cash_flow.ownership_parts).
_PART_BASIS: Final[Mapping[str, str]] = {
    "capital": "the purchase as an annuity over /buy/years at /buy/discount_rate, less the discounted "
    "/buy/residual_fraction",
    "support": "/buy/support_fraction_per_year of the purchase",
    "colocation": "the hardware quote's power per server x servers x /buy/colo_usd_per_kw_month x 12",
    "staff": "/buy/staff_usd_per_year",
    "software": "/buy/software_usd_per_gpu_year x owned GPUs",
    "idle energy": "idle power per server x servers x /buy/pue x 8760 h x /buy/power_usd_per_kwh",
    "energy": "the owned tier's busy GPU-hours (Tiers) x tier_prices.owned_variable_usd_per_gpu_hour",
}
_FIXED_COST_FIELDS: Final[tuple[tuple[str, str], ...]] = (
    ("owned_usd_per_year_one_node", "USD a year, one node"),
    ("owned_usd_per_year_per_node", "USD a year per node, above one"),
    ("owned_usd_per_year_base", "USD a year, once, above one node"),
    ("owned_variable_usd_per_gpu_hour", "USD per busy GPU-hour"),
)


def _owned_cost_rows(plan: Mapping[str, Any]) -> list[list[Any]]:
    """The owned tier's yearly cost in its parts, which add to the tier as issued (the plan carries no cash flow),
    then the fixed cost per node the plan priced every option at."""
    tiers = (plan.get("recommendation") or {}).get("tiers") or []
    tier: Mapping[str, Any] = next((t for t in tiers if t.get("tier") == "owned"), {})
    parts = fleet_owned_parts(plan=plan)
    purchase = fleet_purchase(plan=plan)
    rows: list[list[Any]] = []
    if purchase is not None:
        rows.append(
            ["purchase", purchase["usd"], "USD, paid up front", (purchase_text(plan=dict(plan)) or {}).get("label")]
        )
    if parts:
        rows += [[name, usd, "USD a year", _PART_BASIS.get(name)] for name, usd in parts]
        rows.append(["total of the parts", sum(usd for _, usd in parts), "USD a year", "the rows above"])
    elif tier:
        rows.append(["parts", None, None, "not stated: the plan owns nothing or carries no hardware quote"])
    rows.append(["owned tier, as issued", tier.get("usd_per_year"), "USD a year", "recommendation.tiers"])
    prices = plan.get("tier_prices") or {}
    rows += [
        [f"tier_prices.{key}", prices[key], unit, "the plan as issued"]
        for key, unit in _FIXED_COST_FIELDS
        if prices.get(key) is not None
    ]
    return rows


def _fleet_price_rows(plan: Mapping[str, Any]) -> list[list[Any]]:
    """The offers the rented tiers are priced at, those job lines rent at instead, then the hardware quote (market
    "purchase")."""
    prices = plan.get("tier_prices") or {}
    offers = [offer for offer in (prices.get("offers") or {}).values() if offer]
    rows = [[offer.get(k) for k in PRICE_KEYS] + [plan.get("gpu"), None] for offer in offers]
    # The offers job lines rent at below the node's (jobs[].rent_offers), each once (a finance reviewer, F2).
    rows += [
        [offer.get(k) for k in PRICE_KEYS] + [plan.get("gpu"), None] for _, offer, _ in line_offers(plan=dict(plan))
    ]
    quote = prices.get("hardware_quote")
    return rows + ([_quote_price_row(quote)] if quote else [])


def _fleet_assumption_rows(plan: Mapping[str, Any]) -> list[list[Any]]:
    """The GPU, the hardware quote and each /network, /rent and /buy field of the fleet as planned, with its unit.
    The plan does not record which were given and which defaulted: a field with a default names its source and
    date as the scenario workbook does (``_default_of``; a finance reviewer: the /buy defaults read only "given, or
    its default")."""
    fleet = plan.get("fleet") or {}
    quote = (plan.get("tier_prices") or {}).get("hardware_quote") or {}
    fabric = quote.get("networking_usd_per_node")
    rows = [["gpu", plan.get("gpu") or fleet.get("gpu"), "GPU id", "fleet input"]]
    rows += _quote_rows(quote, fabric=float(fabric) if fabric else None)
    catalog: dict[str, Any] = {}
    for section in ("network", "rent", "buy"):
        for pointer, value in _fields(pointer=f"/{section}", value=fleet.get(section) or {}):
            default = _default_of(pointer=pointer, catalog=catalog)
            source = f"given, or the {default_source(default)}" if default else "given, or its default"
            rows.append([pointer, value, (default or {}).get("unit"), source])
    return rows


def fleet_workbook(*, proposal: Mapping[str, Any]) -> bytes:
    """The workbook of a fleet proposal, written from its stored Fleet Plan alone (as issued, never recomputed):
    summary, jobs, the recommended tiers, every option, the owned tier's yearly cost in parts, prices and
    assumptions, with the scenario workbook's sheets' conventions (dates in UTC, numbers formatted by unit)."""
    plan = proposal["advice"]
    workbook = _new_workbook()
    _format_dates(_sheet(workbook, "Summary", ["Item", "Value"], _fleet_summary_rows(proposal)))
    _sheet(workbook, "Jobs", FLEET_JOB_HEADER, _fleet_job_rows(plan))
    _sheet(workbook, "Tiers", FLEET_TIER_HEADER, _fleet_tier_rows(plan))
    _sheet(workbook, "Options", *_fleet_option_rows(plan))
    _format_by_unit(_sheet(workbook, "Owned tier a year", ["part", "value", "unit", "source"], _owned_cost_rows(plan)))
    _sheet(workbook, "Prices", [*PRICE_KEYS, "gpu", "usd"], _fleet_price_rows(plan))
    _format_by_unit(_sheet(workbook, "Assumptions", ["input", "value", "unit", "source"], _fleet_assumption_rows(plan)))
    return _saved(workbook, proposal=proposal)
