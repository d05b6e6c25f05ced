"""python manage.py estimate_inference --points IN.csv [--out OUT.csv]: predict serving throughput and latency."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from advisor.management.commands.estimate import BAD_INPUT, read_text_argument
from estimator.inference.points import estimate_points_csv
from estimator.runs import RunValidationError


class Command(BaseCommand):
    help = (
        "Predict every row of a serving-points CSV (gpu, precision, model or params_b + geometry, tp, concurrency, "
        "input_tokens, output_tokens[, stack]) with the shipped inference calibration; writes the rows back with "
        "predicted_output_tokens_per_s (whole deployment), predicted_ttft_s, predicted_tpot_s, max_concurrency "
        "and the p95 latencies added."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--points", required=True, help="serving-points CSV (DESIGN.md); - for stdin")
        parser.add_argument("--out", help="output CSV path (default: stdout)")

    def handle(self, *args: Any, **options: Any) -> None:
        text = read_text_argument(options["points"], "--points")
        try:
            result = estimate_points_csv(text)
        except RunValidationError as error:
            lines = "\n".join(f"  {e}" for e in error.errors)
            raise CommandError(
                f"{len(error.errors)} invalid value(s) in --points:\n{lines}", returncode=BAD_INPUT
            ) from None
        if options.get("out"):
            Path(options["out"]).write_text(result, encoding="utf-8")
        else:
            self.stdout.write(result, ending="")
