"""A hostile review (F8): names inside documents (a Scenario's, a Fleet Plan's, its jobs') are stored in Unicode NFC,
as saved items' names are (core.textcheck.clean_name), so "cafe\\u0301" and "café" are one name everywhere."""

from __future__ import annotations

import unicodedata

import pytest

from advisor.advice.fleet.document import parse_fleet
from advisor.scenario import parse_scenario

DECOMPOSED = "cafe\u0301"  # e + combining acute: NFD
COMPOSED = unicodedata.normalize("NFC", DECOMPOSED)
pytestmark = pytest.mark.django_db

TRAINING = {"kind": "training", "model": {"params_b": 1}, "tokens": 2e10}


def test_scenario_name_is_stored_in_nfc() -> None:
    scenario = parse_scenario({"name": DECOMPOSED, "workload": TRAINING, "gpu": "h100-sxm", "cluster_sizes": [8]})
    assert COMPOSED != DECOMPOSED
    assert scenario.name == COMPOSED


def test_fleet_and_job_names_are_stored_in_nfc() -> None:
    plan = parse_fleet(
        {
            "name": DECOMPOSED,
            "gpu": "h100-sxm",
            "jobs": [{"name": DECOMPOSED, "gpus": 8, "runs_per_year": 2, "workload": TRAINING}],
        }
    )
    assert plan.name == COMPOSED
    assert plan.jobs[0].name == COMPOSED
