"""The CSV renderer: one flat row per object, parses back, safe to open in a spreadsheet."""

from __future__ import annotations

import csv
import io

from core.api.renderers import CSVRenderer, flatten_row


def _parse(data: object) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(CSVRenderer().render(data).decode("utf-8"))))


def test_nested_objects_become_dotted_columns_and_parse_back() -> None:
    rows = [
        {"id": 1, "name": 'a, "quoted"\nline', "spec": {"tflops": {"bf16": 989.5}}, "tags": [1, 2], "gone": None},
        {"id": 2, "name": "b", "spec": {"tflops": {"bf16": 312.0}}, "tags": [], "gone": True, "extra": "x"},
    ]
    parsed = _parse({"count": 2, "next": None, "previous": None, "results": rows})
    assert list(parsed[0]) == ["id", "name", "spec.tflops.bf16", "tags", "gone", "extra"]
    assert parsed[0]["name"] == 'a, "quoted"\nline' and float(parsed[0]["spec.tflops.bf16"]) == 989.5
    assert parsed[0]["tags"] == "[1,2]" and parsed[0]["gone"] == "" and parsed[0]["extra"] == ""
    assert parsed[1]["gone"] == "true" and parsed[1]["extra"] == "x"


def test_formula_like_text_is_neutralized_numbers_are_not() -> None:
    parsed = _parse([{"provider": "=HYPERLINK(1)", "note": "@SUM", "price": -1.5, "text": "-x"}])
    assert parsed[0]["provider"] == "'=HYPERLINK(1)" and parsed[0]["note"] == "'@SUM"
    assert float(parsed[0]["price"]) == -1.5 and parsed[0]["text"] == "'-x"


def test_single_object_and_empty_list() -> None:
    assert _parse({"a": 1}) == [{"a": "1"}]
    assert CSVRenderer().render([]) == b"\r\n"
    assert flatten_row({"a": {"b": {"c": 1}}}) == {"a.b.c": 1}


def test_header_cells_and_fullwidth_or_spaced_formula_starts_are_neutralized() -> None:
    rows = [{"=cmd()": "\uff1dHYPERLINK(1)", "note": "  =SUM(A1)", "plus": "\uff0b1", "at": "\uff20x", "ok": "a=b"}]
    parsed = _parse(rows)
    assert list(parsed[0]) == ["'=cmd()", "note", "plus", "at", "ok"]
    assert parsed[0]["'=cmd()"] == "'\uff1dHYPERLINK(1)"
    assert parsed[0]["note"] == "'  =SUM(A1)" and parsed[0]["plus"] == "'\uff0b1" and parsed[0]["at"] == "'\uff20x"
    assert parsed[0]["ok"] == "a=b"
