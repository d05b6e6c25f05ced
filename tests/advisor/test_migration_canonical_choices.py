"""Migration 0009: saved scenarios and fleets written when the parser still trimmed and lower-cased choices are
rewritten to the exact spellings the Scenario now requires, so they still parse (no 409) after the upgrade."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from advisor.scenario import parse_scenario
from tests.advisor.test_scenario import CATALOG

BEFORE = [("advisor", "0008_proposal_of_a_saved_fleet")]
AFTER = [("advisor", "0009_canonical_choice_spellings")]

LOOSE_SCENARIO = {
    "name": "Keep My Name As Typed",
    "gpu": " H100-SXM",
    "compare_gpus": ["A100-80GB "],
    "workload": {
        "kind": "Training",
        "model": {"params_b": 7},
        "tokens": 1e11,
        "precision": "BF16",
        "stack": "",
        "parallelism": {"strategy": "FSDP"},
    },
    "rent": {"markets": ["On_Demand"], "providers": [" AWS"]},
}


@pytest.mark.django_db(transaction=True)
def test_loose_spellings_saved_before_are_canonical_after(django_user_model) -> None:  # type: ignore[no-untyped-def]
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    try:
        _check_loose_spellings(executor)
    finally:
        # Back to every app's newest migration (not AFTER): the tests after this one share the database.
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(latest)


def _check_loose_spellings(executor: MigrationExecutor) -> None:
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    user = old.get_model("auth", "User").objects.create(username="before-0009")
    scenario = old.get_model("advisor", "Scenario").objects.create(owner_id=user.pk, name="s", document=LOOSE_SCENARIO)
    fleet = old.get_model("advisor", "Fleet").objects.create(
        owner_id=user.pk,
        name="f",
        document={"gpu": "H100-SXM", "jobs": [{"gpus": 8, "workload": {"kind": " Inference"}}]},
    )
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    new = executor.loader.project_state(AFTER).apps
    document = new.get_model("advisor", "Scenario").objects.get(pk=scenario.pk).document
    assert document["gpu"] == "h100-sxm" and document["compare_gpus"] == ["a100-80gb"]
    assert document["workload"]["kind"] == "training" and document["workload"]["precision"] == "bf16"
    assert document["workload"]["stack"] is None and document["workload"]["parallelism"]["strategy"] == "fsdp"
    assert document["rent"] == {"markets": ["on_demand"], "providers": ["aws"]}
    assert document["name"] == "Keep My Name As Typed"  # free text is left as typed
    parse_scenario(document, defaults=CATALOG)  # parses again under the exact rules
    fleet_document = new.get_model("advisor", "Fleet").objects.get(pk=fleet.pk).document
    assert fleet_document["gpu"] == "h100-sxm" and fleet_document["jobs"][0]["workload"]["kind"] == "inference"
