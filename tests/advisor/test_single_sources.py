"""Rules with one definition: the Scenario's bounds and choices read from the estimator's, not restated."""

from __future__ import annotations

from advisor import scenario_model
from advisor.scenario_model import rule
from advisor.web import forms
from estimator import bounds
from estimator.workload import CHECKPOINTING, STACKS


def test_scenario_bounds_are_the_estimators() -> None:
    assert rule("/workload/model/params_b").maximum == bounds.MAX_PARAMS_B
    assert rule("/workload/model/params_b").minimum == bounds.MIN_PARAMS_B
    assert rule("/cluster_sizes/-").maximum == bounds.MAX_GPUS
    assert rule("/workload/parallelism/tp").maximum == bounds.MAX_GPUS
    for field in ("seq_len", "layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "experts"):
        assert rule(f"/workload/model/{field}").maximum == bounds.MAX_GEOMETRY, field
    assert rule("/network/gpus_per_node").maximum == bounds.MAX_GPUS_PER_NODE
    assert rule("/network/inter_node_gbps").minimum == bounds.MIN_INTER_NODE_GBPS
    assert rule("/network/inter_node_gbps").maximum == bounds.MAX_INTER_NODE_GBPS


def test_scenario_stacks_are_the_estimators() -> None:
    for kind in ("training", "inference"):
        assert rule("/workload/stack", kind).choices == STACKS


def test_form_choices_are_the_models() -> None:
    assert tuple(value for value, _ in forms.KINDS) == scenario_model.KINDS == tuple(scenario_model.WORKLOADS)
    assert tuple(value for value, _ in forms.CHECKPOINTING if value) == CHECKPOINTING
    # The Scenario's activation_checkpointing (true, false or "selective") as the form's text.
    branches = scenario_model.scenario_json_schema()["$defs"]["Parallelism"]["properties"]["activation_checkpointing"]
    texts = set()
    for branch in branches["anyOf"]:
        if branch.get("type") == "boolean":
            texts |= {"true", "false"}
        elif "enum" in branch:
            texts |= set(branch["enum"])
    assert texts == set(CHECKPOINTING)
