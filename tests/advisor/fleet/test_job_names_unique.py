"""A fleet's jobs are told apart by name (the plan's jobs[], its tables, its workbook): an outsider's POST with two
jobs named "a" was planned, and the plan held two entries "a" a client could only tell apart by position."""

from __future__ import annotations

import pytest

from advisor.advice.fleet.document import parse_fleet
from advisor.scenario import ScenarioError

pytestmark = pytest.mark.django_db


def _fleet(*names: str) -> dict[str, object]:
    return {"gpu": "h100-sxm", "jobs": [{"name": name, "gpus": 8, "hours": 100} for name in names]}


def test_two_jobs_with_one_name_are_refused_naming_the_second() -> None:
    with pytest.raises(ScenarioError) as refused:
        parse_fleet(_fleet("a", "b", "A "))
    errors = refused.value.errors
    assert [x["pointer"] for x in errors] == ["/jobs/2/name"]
    assert "/jobs/0/name" in errors[0]["message"]


def test_a_given_name_may_not_take_a_default_name() -> None:
    document = {"gpu": "h100-sxm", "jobs": [{"gpus": 8, "hours": 100}, {"name": "job 1", "gpus": 8, "hours": 50}]}
    with pytest.raises(ScenarioError) as refused:
        parse_fleet(document)
    assert [x["pointer"] for x in refused.value.errors] == ["/jobs/1/name"]


def test_distinct_names_are_planned() -> None:
    assert [j.name for j in parse_fleet(_fleet("a", "b")).jobs] == ["a", "b"]
