"""Reading a usage CSV: what a hostile-input review found read wrong without a word."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.advice.fleet.document import parse_fleet, parse_usage_csv
from advisor.scenario import ScenarioError


def refused(csv_text: str) -> list[dict[str, Any]]:
    with pytest.raises(ScenarioError) as caught:
        parse_fleet({"gpu": "h100-sxm", "usage": {"csv": csv_text}})
    return [e for e in caught.value.errors if e["pointer"] == "/usage/csv"]


@pytest.mark.django_db
def test_a_yyyymmdd_date_is_refused_naming_both_readings_not_read_as_epoch_seconds() -> None:
    """20240101 (ISO 8601 basic format) was read as 20,240,101 epoch seconds: 25 years of daily rows became 66 hours
    from 20 August 1970 (peak 17.35 where 64 was meant)."""
    text = "timestamp,gpus_busy\n20240101,8\n20240102,64\n"
    with pytest.raises(ValueError) as caught:
        parse_usage_csv(text)
    message = str(caught.value)
    assert message.startswith("row 1, column timestamp:"), message
    assert "2024-01-01" in message and "1970-08-23" in message, message
    assert "YYYY-MM-DD" in message and "10-digit" in message, message
    errors = refused(text)
    assert errors and "1970-08-23" in errors[0]["message"], errors


@pytest.mark.parametrize(
    ("stamps", "hours"),
    [
        (("1704067200", "1704070800", "1704074400"), 2.0),  # 10 digits: 2024-01-01T00:00Z
        (("999999999", "1000003599"), 1.0),  # 9 digits: 2001
        (("20240101.0", "20247301.0"), 2.0),  # a decimal point: epoch seconds, as before
        (("0", "3600", "7200"), 2.0),  # short, not a date
    ],
)
def test_epoch_seconds_still_read(stamps: tuple[str, ...], hours: float) -> None:
    text = "timestamp,gpus_busy\n" + "".join(f"{s},8\n" for s in stamps)
    t, busy, _ = parse_usage_csv(text)
    assert t[-1] == pytest.approx(hours)
    assert busy.tolist() == [8.0] * len(stamps)


@pytest.mark.django_db
def test_a_repeated_column_is_refused_naming_it() -> None:
    """timestamp,gpus_busy,gpus_busy was read with the last copy winning: peak 64 where the first column said 8. The
    profiled-run CSV refuses a repeated header; the usage CSV now does too."""
    text = "timestamp,gpus_busy,gpus_busy\n" + "".join(f"2024-01-01T{h:02d}:00Z,8,64\n" for h in range(24))
    with pytest.raises(ValueError, match=r"^header, column gpus_busy: column appears more than once in the header"):
        parse_usage_csv(text)
    assert refused(text)
    with pytest.raises(ValueError, match=r"column note: column appears more than once"):
        parse_usage_csv("timestamp,gpus_busy,note,note\n0,8,a,b\n3600,8,a,b\n")
