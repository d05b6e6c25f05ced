"""estimate_inference on a long grid says how far it is on stderr (a serving lead's probe: 6,048 rows ran over 10
minutes without a word, 200 rows took 507 s at high concurrency), and its --help says how the time grows; stdout
stays the CSV, unchanged."""

from __future__ import annotations

import io
import re
from pathlib import Path

from django.core.management import call_command

from advisor.management.commands.estimate_inference import Command
from core.csvcells import spreadsheet_safe_csv
from estimator.inference.points import estimate_points_csv
from tests.advisor.test_estimate_inference_command import GOOD, HEADER


def test_a_small_grid_reports_its_progress_on_stderr_and_keeps_stdout_the_csv(tmp_path: Path) -> None:
    text = f"{HEADER}\n{GOOD}"
    path = tmp_path / "points.csv"
    path.write_text(text)
    out, err = io.StringIO(), io.StringIO()
    call_command("estimate_inference", "--points", str(path), stdout=out, stderr=err)
    assert out.getvalue() == spreadsheet_safe_csv(estimate_points_csv(text))
    # The last line is the summary: every row done and the time it took.
    assert re.search(r"estimate_inference: 4 of 4 rows done in \d+(\.\d+)? s\n\Z", err.getvalue()), err.getvalue()


def test_progress_comes_per_chunk_with_rows_done_of_the_total() -> None:
    calls: list[tuple[int, int]] = []
    text = f"{HEADER}\n{GOOD}"
    assert estimate_points_csv(text, progress=lambda done, total: calls.append((done, total))) == (
        estimate_points_csv(text)
    )
    assert calls and calls[-1] == (4, 4)
    assert [d for d, _ in calls] == sorted({d for d, _ in calls})  # rows done only grow


def test_help_says_how_the_time_grows() -> None:
    assert "per row" in Command.help and "concurrency" in Command.help and "stderr" in Command.help
