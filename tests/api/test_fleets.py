"""POST /api/v1/fleet-plans and saved fleets under /api/v1/fleets: the issue's figures, problem+json
naming the bad field with nothing stored, owner scoping and versions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.models import Fleet
from tests.advisor.fleet.figures import BASE_AND_WEEK, FIGURES, fleet, option
from tests.api.conftest import assert_problem

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("label", "document", "owned", "usd", "all_rent"), FIGURES, ids=[f[0] for f in FIGURES])
def test_done_when_figures(alice, label: str, document: dict, owned: int, usd: float, all_rent: float) -> None:  # type: ignore[no-untyped-def]
    response = alice.post("/api/v1/fleet-plans", document, format="json")
    assert response.status_code == 200, response.content
    rec = response.json()["recommendation"]
    assert (rec["owned_gpus"], rec["usd_per_year"], rec["all_rent_usd_per_year"]) == (
        owned,
        pytest.approx(usd),
        pytest.approx(all_rent),
    )
    assert sum(t["usd_per_year"] for t in rec["tiers"]) == pytest.approx(rec["usd_per_year"])


def saved_as(name: str, fleet_document: dict) -> dict:
    """A save body whose fleet names itself as the body does (two different names are refused)."""
    return {"name": name, "fleet": {**fleet_document, "name": name}}


def test_owning_24_rents_the_base_whole(alice) -> None:  # type: ignore[no-untyped-def]
    plan = alice.post("/api/v1/fleet-plans", BASE_AND_WEEK, format="json").json()
    assert option(plan, 24)["usd_per_year"] == pytest.approx(1_071_120)


@pytest.mark.parametrize(
    ("document", "where"),
    [
        (fleet({"gpus": 100_000, "hours": 5}), "#/jobs/0/gpus"),
        (fleet({"gpus": 8, "hours": 9000}), "#/jobs/0/hours"),
        (fleet({"gpus": 8, "hours": 5, "priority": 1}), "#/jobs/0/priority"),
        ({**BASE_AND_WEEK, "colour": "red"}, "#/colour"),
        (fleet(*[{"gpus": 8, "hours": 1}] * 10_001), "#/jobs"),
    ],
)
def test_bad_input_is_a_problem_naming_the_field(alice, document: dict, where: str) -> None:  # type: ignore[no-untyped-def]
    assert_problem(alice.post("/api/v1/fleet-plans", document, format="json"), 400, where)
    response = alice.post("/api/v1/fleets", {"name": "bad", "fleet": document}, format="json")
    assert_problem(response, 400, "#/fleet" + where[1:])
    assert Fleet.objects.count() == 0


@pytest.mark.parametrize(
    ("tokens", "params_b", "where"),
    [(1e15, 7, "#/fleet/jobs/0/workload"), (1e12, 70, "#/fleet/jobs/0/gpus")],
    ids=["run-longer-than-a-year", "does-not-fit"],
)
def test_a_workload_that_cannot_run_is_refused_when_saving(alice, tokens: float, params_b: float, where: str) -> None:  # type: ignore[no-untyped-def]
    """Parsing alone accepts these (the run hours come from the estimator): the save runs the same checks as the
    plan, so nothing is stored that /plan would answer with a conflict."""
    document = fleet({"gpus": 8, "workload": {"kind": "training", "model": {"params_b": params_b}, "tokens": tokens}})
    response = alice.post("/api/v1/fleets", saved_as("too long", document), format="json")
    assert_problem(response, 400, where)
    assert Fleet.objects.count() == 0
    saved = alice.post("/api/v1/fleets", saved_as("ok", BASE_AND_WEEK), format="json").json()
    put = alice.put(f"/api/v1/fleets/{saved['id']}", saved_as("too long", document), format="json")
    assert_problem(put, 400, where)
    assert Fleet.objects.get(pk=saved["id"]).versions.count() == 1
    assert Fleet.objects.get(pk=saved["id"]).document == {**BASE_AND_WEEK, "name": "ok"}


def test_saved_fleets_are_versioned_and_planned(alice) -> None:  # type: ignore[no-untyped-def]
    created = alice.post("/api/v1/fleets", saved_as("2027", BASE_AND_WEEK), format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["version"] == 1 and body["fleet"] == {**BASE_AND_WEEK, "name": "2027"}
    assert created["Location"].endswith(f"/api/v1/fleets/{body['id']}")
    plan = alice.get(f"/api/v1/fleets/{body['id']}/plan").json()
    assert plan["recommendation"]["owned_gpus"] == 32
    changed = fleet({"name": "pretrain", "gpus": 64, "hours": 700, "runs_per_year": 10})
    put = alice.put(f"/api/v1/fleets/{body['id']}", saved_as("2027 v2", changed), format="json")
    assert put.status_code == 200 and put.json()["version"] == 2
    assert alice.get(f"/api/v1/fleets/{body['id']}/plan").json()["recommendation"]["owned_gpus"] == 64
    assert Fleet.objects.get(pk=body["id"]).versions.count() == 2
    assert [f["name"] for f in alice.get("/api/v1/fleets").json()["results"]] == ["2027 v2"]
    assert alice.delete(f"/api/v1/fleets/{body['id']}").status_code == 204
    assert_problem(alice.get(f"/api/v1/fleets/{body['id']}"), 404)


def test_a_plans_fleet_echo_posts_back_unchanged_with_the_run_count_the_plan_used(alice) -> None:  # type: ignore[no-untyped-def]
    document = json.loads((Path(__file__).resolve().parents[2] / "examples" / "fleet-2027.json").read_text())
    plan = alice.post("/api/v1/fleet-plans", fleet(*document["jobs"]), format="json").json()
    echoed = {job["name"]: job for job in plan["fleet"]["jobs"]}
    # A service's plan lines are its base (its name) and its peak hours ("name (peak hours)", 365 runs a year).
    lines = {job["name"]: job for job in plan["jobs"]}
    assert len(lines) == len(document["jobs"]) + 1
    for given in document["jobs"]:
        job, used = echoed[given["name"]], lines[given["name"]]
        assert job["runs_per_year"] == used["runs_per_year"] == given.get("runs_per_year", 1)
        # The Scenario default (4) was echoed in a workload beside the job's own count (2 for the 70B runs).
        assert "runs_per_year" not in (job.get("workload") or {})
    again = alice.post("/api/v1/fleet-plans", plan["fleet"], format="json")
    assert again.status_code == 200, again.content  # was 400 at #/jobs/4/workload/runs_per_year
    assert again.json()["fleet"] == plan["fleet"]


def test_another_users_fleet_is_404(alice, bob) -> None:  # type: ignore[no-untyped-def]
    body = alice.post("/api/v1/fleets", saved_as("mine", BASE_AND_WEEK), format="json").json()
    url = f"/api/v1/fleets/{body['id']}"
    for response in (
        bob.get(url),
        bob.get(url + "/plan"),
        bob.put(url, saved_as("x", BASE_AND_WEEK), format="json"),
        bob.delete(url),
    ):
        assert_problem(response, 404)
    assert Fleet.objects.get(pk=body["id"]).name == "mine"


def test_anonymous_cannot_save(anon) -> None:  # type: ignore[no-untyped-def]
    assert anon.post("/api/v1/fleets", saved_as("x", BASE_AND_WEEK), format="json").status_code in (401, 403)
    assert Fleet.objects.count() == 0


def test_saved_fleet_as_pdf(alice, bob) -> None:  # type: ignore[no-untyped-def]
    body = alice.post("/api/v1/fleets", saved_as("2027 base", BASE_AND_WEEK), format="json").json()
    response = alice.get(f"/api/v1/fleets/{body['id']}/plan.pdf")
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"] == "application/pdf"
    assert response.content.startswith(b"%PDF")
    assert "2027-base-plan.pdf" in response["Content-Disposition"]
    assert_problem(bob.get(f"/api/v1/fleets/{body['id']}/plan.pdf"), 404)


def test_pdf_html_carries_the_plan_and_both_pictures() -> None:
    from advisor.advice.fleet.service import fleet_plan
    from advisor.fleet.proposal import render_fleet_html

    html = render_fleet_html(plan=fleet_plan(document=BASE_AND_WEEK), fleet_name="2027 base")
    assert "Own 32 GPUs: $457,920 a year" in html
    assert 'data-testid="chart-load-duration"' in html and 'data-testid="chart-fleet-cost"' in html


def test_a_usage_series_shorter_than_an_hour_is_refused_and_a_longer_ones_span_stated(alice) -> None:  # type: ignore[no-untyped-def]
    seconds = "timestamp,gpus_busy\n2025-01-01T00:00:00Z,8\n2025-01-01T00:00:01Z,1000\n2025-01-01T00:00:02Z,8\n"
    body = assert_problem(
        alice.post("/api/v1/fleet-plans", {"gpu": "h100-sxm", "usage": {"csv": seconds}}, format="json"), 400
    )
    assert "got 3 seconds" in json.dumps(body)
    hours = "timestamp,gpus_busy\n2025-01-01T00:00:00Z,8\n2025-01-01T01:00:00Z,8\n2025-01-01T02:00:00Z,8\n"
    document = {"gpu": "h100-sxm", "rent": {"usd_per_gpu_hour": 2.5}, "usage": {"csv": hours}}
    plan = alice.post("/api/v1/fleet-plans", document, format="json")
    assert plan.status_code == 200, plan.content[:500]
    # The span the one-hour rule counts (first to last plus one interval: 3 hours), nouns agreeing with figures (a
    # hostile probe: "samples spanning 0.5 hours" for a series the rule counted as 1 hour; "1 observed hours").
    assert any("3 observed hours (samples covering 3 hours)" in w for w in plan.json()["warnings"])
    half = "timestamp,gpus_busy\n2025-01-01T00:00:00Z,8\n2025-01-01T00:30:00Z,8\n"
    one = alice.post("/api/v1/fleet-plans", {**document, "usage": {"csv": half}}, format="json").json()
    assert any("1 observed hour (samples covering 1 hour)" in w for w in one["warnings"]), one["warnings"]


def test_saved_fleets_carry_an_etag_and_put_honours_if_match_as_scenarios_do(alice) -> None:  # type: ignore[no-untyped-def]
    """A hostile probe: POST answered no ETag and PUT with `If-Match: "bogus"` (or an older ETag) answered 200 and
    overwrote the fleet (a lost update). As PUT /scenarios/{id}: a stale If-Match is a 412 and nothing is saved."""
    created = alice.post("/api/v1/fleets", saved_as("2027", BASE_AND_WEEK), format="json")
    assert created.status_code == 201 and created["ETag"].startswith('"')
    url = f"/api/v1/fleets/{created.json()['id']}"
    fetched = alice.get(url)
    assert fetched["ETag"] == created["ETag"]
    not_modified = alice.get(url, HTTP_IF_NONE_MATCH=fetched["ETag"])
    assert not_modified.status_code == 304 and not_modified.content == b""
    changed = fleet({"name": "pretrain", "gpus": 64, "hours": 700, "runs_per_year": 10})
    assert_problem(alice.put(url, saved_as("bogus", changed), format="json", HTTP_IF_MATCH='"bogus"'), 412)
    updated = alice.put(url, saved_as("2027 v2", changed), format="json", HTTP_IF_MATCH=fetched["ETag"])
    assert updated.status_code == 200 and updated["ETag"] not in ("", fetched["ETag"])
    assert alice.get(url)["ETag"] == updated["ETag"]
    stale = alice.put(url, saved_as("lost update", BASE_AND_WEEK), format="json", HTTP_IF_MATCH=fetched["ETag"])
    assert_problem(stale, 412)
    saved = Fleet.objects.get(pk=created.json()["id"])
    assert (saved.name, saved.document, saved.versions.count()) == ("2027 v2", {**changed, "name": "2027 v2"}, 2)
    # The header is optional (as for scenarios): without it the write goes ahead; `*` matches any version.
    assert alice.put(url, saved_as("no header", changed), format="json").status_code == 200
    assert alice.put(url, saved_as("any", changed), format="json", HTTP_IF_MATCH="*").status_code == 200


def test_if_match_compares_strongly_and_a_304_keeps_vary(alice) -> None:  # type: ignore[no-untyped-def]
    # A reviewer: W/"<current tag>" matched on PUT (RFC 9110 13.1.1: If-Match compares strongly), and the 304 dropped
    # the Vary its 200 carries (15.4.5).
    created = alice.post("/api/v1/fleets", saved_as("2027", BASE_AND_WEEK), format="json")
    url = f"/api/v1/fleets/{created.json()['id']}"
    current = alice.get(url)
    assert_problem(
        alice.put(url, saved_as("w", BASE_AND_WEEK), format="json", HTTP_IF_MATCH=f"W/{current['ETag']}"), 412
    )
    weak_read = alice.get(url, HTTP_IF_NONE_MATCH=f"W/{current['ETag']}")  # If-None-Match compares weakly
    assert weak_read.status_code == 304 and weak_read["Vary"] == current["Vary"] == "Accept"


def test_a_saved_fleet_has_one_name(alice) -> None:  # type: ignore[no-untyped-def]
    # As scenarios: the envelope name is carried into a document without one; two different names are a 400.
    unnamed = {k: v for k, v in BASE_AND_WEEK.items() if k != "name"}
    created = alice.post("/api/v1/fleets", {"name": "2027", "fleet": unnamed}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["fleet"] == {**unnamed, "name": "2027"}
    plan = alice.get(f"/api/v1/fleets/{created.json()['id']}/plan").json()
    assert plan["fleet"]["name"] == "2027"
    body = {"name": "2027", "fleet": BASE_AND_WEEK}  # the document names itself "done-when"
    assert_problem(alice.post("/api/v1/fleets", body, format="json"), 400, "#/name", "#/fleet/name")
    url = f"/api/v1/fleets/{created.json()['id']}"
    assert_problem(alice.put(url, body, format="json"), 400, "#/name", "#/fleet/name")


@pytest.mark.parametrize("name", ["\u200b", "mi\u200bne", "\u3164", "\u0301\u0301", "a\U000e0041", "a\ue000"])
def test_invisible_names_are_refused_for_a_fleet_and_its_jobs_naming_what(alice, name: str) -> None:  # type: ignore[no-untyped-def]
    # An outsider's probe (F9): a fleet named "\u200b" was stored, and a job name took any of these.
    job = {"gpus": 8, "hours": 5, "name": name}
    body = assert_problem(alice.post("/api/v1/fleet-plans", fleet(job), format="json"), 400, "#/jobs/0/name")
    assert "U+" in str(body), body
    body = assert_problem(
        alice.post("/api/v1/fleets", saved_as(name, BASE_AND_WEEK), format="json"), 400, "#/fleet/name"
    )
    assert "U+" in str(body), body
    unnamed = {key: value for key, value in BASE_AND_WEEK.items() if key != "name"}
    body = assert_problem(alice.post("/api/v1/fleets", {"name": name, "fleet": unnamed}, format="json"), 400, "#/name")
    assert "U+" in str(body), body
    assert Fleet.objects.count() == 0
