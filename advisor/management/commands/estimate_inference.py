"""python manage.py estimate_inference --points IN.csv [--out OUT.csv]: predict serving throughput and latency."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from advisor.management.commands.estimate import invalid_rows, read_text_argument, write_out
from advisor.runs_csv import check_runs_csv
from core.csvcells import spreadsheet_safe_csv
from estimator.inference.points import estimate_points_csv
from estimator.runs import RunValidationError


class Command(BaseCommand):
    help = (
        "Predict every row of a serving-points CSV (gpu, precision, model or params_b + geometry: layers, hidden, "
        "heads, kv_heads and optional ffn_hidden, vocab, experts, active_experts, head_dim (hidden / heads when "
        "empty), derived where empty as the API derives them; tp, concurrency, input_tokens, output_tokens[, "
        "stack]) with the shipped inference calibration; writes the rows back with "
        "predicted_output_tokens_per_s (whole deployment), predicted_ttft_s, predicted_tpot_s, max_concurrency "
        "and the p95 latencies added, with fits_memory (true/false) and prediction_note (why a row has no "
        "prediction, e.g. the model does not fit, or what it assumed: tp past the scale-up domain). Load model: "
        "concurrency is a closed loop of that many clients per replica group "
        "that start together with identical requests and each send the next when the last one ends, as a benchmark "
        "runs it; advise's latencies are at Poisson (random) arrivals of a request rate, an open loop, so the same "
        "mean in flight reads lower p95 TTFT there."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--points", required=True, help="serving-points CSV (DESIGN.md); - for stdin")
        parser.add_argument("--out", help="output CSV path (default: stdout)")

    def handle(self, *args: Any, **options: Any) -> None:
        text = read_text_argument(options["points"], "--points")
        try:
            # The same CSV checks as --runs (strict quoting, NUL, a repeated column, cells beyond the header).
            # Opened in a spreadsheet like estimate's output: formula-like cells are written as text, as there.
            result = spreadsheet_safe_csv(estimate_points_csv(check_runs_csv(text, max_rows=sys.maxsize)))
        except RunValidationError as error:
            raise invalid_rows(error, "--points") from None
        if options.get("out"):
            write_out(options["out"], result)
        else:
            self.stdout.write(result, ending="")
