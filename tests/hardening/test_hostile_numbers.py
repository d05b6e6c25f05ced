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
