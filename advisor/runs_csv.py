"""Profiled-run CSV text from outside (API body, web upload, command file), checked as CSV before
estimator.runs reads it: every way a file can be malformed becomes a RunValidationError naming the row
(and the column when one is to blame), never a csv.Error or a 500.

- Line ends: CRLF, LF and CR-only (old Mac exports) are all accepted.
- Refused: an unterminated quote or stray characters after a closing quote (strict CSV), a cell over
  csv.field_size_limit() characters, NUL, unpaired surrogates or bidirectional controls in a cell, more than
  ``max_rows`` rows (counted as CSV records, so a last line without a newline counts too), a column named twice in
  the header,
  a row with more non-empty cells than the header has columns (an unquoted ``1,234`` would otherwise shift
  or drop values silently; trailing empty cells are fine), and a header that is one cell holding ``;`` or a
  tab (a semicolon- or tab-separated export: the columns are comma-separated)."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from typing import Final

from core.textcheck import BAD_CHARACTER_DETAIL, bidi_problem, has_bad_characters, label
from estimator.runs import (
    COLUMNS,
    NOTE_COLUMN,
    PREDICTED_COLUMNS,
    ProfiledRun,
    RowError,
    RunValidationError,
    read_runs_csv,
    repeated_names,
)


class TooManyRows(ValueError):
    """More data rows than the limit; ``limit`` is the most allowed."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"at most {limit} rows")
        self.limit = limit


class TooManyColumns(ValueError):
    """More columns beyond the schema's than ``limit``; raised on the header, before any row is read."""

    def __init__(self, *, limit: int, extra: int) -> None:
        super().__init__(f"at most {limit} columns beyond the schema's (MAX_EXTRA_COLUMNS); got {extra}")
        self.limit = limit


def extra_columns(header: Sequence[str]) -> int:
    """How many columns the header names beyond the schema's and the predicted ones (what an answer echoes)."""
    known = {*COLUMNS, *PREDICTED_COLUMNS, NOTE_COLUMN}
    return len({name for name in header if name not in known})


def cell_too_long_message() -> str:
    """What a cell longer than the CSV reader takes is told (one wording for CSV bodies and JSON records)."""
    return f"a cell is longer than {csv.field_size_limit():,} characters"


def refused_cells(records: object) -> list[RowError]:
    """JSON run records (row = index + 1) with a key or string value a CSV body's cell could not be: longer than a
    CSV cell may be (the runs are written out and read back as CSV, where the reader refuses them: a 500 before this
    check), or holding a bidirectional control (``cell_problem``)."""
    if not isinstance(records, list):
        return []
    limit = csv.field_size_limit()
    errors = []
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            continue
        for key, value in record.items():
            if len(str(key)) > limit or (isinstance(value, str) and len(value) > limit):
                errors.append(RowError(index + 1, str(key)[:80], cell_too_long_message()))
                continue
            problem = cell_problem(str(key)) or (cell_problem(value) if isinstance(value, str) else None)
            if problem is not None:
                errors.append(RowError(index + 1, label(str(key)), problem))
    return errors


def cell_problem(cell: str) -> str | None:
    """What is wrong with a cell's characters (the header's included), or None: NUL or an unpaired surrogate (no
    stored text may hold them), or a bidirectional control (cells are echoed back: residuals, the calibration page,
    the estimate's rows; refused as in a name, core.textcheck.bidi_problem)."""
    return BAD_CHARACTER_DETAIL if has_bad_characters(cell) else bidi_problem(cell)


def csv_error_detail(error: csv.Error) -> str:
    """What a record the csv reader refused is told (runs, inference points, fleet usage alike)."""
    message = str(error)
    if "field larger than field limit" in message:
        return cell_too_long_message()
    if "unexpected end of data" in message:
        return 'unterminated quoted cell (a " opens a cell that never closes)'
    return f"malformed CSV: {message}; quote cells that contain commas, quotes or line breaks"


# A file saved from Excel as .xlsx (a ZIP archive) starts with these bytes; read as text it is noise and NULs.
ZIP_SIGNATURE: Final[str] = "PK\x03\x04"
SPREADSHEET_DETAIL: Final[str] = "the file looks like a spreadsheet (XLSX, a ZIP archive), not CSV: export it as CSV"
# One cell of a CSV record and what ends it: a quoted cell (its quote may never close) or an unquoted one.
_CELL = re.compile(r'("(?:[^"]|"")*"?[^,]*|[^,]*)(,|$)')


class _RecordLines:
    """The lines of the record the csv reader is on, so that a record it refuses can be looked at."""

    def __init__(self, text: str) -> None:
        self._lines = iter(io.StringIO(text, newline=""))
        self.record: list[str] = []

    def __iter__(self) -> _RecordLines:
        return self

    def __next__(self) -> str:
        line = next(self._lines)
        self.record.append(line)
        return line


def _refused_cell(record: str, error: csv.Error) -> int | None:
    """The index of the cell the reader refused in ``record``: the one over the size limit, or the last one (an
    unterminated quote); None for other errors."""
    message = str(error)
    too_long = "field larger than field limit" in message
    if not too_long and "unexpected end of data" not in message:
        return None
    limit = csv.field_size_limit()
    position, index = 0, 0
    while True:
        match = _CELL.match(record, position)
        if match is None or (too_long and len(match.group(1)) > limit):
            return index if match is not None else None
        if not match.group(2) or match.end() >= len(record):
            return None if too_long else index
        position, index = match.end(), index + 1


def _malformed(row: int, error: csv.Error, *, record: str, header: Sequence[str]) -> RowError:
    index = _refused_cell(record, error)
    column = "" if index is None else _column_name(header, index)
    return RowError(row, column, csv_error_detail(error))


def _column_name(header: Sequence[str], index: int) -> str:
    return label(header[index]) if index < len(header) and header[index] else f"column {index + 1}"


def _header_errors(header: Sequence[str]) -> list[RowError]:
    """A header that is one cell holding another separator, or that names a column twice."""
    if len(header) == 1:
        for separator, name in ((";", "semicolon"), ("\t", "tab")):
            if separator in header[0]:
                message = (
                    f"the header is one cell {header[0][:80]!r}: the file looks {name}-separated; "
                    "columns must be separated by commas"
                )
                return [RowError(0, "header", message)]
    repeated = [h for h in repeated_names(header) if h]
    errors = [RowError(0, h, "column appears more than once in the header") for h in repeated]
    unnamed = [str(i + 1) for i, h in enumerate(header) if not h]
    if len(unnamed) > 1:  # one is kept as an extra column; several would collide under the same (empty) name
        message = (
            f"columns {', '.join(unnamed)} have no name: name them, or delete them (trailing commas of a "
            "spreadsheet export)"
        )
        errors.append(RowError(0, "header", message))
    return errors


def _overflow(row: int, cells: Sequence[str], header: Sequence[str]) -> RowError | None:
    """A row with non-empty cells beyond the header's last column (trailing empty cells are ignored)."""
    extra = [cell for cell in cells[len(header) :] if cell.strip()]
    if not header or not extra:
        return None
    message = (
        f"{len(cells)} cells but the header has {len(header)} columns (extra: {', '.join(map(repr, extra[:3]))}); "
        'quote cells that contain commas ("1,234") or write numbers without thousands separators'
    )
    return RowError(row, str(len(header) + 1), message)


def check_runs_csv(text: str, *, max_rows: int, max_extra_columns: int | None = None) -> str:
    """``text`` with line ends normalised to LF, after checking it is well-formed CSV of at most ``max_rows`` rows
    (TooManyRows) and, when given, at most ``max_extra_columns`` columns beyond the schema's (TooManyColumns, on the
    header: a 40,000-column header was parsed in full, each row too, before the API refused it)."""
    normalized = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if normalized.startswith(ZIP_SIGNATURE):
        raise RunValidationError([RowError(0, "header", SPREADSHEET_DETAIL)])
    lines = _RecordLines(normalized)
    reader = csv.reader(lines, strict=True)
    header: list[str] = []
    errors: list[RowError] = []
    row = -1  # 0 = the header, as in RowError; blank lines are skipped and not counted, as csv.DictReader does
    try:
        for cells in reader:
            lines.record.clear()  # this record is read: the lines kept from here on are the next one's
            if not cells and row >= 0:
                continue
            row += 1
            if row == 0:
                header = [cell.strip() for cell in cells]
                if max_extra_columns is not None and (extra := extra_columns(header)) > max_extra_columns:
                    raise TooManyColumns(limit=max_extra_columns, extra=extra)
                errors.extend(_header_errors(header))
            elif row > max_rows:
                raise TooManyRows(max_rows)
            elif (overflow := _overflow(row, cells, header)) is not None:
                errors.append(overflow)
            errors.extend(
                RowError(row, _column_name(header, index), problem)
                for index, cell in enumerate(cells)
                if (problem := cell_problem(cell)) is not None
            )
    except csv.Error as error:
        # The reader failed on the record after the last one it returned.
        errors.append(_malformed(row + 1 if header else 0, error, record="".join(lines.record), header=header))
    if errors:
        raise RunValidationError(errors)
    return normalized


def read_runs_text(text: str, *, max_rows: int, max_extra_columns: int | None = None) -> list[ProfiledRun]:
    """Checked CSV text -> validated runs; RunValidationError (row, column, what is allowed), TooManyRows or
    TooManyColumns."""
    return read_runs_csv(check_runs_csv(text, max_rows=max_rows, max_extra_columns=max_extra_columns))
