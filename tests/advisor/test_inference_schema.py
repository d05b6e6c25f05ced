"""Every inference Advice validates against advisor/schemas/advice-inference.schema.json."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

from advisor.advice import advise

SCHEMAS = Path(__file__).resolve().parents[2] / "advisor" / "schemas"
SCENARIO_SCHEMA = json.loads((SCHEMAS / "scenario.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(
    json.loads((SCHEMAS / "advice-inference.schema.json").read_text()),
    registry=Registry().with_resource(SCENARIO_SCHEMA["$id"], Resource.from_contents(SCENARIO_SCHEMA)),
)


def _scenario(params_b: float, gpu: str, *, tpot_s: float = 0.05, peak: float = 50, **extra: Any) -> dict[str, Any]:
    return {
        "name": f"{params_b}B serving",
        "workload": {
            "kind": "inference",
            "model": {"params_b": params_b},
            "traffic": {
                "peak_requests_per_s": peak,
                "mean_requests_per_s": peak / 2.5,
                "input_tokens": 1000,
                "output_tokens": 200,
            },
            "latency": {"ttft_p95_s": 1.0, "tpot_p95_s": tpot_s},
        },
        "gpu": gpu,
        **extra,
    }


def _finite_numbers(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite_numbers(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite_numbers(v) for v in value)
    return True


@pytest.fixture
def bundled_catalog(db: None) -> None:
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data

    load_bundled_data()
    ensure_default_calibration()


@pytest.mark.parametrize(
    "scenario",
    [
        _scenario(8, "h100-sxm"),
        _scenario(70, "h100-sxm"),
        _scenario(8, "l40s", tpot_s=0.01),
        _scenario(8, "a100-80gb", peak=0.5),
        _scenario(8, "h200", rent={"usd_per_gpu_hour": 2.5}, buy={"capex_usd": 250_000}),
        _scenario(70, "h100-sxm", compare_gpus=["h200", "a100-80gb"]),
        {
            **_scenario(70, "h100-sxm"),
            "workload": {**_scenario(70, "h100-sxm")["workload"], "latency": {"ttft_p95_s": 0.05, "tpot_p95_s": 0.05}},
        },
    ],
    ids=["8b-h100", "70b-h100", "tight-latency-l40s", "tiny-traffic", "manual-quotes", "compare-gpus", "unreachable"],
)
def test_inference_advice_validates_and_is_json_safe(bundled_catalog: None, scenario: dict[str, Any]) -> None:
    document = advise(scenario).to_dict()
    errors = [f"{list(e.path)}: {e.message}" for e in VALIDATOR.iter_errors(document)]
    assert errors == []
    assert _finite_numbers(document)
    json.dumps(document, allow_nan=False)


def test_the_schema_rejects_a_training_advice_shape() -> None:
    training = json.loads(
        (Path(__file__).resolve().parents[1] / "fixtures" / "advice_training_example.json").read_text()
    )
    assert list(VALIDATOR.iter_errors(training)), "a training Advice must not pass as inference"


def test_compare_gpus_gives_one_row_per_gpu_from_the_same_pipeline(bundled_catalog: None) -> None:
    document = advise(_scenario(70, "h100-sxm", compare_gpus=["h200"])).to_dict()
    rows = {r["gpu"]: r for r in document["alternatives"]}
    assert list(rows) == ["h100-sxm", "h200"]
    alone = advise(_scenario(70, "h200")).to_dict()
    assert rows["h200"]["gpus"] == alone["recommendation"]["gpus"]
    chosen = next(s for s in alone["sizes"] if s["gpus"] == alone["recommendation"]["gpus"] and s["meets_latency"])
    assert rows["h200"]["rent_usd_per_month"] == pytest.approx(chosen["rent"]["usd_per_month"])
    assert rows["h100-sxm"]["gpus"] == document["recommendation"]["gpus"]
