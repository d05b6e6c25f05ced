"""Profiled-run uploads (CSV and JSON), calibration fit/report/activate, estimate; owner-only."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from advisor.models import Calibration
from tests.api.conftest import assert_problem

pytestmark = pytest.mark.django_db

PUBLIC_RUNS = Path(__file__).resolve().parents[2] / "estimator" / "data" / "public_runs.csv"


def runs_csv(rows: int = 8) -> str:
    return "\n".join(PUBLIC_RUNS.read_text(encoding="utf-8").splitlines()[: rows + 1]) + "\n"


def runs_json(rows: int = 8) -> list[dict[str, str]]:
    return [dict(row) for row in csv.DictReader(io.StringIO(runs_csv(rows)))]


def _fit(client, name: str = "mine") -> dict:  # type: ignore[no-untyped-def]
    response = client.post(f"/api/v1/calibrations?name={name}", runs_csv(), content_type="text/csv")
    assert response.status_code == 201, response.content
    return response.json()


def test_fit_from_csv_report_and_residuals(alice) -> None:  # type: ignore[no-untyped-def]
    body = _fit(alice)
    assert body["runs"] == 8 and 0 <= body["loo_mape"] < 5 and body["shared"] is False and not body["is_active"]
    assert "loo_mape" in body["report"] and "residuals" not in body["report"] and body["params"]
    residuals = alice.get(f"/api/v1/calibrations/{body['id']}/residuals").json()
    assert len(residuals) == 8 and {"measured_tokens_per_s", "predicted_tokens_per_s"} <= set(residuals[0])
    rows = list(
        csv.DictReader(
            io.StringIO(alice.get(f"/api/v1/calibrations/{body['id']}/residuals?format=csv").content.decode())
        )
    )
    assert [float(r["measured_tokens_per_s"]) for r in rows] == [r["measured_tokens_per_s"] for r in residuals]


def test_fit_from_json_and_duplicate_name(alice) -> None:  # type: ignore[no-untyped-def]
    created = alice.post("/api/v1/calibrations", {"name": "j", "runs": runs_json()}, format="json")
    assert created.status_code == 201, created.content
    again = alice.post("/api/v1/calibrations", {"name": "j", "runs": runs_json()}, format="json")
    assert_problem(again, 400, "#/name")
    csv_again = alice.post("/api/v1/calibrations?name=j", runs_csv(), content_type="text/csv")
    assert assert_problem(csv_again, 400, "#/name")["errors"][0]["parameter"] == "name"


def test_bad_runs_point_at_row_and_column(alice) -> None:  # type: ignore[no-untyped-def]
    records = runs_json(3)
    records[1]["num_gpus"] = "-4"
    records[2]["gpu"] = "h900"
    body = assert_problem(
        alice.post("/api/v1/calibrations", {"name": "bad", "runs": records}, format="json"),
        400,
        "#/runs/1/num_gpus",
        "#/runs/2/gpu",
    )
    assert {(e["row"], e["column"]) for e in body["errors"]} >= {(2, "num_gpus"), (3, "gpu")}
    text = runs_csv(3).replace("h100-sxm,64,", "h100-sxm,zero,", 1)
    assert_problem(alice.post("/api/v1/calibrations?name=bad", text, content_type="text/csv"), 400, "#/csv/1/num_gpus")
    missing = alice.post("/api/v1/calibrations?name=bad", "gpu,num_gpus\nh100-sxm,8\n", content_type="text/csv")
    assert_problem(missing, 400, "#/csv/0/params_b")
    assert_problem(alice.post("/api/v1/calibrations", {"runs": records}, format="json"), 400, "#/name")
    assert_problem(alice.post("/api/v1/calibrations", runs_csv(), content_type="text/csv"), 400, "#/name")
    assert_problem(alice.post("/api/v1/calibrations", {"name": "x", "runs": "a"}, format="json"), 400, "#/runs")
    assert_problem(alice.post("/api/v1/calibrations", {"name": "x", "runs": [], "y": 1}, format="json"), 400, "#/y")
    assert_problem(alice.post("/api/v1/calibrations", b"\xff\xfe", content_type="text/csv"), 400)
    one_run = alice.post("/api/v1/calibrations", {"name": "one", "runs": runs_json(1)}, format="json")
    assert_problem(one_run, 400, "#/runs")
    assert not Calibration.objects.filter(owner__isnull=False).exists()


def test_other_users_calibration_is_404(alice, bob) -> None:  # type: ignore[no-untyped-def]
    mine = _fit(alice)
    for response in (
        bob.get(f"/api/v1/calibrations/{mine['id']}"),
        bob.get(f"/api/v1/calibrations/{mine['id']}/residuals"),
        bob.post(f"/api/v1/calibrations/{mine['id']}/activate"),
        bob.post(f"/api/v1/estimate?calibration={mine['id']}", runs_csv(2), content_type="text/csv"),
    ):
        assert response.status_code in (400, 404), response.content
        assert response["Content-Type"].startswith("application/problem+json")
    assert mine["id"] not in {c["id"] for c in bob.get("/api/v1/calibrations").json()["results"]}


def test_a_params_b_the_geometry_contradicts_is_refused_at_its_row_and_column(alice) -> None:  # type: ignore[no-untyped-def]
    """The first row (80 x 8192, FFN 32768: 64.86B) said to be 7B was estimated at 330,475 tokens/s (5x the 66,523
    measured); six rows of 5e-324 were fitted (LOO MAPE 205%) and stored as a calibration that could be activated."""
    told_7b = [{**runs_json(1)[0], "params_b": "7"}]
    body = assert_problem(alice.post("/api/v1/estimate", {"runs": told_7b}, format="json"), 400, "#/runs/0/params_b")
    assert "away from params_b 7B (at most 15% allowed)" in body["errors"][0]["detail"]
    text = runs_csv(2).replace(",64.8624,", ",7,", 1)
    assert_problem(alice.post("/api/v1/estimate", text, content_type="text/csv"), 400, "#/csv/1/params_b")
    vanishing = [{**row, "params_b": "5e-324"} for row in runs_json(6)]
    body = assert_problem(
        alice.post("/api/v1/calibrations", {"name": "tiny", "runs": vanishing}, format="json"),
        400,
        *(f"#/runs/{i}/params_b" for i in range(6)),
    )
    assert "at least 0.001" in body["errors"][0]["detail"]
    assert not Calibration.objects.filter(owner__isnull=False).exists()


def test_activate_then_estimate_uses_it(alice) -> None:  # type: ignore[no-untyped-def]
    listed = alice.get("/api/v1/calibrations").json()["results"]
    default = next(c for c in listed if c["is_default"])
    assert default["is_active"] and default["shared"]
    mine = _fit(alice)
    activated = alice.post(f"/api/v1/calibrations/{mine['id']}/activate")
    assert activated.status_code == 200 and activated.json()["is_active"]
    estimate = alice.post("/api/v1/estimate", {"runs": runs_json(4)}, format="json").json()
    assert estimate["calibration"]["id"] == mine["id"] and estimate["count"] == 4
    with_default = alice.post(f"/api/v1/estimate?calibration={default['id']}", {"runs": runs_json(4)}, format="json")
    assert with_default.json()["calibration"]["id"] == default["id"]
    row = estimate["results"][0]
    assert row["fits_memory"] in (True, False)
    assert row["predicted_tokens_per_s"] is None or row["predicted_tokens_per_s"] > 0


def test_estimate_csv_in_csv_out_parses_back(alice) -> None:  # type: ignore[no-untyped-def]
    as_json = alice.post("/api/v1/estimate", runs_csv(5), content_type="text/csv").json()["results"]
    response = alice.post("/api/v1/estimate?format=csv", runs_csv(5), content_type="text/csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert len(rows) == 5
    for row, expected in zip(rows, as_json, strict=True):
        assert row["gpu"] == expected["gpu"] and row["fits_memory"] == ("true" if expected["fits_memory"] else "false")
        if expected["predicted_tokens_per_s"] is not None:
            assert float(row["predicted_tokens_per_s"]) == pytest.approx(expected["predicted_tokens_per_s"])
    assert_problem(
        alice.post("/api/v1/estimate?calibration=abc", runs_csv(2), content_type="text/csv"), 400, "#/calibration"
    )
    assert_problem(alice.post("/api/v1/estimate", {"runs": runs_json(1), "name": "x"}, format="json"), 400, "#/name")


def test_an_estimate_reads_the_calibration_id_in_ascii_digits(alice) -> None:  # type: ignore[no-untyped-def]
    # An outsider's probe (F8): int() reads '1_2' and fullwidth or Arabic-Indic digits, which no id is written in.
    mine = _fit(alice)
    fullwidth = "".join(chr(ord(digit) - ord("0") + 0xFF10) for digit in str(mine["id"]))
    for raw in (fullwidth, f"0_{mine['id']}"):  # both read as the id by int()
        response = alice.post(f"/api/v1/estimate?calibration={raw}", runs_csv(2), content_type="text/csv")
        assert_problem(response, 400, "#/calibration")
        assert "ASCII digits" in response.json()["errors"][0]["detail"], response.json()


def test_estimate_with_an_unreliable_calibration_says_so(alice) -> None:  # type: ignore[no-untyped-def]
    # A hostile probe: /api/v1/estimate used a calibration 2808% off its own runs without a word (the advice warned).
    from advisor.models import Calibration

    mine = _fit(alice)
    row = Calibration.objects.get(pk=mine["id"])
    row.document["report"]["loo_median_ape"] = 28.08
    row.save(update_fields=["document"])
    body = alice.post(f"/api/v1/estimate?calibration={mine['id']}", {"runs": runs_json(2)}, format="json").json()
    assert any("misses its own held-out runs by a median 2808%" in w for w in body["warnings"])
    default = alice.post("/api/v1/estimate", {"runs": runs_json(2)}, format="json").json()
    assert default["warnings"] == []


def test_estimate_warns_of_rows_predicted_from_a_borrowed_family_as_the_command_does(alice) -> None:  # type: ignore[no-untyped-def]
    """L40S and MI300X rows came back with warnings []: only `manage.py estimate` said they borrow another
    family's efficiencies."""
    header = "gpu,num_gpus,params_b,seq_len,global_batch\n"
    body = header + "l40s,8,1.3,2048,256\nmi300x,8,8,8192,64\na100-80gb,8,1.3,2048,256\n"
    warnings = alice.post("/api/v1/estimate", body, content_type="text/csv").json()["warnings"]
    assert any(w.startswith("rows 1 (l40s)") and "a100 family" in w for w in warnings)
    assert any(w.startswith("rows 2 (mi300x)") and "hopper" in w for w in warnings)
    assert not any("a100-80gb" in w for w in warnings)


def test_the_default_calibrations_name_is_reserved(alice) -> None:  # type: ignore[no-untyped-def]
    response = alice.post("/api/v1/calibrations", {"name": "default (public runs)", "runs": runs_json()}, format="json")
    assert "reserved" in assert_problem(response, 400, "#/name")["errors"][0]["detail"]


@pytest.mark.parametrize(
    ("state", "detail"),
    [
        ("pending", "'big' cannot be activated yet: it is queued for fitting"),
        ("fitting", "'big' cannot be activated yet: it is still fitting"),
        ("failed", "'big' cannot be activated: its fit failed"),
    ],
)
def test_activating_a_calibration_that_is_not_ready_is_a_worded_409(alice, user, state: str, detail: str) -> None:  # type: ignore[no-untyped-def]
    """The detail read "'big' is fit failed" (the state's label, lower-cased, after "is")."""
    row = Calibration.objects.create(owner=user, name="big", document={}, runs=6, loo_mape=0.0, state=state)
    body = assert_problem(alice.post(f"/api/v1/calibrations/{row.pk}/activate"), 409)
    assert body["detail"] == detail


def test_the_held_out_error_the_planner_prints_is_listed_beside_the_leave_one_out_mean(alice, user) -> None:  # type: ignore[no-untyped-def]
    """An outside tester: the planner, PDF and XLSX said 'held out by software stack: median error 14.6%
    (constant-MFU guess 25.8%)' while /calibrations/ and GET /api/v1/calibrations gave 8.2% (leave-one-out mean)."""
    from django.test import Client

    from advisor.advice.documents import calibration_document
    from estimator.calibrate import load_default

    # What an Advice for a scenario naming no software stack carries (and the planner prints).
    applies = calibration_document(load_default(), stack=None)
    assert applies["held_out"] == "leave-one-stack-out"
    listed = alice.get("/api/v1/calibrations").json()["results"]
    default = next(c for c in listed if c["is_default"])
    assert default["loo_mape"] == pytest.approx(applies["loo_mape"])
    assert default["held_out"] == applies["held_out"]
    assert default["held_out_median_ape"] == pytest.approx(applies["held_out_median_ape"])
    assert default["baseline_held_out_median_ape"] == pytest.approx(applies["baseline_held_out_median_ape"])
    detail = alice.get(f"/api/v1/calibrations/{default['id']}").json()
    assert detail["held_out_median_ape"] == pytest.approx(applies["held_out_median_ape"])

    web = Client()
    web.force_login(user)
    median, guess = (f"{applies[k] * 100:.1f}%" for k in ("held_out_median_ape", "baseline_held_out_median_ape"))
    for page in (web.get("/calibrations/"), web.get(f"/calibrations/{default['id']}/")):
        text = page.content.decode()
        assert f"{applies['loo_mape'] * 100:.1f}%" in text and median in text and guess in text, page
        assert "held out by software stack" in text.lower()


def test_a_one_run_upload_points_at_the_document_and_a_header_in_capitals_is_named(alice) -> None:  # type: ignore[no-untyped-def]
    """An ML lead's 1-run upload was refused at #/csv/0/runs (the header row, and no such column), and a header `GPU`
    was told 'required column is missing' with no word of the `GPU` it has."""
    header = "gpu,num_gpus,params_b,seq_len,global_batch,tokens_per_s"
    one_run = f"{header}\nh100-sxm,8,7,4096,512,70000\n"
    one = alice.post("/api/v1/calibrations?name=one", one_run, content_type="text/csv")
    body = assert_problem(one, 400, "#/csv")
    assert [e["pointer"] for e in body["errors"]] == ["#/csv"]
    assert "at least 2 runs" in body["errors"][0]["detail"]
    upper = "GPU" + header.removeprefix("gpu") + "\nh100-sxm,8,7,4096,512,70000\nh100-sxm,16,7,4096,512,130000\n"
    capitals = alice.post("/api/v1/calibrations?name=up", upper, content_type="text/csv")
    body = assert_problem(capitals, 400, "#/csv/0/gpu")
    assert "found 'GPU': column names are lower case" in body["errors"][0]["detail"]


def test_runs_without_a_measurement_are_refused_before_anything_is_stored_or_fitted(
    alice, settings, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    # 20,000 runs without tokens_per_s came back 400 after 7.4 s: parsed, stored as pending, parsed again and fitted
    # (in-process) before the fit named them, in one '#/runs' error ('cannot_fit').
    import advisor.tasks

    settings.CALIBRATION_INLINE_MAX_RUNS = 2

    def no_fit(**_: object) -> None:
        raise AssertionError("the upload was submitted for fitting")

    monkeypatch.setattr(advisor.tasks, "calibration_fit_pending", no_fit)
    runs = [{k: v for k, v in run.items() if k not in ("tokens_per_s", "step_time_s")} for run in runs_json(5)]
    body = assert_problem(alice.post("/api/v1/calibrations", {"name": "x", "runs": runs}, format="json"), 400)
    assert [error["pointer"] for error in body["errors"]] == [f"#/runs/{i}/tokens_per_s" for i in range(5)]
    assert "needs tokens_per_s" in body["errors"][0]["detail"]
    assert not Calibration.objects.filter(name="x").exists()


@pytest.fixture
def queued(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A broker that takes the fit task and a worker that has not run it yet."""
    import uuid

    from celery import current_app
    from celery.result import AsyncResult

    from advisor import calibrations
    from core.queueing import record_issued

    def enqueue(task, *args, owner=None):  # type: ignore[no-untyped-def]
        result = AsyncResult(str(uuid.uuid4()), app=current_app)
        record_issued(task_id=result.id, kind=task.name, owner=owner)
        return result

    monkeypatch.setattr(calibrations, "enqueue", enqueue)
    monkeypatch.setattr("advisor.fit_recovery.enqueue", enqueue)


def test_an_unfitted_calibration_has_no_held_out_error(alice, settings, queued, client) -> None:  # type: ignore[no-untyped-def]
    """A probe: a pending calibration reported loo_mape 0.0 (a 0% held-out error), typed a required number, so a
    tool ranking calibrations by loo_mape chose the unfitted one. A failed fit kept the same placeholder."""
    from advisor.calibrations import calibration_fit_pending

    settings.CALIBRATION_INLINE_MAX_RUNS = 2
    created = alice.post("/api/v1/calibrations", {"name": "big", "runs": runs_json(4)}, format="json")
    assert created.status_code == 202, created.content
    assert created.json()["loo_mape"] is None
    listed = {c["id"]: c for c in alice.get("/api/v1/calibrations").json()["results"]}
    assert listed[created.json()["id"]]["loo_mape"] is None
    Calibration.objects.filter(pk=created.json()["id"]).update(pending_runs=[{"gpu": "h900"}])
    assert calibration_fit_pending(calibration_id=created.json()["id"])["state"] == "failed"
    assert alice.get(f"/api/v1/calibrations/{created.json()['id']}").json()["loo_mape"] is None
    schemas = client.get("/api/schema/?format=json").json()["components"]["schemas"]
    for component in ("Calibration", "CalibrationDetail"):
        assert schemas[component]["properties"]["loo_mape"]["type"] == ["number", "null"], component


def test_the_202_of_a_queued_fit_declares_its_task_id_and_status_url(client) -> None:  # type: ignore[no-untyped-def]
    """The 202 body carries task_id and status_url, but its schema was plain CalibrationDetail: a generated client
    left both in additional_properties, with no task_id attribute to poll."""
    document = client.get("/api/schema/?format=json").json()
    accepted = document["paths"]["/api/v1/calibrations"]["post"]["responses"]["202"]
    ref = accepted["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]
    component = document["components"]["schemas"][ref]
    assert {"task_id", "status_url"} <= set(component["properties"]) & set(component["required"]), ref
    assert {"id", "state", "loo_mape", "report"} <= set(component["properties"])


def test_many_bad_runs_list_the_first_hundred_and_count_the_rest(alice) -> None:  # type: ignore[no-untyped-def]
    """A probe: 150 bad runs answered exactly 50 errors and no errors_omitted, so a client that fixed them got
    another 50. README 'Many errors at once': the first MAX_ERRORS_PER_RESPONSE (100), the rest counted."""
    bad = {"gpu": "h100-sxm", "num_gpus": 0, "params_b": 7, "seq_len": 4096, "global_batch": 256}
    body = assert_problem(alice.post("/api/v1/estimate", {"runs": [bad] * 150}, format="json"), 400)
    assert [e["pointer"] for e in body["errors"]] == [f"#/runs/{i}/num_gpus" for i in range(100)]
    assert body["errors_omitted"] == 50
    header, row = runs_csv(1).splitlines()
    text = header + "\n" + "\n".join([row.replace("h100-sxm", "h100\x01", 1)] * 150) + "\n"
    body = assert_problem(alice.post("/api/v1/estimate", text, content_type="text/csv"), 400)
    assert len(body["errors"]) == 100 and body["errors_omitted"] == 50


def test_estimate_rows_are_typed_json_with_a_schema(alice, client) -> None:  # type: ignore[no-untyped-def]
    """A probe: every input cell came back a string ("8", "true", "" for missing), and results items were free
    objects, so a generated client had no typed profiled-run attributes (the chosen layout arrived as text)."""
    run = {"gpu": "h100-sxm", "num_gpus": 8, "params_b": 13, "seq_len": 4096, "global_batch": 256}
    run |= {"tokens_per_s": 12000.5, "activation_checkpointing": True, "team": "blue"}
    response = alice.post("/api/v1/estimate", {"runs": [run]}, format="json")
    assert response.status_code == 200, response.content
    row = response.json()["results"][0]
    assert row["num_gpus"] == 8 and row["params_b"] == 13 and row["tokens_per_s"] == 12000.5
    assert row["activation_checkpointing"] is True and row["fits_memory"] is True
    assert row["step_time_s"] is None and row["source"] is None and row["team"] == "blue"
    assert all(isinstance(row[c], int) for c in ("gpus_per_node", "tp", "pp", "cp", "micro_batch"))
    assert isinstance(row["inter_node_gbps"], float) and isinstance(row["strategy"], str)
    assert isinstance(row["predicted_tokens_per_s"], float)
    document = client.get("/api/schema/?format=json").json()
    schemas = document["components"]["schemas"]
    items = schemas["EstimateResult"]["properties"]["results"]["items"]
    component = schemas[items["$ref"].rsplit("/", 1)[-1]]
    properties = component["properties"]
    assert properties["num_gpus"]["type"] == "integer" and properties["params_b"]["type"] == "number"
    assert properties["tp"]["type"] == ["integer", "null"] and properties["gpu"]["type"] == "string"
    assert properties["fits_memory"]["type"] == "boolean"
    assert properties["predicted_tokens_per_s"]["type"] == ["number", "null"]
    assert component.get("additionalProperties", True) is not False


def test_estimate_cells_are_cells_and_an_empty_extra_is_null(alice) -> None:  # type: ignore[no-untyped-def]
    """A hostile probe: an extra column sent as {"a": [1, 2]} came back as Python's repr "{'a': [1, 2]}" and a null
    extra as "": a profiled-run cell is one CSV cell (refused naming the row and column otherwise), and an empty
    extra comes back null like every other column."""
    run = {"gpu": "h100-sxm", "num_gpus": 8, "params_b": 13, "seq_len": 4096, "global_batch": 256}
    response = alice.post("/api/v1/estimate", {"runs": [run | {"x": {"a": [1, 2]}}]}, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert [e["pointer"] for e in errors] == ["#/runs/0/x"] and "one cell of the CSV" in errors[0]["detail"]
    response = alice.post("/api/v1/estimate", {"runs": [run | {"y": None, "z": "kept"}]}, format="json")
    assert response.status_code == 200, response.content
    row = response.json()["results"][0]
    assert row["y"] is None and row["z"] == "kept"


def test_calibration_names_are_one_name_in_nfc_and_an_invisible_one_is_refused(alice) -> None:  # type: ignore[no-untyped-def]
    # An outsider's probe (F9): "mine" and "mi\u200bne" coexisted, as did "café" (NFC) and "cafe\u0301" (NFD), each
    # pair alike in every picker, though calibration names are unique.
    from urllib.parse import quote

    assert _fit(alice, quote("café"))["name"] == "café"
    decomposed, hidden_space = quote("cafe\u0301"), quote("mi\u200bne")
    again = alice.post(f"/api/v1/calibrations?name={decomposed}", runs_csv(), content_type="text/csv")
    assert "already used" in str(assert_problem(again, 400, "#/name"))
    _fit(alice, "mine")
    hidden = alice.post(f"/api/v1/calibrations?name={hidden_space}", runs_csv(), content_type="text/csv")
    body = assert_problem(hidden, 400, "#/name")
    assert "U+200B" in str(body), body
