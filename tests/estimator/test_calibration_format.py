"""A calibration document records the estimator format it was fitted for; earlier formats load (and are flagged by
the Advice), later ones are refused naming the field."""

from __future__ import annotations

import pytest

from estimator.calibrate import FORMAT_VERSION, Calibration, CalibrationError, load_default, stale_calibration_warning


def test_the_shipped_calibration_is_of_the_current_format() -> None:
    shipped = load_default()
    assert shipped.fitted_format == FORMAT_VERSION
    assert stale_calibration_warning(shipped) is None


def test_an_earlier_format_round_trips_and_is_flagged() -> None:
    document = {**load_default().to_dict(), "format": FORMAT_VERSION - 1}
    old = Calibration.from_dict(document)
    assert old.fitted_format == FORMAT_VERSION - 1
    assert old.to_dict()["format"] == FORMAT_VERSION - 1  # saving it again does not pass it off as current
    note = stale_calibration_warning(old)
    assert note is not None and old.name in note and "refit" in note


def test_a_document_without_format_counts_as_the_first() -> None:
    document = load_default().to_dict()
    del document["format"]
    assert Calibration.from_dict(document).fitted_format == 1


@pytest.mark.parametrize("value", [FORMAT_VERSION + 1, 0, "3", 2.5, True])
def test_a_bad_or_newer_format_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(CalibrationError) as raised:
        Calibration.from_dict({**load_default().to_dict(), "format": value})
    assert raised.value.field == "format"
