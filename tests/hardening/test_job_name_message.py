"""A fleet job's name is refused with the words the fleet's own name gets for the same character (a hostile probe,
F10: "a\u202e" as a job name said "without NUL or control characters", where the fleet's name listed the refused
bidi controls): one message, from the one name rule (core.textcheck)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.advisor.fleet.figures import BASE_AND_WEEK
from tests.api.conftest import assert_problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


def detail(answer: dict[str, Any], pointer: str) -> str:
    [error] = [e for e in answer["errors"] if e["pointer"] == pointer]
    return str(error["detail"])


@pytest.mark.parametrize("name", ["a\u202e", "a\u2066b", "job\x1b"])
def test_a_job_name_is_refused_with_the_fleet_name_words(alice, name: str) -> None:  # type: ignore[no-untyped-def]
    named = assert_problem(alice.post("/api/v1/fleet-plans", {**BASE_AND_WEEK, "name": name}, format="json"), 400)
    document = json.loads(json.dumps(BASE_AND_WEEK))
    document["jobs"][1]["name"] = name
    job = assert_problem(alice.post("/api/v1/fleet-plans", document, format="json"), 400, "#/jobs/1/name")
    fleet_words = detail(named, "#/name")
    assert "U+202A-U+202E" in fleet_words
    assert detail(job, "#/jobs/1/name").startswith(fleet_words.split("; got")[0])
