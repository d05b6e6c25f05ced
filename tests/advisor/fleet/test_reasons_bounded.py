"""The plan's reasons name at most MAX_NAMED_JOBS jobs where the answers differ (why runs rented, which runs
waited), then count the rest: the page and the PDF print every reason, so a clause per job grew with the number of
jobs (a hostile probe, F3; 300 long jobs made one reason of 10,229 characters)."""

from __future__ import annotations

import re

import pytest

from advisor.advice.fleet.plan import MAX_NAMED_JOBS
from advisor.advice.fleet.service import fleet_plan
from tests.advisor.fleet.figures import fleet

pytestmark = pytest.mark.django_db


def long_jobs(n: int) -> dict:
    return fleet(
        *(
            {
                "name": f"j{k:03d}",
                "gpus": 8 * (1 + k % 4),
                "hours": 1500 + k % 700,
                "months": [1 + k % 12],
                "max_wait_days": 20,
            }
            for k in range(n)
        )
    )


def test_the_answers_differ_reason_names_a_few_jobs_and_counts_the_rest() -> None:
    rec = fleet_plan(document=long_jobs(40))["recommendation"]
    assert rec["owned_gpus"] != rec["load_duration_answer"]["owned_gpus"]
    [differ] = [r for r in rec["reasons"] if r.startswith("The answers differ")]
    for clause in ("found the", "for owned GPUs instead of renting"):
        named = {n for part in differ.split("; ") if clause in part for n in re.findall(r"'(j\d{3})'", part)}
        assert 0 < len(named) <= MAX_NAMED_JOBS
    assert re.search(r"\d+ more jobs", differ)
    assert len(differ) < 2_000
