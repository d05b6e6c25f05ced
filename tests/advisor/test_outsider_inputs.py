"""Files an outsider sends the commands: valid but unusual, or malformed the way spreadsheets and copy-paste make them.

Each test pins behaviour (exit 2 naming the row and column, or the file accepted), never a prediction's value."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from advisor.calibrations import check_measured_runs
from advisor.models import Calibration as CalibrationRow
from advisor.runs_csv import check_runs_csv
from estimator.runs import RunValidationError, read_runs_csv

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


# ---------------------------------------------------------------------------------------- CSV shape


@pytest.mark.parametrize(("separator", "name"), [(";", "semicolon"), ("\t", "tab")])
def test_a_semicolon_or_tab_separated_file_is_named_as_such(tmp_path: Path, separator: str, name: str) -> None:
    row = ["h100-sxm", "8", "7", "4096", "512", "70000"]
    text = separator.join(RUNS_HEADER.split(",")) + "\n" + separator.join(row) + "\n"
    message = _refused(tmp_path, "estimate", "--runs", text)
    assert "header, column header: the header is one cell" in message and f"{name}-separated" in message


def test_an_unquoted_thousands_separator_is_refused_not_truncated(tmp_path: Path) -> None:
    """`1,234,567` unquoted used to be read as tokens_per_s = 1 with the rest dropped."""
    message = _refused(tmp_path, "estimate", "--runs", f"{RUNS_HEADER}\nh100-sxm,8,7,4096,512,1,234,567\n")
    assert "row 1, column 7: 8 cells but the header has 6 columns" in message and "'234'" in message


@pytest.mark.django_db
def test_trailing_empty_cells_and_blank_lines_are_accepted(tmp_path: Path) -> None:
    text = f"{RUNS_HEADER}\r\n\r\nh100-sxm,8,7,4096,512,70000,,\r\n\r\n"
    rows = _command(tmp_path, "estimate", "--runs", text).splitlines()
    assert len(rows) == 2


def test_row_numbers_skip_blank_lines_as_the_reader_does() -> None:
    text = f"{RUNS_HEADER}\n\nh100-sxm,8,7,4096,512,1\n\nh100-sxm,8,7\x00,4096,512,1\n"
    with pytest.raises(RunValidationError) as caught:
        check_runs_csv(text, max_rows=10)
    assert [(e.row, e.column) for e in caught.value.errors] == [(2, "params_b")]


def test_a_column_named_twice_is_refused(tmp_path: Path) -> None:
    text = "gpu,precision,model,tp,tp,concurrency,input_tokens,output_tokens\nh100-sxm,fp8,llama-3.1-8b,1,2,1,100,100\n"
    message = _refused(tmp_path, "estimate_inference", "--points", text)
    assert "header, column tp: column appears more than once" in message


# ---------------------------------------------------------------------------------------- estimate_inference

POINTS_HEADER = "gpu,precision,model,tp,concurrency,input_tokens,output_tokens"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        # The quote swallowed the rest of the line: the row used to be read as model 'llama-3.1-8b,1,1,100,100'.
        ('h100-sxm,fp8,"llama-3.1-8b,1,1,100,100\n', "unterminated quoted cell"),
        ("h100-sxm,fp8,llama-3.1-8b,1,1,100,100,junk\n", "row 1, column 8: 8 cells but the header has 7"),
        ("h100-sxm,fp8,llama-3.1-8b,1,1,100,100\nh100-sxm,fp8,llama\x00,1,1,100,100\n", "row 2, column model: must"),
    ],
)
def test_estimate_inference_checks_the_csv_like_estimate(tmp_path: Path, body: str, says: str) -> None:
    assert says in _refused(tmp_path, "estimate_inference", "--points", f"{POINTS_HEADER}\n{body}")


def test_estimate_inference_summarises_a_file_full_of_bad_rows(tmp_path: Path) -> None:
    body = "".join("h100-sxm,fp8,llama-9,1,1,100,100\n" for _ in range(200))
    message = _refused(tmp_path, "estimate_inference", "--points", f"{POINTS_HEADER}\n{body}")
    # The first MAX_ERRORS_PER_RESPONSE (100), as an API answer lists them, and the rest counted.
    assert "200 invalid value(s)" in message and "and 100 more" in message
    assert message.count("unknown model") == 100


def test_estimate_inference_unwritable_out_exits_2(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as caught:
        _command(
            tmp_path,
            "estimate_inference",
            "--points",
            f"{POINTS_HEADER}\nh100-sxm,fp8,llama-3.1-8b,1,1,100,100\n",
            "--out",
            str(tmp_path / "missing" / "out.csv"),
        )
    assert caught.value.returncode == 2 and "--out: cannot write" in str(caught.value)


# ---------------------------------------------------------------------------------------- JSON documents


@pytest.mark.django_db
@pytest.mark.parametrize("command", ["advise", "plan_fleet"])
def test_a_json_file_saved_with_a_byte_order_mark_is_read(tmp_path: Path, command: str) -> None:
    """Windows editors (Notepad, PowerShell's Out-File) save UTF-8 with a BOM; json.loads refuses it."""
    document = (
        {"workload": {"kind": "training", "model": {"params_b": 1}, "tokens": 1e10}, "gpu": "h100-sxm"}
        if command == "advise"
        else {
            "gpu": "h100-sxm",
            "rent": {"usd_per_gpu_hour": 3.0},
            "buy": {"capex_usd": 250_000},
            "jobs": [{"name": "evals", "gpus": 8, "hours": 10}],
        }
    )
    path = tmp_path / "document.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(document).encode())
    out = io.StringIO()
    call_command(command, str(path), stdout=out)
    assert json.loads(out.getvalue())


@pytest.mark.django_db
def test_a_fleet_with_no_price_to_rent_or_own_exits_2_naming_the_quotes(tmp_path: Path) -> None:
    """No offer and no hardware quote (the test database holds neither) used to crash on NaN savings (inf - inf)."""
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps({"gpu": "gb200", "jobs": [{"name": "evals", "gpus": 8, "hours": 10}]}))
    with pytest.raises(CommandError) as caught:
        call_command("plan_fleet", str(path), stdout=io.StringIO())
    assert caught.value.returncode == 2
    assert "/rent/usd_per_gpu_hour: no price for gb200" in str(caught.value) and "buy.capex_usd" in str(caught.value)


@pytest.mark.django_db
@pytest.mark.parametrize("quote", [{"rent": {"usd_per_gpu_hour": 6.0}}, {"buy": {"capex_usd": 3_000_000}}])
def test_a_fleet_priced_on_one_side_only_is_planned(tmp_path: Path, quote: dict) -> None:
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps({"gpu": "gb200", **quote, "jobs": [{"name": "evals", "gpus": 8, "hours": 10}]}))
    out = io.StringIO()
    call_command("plan_fleet", str(path), stdout=out)
    assert json.loads(out.getvalue())["recommendation"]["usd_per_year"] > 0


@pytest.mark.django_db
def test_a_model_that_fits_no_candidate_size_answers_action_none(tmp_path: Path) -> None:
    """DESIGN.md: action is rent|buy|none. A 405B model on 8 or 16 GPUs used to answer action null."""
    scenario = {
        "workload": {"kind": "training", "model": {"params_b": 405}, "tokens": 1.5e13},
        "gpu": "h100-sxm",
        "cluster_sizes": [8, 16],
        "rent": {"usd_per_gpu_hour": 3.0},
        "buy": {"capex_usd": 250_000},
    }
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(scenario))
    out = io.StringIO()
    call_command("advise", str(path), stdout=out)
    advice = json.loads(out.getvalue())
    assert not any(size["fits_memory"] for size in advice["sizes"])
    assert advice["recommendation"]["action"] == "none" and advice["recommendation"]["gpus"] is None


def test_the_page_headline_of_a_training_plan_that_fits_nowhere_says_so() -> None:
    from advisor.web.presenters import headline

    advice = {"scenario": {"workload": {"kind": "training"}}, "sizes": [], "recommendation": {"action": "none"}}
    assert "fits" in headline(advice=advice)["action_label"]


def test_several_unnamed_columns_are_named_by_position(tmp_path: Path) -> None:
    """Two trailing commas in the header used to answer "column  appears more than once in the header"."""
    message = _refused(tmp_path, "estimate", "--runs", f"{RUNS_HEADER},,\nh100-sxm,8,7,4096,512,70000,,\n")
    assert "header, column header: columns 7, 8 have no name" in message


@pytest.mark.django_db
@pytest.mark.parametrize(("precision", "says"), [(None, "not given, so the default bf16 applies"), ("bf16", "")])
def test_a_defaulted_precision_the_gpu_lacks_is_named_as_the_default(
    tmp_path: Path, precision: str | None, says: str
) -> None:
    """A V100 has no bf16: leaving precision out used to read as if the user had written bf16."""
    workload = {"kind": "training", "model": {"params_b": 1}, "tokens": 1e10}
    if precision:
        workload["precision"] = precision
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"workload": workload, "gpu": "v100-32gb"}))
    with pytest.raises(CommandError) as caught:
        call_command("advise", str(path), stdout=io.StringIO())
    message = str(caught.value)
    assert caught.value.returncode == 2 and "/workload/precision: " in message and "supported: fp32, fp16" in message
    assert (says in message) if says else ("not given" not in message)


@pytest.mark.django_db
def test_calibrate_from_stdin_is_not_named_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = (ROOT / "estimator" / "data" / "public_runs.csv").read_text(encoding="utf-8").splitlines()
    rows = [line for line in lines[1:] if line.startswith("a100-40gb,")][:3]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join([lines[0], *rows]) + "\n"))
    out = io.StringIO()
    call_command("calibrate", "--runs", "-", stdout=out)
    assert json.loads(out.getvalue())["name"] == "calibration"


@pytest.mark.django_db
def test_calibrate_bad_name_says_what_is_wrong_once(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as caught:
        _command(tmp_path, "calibrate", "--runs", f"{RUNS_HEADER}\nh100-sxm,8,7,4096,512,70000\n", "--name", " ")
    assert caught.value.returncode == 2 and str(caught.value) == "--name: must not be empty"


@pytest.mark.django_db
@pytest.mark.parametrize("stack", ["", "unknown"])
def test_the_csv_spelling_of_an_unknown_stack_points_at_null(tmp_path: Path, stack: str) -> None:
    """The profiled-run CSV writes an unknown stack as an empty cell (or 'unknown'); the Scenario writes null."""
    document = {"workload": {"kind": "training", "model": {"params_b": 1}, "tokens": 1e10, "stack": stack}}
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({**document, "gpu": "h100-sxm"}))
    with pytest.raises(CommandError) as caught:
        call_command("advise", str(path), stdout=io.StringIO())
    assert caught.value.returncode == 2 and "/workload/stack: an unknown stack is null" in str(caught.value)


@pytest.mark.django_db
def test_estimate_of_a_v100_row_without_precision_predicts_in_fp16(tmp_path: Path) -> None:
    """An empty precision cell on a GPU without bf16 used to exit 2 naming a bf16 the user never wrote."""
    out = _command(
        tmp_path, "estimate", "--runs", "gpu,num_gpus,params_b,seq_len,global_batch\nv100-32gb,8,1.3,2048,512\n"
    )
    (row,) = list(csv.DictReader(io.StringIO(out)))
    assert row["fits_memory"] == "true" and float(row["predicted_tokens_per_s"]) > 0


# A parse error (row 1, num_gpus), a throughput above the GPUs' peak (row 2) and a step time that disagrees with
# tokens_per_s (row 3): an outsider's upload named row 1 only, and rows 2 and 3 on the second try.
_BOTH_KINDS = (
    f"{RUNS_HEADER},step_time_s\n"
    "h100-sxm,zero,7,4096,512,70000,\n"
    "h100-sxm,8,7,4096,512,1e12,\n"
    "h100-sxm,8,7,4096,512,70000,100\n"
    "h100-sxm,16,7,4096,512,130000,\n"
)


@pytest.mark.django_db
def test_calibrate_names_bad_measurements_beside_parse_errors_in_one_answer(tmp_path: Path, user) -> None:  # type: ignore[no-untyped-def]
    from django.test import Client

    from tests.api.conftest import assert_problem

    message = _refused(tmp_path, "calibrate", "--runs", _BOTH_KINDS)
    for where in ("row 1, column num_gpus", "row 2, column tokens_per_s", "row 3, column step_time_s"):
        assert where in message, message
    assert message.index("row 1,") < message.index("row 2,") < message.index("row 3,"), "in row order"

    from rest_framework.test import APIClient

    from advisor.api.tokens import api_token_create

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=user, name='t').key}")
    answer = api.post("/api/v1/calibrations?name=both", _BOTH_KINDS, content_type="text/csv")
    assert_problem(answer, 400, "#/csv/1/num_gpus", "#/csv/2/tokens_per_s", "#/csv/3/step_time_s")

    web = Client()
    web.force_login(user)
    upload = io.BytesIO(_BOTH_KINDS.encode())
    upload.name = "runs.csv"
    page = web.post("/calibrations/", {"name": "both", "runs": upload}).content.decode()
    for where in ("row 1, column num_gpus", "row 2, column tokens_per_s", "row 3, column step_time_s"):
        assert where in page
    assert not CalibrationRow.objects.filter(name="both").exists()


@pytest.mark.django_db
def test_calibrate_with_one_run_names_the_file_not_a_header_column(tmp_path: Path) -> None:
    message = _refused(tmp_path, "calibrate", "--runs", f"{RUNS_HEADER}\nh100-sxm,8,7,4096,512,70000\n")
    assert "a calibration needs at least 2 runs, got 1" in message
    assert "header" not in message and "column runs" not in message
