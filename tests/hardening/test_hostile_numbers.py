"""Numbers a hostile outsider tried that the bounds let through: an inter-node bandwidth of 5e-324 Gb/s gave sizes
that fit memory with every time and cost null and no reason; 1e-300 gave runs of 9.3e303 hours and a fabric
warning with a 451-character percentage."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from advisor.formatting import percent
from estimator.bounds import MIN_INTER_NODE_GBPS
from tests.api.conftest import assert_problem
from tests.api.examples import scenario


@pytest.fixture
def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


def _with_bandwidth(gbps: float) -> dict[str, Any]:
    return {**scenario(), "network": {"inter_node_gbps": gbps}}


@pytest.mark.django_db
@pytest.mark.parametrize("gbps", [5e-324, 1e-310, 1e-300, 0.5])
def test_a_bandwidth_below_the_slowest_cluster_link_is_refused_naming_the_field(api, gbps: float) -> None:  # type: ignore[no-untyped-def]
    body = json.dumps(_with_bandwidth(gbps))
    answer = assert_problem(api.post("/api/v1/advice", body, content_type="application/json"), 400)
    assert [error["pointer"] for error in answer["errors"]] == ["#/network/inter_node_gbps"]
    assert "1" in answer["errors"][0]["detail"]


@pytest.mark.django_db
def test_the_slowest_allowed_bandwidth_gives_finite_times(api) -> None:  # type: ignore[no-untyped-def]
    response = api.post("/api/v1/advice", _with_bandwidth(MIN_INTER_NODE_GBPS), format="json")
    assert response.status_code == 200, response.content[:500]
    fitting = [size for size in response.json()["sizes"] if size["fits_memory"]]
    assert fitting and all(size["run_hours"] is not None for size in fitting)
    assert all(len(warning) < 600 for warning in response.json()["warnings"])


def test_the_scenario_schema_states_the_floor() -> None:
    from advisor.scenario_model import scenario_json_schema

    text = json.dumps(scenario_json_schema())
    assert f'"minimum": {MIN_INTER_NODE_GBPS}' in text


@pytest.mark.parametrize(
    ("fraction", "text"), [(0.6, "60%"), (0.0016, "0.16%"), (1.9e-300, "1.9e-298%"), (1.234e-9, "1.2e-07%")]
)
def test_a_percentage_is_bounded_in_length(fraction: float, text: str) -> None:
    assert percent(fraction) == text


# Every positive Scenario quantity a hostile probe set to the subnormal 1e-320 and got a 200 for ("a run of 1e-320
# tokens takes 0.0 hours"; a 1e-320-year term gave NaN costs and a 500 on fleet plans): (pointer, document).
_INFERENCE: dict[str, Any] = {"kind": "inference", "model": {"name": "llama-3.1-8b"}}
_SUBNORMAL_FIELDS: list[tuple[str, dict[str, Any]]] = [
    ("/workload/tokens", scenario(workload={**scenario()["workload"], "tokens": 1e-320})),
    ("/workload/runs_per_year", scenario(workload={**scenario()["workload"], "runs_per_year": 1e-320})),
    ("/buy/years", scenario(buy={"years": 1e-320})),
    ("/buy/capex_usd", scenario(buy={"capex_usd": 1e-320})),
    ("/rent/usd_per_gpu_hour", scenario(rent={"usd_per_gpu_hour": 1e-320})),
    (
        "/workload/traffic/mean_requests_per_s",
        scenario(workload={**_INFERENCE, "traffic": {"peak_requests_per_s": 10, "mean_requests_per_s": 1e-320}}),
    ),
    ("/workload/latency/tpot_p95_s", scenario(workload={**_INFERENCE, "latency": {"tpot_p95_s": 1e-320}})),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("pointer", "doc"), _SUBNORMAL_FIELDS, ids=[p for p, _ in _SUBNORMAL_FIELDS])
def test_a_subnormal_positive_quantity_is_refused_naming_its_floor(api, pointer: str, doc: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    from advisor.scenario_model import rule

    answer = assert_problem(api.post("/api/v1/advice", doc, format="json"), 400)
    assert [error["pointer"] for error in answer["errors"]] == [f"#{pointer}"]
    floor = rule(pointer, doc["workload"]["kind"]).minimum
    assert floor is not None and floor >= 1e-5 and f"at least {floor:g}" in answer["errors"][0]["detail"]


@pytest.mark.django_db
def test_a_fleet_of_a_subnormal_ownership_term_is_refused_not_a_500(api) -> None:  # type: ignore[no-untyped-def]
    from tests.advisor.fleet.figures import BASE_AND_WEEK

    doc = {**BASE_AND_WEEK, "buy": {**BASE_AND_WEEK["buy"], "years": 1e-320}}
    answer = assert_problem(api.post("/api/v1/fleet-plans", doc, format="json"), 400)
    assert [error["pointer"] for error in answer["errors"]] == ["#/buy/years"]


def test_every_positive_bound_of_the_schemas_is_a_floor_not_above_zero() -> None:
    from advisor.advice.fleet.models import FLEET_SCHEMA_FILE, fleet_json_schema
    from advisor.scenario_model import scenario_json_schema

    for schema in (scenario_json_schema(), fleet_json_schema(FLEET_SCHEMA_FILE)):
        text = json.dumps(schema)
        assert '"exclusiveMinimum": 0' not in text


@pytest.mark.parametrize(
    ("column", "value"), [("tokens_per_s", "1e-320"), ("tokens_per_s", "1e-303"), ("step_time_s", "1e-310")]
)
def test_a_subnormal_measured_rate_is_refused_naming_row_and_column(column: str, value: str) -> None:
    from estimator.runs import RunValidationError, read_runs_csv

    cells = {"tokens_per_s": "", "step_time_s": "", column: value}
    header = "gpu,num_gpus,params_b,seq_len,global_batch,step_time_s,tokens_per_s\n"
    text = header + f"h100-sxm,8,7,4096,1024,{cells['step_time_s']},{cells['tokens_per_s']}\n"
    with pytest.raises(RunValidationError) as info:
        read_runs_csv(text)
    (error,) = info.value.errors
    assert error.row == 1 and error.column == column and "at least" in str(error)
