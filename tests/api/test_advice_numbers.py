"""The Advice as an integrator reads it from POST /api/v1/advice (issue 23): every key of a real training and
inference Advice is declared by the served OpenAPI document, whose Advice objects are closed; the quoted rental
cost per run lies inside its own P10-P90 band at every size; prices_as_of is the oldest observation among the
offers the Advice quotes (the snapshot's compile date when none is dated), with every undated one counted and
named. The bundled price snapshot (pricing/data) supplies the offers, some dated and some not."""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
TRAINING = json.loads((ROOT / "examples" / "7b-training.json").read_text())
INFERENCE = json.loads((ROOT / "examples" / "inference-service.json").read_text())
AUTO = {"workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1e12}, "gpu": "h100-sxm"}
# Providers whose bundled H100 rows carry an observation date (AWS price list, Crusoe and Vultr pages), so that
# the oldest date is an observation, not the snapshot's compile date.
DATED_PROVIDERS = ["aws", "crusoe", "vultr"]


@pytest.fixture(autouse=True)
def _catalog(db: None) -> None:
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data

    load_bundled_data()
    ensure_default_calibration()


def _advice(alice, document: dict[str, Any]) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    response = alice.post("/api/v1/advice", document, format="json")
    assert response.status_code == 200, response.content[:2000]
    return response.json()


def _validator(client, component: str) -> jsonschema.Draft202012Validator:  # type: ignore[no-untyped-def]
    document = client.get("/api/schema/?format=json").json()
    # OpenAPI 3.1 components are JSON Schema 2020-12; their refs resolve inside the served document.
    root = {"$ref": f"#/components/schemas/{component}", "components": document["components"]}
    return jsonschema.Draft202012Validator(root)


def _with_key(doc: dict[str, Any], where: list[str | int]) -> dict[str, Any]:
    extended = copy.deepcopy(doc)
    node: Any = extended
    for step in where:
        node = node[step]
    node["undocumented"] = 1
    return extended


@pytest.mark.parametrize(
    ("document", "component"),
    [(TRAINING, "TrainingAdvice"), (AUTO, "TrainingAdvice"), (INFERENCE, "InferenceAdvice")],
    ids=["training", "auto-layout", "inference"],
)
def test_every_key_of_a_real_advice_is_in_the_served_document(alice, client, document, component) -> None:  # type: ignore[no-untyped-def]
    advice = _advice(alice, document)
    validator = _validator(client, component)
    assert [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(advice)] == []
    # Closed all the way down: a key nobody declared is refused at the top, in a size and in what it quotes.
    places: list[list[str | int]] = [[], ["sizes", 0], ["sizes", 0, "rent"], ["sizes", 0, "buy"]]
    places += [["recommendation"], ["price_freshness"], ["uncertainty"], ["scenario"], ["scenario", "workload"]]
    offer = next(size["rent"]["offer"] for size in advice["sizes"] if size["rent"].get("offer"))
    index = next(i for i, size in enumerate(advice["sizes"]) if size["rent"].get("offer") is offer)
    places.append(["sizes", index, "rent", "offer"])
    for where in places:
        errors = _flat(validator.iter_errors(_with_key(advice, where)))
        assert any(e.validator == "additionalProperties" and "undocumented" in e.message for e in errors), where


def _flat(errors: Any) -> list[jsonschema.ValidationError]:
    """Errors with those under oneOf/anyOf branches (the workload union reports its branches' errors there)."""
    found = []
    for error in errors:
        found += [error, *_flat(error.context or [])]
    return found


@pytest.mark.parametrize("document", [TRAINING, AUTO, {**TRAINING, "gpu": "a100-80gb", "network": None}])
def test_the_quoted_rental_cost_lies_inside_its_band_at_every_size(alice, document) -> None:  # type: ignore[no-untyped-def]
    advice = _advice(alice, document)
    priced = [size["rent"] for size in advice["sizes"] if size["rent"]["usd_per_run"] is not None]
    assert priced, "the bundled snapshot prices every size"
    for rent in priced:
        assert rent["usd_per_run_p10"] <= rent["usd_per_run"] <= rent["usd_per_run_p90"], rent
        assert rent["usd_per_run_p10"] <= rent["usd_per_run_p50"] <= rent["usd_per_run_p90"], rent
        # The point is what the quoted offer costs: its price per used GPU-hour is the headline market's.
        assert rent["offer"] is not None and rent["by_market"][rent["market"]]["usd_per_run"] == rent["usd_per_run"]


def _quoted(advice: dict[str, Any]) -> dict[tuple[str, str, str, str], dict[str, Any]]:
    """Every offer document anywhere in the sizes, once per natural key (provider, instance, region, market)."""
    found: dict[tuple[str, str, str, str], dict[str, Any]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if {"provider", "instance", "region", "market", "observed_at"} <= set(node):
                found[(node["provider"], node["instance"], node["region"], node["market"])] = node
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(advice["sizes"])
    return found


def _observed(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


@pytest.mark.parametrize(
    ("document", "dated_only"),
    [
        (TRAINING, False),
        (INFERENCE, False),
        ({**TRAINING, "rent": {**TRAINING["rent"], "providers": DATED_PROVIDERS}}, True),
        ({**INFERENCE, "rent": {"providers": DATED_PROVIDERS}}, True),
        ({**TRAINING, "rent": {**TRAINING["rent"], "providers": [*DATED_PROVIDERS, "nebius", "vast"]}}, False),
    ],
    ids=["training", "inference", "training-dated", "inference-dated", "training-mixed"],
)
def test_prices_as_of_is_the_oldest_observation_quoted(alice, document, dated_only) -> None:  # type: ignore[no-untyped-def]
    advice = _advice(alice, document)
    quoted = _quoted(advice)
    assert quoted, "the advice quotes offers"
    dated = sorted(_observed(o["observed_at"]) for o in quoted.values() if o["observed_at"])
    undated = sorted(" ".join(part or "-" for part in key) for key, o in quoted.items() if not o["observed_at"])
    freshness = advice["price_freshness"]
    if dated_only:
        assert undated == [] and dated
    if dated:
        assert advice["prices_as_of"] == dated[0].date().isoformat()
    else:
        # Nothing quoted carries a date: the snapshot's compile date, an upper bound, said so in a warning.
        assert advice["prices_as_of"] == freshness["snapshot_compiled_on"]
    assert freshness["undated_offers"] == len(undated) and freshness["undated"] == undated
    if undated:
        assert any(f"{len(undated)} of the {len(quoted)} offers quoted" in w for w in advice["warnings"])
