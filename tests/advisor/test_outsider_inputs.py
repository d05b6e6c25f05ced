"""Files an outsider sends the commands: valid but unusual, or malformed the way spreadsheets and copy-paste make them.

Each test pins behaviour (exit 2 naming the row and column, or the file accepted), never a prediction's value."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from advisor.calibrations import check_measured_runs
from advisor.models import Calibration as CalibrationRow
from estimator.runs import read_runs_csv

ROOT = Path(__file__).resolve().parents[2]
RUNS_HEADER = "gpu,num_gpus,params_b,seq_len,global_batch,tokens_per_s"


def _command(tmp_path: Path, name: str, option: str, text: str, *extra: str) -> str:
    path = tmp_path / "input.csv"
    path.write_text(text, encoding="utf-8")
    out = io.StringIO()
    call_command(name, option, str(path), *extra, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def _refused(tmp_path: Path, name: str, option: str, text: str) -> str:
    with pytest.raises(CommandError) as caught:
        _command(tmp_path, name, option, text)
    assert caught.value.returncode == 2
    return str(caught.value)


# ---------------------------------------------------------------------------------------- calibrate: measurements


@pytest.mark.django_db
def test_calibrate_refuses_a_throughput_above_the_gpus_peak(tmp_path: Path) -> None:
    """1e12 tokens/s on 8 GPUs is millions of times their peak: fitted, it lifted the family's MFU cap for everyone."""
    text = f"{RUNS_HEADER}\nh100-sxm,8,7,4096,512,70000\nh100-sxm,8,7,4096,512,1e12\n"
    message = _refused(tmp_path, "calibrate", "--runs", text)
    assert "row 2, column tokens_per_s" in message and "above 100% is impossible" in message
    assert "row 1" not in message
    assert not CalibrationRow.objects.filter(name="input").exists()


@pytest.mark.django_db
def test_calibrate_refuses_a_step_time_above_the_peak_naming_step_time_s(tmp_path: Path) -> None:
    header = "gpu,num_gpus,params_b,seq_len,global_batch,step_time_s"
    text = f"{header}\nh100-sxm,8,7,4096,512,30\nh100-sxm,8,7,4096,512,1e-6\n"
    assert "row 2, column step_time_s" in _refused(tmp_path, "calibrate", "--runs", text)


@pytest.mark.django_db
def test_calibrate_refuses_tokens_per_s_and_step_time_that_disagree(tmp_path: Path) -> None:
    """512 x 4096 tokens in 100 s is 20,972 tokens/s, not 70,000: which one is the measurement?"""
    text = f"{RUNS_HEADER},step_time_s\nh100-sxm,8,7,4096,512,70000,100\nh100-sxm,16,7,4096,512,,15\n"
    message = _refused(tmp_path, "calibrate", "--runs", text)
    assert "row 1, column step_time_s" in message and "must agree" in message


def test_measured_runs_that_can_be_true_pass() -> None:
    """Agreeing tokens_per_s and step_time_s, plausible MFU, and an unmeasured row (left to the fit) are all fine."""
    tokens = 512 * 4096 / 30
    runs = read_runs_csv(
        f"{RUNS_HEADER},step_time_s\nh100-sxm,8,7,4096,512,{tokens:.0f},30\nh100-sxm,8,7,4096,512,,\n"
        "a100-80gb,64,13,4096,1024,140000,\n"
    )
    check_measured_runs(runs=runs)


def test_bundled_public_runs_are_all_physically_possible() -> None:
    lines = (ROOT / "estimator" / "data" / "public_runs.csv").read_text(encoding="utf-8").splitlines()
    check_measured_runs(runs=read_runs_csv("\n".join(line for line in lines if not line.startswith("#"))))
