"""The estimate endpoint's answer: each profiled run's row with the predicted columns, typed as JSON. Which
calibrations a user may see and use is advisor.calibrations' (calibrations_visible_to, active_calibration_id)."""

from __future__ import annotations

import csv
import dataclasses
import io
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Final

from django.conf import settings

from advisor.models import Calibration
from core.api.budget import require_within_budget
from estimator import calibrate
from estimator.prediction import estimate_runs_csv, run_search_size
from estimator.runs import COLUMNS, NOTE_COLUMN, PREDICTED_COLUMNS, VIRTUAL_PIPELINE, ProfiledRun


@dataclasses.dataclass(frozen=True)
class ColumnType:
    """How an estimate answer types a column: ``kind`` int, float, str or bool (``bool`` with ``also_text``: true or
    false, or one more text value such as selective); ``nullable``: the cell may be empty (null) in an answer."""

    kind: type
    nullable: bool
    also_text: tuple[str, ...] = ()


def _run_column_type(run_field: dataclasses.Field[Any], hint: Any) -> ColumnType:
    """ProfiledRun's field type: ``X | None`` may be empty, and so may text that defaults to empty (source)."""
    kinds = (
        [arg for arg in typing.get_args(hint) if arg is not type(None)] if isinstance(hint, types.UnionType) else [hint]
    )
    return ColumnType(kind=kinds[0], nullable=run_field.default in (None, ""))


def _run_column_types() -> dict[str, ColumnType]:
    hints = typing.get_type_hints(ProfiledRun)
    by_name = {f.name: _run_column_type(f, hints[f.name]) for f in dataclasses.fields(ProfiledRun)}
    typed = {column: by_name[column] for column in (*COLUMNS, "stack")}
    # A CHECKPOINTING value: true/false as booleans (as a Scenario's parallelism takes them), selective as text.
    typed["activation_checkpointing"] = ColumnType(kind=bool, nullable=True, also_text=("selective",))
    typed[VIRTUAL_PIPELINE] = ColumnType(kind=int, nullable=True)
    return typed


# The typed columns of an estimate answer's row, in order: the DESIGN profiled-run columns (the optional stack and
# virtual_pipeline, when present), the predicted ones, and the note on a row without a prediction. Other columns
# of the input are echoed as the text given.
ESTIMATE_ROW_COLUMNS: Final[dict[str, ColumnType]] = {
    **_run_column_types(),
    **{column: ColumnType(kind=float, nullable=True) for column in PREDICTED_COLUMNS if column != "fits_memory"},
    "fits_memory": ColumnType(kind=bool, nullable=False),
    NOTE_COLUMN: ColumnType(kind=str, nullable=True),
}
# Columns a row of the answer may lack (the input did not have them; no layout chose interleaving).
ESTIMATE_ROW_OPTIONAL: Final[frozenset[str]] = frozenset({"stack", VIRTUAL_PIPELINE})


def estimate_rows(*, runs: Sequence[ProfiledRun], calibration: Calibration) -> list[dict[str, Any]]:
    """Each run's row with the predicted columns and the chosen layout, as `manage.py estimate` writes them;
    predicted values as numbers (null when the run does not fit in memory), fits_memory as a boolean."""
    require_within_budget(
        work=run_search_size(runs),
        limit=settings.ESTIMATE_MAX_LAYOUTS,
        unit="candidate layouts (each row's open layout fields multiply the search)",
        setting="ESTIMATE_MAX_LAYOUTS",
        advice="Give tp, pp, cp, micro_batch, strategy and activation_checkpointing, or send fewer rows.",
    )
    text = estimate_runs_csv(runs, calibrate.Calibration.from_dict(calibration.document))
    written = csv.DictReader(io.StringIO(text))
    return [_typed_row(run, row) for run, row in zip(runs, written, strict=True)]


def _typed_row(run: ProfiledRun, cells: Mapping[str, str]) -> dict[str, Any]:
    """A row as the CSV writes it, with JSON values: a cell the run gave as the value it was read as, a filled-in
    cell (an assumed default, the chosen layout, a prediction) as its column's type, an empty cell as null."""
    row: dict[str, Any] = {}
    for column, cell in cells.items():
        column_type = ESTIMATE_ROW_COLUMNS.get(column)
        if column_type is None:  # an extra column: echoed as given (an empty cell as null, as every other column)
            row[column] = cell or None
            continue
        given = getattr(run, column, None) if column in ProfiledRun.__dataclass_fields__ else None
        row[column] = _typed_cell(str(given) if given is not None else cell, column_type)
    row.setdefault(NOTE_COLUMN, None)  # written only when some row has no prediction
    return row


def _typed_cell(cell: str, column_type: ColumnType) -> Any:
    if not cell:
        return None
    if column_type.kind is bool:
        lowered = cell.lower()
        return lowered if lowered in column_type.also_text else lowered == "true"
    if column_type.kind in (int, float):
        return column_type.kind(float(cell))
    return cell
