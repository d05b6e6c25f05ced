"""`python manage.py plan_fleet FLEET.json`: the Fleet Plan JSON on stdout; exit 2 naming the bad field."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from estimator import bounds
from tests.advisor.fleet.figures import BASE_AND_WEEK, FIGURES, MANUAL_QUOTES, fleet, option

ROOT = Path(__file__).resolve().parents[3]


def run(tmp_path: Path, document: Any, *args: str) -> dict[str, Any]:
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    out = io.StringIO()
    call_command("plan_fleet", str(path), *args, stdout=out)
    return json.loads(out.getvalue())


def fails(tmp_path: Path, document: Any, *args: str) -> str:
    with pytest.raises(CommandError) as info:
        run(tmp_path, document, *args)
    assert info.value.returncode == 2
    return str(info.value)


@pytest.mark.django_db
@pytest.mark.parametrize(("label", "document", "owned", "usd", "all_rent"), FIGURES, ids=[f[0] for f in FIGURES])
def test_done_when_figures(tmp_path: Path, label: str, document: dict, owned: int, usd: float, all_rent: float) -> None:
    plan = run(tmp_path, document)
    rec = plan["recommendation"]
    assert rec["owned_gpus"] == owned
    assert rec["usd_per_year"] == pytest.approx(usd)
    assert rec["all_rent_usd_per_year"] == pytest.approx(all_rent)
    assert sum(t["usd_per_year"] for t in rec["tiers"]) == pytest.approx(rec["usd_per_year"])
    assert rec["usd_per_year"] == min(o["usd_per_year"] for o in plan["options"])
    assert option(plan, 0)["usd_per_year"] == pytest.approx(all_rent)
    assert rec["break_even_utilization"] == pytest.approx(0.5)
    assert plan["prices_as_of"] is None or isinstance(plan["prices_as_of"], str)
    assert plan["tier_prices"]["on_demand_usd_per_gpu_hour"] == 2.5
    # Given hours and one manual price: no spread.
    assert plan["uncertainty"]["usd_per_year"] == pytest.approx([usd] * 3)
    assert plan["uncertainty"]["owned_gpus"] == [owned] * 3


@pytest.mark.django_db
def test_owning_24_rents_the_base_whole(tmp_path: Path) -> None:
    plan = run(tmp_path, BASE_AND_WEEK)
    assert option(plan, 24)["usd_per_year"] == pytest.approx(1_071_120)
    assert [j["owned_runs"] for j in plan["jobs"]] == [1, 0]
    assert plan["demand"]["peak_gpus"] == 288
    assert plan["fleet"]["jobs"][0]["runs_per_year"] == 1  # the normalized input, defaults filled


@pytest.mark.django_db
def test_a_gpu_without_bf16_and_the_default_name(tmp_path: Path) -> None:
    document = {**BASE_AND_WEEK, "gpu": "v100-32gb"}
    document.pop("name")
    plan = run(tmp_path, document)
    assert plan["gpu"] == "v100-32gb" and plan["fleet"]["name"] == "Untitled fleet"
    assert plan["recommendation"]["owned_gpus"] == 32  # the same manual quotes, the same answer


@pytest.mark.django_db
def test_owned_gpus_list_limits_the_candidates(tmp_path: Path) -> None:
    plan = run(tmp_path, {**BASE_AND_WEEK, "owned_gpus": [16, 32]})
    # 0 (all-rent) and the peak are always simulated for the savings figures.
    assert [o["owned_gpus"] for o in plan["options"]] == [0, 16, 32, 288]


@pytest.mark.django_db
def test_an_owned_size_above_the_peak_is_not_called_the_peak(tmp_path: Path) -> None:
    # An outsider's probe: with owned_gpus [16, 400] the largest candidate, 400 GPUs, was "owning the peak".
    plan = run(tmp_path, {**BASE_AND_WEEK, "owned_gpus": [16, 400]})
    peak = next(o for o in plan["options"] if o["owned_gpus"] == 288)  # 32 + 256 GPUs, whole 8-GPU nodes
    rec = plan["recommendation"]
    assert rec["own_peak_usd_per_year"] == pytest.approx(peak["usd_per_year"])
    assert rec["saving_vs_own_peak_usd"] == pytest.approx(peak["usd_per_year"] - rec["usd_per_year"])
    assert any("owning the peak of 288 GPUs" in r for r in rec["reasons"])


@pytest.mark.django_db
@pytest.mark.parametrize("stack", [None, "nemo"])
def test_training_workload_takes_the_run_hours_of_advise(tmp_path: Path, stack: str | None) -> None:
    from advisor.advice import advise

    workload = {"kind": "training", "model": {"params_b": 1}, "tokens": 2e10, "stack": stack}
    plan = run(tmp_path, fleet({"name": "1B", "gpus": 16, "workload": workload, "runs_per_year": 3}))
    advice = advise({**MANUAL_QUOTES, "workload": workload, "cluster_sizes": [16]}).to_dict()
    job = plan["jobs"][0]
    assert job["run_hours"] == pytest.approx(advice["sizes"][0]["run_hours"])
    assert job["runs_per_year"] == 3
    # Predicted run hours carry the calibration's throughput spread into the plan's P10/P90.
    low, mid, high = plan["uncertainty"]["usd_per_year"]
    assert low < mid < high
    assert plan["uncertainty"]["throughput_log_sigma"] == pytest.approx(advice["uncertainty"]["throughput_log_sigma"])
    # The same band as the advice: the year is re-simulated at the run hours of its P10 and P90 throughput.
    band_low, band_high = (advice["uncertainty"][f"throughput_{q}_multiplier"] for q in ("p10", "p90"))
    assert plan["uncertainty"]["throughput_p10_multiplier"] == pytest.approx(band_low)
    assert plan["uncertainty"]["throughput_p90_multiplier"] == pytest.approx(band_high)  # the job's stack's band
    assert plan["uncertainty"]["hours_factors"] == pytest.approx([1.0, 1.0 / band_low, 1.0 / band_high])
    assert plan["demand"]["gpu_hours_per_year"] == pytest.approx(3 * 16 * advice["sizes"][0]["run_hours"])


@pytest.mark.django_db
def test_usage_csv_file_on_the_command_line(tmp_path: Path) -> None:
    usage = ROOT / "examples" / "usage-helios-earth-2020-05.csv"
    plan = run(tmp_path, {**MANUAL_QUOTES, "usage": {"growth": 1.0}}, "--usage", str(usage))
    # Helios Earth, May 2020: demand level exceeded in half of the hours is 595.6 GPUs (data/fleet/README.md);
    # in whole 8-GPU nodes the load-duration answer at u* = 0.5 is 600: the node from 592 to 600 GPUs is busy 50.03% of
    # the 715 observed hours (592 when the first 180 hours were counted 13 times and the rest 12).
    assert plan["recommendation"]["load_duration_answer"]["owned_gpus"] == 600
    assert plan["recommendation"]["owned_gpus"] == 600  # divisible demand: the simulation agrees
    assert plan["demand"]["peak_gpus"] == pytest.approx(746.2, abs=0.05)
    assert any("gpus_pending" in w for w in plan["warnings"])


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("document", "says"),
    [
        (fleet({"name": "x", "gpus": 70_000, "hours": 10}), "/jobs/0/gpus: must be an integer from 1 to 65536"),
        (
            fleet({"name": "x", "gpus": 8, "hours": 9000}),
            "/jobs/0/hours: must be a number at least 0.01 and at most 8760",
        ),
        (fleet({"name": "x", "gpus": 8, "hours": 10, "colour": "red"}), "/jobs/0/colour: unknown field"),
        ({**BASE_AND_WEEK, "extra": 1}, "/extra: unknown field"),
        (fleet(*[{"gpus": 8, "hours": 1}] * 10_001), "/jobs: at most 10,000 jobs; got 10,001"),
        (fleet({"gpus": 12, "hours": 10}), "/jobs/0/gpus: more GPUs than one node (8 per node) must be whole nodes"),
        (fleet({"gpus": 8}), "/jobs/0: required: hours (wall-clock hours of one run) or workload"),
        (fleet({"gpus": 8, "hours": None}), "/jobs/0: required: hours"),  # null is left out: neither given
        (fleet({"gpus": 8, "hours": 5, "workload": {"kind": "training"}}), "/jobs/0: give either hours"),
        # Refused values as JSON writes them (a string in double quotes, true), not as Python does ('8', True).
        (fleet({"gpus": "8", "hours": 5}), "/jobs/0/gpus: must be an integer from 1 to 65536 (GPUs of one run; "),
        (fleet({"gpus": "8", "hours": 5}), 'got "8"'),
        (fleet({"gpus": 8, "hours": True}), "/jobs/0/hours: must be a number at least 0.01 and at most 8760"),
        (fleet({"gpus": 8, "hours": True}), "; got true"),
        ({**MANUAL_QUOTES, "jobs": {"gpus": 8}}, '/jobs: must be an array of jobs; got {"gpus": 8}'),
        (fleet({"gpus": 8, "hours": 5, "months": [13]}), "/jobs/0/months/0: must be an integer from 1 to 12"),
        ({**BASE_AND_WEEK, "gpu": "h999"}, "/gpu: must be one of"),
        ({**BASE_AND_WEEK, "rent": {"usd_per_gpu_hour": -1}}, "/rent/usd_per_gpu_hour"),
        (
            fleet({"gpus": 8, "workload": {"kind": "training", "model": {"params_b": -1}, "tokens": 1e9}}),
            "/jobs/0/workload/model/params_b",
        ),
        # Data rows count from the first after the header, as in the profiled-run CSV (the header was row 1 here).
        ({**MANUAL_QUOTES, "usage": {"csv": "timestamp,gpus_busy\n2020-01-01T00:00,4\nnope,5\n"}}, "/usage/csv: row 2"),
        # A long cell is quoted cut, with its length (it was cut to 40 characters without saying so).
        (
            {**MANUAL_QUOTES, "usage": {"csv": "timestamp,gpus_busy\n7" + "x" * 5000 + ",4\n"}},
            "/usage/csv: row 1, column timestamp: must be ISO 8601 or epoch seconds (years 1 to 9999); got '7xxx",
        ),
        ({**MANUAL_QUOTES, "usage": {"csv": "timestamp,gpus_busy\n7" + "x" * 5000 + ",4\n"}}, "... (5,001 characters)"),
        # Numbers that are no date: NaN passed every later check (it compares false) into the hourly resampling.
        *(
            (
                {**MANUAL_QUOTES, "usage": {"csv": f"timestamp,gpus_busy\n0,4\n3600,4\n{bad},5\n"}},
                "/usage/csv: row 3, column timestamp: must be ISO 8601 or epoch seconds (years 1 to 9999); "
                f"got '{bad}'",
            )
            # ... and text whose offset carries it past year 9999 in UTC, or Python's 1_000.
            for bad in ("nan", "inf", "1e300", "7" * 30, "9999-12-31T23:00-05:00", "7_200")
        ),
        ({**MANUAL_QUOTES}, "/jobs: required"),
    ],
)
def test_bad_input_exits_2_naming_the_field(tmp_path: Path, document: dict, says: str) -> None:
    assert says in fails(tmp_path, document)


@pytest.mark.django_db
def test_a_run_longer_than_a_year_from_a_workload_is_refused(tmp_path: Path) -> None:
    workload = {"kind": "training", "model": {"params_b": 7}, "tokens": 1e15}
    assert "/jobs/0/workload: one run takes" in fails(tmp_path, fleet({"gpus": 8, "workload": workload}))


@pytest.mark.django_db
def test_a_model_that_does_not_fit_names_the_gpus(tmp_path: Path) -> None:
    workload = {"kind": "training", "model": {"params_b": 70}, "tokens": 1e12}
    assert "/jobs/0/gpus: the model does not fit" in fails(tmp_path, fleet({"gpus": 8, "workload": workload}))


@pytest.mark.django_db
def test_not_json_exits_2(tmp_path: Path) -> None:
    assert "not valid JSON" in fails(tmp_path, "{")


@pytest.mark.django_db
def test_jobs_of_different_stacks_share_the_widest_of_their_bands() -> None:
    from advisor.advice.fleet.document import parse_fleet
    from advisor.advice.fleet.service import throughput_band
    from estimator.calibrate import load_default

    def job(name: str, stack: str | None) -> dict[str, Any]:
        workload = {"kind": "training", "model": {"params_b": 1}, "tokens": 2e10, "stack": stack}
        return {"name": name, "gpus": 16, "workload": workload, "runs_per_year": 3}

    calibration = load_default()
    nemo = throughput_band(fleet=parse_fleet(fleet(job("a", "nemo"))), calibration=calibration)
    mixed = throughput_band(fleet=parse_fleet(fleet(job("a", "nemo"), job("b", None))), calibration=calibration)
    unknown = calibration.interval(known_stack=False)
    assert nemo is not None and mixed is not None
    assert mixed.p10_multiplier == pytest.approx(unknown["p10_multiplier"])
    assert mixed.p10_multiplier < nemo.p10_multiplier
    assert throughput_band(fleet=parse_fleet(BASE_AND_WEEK), calibration=calibration) is None  # no predicted job


@pytest.mark.django_db
def test_the_load_duration_answer_owns_a_node_busy_above_u_star_though_never_full(tmp_path: Path) -> None:
    # An outsider's probe: 7 GPUs busy all year on 8-GPU nodes owned nothing (no hour fills the node) against
    # u* = 50%, though the node is busy 7/8 of the year; the simulated answer owned it.
    usage = "timestamp,gpus_busy\n2027-01-01T00:00:00,7\n2027-01-01T01:00:00,7\n2027-01-01T02:00:00,7\n"
    plan = run(tmp_path, {"name": "u", **MANUAL_QUOTES, "usage": {"csv": usage}})
    rec = plan["recommendation"]
    assert rec["break_even_utilization"] == pytest.approx(0.5)
    assert rec["load_duration_answer"]["owned_gpus"] == 8 == rec["owned_gpus"]
    assert any("the last busy 88% of the year" in r for r in rec["reasons"])


@pytest.mark.django_db
def test_the_load_duration_answer_counts_a_fixed_base_once_across_the_nodes(tmp_path: Path) -> None:
    # An outsider's probe: with a staff base a lone node does not pay off (its u* is above 100%), and the walk
    # stopped there: "own 0" at the all-rent $565,600 where three busy nodes share the base and cost $452,800, and
    # the reasons blamed whole runs packing differently.
    buy = {**MANUAL_QUOTES["buy"], "staff_usd_per_year": 150_000}
    jobs = [{"name": "base", "gpus": 24, "hours": 8760}, {"name": "peak", "gpus": 8, "hours": 2000}]
    plan = run(tmp_path, {"name": "staff", **MANUAL_QUOTES, "buy": buy, "jobs": jobs})
    rec = plan["recommendation"]
    cheapest = min(plan["options"], key=lambda o: o["usd_per_year"])
    assert rec["load_duration_answer"]["owned_gpus"] == 24 == cheapest["owned_gpus"] == rec["owned_gpus"]
    assert rec["load_duration_answer"]["usd_per_year"] == 452_800 == 3 * 87_600 + 150_000 + 8 * 2000 * 2.5
    assert any(r == "Both answers agree." for r in rec["reasons"])


@pytest.mark.django_db
def test_a_month_given_twice_spreads_its_runs_over_it(tmp_path: Path) -> None:
    # An outsider's probe: [3, 3] started both runs at the same hour. A month listed twice holds more runs.
    twice = run(tmp_path, fleet({"name": "m", "gpus": 8, "hours": 10, "runs_per_year": 2, "months": [3, 3]}))
    assert twice["demand"]["peak_gpus"] == 8  # not both runs in the same hour
    weighted = run(tmp_path, fleet({"name": "m", "gpus": 8, "hours": 10, "runs_per_year": 6, "months": [3, 3, 9]}))
    starts = sorted(r["requested_start_hour"] for r in weighted["jobs"][0]["runs"])
    march, september = (1416, 1416 + 31 * 24), (5832, 5832 + 30 * 24)
    assert sum(march[0] <= h < march[1] for h in starts) == 4
    assert sum(september[0] <= h < september[1] for h in starts) == 2
    assert len(set(starts)) == 6


def test_the_fleet_floors_are_the_bounds_ones() -> None:
    # Review2 F8: the fleet's minimums lived in advisor/advice/fleet/models.py, a second home of the floor rule.
    from advisor.advice.fleet import document, models

    assert not hasattr(models, "MIN_JOB_HOURS") and not hasattr(models, "MIN_GROWTH")
    assert not hasattr(document, "MIN_JOB_HOURS") and not hasattr(document, "MIN_GROWTH")
    assert bounds.MIN_JOB_HOURS == 0.01 and bounds.MIN_DEMAND_GROWTH == 0.01
    schema = models.FleetPlanInput.model_json_schema()
    assert schema["$defs"]["FleetJob"]["properties"]["hours"]["anyOf"][0]["minimum"] == bounds.MIN_JOB_HOURS
