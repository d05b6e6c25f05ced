"""A fleet job predicted outside the runs of the user's calibration carries the coverage warning the planner gives
for the same job (a first-time user: a calibration fitted on 8B runs at 8-128 GPUs set a 70B job's hours on 512 GPUs,
from 1,100 h to 1,760 h, and the fleet plan never said the hours were extrapolated)."""

from __future__ import annotations

import pytest

from advisor.advice import advise
from advisor.advice.fleet.document import job_scenario, parse_fleet
from advisor.advice.fleet.service import fleet_plan
from estimator.calibrate import Calibration, fit, load_default
from estimator.runs import read_runs_csv
from tests.advisor.fleet.figures import fleet

pytestmark = pytest.mark.django_db

# The user's runs: an 8B model on 8-128 H100s, stack "other".
MY_RUNS = """gpu,num_gpus,params_b,seq_len,global_batch,stack,tokens_per_s
h100-sxm,8,8,4096,512,other,62000
h100-sxm,16,8,4096,512,other,112000
h100-sxm,32,8,4096,512,other,196000
h100-sxm,64,8,4096,512,other,320000
h100-sxm,128,8,4096,512,other,490000
"""
BIG = {
    "name": "70B pretrain",
    "gpus": 512,
    "workload": {"kind": "training", "model": {"params_b": 70}, "tokens": 2e12},
}
SMALL = {
    "name": "8B tune",
    "gpus": 64,
    "workload": {"kind": "training", "model": {"params_b": 8}, "tokens": 1e10},
}


@pytest.fixture(scope="module")
def mine() -> Calibration:
    return fit(read_runs_csv(MY_RUNS), name="my runs", prior=load_default())


def test_each_job_outside_the_calibration_runs_carries_the_planners_coverage_warning(mine: Calibration) -> None:
    document = fleet(BIG, SMALL)
    plan = fleet_plan(document=document, calibration=mine)
    scenario = job_scenario(parse_fleet(document).jobs[0], 512)
    planner = [w for w in advise(scenario, calibration=mine).warnings if "fitted on" in w]
    assert len(planner) == 2, planner  # model size and GPU count
    coverage = [w for w in plan["warnings"] if "fitted on" in w]
    assert coverage == [f"'70B pretrain': {w}" for w in planner], coverage
    assert "'70B pretrain': Sizes of 512 GPUs are outside the 8-128 GPUs the calibration 'my runs'" in coverage[1]
    # The 8B job on 64 GPUs is inside the runs: nothing said of it.
    assert not any(w.startswith("'8B tune'") for w in plan["warnings"])


def test_a_plan_without_a_user_calibration_adds_no_coverage_warning() -> None:
    plan = fleet_plan(document=fleet(BIG))
    assert not any("fitted on" in w for w in plan["warnings"])
