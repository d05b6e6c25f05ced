"""Every accepted document yields an Advice: valid scenarios drawn across the whole allowed range,
training and inference, through the API answer 200 with finite numbers or a 4xx naming the field,
never a 5xx (property-based, hypothesis)."""

from __future__ import annotations

import json
import math
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.django_db

GPUS = ["v100-32gb", "a10g", "l4", "l40s", "a100-40gb", "a100-80gb", "h100-pcie", "h100-sxm", "h200", "gh200",
        "b200", "gb200", "rtx4090", "mi300x"]  # fmt: skip
MARKETS = ["on_demand", "spot", "reserved_1y", "reserved_3y"]
EXAMPLES = int(os.environ.get("DOMAIN_EXAMPLES", "25"))


def positive(high: float, *, low_exponent: float = -6) -> st.SearchStrategy[float]:
    """(0, high]: log-uniform over the range, plus its ends."""
    top = math.log10(high)
    return st.one_of(
        st.floats(min_value=low_exponent, max_value=top).map(lambda e: min(high, 10.0**e)),
        st.sampled_from([high, 10.0**low_exponent]),
    )


def whole(low: int, high: int) -> st.SearchStrategy[int]:
    return st.one_of(st.integers(low, high), st.sampled_from([low, high]))


def fraction(low: float, high: float) -> st.SearchStrategy[float]:
    return st.one_of(st.floats(low, high), st.sampled_from([low, high]))


common = {
    "gpu": st.sampled_from(GPUS),
    "cluster_sizes": st.lists(whole(1, 65_536), min_size=1, max_size=32, unique=True),
    "utilization": positive(1.0, low_exponent=-4),
    "network": st.fixed_dictionaries(
        {}, optional={"gpus_per_node": whole(1, 72), "inter_node_gbps": positive(100_000)}
    ),
    "rent": st.fixed_dictionaries(
        {"markets": st.lists(st.sampled_from(MARKETS), min_size=1, max_size=4, unique=True)},
        optional={
            "usd_per_gpu_hour": positive(10_000, low_exponent=-4),
            "price_decline_per_year": fraction(0, 0.9),
            "spot": st.fixed_dictionaries(
                {},
                optional={
                    "interruptions_per_node_hour": fraction(0, 10),
                    "checkpoint_s": fraction(0, 86_400),
                    "restart_s": fraction(0, 86_400),
                },
            ),
        },
    ),
    "buy": st.fixed_dictionaries(
        {},
        optional={
            "capex_usd": positive(1e10, low_exponent=0),
            "years": positive(30, low_exponent=-2),
            "discount_rate": fraction(0, 1),
            "residual_fraction": fraction(0, 1),
            "power_usd_per_kwh": fraction(0, 10),
            "pue": fraction(1, 5),
            "colo_usd_per_kw_month": fraction(0, 100_000),
            "support_fraction_per_year": fraction(0, 1),
            "staff_usd_per_year": fraction(0, 1e9),
        },
    ),
}

model = st.fixed_dictionaries(
    {"params_b": positive(100_000, low_exponent=-3)}, optional={"seq_len": whole(1, 10_000_000)}
)

training = st.fixed_dictionaries(
    {
        "workload": st.fixed_dictionaries(
            {"kind": st.just("training"), "model": model, "tokens": positive(1e16, low_exponent=0)},
            optional={"global_batch": whole(1, 10_000_000), "runs_per_year": positive(100_000, low_exponent=-3)},
        ),
        "gpu": common["gpu"],
    },
    optional={k: v for k, v in common.items() if k != "gpu"},
)

inference = st.fixed_dictionaries(
    {
        "workload": st.fixed_dictionaries(
            {
                "kind": st.just("inference"),
                "model": model,
                "traffic": st.fixed_dictionaries(
                    {},
                    optional={
                        "peak_requests_per_s": positive(1e7, low_exponent=-4),
                        "mean_requests_per_s": positive(1e7, low_exponent=-4),
                        "input_tokens": whole(1, 10_000_000),
                        "output_tokens": whole(1, 10_000_000),
                    },
                ),
            },
            optional={
                "latency": st.fixed_dictionaries(
                    {},
                    optional={
                        "ttft_p95_s": positive(3600, low_exponent=-3),
                        "tpot_p95_s": positive(3600, low_exponent=-4),
                    },
                )
            },
        ),
        "gpu": common["gpu"],
    },
    optional={k: v for k, v in common.items() if k not in {"gpu"}},
)


def _refuse_nonfinite(token: str) -> float:
    raise AssertionError(f"non-finite number {token} in a 200 answer")


def _check(client: Any, document: dict[str, Any]) -> None:
    response = client.post("/api/v1/advice", document, format="json")
    status = response.status_code
    assert status < 500, (status, response.content[:1500], json.dumps(document))
    if status == 200:
        json.loads(response.content, parse_constant=_refuse_nonfinite)
        return
    assert 400 <= status < 500
    body = json.loads(response.content)
    assert response["Content-Type"].startswith("application/problem+json")
    if status in (400, 422):
        assert body.get("errors"), body
        assert all(error["pointer"].startswith("#/") for error in body["errors"]), body


@pytest.fixture
def client(alice, settings):  # type: ignore[no-untyped-def]
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {k: "1000000/hour" for k in ("anon", "user", "advice", "pdf")},
    }
    return alice


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=training)
def test_training_scenarios_across_the_allowed_range(client, document) -> None:  # type: ignore[no-untyped-def]
    from tests.web.conftest import load_bundled_data

    load_bundled_data()
    _check(client, document)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=inference)
def test_inference_scenarios_across_the_allowed_range(client, document) -> None:  # type: ignore[no-untyped-def]
    from tests.web.conftest import load_bundled_data

    load_bundled_data()
    _check(client, document)


# --- profiled-run rows (CSV) across the allowed range of every column ---

RUN_INTS = {
    "num_gpus": 65_536,
    "gpus_per_node": 72,
    "layers": 10_000_000,
    "hidden": 10_000_000,
    "heads": 10_000_000,
    "seq_len": 10_000_000,
    "global_batch": 10_000_000,
    "micro_batch": 65_536,
    "tp": 65_536,
    "pp": 65_536,
    "cp": 65_536,
}
RUN_FLOATS = {"params_b": 100_000.0, "inter_node_gbps": 100_000.0, "tokens_per_s": 1e12, "step_time_s": 1e7}
REQUIRED = ("gpu", "num_gpus", "params_b", "seq_len", "global_batch")

run_row = st.fixed_dictionaries(
    {
        "gpu": st.sampled_from(GPUS),
        "num_gpus": whole(1, RUN_INTS["num_gpus"]),
        "params_b": positive(RUN_FLOATS["params_b"], low_exponent=-3),
        "seq_len": whole(1, RUN_INTS["seq_len"]),
        "global_batch": whole(1, RUN_INTS["global_batch"]),
    },
    optional={
        **{k: whole(1, v) for k, v in RUN_INTS.items() if k not in REQUIRED},
        **{k: positive(v, low_exponent=-3) for k, v in RUN_FLOATS.items() if k not in REQUIRED},
        "precision": st.sampled_from(["bf16", "fp16", "fp8", "fp32"]),
        "strategy": st.sampled_from(["ddp", "zero1", "zero2", "fsdp", "hsdp", ""]),
        "activation_checkpointing": st.sampled_from(["true", "false", "selective", ""]),
    },
)


def _csv(rows: list[dict[str, Any]]) -> str:
    columns = sorted({key for row in rows for key in row})
    lines = [",".join(columns)] + [",".join(repr(row[c]) if c in row else "" for c in columns) for row in rows]
    return "\n".join(lines).replace("'", "") + "\n"


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(run_row, min_size=1, max_size=4))
def test_profiled_run_rows_across_the_allowed_range(client, rows) -> None:  # type: ignore[no-untyped-def]
    response = client.post("/api/v1/estimate", _csv(rows), content_type="text/csv")
    status = response.status_code
    assert status < 500, (status, response.content[:1500], _csv(rows))
    if status == 200:
        json.loads(response.content, parse_constant=_refuse_nonfinite)
    else:
        body = json.loads(response.content)
        assert status in (400, 413), body
        assert status == 413 or all(error["pointer"].startswith("#/csv") for error in body["errors"]), body


@pytest.mark.parametrize(
    ("column", "value"),
    [*((k, v * 10) for k, v in RUN_INTS.items()), *((k, v * 10) for k, v in RUN_FLOATS.items()), ("params_b", 1e300)],
)
def test_a_run_column_above_its_bound_names_the_column(client, column, value) -> None:  # type: ignore[no-untyped-def]
    row = {"gpu": "h100-sxm", "num_gpus": 64, "params_b": 7, "seq_len": 2048, "global_batch": 512, column: value}
    response = client.post("/api/v1/estimate", _csv([row]), content_type="text/csv")
    assert response.status_code == 400, response.content[:500]
    pointers = [error["pointer"] for error in json.loads(response.content)["errors"]]
    assert f"#/csv/1/{column}" in pointers, pointers


# --- dates at the calendar's ends ---


@pytest.mark.parametrize(
    "query",
    [
        "until=0001-01-01",
        "since=0001-01-01",
        "until=9999-12-31",
        "since=9999-12-30&until=9999-12-31",
        "since=1999-01-01",
    ],
)
def test_price_history_dates_outside_the_data_are_400_naming_the_parameter(client, query) -> None:  # type: ignore[no-untyped-def]
    response = client.get(f"/api/v1/gpus/h100-sxm/price-history?{query}")
    assert response.status_code == 400, response.content[:500]
    body = json.loads(response.content)
    named = {error.get("parameter") or error["pointer"] for error in body["errors"]}
    assert named & {"since", "until", "#/since", "#/until"}, body


def test_price_history_inside_the_range_still_answers(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/api/v1/gpus/h100-sxm/price-history?since=2024-01-01&until=2024-02-01")
    assert response.status_code == 200, response.content[:500]
