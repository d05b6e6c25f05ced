"""Issue 23: each document (Scenario, Fleet Plan) is ONE typed model. Every example and preset validates against
the generated schema AND the model, what the parser normalizes does too, and the parser's rules are the model's."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from django.core.management import call_command
from pydantic import ValidationError

from advisor.advice.fleet.document import FLEET_FIELDS, JOB_FIELDS, parse_fleet
from advisor.advice.fleet.models import FleetJob, FleetPlan, FleetPlanInput
from advisor.scenario import ScenarioError, parse_scenario
from advisor.scenario_model import Scenario, rule
from advisor.web.forms import PRESETS
from tests.advisor.fleet.figures import BASE_AND_WEEK, FIGURES
from tests.advisor.test_scenario import CATALOG, DESIGN_EXAMPLE

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "advisor" / "schemas"
SCENARIO_SCHEMA = json.loads((SCHEMAS / "scenario.schema.json").read_text())
FLEET_SCHEMA = json.loads((SCHEMAS / "fleet.schema.json").read_text())
FLEET_PLAN_SCHEMA = json.loads((SCHEMAS / "fleet-plan.schema.json").read_text())
EXAMPLES = {path.name: json.loads(path.read_text()) for path in sorted((ROOT / "examples").glob("*.json"))}
SCENARIOS = {
    **{f"examples/{name}": doc for name, doc in EXAMPLES.items() if "workload" in doc},
    **{f"preset {key}": preset["scenario"] for key, preset in PRESETS.items()},
    "DESIGN.md example": DESIGN_EXAMPLE,
}
FLEETS = {
    **{f"examples/{name}": doc for name, doc in EXAMPLES.items() if "jobs" in doc},
    **{f"figures {figure[0]}": figure[1] for figure in FIGURES},
}


def _valid(schema: dict[str, Any], document: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(document)]


def test_the_committed_schemas_are_valid_draft_2020_12() -> None:
    for schema in (SCENARIO_SCHEMA, FLEET_SCHEMA, FLEET_PLAN_SCHEMA):
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"].startswith("https://gpu-advisor.local/schemas/")
    assert SCENARIO_SCHEMA["title"] == "GPU Advisor Scenario"
    titles = [part["title"] for part in SCENARIO_SCHEMA["$defs"].values()]
    assert len(titles) == len(set(titles))


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_example_and_preset_scenario_round_trips(name: str) -> None:
    document = SCENARIOS[name]
    assert _valid(SCENARIO_SCHEMA, document) == []
    Scenario.model_validate(document)
    normalized = parse_scenario(document, defaults=CATALOG).to_dict()
    assert _valid(SCENARIO_SCHEMA, normalized) == []
    Scenario.model_validate(normalized)
    assert parse_scenario(normalized, defaults=CATALOG).to_dict() == normalized


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("/colour", "red"),
        ("/workload/model/params_b", 0.0005),
        ("/workload/kind", "finetune"),
        ("/workload/parallelism/activation_checkpointing", "false"),
        ("/workload/parallelism/tp", 0),
        ("/rent/markets", []),
        ("/buy/pue", 0.9),
        ("/utilization", 0),
        ("/cluster_sizes", list(range(1, 40))),
        # A choice is one of the listed strings exactly: the server returns a document as saved, and a generated
        # client refuses any other spelling on the way back.
        ("/gpu", "H100-SXM"),
        ("/gpu", " h100-sxm"),
        ("/workload/kind", "Training"),
        ("/workload/precision", "BF16"),
        ("/workload/stack", ""),
        ("/rent/markets", ["On_Demand"]),
        ("/rent/providers", [" aws"]),
        ("/workload/model", {"name": "Llama-2-7B"}),
        # Free text holds no NUL (the API refuses it in any string).
        ("/name", "a\x00b"),
        ("/buy/server", "dgx\x00"),
        # Without params_b, a catalog name.
        ("/workload/model", {}),
        ("/workload/model", {"name": None, "params_b": None, "layers": 32}),
        # An integer is JSON Schema's: 8.0 is one, 8.5 is not.
        ("/workload/parallelism/tp", 2.5),
        ("/cluster_sizes", [8.5]),
    ],
)
def test_the_schema_the_model_and_the_parser_refuse_the_same_values(path: str, value: Any) -> None:
    document = _with(path, value)
    assert _valid(SCENARIO_SCHEMA, document) != []
    with pytest.raises(ValidationError):
        Scenario.model_validate(document)
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(document, defaults=CATALOG)
    assert any(e["pointer"].startswith(path) for e in caught.value.errors), caught.value.errors


def test_a_provider_slug_ends_where_the_text_ends() -> None:
    """The schema's pattern ends in `$`, which JSON Schema reads as ECMA-262 does: the end of the text. Python's `$`
    (the jsonschema package) also matches before a final newline; the model and the parser read it as ECMA-262."""
    document = _with("/rent/providers", ["aws\n"])
    with pytest.raises(ValidationError):
        Scenario.model_validate(document)
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(document, defaults=CATALOG)
    assert [e["pointer"] for e in caught.value.errors] == ["/rent/providers/0"]


def _with(path: str, value: Any) -> dict[str, Any]:
    document = json.loads(json.dumps(DESIGN_EXAMPLE))
    *parents, last = path.strip("/").split("/")
    node = document
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return document


@pytest.mark.parametrize(
    ("path", "value", "read", "expected"),
    [
        ("/cluster_sizes", [8.0, 16.0], lambda s: s.cluster_sizes, (8, 16)),
        ("/workload/parallelism/tp", 2.0, lambda s: s.workload.parallelism.tp, 2),
        ("/workload/global_batch", 512.0, lambda s: s.workload.global_batch, 512),
        ("/workload/model/layers", 32.0, lambda s: s.workload.model.layers, 32),
        ("/network/gpus_per_node", 8.0, lambda s: s.network.gpus_per_node, 8),
        ("/rent/providers", ["AWS"], lambda s: s.rent.providers, ("aws",)),
        ("/workload/model", {"name": "llama-2-7b", "params_b": None}, lambda s: s.workload.model.name, "llama-2-7b"),
    ],
)
@pytest.mark.django_db
def test_the_schema_the_model_and_the_parser_accept_the_same_values(
    path: str, value: Any, read: Any, expected: Any
) -> None:
    from pricing.services import load_bundled_data

    load_bundled_data()  # the known provider ids
    document = _with(path, value)
    assert _valid(SCENARIO_SCHEMA, document) == []
    Scenario.model_validate(document)
    got = read(parse_scenario(document, defaults=CATALOG))
    # Read as the integers (and the lower-cased provider id) the advice computes with.
    assert got == expected
    assert [type(v) for v in (got if isinstance(got, tuple) else [got])] == [
        type(v) for v in (expected if isinstance(expected, tuple) else [expected])
    ]


def test_an_advised_layout_is_a_valid_parallelism() -> None:
    layout = {"strategy": "fsdp", "tp": 2, "pp": 1, "cp": 1, "micro_batch": 1, "activation_checkpointing": "selective"}
    document = json.loads(json.dumps(DESIGN_EXAMPLE))
    for checkpointing in (True, False, "selective", None):
        document["workload"]["parallelism"] = {**layout, "activation_checkpointing": checkpointing}
        assert _valid(SCENARIO_SCHEMA, document) == []
        Scenario.model_validate(document)
        parallelism = parse_scenario(document, defaults=CATALOG).workload.parallelism
        assert parallelism is not None and parallelism.activation_checkpointing == checkpointing


def test_the_parser_reads_its_rules_from_the_model() -> None:
    assert rule("/workload/model/params_b").minimum == 0.001
    assert rule("/workload", "inference").fields == (
        "kind",
        "model",
        "precision",
        "stack",
        "serving_engine",
        "traffic",
        "latency",
    )
    assert tuple(FleetPlanInput.model_fields) == FLEET_FIELDS and tuple(FleetJob.model_fields) == JOB_FIELDS


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(FLEETS))
def test_every_fleet_input_validates_against_its_schema_and_model(name: str) -> None:
    document = FLEETS[name]
    assert _valid(FLEET_SCHEMA, document) == []
    FleetPlanInput.model_validate(document)
    normalized = parse_fleet(document, defaults=CATALOG).to_dict()
    assert _valid(FLEET_SCHEMA, normalized) == []
    FleetPlanInput.model_validate(normalized)
    # The normalized input reads back as itself: a plan's `fleet` echo posts back unchanged.
    assert parse_fleet(normalized, defaults=CATALOG).to_dict() == normalized


def _fleet_with_job(**job: Any) -> dict[str, Any]:
    return {"gpu": "h100-sxm", "jobs": [{"gpus": 8, "hours": 100, **job}]}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("document", "accepted"),
    [
        (_fleet_with_job(gpus=8.0), True),  # JSON Schema's integer takes 8.0
        (_fleet_with_job(runs_per_year=2.0, months=[3.0]), True),
        (_fleet_with_job(gpus=8.5), False),
        # null is the documented default of every optional field, as in a Scenario: a client generated from the
        # schema sends "hours": null beside a workload (it was refused: "not both" and "got None").
        (_fleet_with_job(hours=None, workload={"kind": "training", "model": {"params_b": 7}, "tokens": 1e9}), True),
        (_fleet_with_job(name=None, runs_per_year=None, months=None, max_wait_days=None, interruptible=None), True),
        ({"gpu": "h100-sxm", "usage": {"csv": "timestamp,gpus_busy\n0,1\n3600,2\n", "growth": None}}, True),
        (_fleet_with_job(name="a\x00b"), False),  # free text holds no NUL
        ({"gpu": "h100-sxm", "name": "a\x00b", "jobs": [{"gpus": 8, "hours": 100}]}, False),
    ],
)
def test_the_fleet_model_schema_and_parser_agree(document: dict[str, Any], accepted: bool) -> None:
    assert (_valid(FLEET_SCHEMA, document) == []) is accepted
    try:
        FleetPlanInput.model_validate(document)
        model_accepts = True
    except ValidationError:
        model_accepts = False
    try:
        parse_fleet(document, defaults=CATALOG)
        parser_accepts = True
    except ScenarioError:
        parser_accepts = False
    assert model_accepts is parser_accepts is accepted


@pytest.mark.django_db
def test_a_real_fleet_plan_is_the_typed_closed_document(tmp_path: Path) -> None:
    from pricing.services import load_bundled_data

    load_bundled_data()
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(BASE_AND_WEEK))
    out = io.StringIO()
    call_command("plan_fleet", str(path), stdout=out)
    plan = json.loads(out.getvalue())
    FleetPlan.model_validate(plan)
    assert _valid(FLEET_PLAN_SCHEMA, plan) == []
    plan["recommendation"]["undocumented"] = 1
    assert _valid(FLEET_PLAN_SCHEMA, plan) != []
    with pytest.raises(ValidationError):
        FleetPlan.model_validate(plan)
