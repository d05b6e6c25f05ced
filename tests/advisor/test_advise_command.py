"""`python manage.py advise SCENARIO.json`: the Advice JSON on stdout; exit 2 naming the bad field."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = {
    "workload": {"kind": "training", "model": {"params_b": 1}, "tokens": 1e10},
    "gpu": "h100-sxm",
    "cluster_sizes": [1, 8],
    "rent": {"usd_per_gpu_hour": 3.0},
    "buy": {"capex_usd": 250_000},
}


def run(path: Path | str) -> str:
    out = io.StringIO()
    call_command("advise", str(path), stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_prints_the_advice_json(tmp_path: Path) -> None:
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(SCENARIO))
    advice = json.loads(run(path))
    assert advice["scenario"]["gpu"] == "h100-sxm"
    assert [s["gpus"] for s in advice["sizes"]] == [1, 8]
    assert advice["recommendation"]["action"] in {"rent", "buy"}
    # The manual quotes priced both sides: 8 GPUs x run hours x $3.00.
    eight = advice["sizes"][1]
    assert eight["rent"]["usd_per_run"] == pytest.approx(8 * eight["run_hours"] * 3.0)
    assert eight["buy"]["capex_usd"] == 250_000


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "says"),
    [
        (
            '{"workload": {"kind": "training", "model": {"params_b": -1}, "tokens": 1e10}, "gpu": "h100-sxm"}',
            "/workload/model/params_b: must be a number at least 0.001",
        ),
        (
            '{"workload": {"kind": "training", "model": {"params_b": 1}, "tokens": 1e10}, "gpu": "h100-sxm", "x": 1}',
            "/x: unknown field",
        ),
        (
            '{"workload": {"kind": "inference", "model": {"params_b": 1}, "tokens": 1e9}, "gpu": "h100-sxm"}',
            "/workload/tokens: unknown field",
        ),
        (
            '{"workload": {"kind": "training", "model": {"params_b": 1}, "tokens": NaN}, "gpu": "h100-sxm"}',
            "/workload/tokens: must be a number",
        ),
        ('{"workload": ', "not valid JSON at line 1 column 14"),
        ("[1, 2]", "/: must be an object"),
    ],
)
def test_invalid_input_exits_2_naming_the_field(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(CommandError) as caught:
        run(path)
    assert caught.value.returncode == 2
    assert says in str(caught.value)


def test_unreadable_file_exits_2(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as caught:
        run(tmp_path / "missing.json")
    assert caught.value.returncode == 2 and "cannot read the scenario file" in str(caught.value)
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(CommandError) as caught:
        run(binary)
    assert caught.value.returncode == 2


def test_real_process_exit_status_is_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    # Every ownership input given, so the process fails on validation before it needs a database.
    buy = {"years": 5, "discount_rate": 0.08, "residual_fraction": 0.1, "power_usd_per_kwh": 0.12, "pue": 1.3}
    buy |= {"colo_usd_per_kw_month": 150, "support_fraction_per_year": 0.1}
    path.write_text(json.dumps({"gpu": "h100-sxm", "buy": buy}))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run(
        [sys.executable, "manage.py", "advise", str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "/workload: required" in done.stderr and done.stdout == ""


@pytest.mark.django_db
def test_reads_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(SCENARIO)))
    advice = json.loads(run("-"))
    assert advice["scenario"]["rent"]["usd_per_gpu_hour"] == 3.0
