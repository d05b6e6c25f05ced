"""Profiled-run CSV from a hostile outsider: a header 40,000 columns wide held a request for 64 s (the repeated-name
check was quadratic and the column cap came after every row was parsed); an over-long cell's error named no column;
messages echoed NUL bytes and 5,000-digit cells in full."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from advisor import runs_csv
from advisor.api import runs_input
from core.textcheck import shown
from estimator.runs import repeated_names
from tests.api.conftest import assert_problem

HEADER = "gpu,num_gpus,params_b,seq_len,global_batch"


class _Name(str):
    """A header cell that counts the comparisons made with it (the work of the repeated-name check)."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        _Name.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def _counted(check: Any, width: int) -> int:
    header = [_Name(f"x{i}") for i in range(width)]
    _Name.compared = 0
    check(header)
    return _Name.compared


@pytest.mark.parametrize("check", [repeated_names, runs_csv._header_errors])
def test_the_repeated_name_check_does_work_linear_in_the_header_width(check: Any) -> None:
    # names.count(name) per name made width**2 comparisons: 1.6 billion for 40,000 columns.
    assert _counted(check, 4_000) <= 4_000
    assert repeated_names(["a", "b", "a", "c", "b", "a"]) == ["a", "b"]


@pytest.fixture
def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/estimate", "/api/v1/calibrations?name=wide"])
def test_a_header_wider_than_the_limit_is_refused_before_any_row_is_read(api, settings, monkeypatch, path) -> None:  # type: ignore[no-untyped-def]
    def no_rows(*args: object, **kwargs: object) -> None:
        raise AssertionError("rows were parsed although the header is over the limit")

    monkeypatch.setattr(runs_input, "read_runs_csv", no_rows)
    monkeypatch.setattr(runs_csv, "_overflow", no_rows)
    extra = 40_000
    text = HEADER + "," + ",".join(f"x{i}" for i in range(extra)) + "\nh100-sxm,8,7,4096,1024\n"
    answer = assert_problem(api.post(path, text, content_type="text/csv"), 400, "#/csv")
    detail = answer["errors"][0]["detail"]
    assert f"at most {settings.MAX_EXTRA_COLUMNS} columns" in detail and "MAX_EXTRA_COLUMNS" in detail
    assert f"got {extra:,}" in detail or f"got {extra}" in detail


@pytest.mark.django_db
def test_the_calibration_page_refuses_a_header_wider_than_the_limit(user, settings) -> None:  # type: ignore[no-untyped-def]
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    web = Client()
    web.force_login(user)
    text = HEADER + ",tokens_per_s," + ",".join(f"x{i}" for i in range(settings.MAX_EXTRA_COLUMNS + 1)) + "\n"
    upload = SimpleUploadedFile("runs.csv", text.encode(), content_type="text/csv")
    response = web.post("/calibrations/", {"name": "wide", "runs": upload})
    assert "MAX_EXTRA_COLUMNS" in response.content.decode()


def _estimate_exit_2(tmp_path: Path, text: str) -> str:
    source = tmp_path / "runs.csv"
    source.write_text(text, encoding="utf-8")
    with pytest.raises(CommandError) as info:
        call_command("estimate", "--runs", str(source), stdout=io.StringIO())
    assert info.value.returncode == 2
    return str(info.value)


LONG_CELL = HEADER + ",tokens_per_s,extra\nh100-sxm,8,7,4096,1024,1000," + "a" * 200_000 + "\n"


@pytest.mark.django_db
def test_an_over_long_cell_names_its_column(tmp_path: Path, api) -> None:  # type: ignore[no-untyped-def]
    # "row 1, column : a cell is longer than 131,072 characters": the column was known but not named.
    assert "row 1, column extra: a cell is longer than" in _estimate_exit_2(tmp_path, LONG_CELL)
    answer = assert_problem(api.post("/api/v1/estimate", LONG_CELL, content_type="text/csv"), 400, "#/csv/1/extra")
    assert answer["errors"][0]["column"] == "extra"
    quoted = HEADER + '\nh100-sxm,"' + "9" * 200_000 + '",7,4096,1024\n'
    assert "row 1, column num_gpus: a cell is longer than" in _estimate_exit_2(tmp_path, quoted)
    unterminated = HEADER + '\nh100-sxm,8,"7,4096,1024\n'
    assert "row 1, column params_b: unterminated quoted cell" in _estimate_exit_2(tmp_path, unterminated)


@pytest.mark.django_db
def test_a_spreadsheet_is_told_to_export_csv_and_no_raw_nul_is_echoed(tmp_path: Path) -> None:
    message = _estimate_exit_2(tmp_path, "PK\x03\x04" + "\x00" * 100)
    assert "looks like a spreadsheet" in message and "export it as CSV" in message
    assert "\x00" not in message and len(message) < 200
    message = _estimate_exit_2(tmp_path, "gpu,a\x00b\x1b[2J,num_gpus\nh100-sxm,1,8\n")
    assert "'a\\x00b\\x1b[2J'" in message and "\x00" not in message and "\x1b" not in message


def test_cell_text_in_a_message_is_escaped_and_shortened() -> None:
    assert shown("a\x00b") == "'a\\x00b'"
    assert shown("9" * 5000) == repr("9" * 40) + "... (5,000 characters)"


FORMULA = "=cmd|' /C calc'!A0"
NOTES = [FORMULA, "-5", "+1", "1e3", "-1+2", "@SUM(A1)"]
PROTECTED = ["'" + FORMULA, "-5", "+1", "1e3", "'-1+2", "'@SUM(A1)"]


@pytest.mark.django_db
def test_the_command_and_the_api_protect_the_same_cells_and_only_formulas(tmp_path: Path, api) -> None:  # type: ignore[no-untyped-def]
    # manage.py estimate wrote '=cmd|...' unchanged where /api/v1/estimate.csv wrote "'=cmd|..."; the API also wrote
    # the plain numbers -5 and +1 of an extra column as "'-5" and "'+1".
    import csv

    text = HEADER + ",note\n" + "".join(f'h100-sxm,8,7,4096,1024,"{note}"\n' for note in NOTES)
    source = tmp_path / "runs.csv"
    source.write_text(text, encoding="utf-8")
    out = io.StringIO()
    call_command("estimate", "--runs", str(source), stdout=out, stderr=io.StringIO())
    from_command = [row["note"] for row in csv.DictReader(io.StringIO(out.getvalue()))]
    response = api.post("/api/v1/estimate?format=csv", text, content_type="text/csv")
    assert response.status_code == 200, response.content[:500]
    from_api = [row["note"] for row in csv.DictReader(io.StringIO(response.content.decode()))]
    assert from_command == PROTECTED == from_api


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/estimate", "/api/v1/calibrations?name=empty"])
def test_an_empty_csv_body_is_told_the_csv_is_empty(api, path) -> None:  # type: ignore[no-untyped-def]
    # It was told "#/runs: required: a list of profiled-run objects", the JSON form's wording.
    body = assert_problem(api.post(path, "", content_type="text/csv"), 400, "#/csv")
    assert body["errors"][0]["detail"].startswith("the CSV is empty")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("data", "detail"),
    [
        ((HEADER + "\nh100-sxm,8,7,4096,1024\nh100-sxm,8,7,4096,1024,K\u00f6ln\n").encode("latin-1"), "line 3"),
        ((HEADER + "\nh100-sxm,8,7,4096,1024\n").encode("utf-16"), "UTF-16"),
    ],
)
def test_a_csv_body_that_is_not_utf8_says_where_or_which_encoding(api, data: bytes, detail: str) -> None:  # type: ignore[no-untyped-def]
    # "The CSV body must be UTF-8 text: 'utf-8' codec can't decode byte 0xf6 in position 326": a byte offset.
    answer = assert_problem(api.post("/api/v1/estimate", data, content_type="text/csv"), 400)
    assert detail in answer["detail"] and "export the CSV as UTF-8" in answer["detail"]
    assert "position" not in answer["detail"]
