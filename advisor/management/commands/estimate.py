"""python manage.py estimate --runs IN.csv [--calibration NAME [--owner USERNAME]] [--out OUT.csv]: predict every
profiled-run row with the named calibration (default: the shipped one)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from advisor.calibrations import CalibrationNotAvailable, calibration_for_user, calibration_named
from advisor.runs_csv import read_runs_text
from core.csvcells import spreadsheet_safe_csv
from core.exitcodes import INVALID_INPUT
from core.inputfile import read_input_text
from estimator import calibrate
from estimator.prediction import borrowed_family_notes, estimate_runs_csv
from estimator.runs import RunValidationError


def read_text_argument(path: str, option: str) -> str:
    """The file's text ("-" reads stdin); a missing, unreadable or too large file is a bad-input error naming the
    option."""
    try:
        return read_input_text(path)
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(f"{option}: cannot read {path}: {error}", returncode=INVALID_INPUT) from None


def invalid_rows(error: RunValidationError, option: str) -> CommandError:
    """The exit-2 error listing the bad rows and columns of ``option``'s file (the first MAX_ERRORS_PER_RESPONSE of
    them, as the API's answer does) and counting the rest."""
    shown = settings.MAX_ERRORS_PER_RESPONSE
    lines = [f"  {e}" for e in error.errors[:shown]]
    if len(error.errors) > shown:
        lines.append(f"  ... and {len(error.errors) - shown} more")
    body = "\n".join(lines)
    return CommandError(f"{len(error.errors)} invalid value(s) in {option}:\n{body}", returncode=INVALID_INPUT)


def runs_or_exit(text: str, *, more_errors: Callable[[RunValidationError], RunValidationError] | None = None) -> list:
    """Validated runs, or a CommandError (exit 2) listing every bad row and column (``more_errors`` adds what a later
    check finds in the rows that did parse, so that one answer names them all)."""
    try:
        # A file has no upload limit: only the CSV checks (quoting, cell size, characters) apply.
        return read_runs_text(text, max_rows=sys.maxsize)
    except RunValidationError as error:
        raise invalid_rows(error if more_errors is None else more_errors(error), "--runs") from None


def write_out(path: str, text: str) -> None:
    """Write ``--out``; exit 2 naming the option when the path cannot be written."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as error:
        raise CommandError(f"--out: cannot write {path}: {error}", returncode=INVALID_INPUT) from None


def add_calibration_arguments(parser: CommandParser) -> None:
    parser.add_argument(
        "--calibration", help="calibration name, as listed on /calibrations/ (default: the shipped one)"
    )
    parser.add_argument("--owner", help="username whose calibration --calibration names (default: a shared one)")


def owner_option(options: dict[str, Any]) -> Any:
    """The user ``--owner`` names (None without it); exit 2 when there is no such user."""
    if not options.get("owner"):
        return None
    owner = get_user_model().objects.filter(username=options["owner"]).first()
    if owner is None:
        raise CommandError(f"--owner: no user {options['owner']!r}", returncode=INVALID_INPUT)
    return owner


def calibration_option(options: dict[str, Any]) -> calibrate.Calibration | None:
    """The calibration ``--calibration``/``--owner`` name (None without it); exit 2 naming the option."""
    if not options.get("calibration"):
        return None
    owner = owner_option(options)
    try:
        row = calibration_named(name=options["calibration"], owner=owner)
    except CalibrationNotAvailable as error:
        raise CommandError(f"--calibration: {error}", returncode=INVALID_INPUT) from None
    return calibrate.Calibration.from_dict(row.document)


class Command(BaseCommand):
    help = (
        "Predict every row of a profiled-run CSV with the active (default) calibration; writes the rows back with "
        "predicted_tokens_per_s, predicted_step_time_s, predicted_mfu, fits_memory and the chosen layout filled in."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--runs", required=True, help="profiled-run CSV (DESIGN.md schema); - for stdin")
        parser.add_argument("--out", help="output CSV path (default: stdout)")
        add_calibration_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        runs = runs_or_exit(read_text_argument(options["runs"], "--runs"))
        calibration = calibration_option(options) or calibration_for_user(user=None)[1]
        # Opened in a spreadsheet like /api/v1/estimate.csv: formula-like cells are written as text, as there.
        text = spreadsheet_safe_csv(estimate_runs_csv(runs, calibration))
        for note in borrowed_family_notes(runs, calibration):
            self.stderr.write(f"note: {note}")
        for note in calibrate.fit_warnings(name=calibration.name, report=calibration.report):
            self.stderr.write(f"warning: {note}")
        if options.get("out"):
            write_out(options["out"], text)
            self.stderr.write(f"wrote {len(runs)} predicted rows to {options['out']}")
        else:
            self.stdout.write(text, ending="")
