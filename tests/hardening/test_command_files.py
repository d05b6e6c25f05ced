"""Files the management commands read are bounded (an outsider's check: `advise /dev/zero` grew to 3.5 GB and ended
in a MemoryError traceback; estimate, calibrate, estimate_inference and plan_fleet the same; import_prices
allocated it all before failing). Each now reads at most the limit + 1 bytes and exits 2 naming the file and the
limit (core.inputfile)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

LIMIT = 4096
FLEET = Path(__file__).resolve().parents[2] / "examples" / "fleet-2027.json"  # within the limit
COMMANDS = {
    "advise": lambda path: ["advise", path],
    "plan_fleet": lambda path: ["plan_fleet", path],
    "plan_fleet --usage": lambda path: ["plan_fleet", str(FLEET), "--usage", path],
    "estimate": lambda path: ["estimate", "--runs", path],
    "calibrate": lambda path: ["calibrate", "--runs", path],
    "estimate_inference": lambda path: ["estimate_inference", "--points", path],
}


@pytest.fixture(autouse=True)
def small_limits(settings) -> None:  # type: ignore[no-untyped-def]
    settings.MAX_INPUT_FILE_BYTES = LIMIT
    settings.MAX_PRICE_FILE_BYTES = LIMIT


def _exit_2(args: list[str]) -> str:
    with pytest.raises(CommandError) as info:
        call_command(*args, stdout=io.StringIO(), stderr=io.StringIO())
    assert info.value.returncode == 2
    message = str(info.value)
    assert len(message.splitlines()) == 1, message
    return message


@pytest.mark.django_db
@pytest.mark.parametrize("label", COMMANDS)
def test_an_endless_file_is_refused_naming_the_file_and_the_limit(label: str) -> None:
    message = _exit_2(COMMANDS[label]("/dev/zero"))
    assert "/dev/zero" in message and f"larger than {LIMIT:,} bytes" in message and "MAX_INPUT_FILE_BYTES" in message


@pytest.mark.django_db
@pytest.mark.parametrize("label", COMMANDS)
def test_a_file_one_byte_over_the_limit_is_refused_and_one_at_it_is_read(label: str, tmp_path: Path) -> None:
    over = tmp_path / "over"
    over.write_bytes(b" " * (LIMIT + 1))
    assert f"larger than {LIMIT:,} bytes" in _exit_2(COMMANDS[label](str(over)))
    at = tmp_path / "at"
    at.write_bytes(b" " * LIMIT)
    with pytest.raises(CommandError) as info:  # read, then judged on its (blank) content
        call_command(*COMMANDS[label](str(at)), stdout=io.StringIO(), stderr=io.StringIO())
    assert "larger than" not in str(info.value)


@pytest.mark.django_db
def test_import_prices_refuses_an_endless_payload_without_reading_it_all() -> None:
    message = _exit_2(["import_prices", "--feed", "azure", "/dev/zero"])
    assert "/dev/zero" in message and f"larger than {LIMIT:,} bytes" in message and "MAX_PRICE_FILE_BYTES" in message
    assert "InputFileTooLarge" not in message  # the class name read as noise (a hostile probe)


@pytest.mark.django_db
def test_standard_input_is_bounded_in_bytes_like_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hostile probe: 80 MB of 'é' was refused as a file but read whole through '-', the limit counting characters
    there. LIMIT // 2 + 1 two-byte characters are fewer characters than the limit and more bytes."""
    text = "\u00e9" * (LIMIT // 2 + 1)
    stream = io.TextIOWrapper(io.BytesIO(text.encode("utf-8")), encoding="utf-8")
    monkeypatch.setattr("sys.stdin", stream)
    assert f"larger than {LIMIT:,} bytes" in _exit_2(["advise", "-"])
