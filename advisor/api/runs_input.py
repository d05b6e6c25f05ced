"""Profiled runs from an API request: a `text/csv` body, or JSON (`{"runs": [...]}`), validated by
estimator.runs with each bad cell reported as a pointer (`#/runs/<row-1>/<column>` for JSON,
`#/csv/<row>/<column>` for CSV, where row 0 is the header)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from rest_framework.request import Request

from advisor.api.errors import FieldErrors, pointer
from advisor.runs_csv import TooManyColumns, TooManyRows, check_runs_csv, refused_cells
from estimator.calibrate import measured_tokens_per_s
from estimator.runs import (
    COLUMNS,
    ProfiledRun,
    RowError,
    RunValidationError,
    header_of,
    read_runs_csv,
    runs_from_records,
)


def _entry(error: RowError, *, csv_body: bool) -> dict[str, Any]:
    if csv_body and error.whole_document:  # too few runs: the document, not a header cell
        where = pointer("csv")
    elif csv_body:
        # A malformed record (bad quoting, an oversized cell) has a row but no column to blame.
        where = pointer("csv", error.row, error.column) if error.column else pointer("csv", error.row)
    elif error.row == 0:
        where = pointer("runs")
    else:
        where = (
            pointer("runs", error.row - 1) if error.column == "runs" else pointer("runs", error.row - 1, error.column)
        )
    return {"pointer": where, "detail": error.message, "code": "invalid", "row": error.row, "column": error.column}


EMPTY_CSV_DETAIL = (
    "the CSV is empty: send a header row (gpu,num_gpus,params_b,seq_len,global_batch,...) and a row per run"
)


def runs_data(request: Request) -> Any:
    """The body `runs_or_400` reads: DRF gives an empty body `{}` without calling a parser, so an empty text/csv
    body is the empty text it is (not told it lacks the JSON form's `runs`)."""
    if request.content_type.split(";")[0].strip().lower() == "text/csv" and not request.data:
        return ""
    return request.data


def runs_or_400(
    data: Any,
    *,
    other_fields: tuple[str, ...] = (),
    more_errors: Callable[[RunValidationError], RunValidationError] | None = None,
) -> list[ProfiledRun]:
    """`data` is the parsed body: str for text/csv, else the JSON value (`runs` plus `other_fields`). ``more_errors``
    adds what a later check finds in the rows that did parse, so that one answer names every bad row."""
    csv_body = isinstance(data, str)
    limit = settings.MAX_UPLOAD_ROWS
    if csv_body and not data.strip("\ufeff \t\r\n"):
        raise FieldErrors([{"pointer": pointer("csv"), "detail": EMPTY_CSV_DETAIL, "code": "required"}])
    if csv_body:
        try:
            payload: Any = check_runs_csv(data, max_rows=limit, max_extra_columns=settings.MAX_EXTRA_COLUMNS)
        except (TooManyRows, TooManyColumns) as error:
            raise FieldErrors([{"pointer": pointer("csv"), "detail": str(error), "code": "too_many"}]) from None
        except RunValidationError as error:
            raise runs_problem(error, csv_body=True) from None
        parse: Callable[[Any], list[ProfiledRun]] = read_runs_csv
    else:
        if not isinstance(data, dict):
            detail = 'must be an object {"runs": [...]} (JSON) or a text/csv body'
            raise FieldErrors([{"pointer": pointer(), "detail": detail, "code": "invalid"}])
        allowed = ("runs", *other_fields)
        unknown = sorted(set(data) - set(allowed))
        if unknown:
            detail = f"unknown field; allowed: {', '.join(allowed)}"
            raise FieldErrors([{"pointer": pointer(key), "detail": detail, "code": "unknown"} for key in unknown])
        if "runs" not in data:
            raise FieldErrors([{"pointer": pointer("runs"), "detail": "required: a list of profiled-run objects"}])
        payload = data["runs"]
        if isinstance(payload, list) and len(payload) > limit:
            raise FieldErrors([{"pointer": pointer("runs"), "detail": f"at most {limit} rows", "code": "too_many"}])
        if refused := refused_cells(payload):
            raise runs_problem(RunValidationError(refused), csv_body=False)
        parse = runs_from_records
    try:
        runs = parse(payload)
    except RunValidationError as error:
        whole = error if more_errors is None else more_errors(error)
        raise runs_problem(whole, csv_body=csv_body) from error
    # Extra columns are echoed in the answer: cap them, so the output stays the size of a real table.
    extra = len(header_of(runs)) - len(COLUMNS)
    if extra > settings.MAX_EXTRA_COLUMNS:
        detail = f"at most {settings.MAX_EXTRA_COLUMNS} columns beyond the schema's (MAX_EXTRA_COLUMNS); got {extra}"
        raise FieldErrors([{"pointer": pointer("csv" if csv_body else "runs"), "detail": detail, "code": "too_many"}])
    return runs


def measured_runs_or_400(
    data: Any,
    *,
    other_fields: tuple[str, ...] = (),
    more_errors: Callable[[RunValidationError], RunValidationError] | None = None,
) -> list[ProfiledRun]:
    """`runs_or_400` for a calibration upload: each run also needs its measurement (tokens_per_s or step_time_s),
    named per run now rather than after the upload is stored and fitted."""
    runs = runs_or_400(data, other_fields=other_fields, more_errors=more_errors)
    try:
        measured_tokens_per_s(runs)
    except RunValidationError as error:
        raise runs_problem(error, csv_body=isinstance(data, str)) from None
    return runs


def runs_problem(error: RunValidationError, *, csv_body: bool) -> FieldErrors:
    """The 400 for runs rejected while parsing or later (e.g. too few to fit a calibration)."""
    entries = [_entry(e, csv_body=csv_body) for e in error.errors]
    return FieldErrors(entries, detail="Some runs are invalid; see errors.")
