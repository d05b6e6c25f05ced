"""Extreme but valid inputs through advise() and the API: 1 GPU, 100,000 GPUs, a 1T-parameter model,
utilization 0 and 1, tiny and huge token counts. Each gives a sensible answer or a clear error
naming the field; never a crash, a NaN or an infinity in the document."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from rest_framework.test import APIClient

from advisor.advice import advise
from advisor.scenario import ScenarioError
from advisor.scenario_model import MIN_UTILIZATION

BASE: dict[str, Any] = {
    "name": "extreme",
    "workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1e11, "runs_per_year": 4},
    "gpu": "h100-sxm",
    "cluster_sizes": [8, 64],
}


def variant(**changes: Any) -> dict[str, Any]:
    document = copy.deepcopy(BASE)
    for path, value in changes.items():
        target = document
        keys = path.split("__")
        for key in keys[:-1]:
            target = target.setdefault(key, {})
        target[keys[-1]] = value
    return document


CASES: dict[str, dict[str, Any]] = {
    "one GPU, small model": variant(workload__model__params_b=1, cluster_sizes=[1]),
    "one GPU, 70B (does not fit)": variant(workload__model__params_b=70, cluster_sizes=[1]),
    "100,000 GPUs": variant(workload__model__params_b=70, cluster_sizes=[100_000]),
    "1..100,000 GPUs": variant(cluster_sizes=[1, 8, 1024, 100_000]),
    "1T parameters": variant(workload__model__params_b=1000, workload__tokens=1e12, cluster_sizes=[1024, 8192]),
    "1T parameters on 8 GPUs": variant(workload__model__params_b=1000, cluster_sizes=[8]),
    "utilization 0": variant(utilization=0),
    "utilization 1": variant(utilization=1),
    "utilization 0 with a manual rent price": variant(utilization=0, rent={"usd_per_gpu_hour": 2.5}),
    "one token": variant(workload__tokens=1),
    "1e15 tokens": variant(workload__tokens=1e15, cluster_sizes=[1024]),
    "inference at 1 GPU": {
        "workload": {
            "kind": "inference",
            "model": {"params_b": 1},
            "traffic": {"peak_requests_per_s": 0.01, "mean_requests_per_s": 0.001},
        },
        "gpu": "l4",
        "cluster_sizes": [1],
    },
    "inference, 100,000 requests/s on a 405B model": {
        "workload": {
            "kind": "inference",
            "model": {"params_b": 405},
            "traffic": {"peak_requests_per_s": 100_000, "mean_requests_per_s": 50_000},
        },
        "gpu": "h200",
        "utilization": 1,
    },
}


def _non_finite(value: Any, path: str = "") -> list[str]:
    if isinstance(value, float):
        return [] if math.isfinite(value) else [f"{path}={value}"]
    if isinstance(value, dict):
        return [bad for key, item in value.items() for bad in _non_finite(item, f"{path}/{key}")]
    if isinstance(value, list):
        return [bad for i, item in enumerate(value) for bad in _non_finite(item, f"{path}/{i}")]
    return []


@pytest.fixture
def bundled(db: None) -> None:
    from pricing.services import load_bundled_data

    load_bundled_data()


@pytest.mark.parametrize("label", list(CASES))
def test_extreme_input_gives_a_finite_answer_or_a_clear_error(label: str, bundled: None) -> None:
    document = CASES[label]
    try:
        advice = advise(document).to_dict()
    except ScenarioError as error:
        # A clear error names the field it is about.
        assert error.errors, label
        for item in error.errors:
            assert item.get("pointer", "").startswith("/") or item.get("pointer") == "", (label, item)
            assert item.get("message"), (label, item)
        return
    assert advice["sizes"], label
    assert not _non_finite(advice), (label, _non_finite(advice)[:5])
    json.dumps(advice, allow_nan=False)  # strictly valid JSON
    recommendation = advice["recommendation"]
    # DESIGN.md: rent | buy | none (nothing fits); null where a size runs but can be priced neither way.
    assert recommendation["action"] in ("rent", "buy", "none", None), (label, recommendation)
    for size in advice["sizes"]:
        for key in ("gpus", "mfu", "scaling_efficiency", "run_hours", "break_even_utilization"):
            value = size.get(key, size.get("buy", {}).get(key))
            if isinstance(value, float) and key in ("mfu", "scaling_efficiency"):
                assert 0 <= value <= 1.0 + 1e-9, (label, key, value)
            if isinstance(value, float) and key == "run_hours":
                assert value > 0, (label, value)


@pytest.mark.parametrize("label", ["100,000 GPUs", "1T parameters", "utilization 0", "utilization 1"])
def test_extreme_input_through_the_api_is_strict_json(label: str, bundled: None, user) -> None:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(user)
    response = api.post("/api/v1/advice", CASES[label], format="json")
    assert response.status_code in (200, 400), (label, response.status_code, response.content[:300])
    body = json.loads(response.content, parse_constant=lambda name: pytest.fail(f"{label}: {name} in JSON"))
    if response.status_code == 400:
        assert body["errors"] and all(item["pointer"].startswith("#/") for item in body["errors"])
    else:
        assert body["sizes"]


@pytest.mark.parametrize(
    ("changes", "pointer"),
    [
        ({"utilization": -0.1}, "/utilization"),
        ({"utilization": 1.5}, "/utilization"),
        ({"cluster_sizes": [0]}, "/cluster_sizes/0"),
        ({"workload__model__params_b": 0}, "/workload/model/params_b"),
        ({"workload__model__params_b": 0.0001}, "/workload/model/params_b"),
        ({"workload__tokens": -1}, "/workload/tokens"),
        ({"utilization": float("nan")}, "/utilization"),
        ({"workload__model__params_b": float("inf")}, "/workload/model/params_b"),
    ],
)
def test_out_of_range_inputs_are_refused_naming_the_field(changes: dict[str, Any], pointer: str, bundled: None) -> None:
    with pytest.raises(ScenarioError) as caught:
        advise(variant(**changes))
    pointers = [item.get("pointer", "") for item in caught.value.errors]
    assert any(p == pointer or p.startswith(pointer) for p in pointers), pointers


@pytest.mark.parametrize("utilization", [MIN_UTILIZATION, 1])
def test_utilization_at_its_bounds_gives_finite_costs_per_run_and_busy_hour(utilization: float, bundled: None) -> None:
    """Finite and present: a null cost per run is no answer (5e-324 gave null, dividing by a vanishing fraction)."""
    advice = advise(variant(utilization=utilization)).to_dict()
    for size in advice["sizes"]:
        buy = size["buy"]
        for key in ("usd_per_run", "usd_per_gpu_hour_at_utilization"):
            assert isinstance(buy[key], float) and math.isfinite(buy[key]) and buy[key] > 0, (key, buy[key])


def test_a_vanishing_utilization_is_refused_at_its_pointer(bundled: None, user) -> None:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(user)
    response = api.post("/api/v1/advice", variant(utilization=5e-324), format="json")
    assert response.status_code == 400, response.content[:300]
    [error] = response.json()["errors"]
    assert error["pointer"] == "#/utilization"
    assert error["detail"] == f"must be a number at least {MIN_UTILIZATION:g} and at most 1; got 5e-324"
