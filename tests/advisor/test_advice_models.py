"""The typed Advice models are the one definition of the Advice documents: the committed JSON Schemas are
generated from them, and every key of a real training and inference Advice (sizes[] included) is declared."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from django.core.management import call_command
from pydantic import ValidationError
from referencing import Registry, Resource

from advisor.advice import advise
from advisor.advice.models import ADVICE_MODELS, ADVICE_SCHEMA_FILES
from advisor.management.commands.generate_schemas import generated_schema_files, stale_schema_files

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "advisor" / "schemas"
SCENARIO_SCHEMA = json.loads((SCHEMAS / "scenario.schema.json").read_text())
REGISTRY = Registry().with_resource(SCENARIO_SCHEMA["$id"], Resource.from_contents(SCENARIO_SCHEMA))
EXAMPLES = {
    "training": json.loads((ROOT / "examples" / "7b-training.json").read_text()),
    "inference": json.loads((ROOT / "examples" / "inference-service.json").read_text()),
}


@pytest.fixture(scope="module")
def real_advice(django_db_setup, django_db_blocker) -> dict[str, dict[str, Any]]:  # type: ignore[no-untyped-def]
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data

    with django_db_blocker.unblock():
        load_bundled_data()
        ensure_default_calibration()
        auto = {"workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1e12}, "gpu": "h100-sxm"}
        docs = {kind: advise(scenario).to_dict() for kind, scenario in EXAMPLES.items()}
        docs["auto"] = advise(auto).to_dict()
    return {name: json.loads(json.dumps(doc)) for name, doc in docs.items()}


def test_committed_schemas_are_the_generated_ones() -> None:
    assert stale_schema_files() == []
    documents = {"scenario.schema.json", "fleet.schema.json", "fleet-plan.schema.json"}
    assert set(generated_schema_files()) == {*documents, *ADVICE_SCHEMA_FILES.values()}


def test_a_hand_edit_is_caught(tmp_path: Path) -> None:
    for name, text in generated_schema_files().items():
        (tmp_path / name).write_text(text)
    assert stale_schema_files(tmp_path) == []
    for name in ("advice.schema.json", "scenario.schema.json"):
        edited = tmp_path / name
        text = edited.read_text()
        edited.write_text(text.replace('"additionalProperties": false', '"additionalProperties": true', 1))
        assert stale_schema_files(tmp_path) == [name]
        edited.write_text(text)
    (tmp_path / "scenario.schema.json").unlink()
    assert stale_schema_files(tmp_path) == ["scenario.schema.json"]


def test_check_command_passes_on_the_committed_files() -> None:
    call_command("generate_schemas", "--check")


@pytest.mark.parametrize("name", ["training", "auto", "inference"])
def test_every_key_of_a_real_advice_is_in_the_closed_schema(real_advice, name) -> None:  # type: ignore[no-untyped-def]
    doc = real_advice[name]
    kind = doc["kind"]
    ADVICE_MODELS[kind].model_validate(doc)
    schema = json.loads((SCHEMAS / ADVICE_SCHEMA_FILES[kind]).read_text())
    validator = jsonschema.Draft202012Validator(schema, registry=REGISTRY)
    errors = [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(doc)]
    assert errors == []
    assert doc["sizes"], "a real advice has sizes"
    # Closed: a key nobody declared is refused at the top, in sizes[] and deep inside a size.
    for where in ([], ["sizes", 0], ["sizes", 0, "rent"], ["sizes", 0, "buy"]):
        extended = copy.deepcopy(doc)
        node = extended
        for step in where:
            node = node[step]
        node["undocumented"] = 1
        assert any(e.validator == "additionalProperties" for e in validator.iter_errors(extended)), where
        with pytest.raises(ValidationError):
            ADVICE_MODELS[kind].model_validate(extended)


def test_layouts_come_back_in_the_scenario_types(real_advice) -> None:  # type: ignore[no-untyped-def]
    for name in ("training", "auto"):
        for size in real_advice[name]["sizes"]:
            checkpointing = size["layout"]["activation_checkpointing"]
            assert checkpointing is None or isinstance(checkpointing, bool) or checkpointing == "selective", size
            for key in ("tp", "pp", "cp", "micro_batch"):
                assert size["layout"][key] is None or isinstance(size["layout"][key], int), (key, size["layout"])


def _formats(schema: Any, found: dict[str, set[str]], key: str = "") -> None:
    """Every property name with the JSON Schema formats declared for it, anywhere in the schema."""
    if isinstance(schema, dict):
        if isinstance(schema.get("format"), str):
            found.setdefault(key, set()).add(schema["format"])
        for k, v in schema.items():
            _formats(v, found, k if k not in ("anyOf", "items", "properties", "$defs") else key)
    elif isinstance(schema, list):
        for v in schema:
            _formats(v, found, key)


@pytest.mark.parametrize("name", ["training", "inference"])
def test_timestamps_are_typed_as_dates_and_their_values_are(real_advice, name) -> None:  # type: ignore[no-untyped-def]
    """An integrator's probe: the advice's generated_at, prices_as_of and offer observed_at were plain strings in the
    schema, so a generated client could not compare them with /api/v1/offers' date-times without parsing by hand."""
    import datetime as dt

    doc = real_advice[name]
    found: dict[str, set[str]] = {}
    _formats(json.loads((SCHEMAS / ADVICE_SCHEMA_FILES[doc["kind"]]).read_text()), found)
    assert found.get("generated_at") == {"date-time"} and found.get("prices_as_of") == {"date"}
    assert found.get("observed_at") == {"date-time"} and found.get("newest_observed_at") == {"date-time"}
    assert found.get("quoted_on") == {"date"}
    assert dt.datetime.fromisoformat(doc["generated_at"]).tzinfo is not None
    if doc["prices_as_of"] is not None:
        dt.date.fromisoformat(doc["prices_as_of"])
    fresh = doc["price_freshness"]
    for key in ("newest_observed_at", "newest_live_observed_at"):
        if fresh[key] is not None:
            assert dt.datetime.fromisoformat(fresh[key]).tzinfo is not None
