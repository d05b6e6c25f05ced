"""python manage.py estimate_inference --points IN.csv [--out OUT.csv]: predict serving throughput and latency."""

from __future__ import annotations

import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from advisor.management.commands.estimate import invalid_rows, read_text_argument, write_out
from advisor.runs_csv import check_runs_csv
from core.csvcells import spreadsheet_safe_csv
from estimator.inference.points import PROGRESS_CHUNK_S, estimate_points_csv
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
        "mean in flight reads lower p95 TTFT there. Time: each row simulates its clients step by step, so it grows "
        "per row with the concurrency (up to the batch cap): on 2 shared cores about 0.01 s a row at concurrency 1, "
        "0.15 s at 256 and 0.7 s at 1,024 (a 6,048-row grid at high concurrency ran over 10 minutes); rows done of "
        f"the total and the time elapsed go to stderr about every {PROGRESS_CHUNK_S:g} s and a summary at the end, "
        "stdout (or --out) stays the CSV."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--points", required=True, help="serving-points CSV (DESIGN.md); - for stdin")
        parser.add_argument("--out", help="output CSV path (default: stdout)")

    def handle(self, *args: Any, **options: Any) -> None:
        text = read_text_argument(options["points"], "--points")
        started = time.monotonic()
        said = started

        def progress(done: int, total: int) -> None:
            # On stderr, so stdout stays the CSV: a line about every PROGRESS_CHUNK_S and the summary at the end, in
            # plain text (stderr's style is the error one, and this is no error).
            nonlocal said
            now = time.monotonic()
            if done == total:
                line = f"estimate_inference: {total:,} of {total:,} rows done in {now - started:.1f} s"
            elif now - said >= PROGRESS_CHUNK_S:
                line = f"estimate_inference: {done:,} of {total:,} rows done, {now - started:.0f} s elapsed"
                said = now
            else:
                return
            self.stderr.write(line, style_func=str)

        try:
            # The same CSV checks as --runs (strict quoting, NUL, a repeated column, cells beyond the header).
            # Opened in a spreadsheet like estimate's output: formula-like cells are written as text, as there.
            rows = check_runs_csv(text, max_rows=sys.maxsize)
            result = spreadsheet_safe_csv(estimate_points_csv(rows, progress=progress))
        except RunValidationError as error:
            raise invalid_rows(error, "--points") from None
        if options.get("out"):
            write_out(options["out"], result)
        else:
            self.stdout.write(result, ending="")
