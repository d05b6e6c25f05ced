"""python manage.py calibrate --runs IN.csv [--name NAME] [--owner USERNAME] [--replace]: fit and store a calibration
(shared, or the owner's), listed on /calibrations/; print its JSON report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from advisor.calibrations import (
    CalibrationFitFailed,
    CalibrationNameError,
    CalibrationNameTaken,
    calibration_create,
    with_measurement_errors,
)
from advisor.management.commands.estimate import owner_option, read_text_argument, runs_or_exit
from core.exitcodes import INVALID_INPUT
from estimator.calibrate import fit_warnings
from estimator.runs import RunValidationError


class Command(BaseCommand):
    help = (
        "Fit a calibration to profiled runs (regularised toward the shipped default), store it for everyone, and "
        "print a JSON report: runs, loo_mape (held-out MAPE of tokens/s, a fraction: one fold per configuration up "
        "to 10 runs, else 10 folds of whole config families, as held_out says; identical configurations are held out "
        "together), params and fit figures."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--runs", required=True, help="profiled-run CSV with tokens_per_s or step_time_s")
        parser.add_argument(
            "--name",
            help="calibration name (default: the file name, 'calibration' for stdin); an existing name is refused "
            "unless --replace",
        )
        parser.add_argument("--owner", help="username that owns it (default: shared with every user)")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="overwrite the calibration of that name (same id; everyone who activated it gets the new fit, and "
            "it is listed with the time it was replaced)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        runs = runs_or_exit(read_text_argument(options["runs"], "--runs"), more_errors=with_measurement_errors)
        # Without --name: the file's name ("-", standard input, has none to give). A given --name is used as given, so
        # that a blank one is refused by the one name rule, as create_api_token's is (it was replaced by the file's).
        stem = "" if options["runs"] == "-" else Path(options["runs"]).stem
        name = options["name"] if options["name"] is not None else stem or "calibration"
        owner = owner_option(options)
        try:
            row = calibration_create(owner=owner, name=name, runs=runs, replace=options["replace"])
        except RunValidationError as error:
            lines = "\n".join(f"  {e}" for e in error.errors)
            raise CommandError(f"cannot calibrate on --runs:\n{lines}", returncode=INVALID_INPUT) from None
        except CalibrationFitFailed as error:
            raise CommandError(f"cannot calibrate on --runs: {error.reason}", returncode=INVALID_INPUT) from None
        except CalibrationNameTaken as error:
            whose = "a shared calibration" if owner is None else f"a calibration of {owner.get_username()}"
            raise CommandError(
                f"--name: {error.taken!r} is already used by {whose}; choose another name, or pass --replace to "
                "overwrite it (everyone who activated it then predicts with the new fit)",
                returncode=INVALID_INPUT,
            ) from None
        except CalibrationNameError as error:
            raise CommandError(f"--name: {str(error).removeprefix('name: ')}", returncode=INVALID_INPUT) from None
        report = {k: v for k, v in row.document["report"].items() if k != "residuals"}
        output = {"id": row.pk, "name": row.name, **report, "params": row.document["params"]}
        self.stdout.write(json.dumps(output, indent=2, sort_keys=True))
        for note in fit_warnings(name=row.name, report=row.document["report"]):
            self.stderr.write(f"warning: {note}")
