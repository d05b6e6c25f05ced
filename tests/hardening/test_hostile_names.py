"""Control characters in names (an outsider's check): a scenario named "s\\x1b[2J\\x07" was stored, and then every
workbook of its proposals answered 500 (openpyxl refuses C0 controls in a cell), for good, since proposals are frozen.
Names are one line of text now: refused at every input path naming the field; and a workbook whose stored name
holds one writes it as a visible escape."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from rest_framework.test import APIClient

from advisor.models import ApiToken, Calibration, Fleet, Proposal, Scenario
from advisor.scenarios import scenario_create
from estimator.calibrate import public_runs
from tests.advisor.fleet.figures import BASE_AND_WEEK
from tests.api.conftest import assert_problem
from tests.api.examples import DESIGN_SCENARIO, scenario

CONTROLS = {"ESC": "s\x1b[2Jx", "BEL": "a\x07", "SOH": "a\x01b", "DEL": "a\x7fb", "LF inside": "a\nb"}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def alice(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


def _counts() -> tuple[int, ...]:
    return (
        Scenario.objects.count(),
        Fleet.objects.count(),
        ApiToken.objects.count(),
        Calibration.objects.filter(is_default=False).count(),
    )


def _bodies(name: str) -> list[tuple[str, str, dict[str, Any]]]:
    runs = [
        {"gpu": "a100-80gb", "num_gpus": 8, "params_b": 1.3, "seq_len": 2048, "global_batch": 64, "tokens_per_s": 1000}
    ]
    return [
        ("post", "/api/v1/scenarios", {"name": name, "scenario": scenario()}),
        ("post", "/api/v1/advice", scenario(name=name)),
        ("post", "/api/v1/fleets", {"name": name, "fleet": BASE_AND_WEEK}),
        ("post", "/api/v1/fleet-plans", {**BASE_AND_WEEK, "name": name}),
        ("post", "/api/v1/tokens", {"name": name}),
        ("post", "/api/v1/calibrations", {"name": name, "runs": runs}),
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("label", CONTROLS)
def test_a_control_character_in_a_name_is_refused_naming_the_field(alice, label: str) -> None:  # type: ignore[no-untyped-def]
    before = _counts()
    for method, path, body in _bodies(CONTROLS[label]):
        response = getattr(alice, method)(path, data=json.dumps(body), content_type="application/json")
        answer = assert_problem(response, 400, "#/name")
        assert "control character" in json.dumps(answer) or "pattern" in json.dumps(answer), (path, answer)
    assert _counts() == before


@pytest.mark.django_db
def test_a_control_character_in_a_job_name_is_refused(alice) -> None:  # type: ignore[no-untyped-def]
    document = json.loads(json.dumps(BASE_AND_WEEK))
    document["jobs"][0]["name"] = "job\x1b"
    assert_problem(alice.post("/api/v1/fleet-plans", document, format="json"), 400, "#/jobs/0/name")


@pytest.mark.django_db
def test_a_control_character_in_a_csv_calibration_name_is_refused(alice) -> None:  # type: ignore[no-untyped-def]
    rows = "gpu,num_gpus,params_b,seq_len,global_batch,tokens_per_s\na100-80gb,8,1.3,2048,64,1000\n"
    response = alice.post("/api/v1/calibrations?name=a%01b%1b%5b31m", data=rows, content_type="text/csv")
    assert_problem(response, 400, "#/name")


@pytest.mark.django_db
def test_web_rename_and_token_pages_refuse_a_control_character(user) -> None:  # type: ignore[no-untyped-def]
    saved = scenario_create(owner=user, name="mine", document=DESIGN_SCENARIO).pk
    web = Client()
    web.force_login(user)
    response = web.post(f"/scenarios/{saved}/rename/", {"name": "a\x1bb"}, follow=True)
    assert response.status_code == 200 and "control characters" in response.content.decode()
    assert Scenario.objects.get(pk=saved).name == "mine"
    tokens = ApiToken.objects.count()
    response = web.post("/account/tokens/", {"action": "create", "name": "a\x07b"})
    assert response.status_code == 400 and "control characters" in response.content.decode()
    assert ApiToken.objects.count() == tokens


@pytest.mark.django_db
def test_calibrate_refuses_a_control_character_in_its_name(tmp_path: Path) -> None:
    lines = (ROOT / "estimator" / "data" / "public_runs.csv").read_text(encoding="utf-8").splitlines()
    source = tmp_path / "runs.csv"
    source.write_text("\n".join([lines[0], *[ln for ln in lines[1:] if ln.startswith("a100-40gb,")][:6]]) + "\n")
    assert public_runs()  # the shipped runs load (the default calibration's source)
    with pytest.raises(CommandError) as info:
        call_command("calibrate", "--runs", str(source), "--name", "a\x01b", stdout=io.StringIO())
    assert info.value.returncode == 2 and "name" in str(info.value) and "control characters" in str(info.value)
    assert not Calibration.objects.filter(is_default=False).exists()


@pytest.mark.django_db
def test_a_proposal_stored_with_a_control_character_in_its_name_still_downloads(alice, user) -> None:  # type: ignore[no-untyped-def]
    from openpyxl import load_workbook

    saved = scenario_create(owner=user, name="clean", document=DESIGN_SCENARIO).pk
    issued = alice.post(f"/api/v1/scenarios/{saved}/proposals").json()
    # As one stored before names were checked.
    Proposal.objects.filter(pk=issued["id"]).update(scenario_name="s\x1b[2J\x07")
    for path in (f"/api/v1/proposals/{issued['id']}?format=xlsx", f"/api/v1/proposals/{issued['id']}/proposal.xlsx"):
        response = alice.get(path)
        assert response.status_code == 200, path
        summary = dict(load_workbook(io.BytesIO(response.content))["Summary"].iter_rows(values_only=True))
        assert summary["Scenario"] == "s\\x1b[2J\\x07"
