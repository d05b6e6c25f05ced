"""The Scenario's schema against its server, both ways (issue 23): schemathesis' positive_data_acceptance (a
request the schema allows is accepted) and negative_data_rejection (a request it forbids is refused) on every
operation that takes a Scenario, against a live server with a real token and the bundled prices (so advice is
computed for real), a bounded number of generated requests per operation (FUZZ_SCENARIO_EXAMPLES, default 15).

What JSON Schema can say, the schema says (tests/advisor/test_documents.py holds the schema, the model and the
parser to one rule). The answers below are the only accepted exceptions; each is a rule that depends on several
fields or on stored data, named in the schema's descriptions, and answered as a problem naming the field."""

from __future__ import annotations

import json
import os
import re
from typing import Any

import pytest
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import Failure, FailureGroup
from schemathesis.specs.openapi.checks import (
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api import fuzzing

EXAMPLES = int(os.environ.get("FUZZ_SCENARIO_EXAMPLES", "15"))
OPERATIONS = ["v1_advice_create", "v1_scenarios_create", "v1_scenarios_update"]

# (pointer, what the detail says): the 400s a schema-valid Scenario may get, each a rule of several fields
# (advisor.scenario, estimator.catalog) or of stored data (providers, hardware quotes).
CROSS_FIELD_OR_DATA: list[tuple[str, str]] = [
    (r"/cluster_sizes/\d+", "must be whole nodes"),
    (r"/workload/parallelism/micro_batch", "must not exceed global_batch"),
    (r"/workload/parallelism/tp", "must divide the attention heads"),
    (
        r"/workload/parallelism/virtual_pipeline",
        "needs pp > 1|more than one virtual stage per layer|has no interleaved pipeline schedule",
    ),
    (r"/workload/parallelism/pp", "must not exceed the model's layers"),
    (r"/workload/traffic/mean_requests_per_s", "must not exceed peak_requests_per_s|the peak is taken as mean"),
    (r"/workload/traffic/(input|output)_tokens", "exceeds .*'s context of"),
    (r"/workload/precision", "peak; supported"),
    (r"/workload/model", "away from params_b"),
    (r"/workload/model", "contradicts"),
    (r"/workload/model/\w+", r"has \w+ \d+; got"),
    (r"/workload/model/heads", "must divide hidden"),
    (r"/workload/model/kv_heads", "must divide heads"),
    (r"/workload/model/active_experts", "must be between 1 and experts"),
    (r"/workload/model/layers", "mixture-of-experts model needs layers and hidden"),
    (r"/rent/providers/\d+", "unknown provider"),
    (r"/buy/server", "no hardware quote of that name"),
    # A name needs one letter, digit, punctuation mark or symbol (core.textcheck): Unicode categories, which no
    # portable JSON Schema pattern can say; the pattern holds the characters refused outright.
    (r"/name", "at least one visible character"),
]


def _documented_400(body: dict[str, Any]) -> bool:
    errors = body.get("errors") or []
    return bool(errors) and all(
        any(
            re.fullmatch(r"#(/scenario)?" + where, error["pointer"]) and re.search(said, error["detail"])
            for where, said in CROSS_FIELD_OR_DATA
        )
        for error in errors
    )


def _explained(case: Any, status: int, body: dict[str, Any], failure: Failure) -> bool:
    """A positive/negative disagreement that is a rule the schema cannot hold."""
    headers = {name.lower() for name in case.headers or {}}
    if status == 412 and "if-match" in headers:
        # If-Match must name the current version (server state). Checked before the body (RFC 9110 13.2.1:
        # preconditions are evaluated before the request content), so an invalid body with a stale tag is a 412.
        return True
    if status == 422 and "idempotency-key" in headers:
        return True  # the key was used before with another body (server state)
    if status == 400 and failure.code == "ST202":
        return _documented_400(body)
    # `?format=` (empty) means the default representation, as on every list (EXCLUDED in test_fuzz_all_checks).
    return status < 300 and failure.code == "ST201" and (case.query or {}).get("format") == ""


schema = fuzzing.served_schema()
scenario_schema = schema.include(operation_id=OPERATIONS)


@pytest.fixture
def live_client(live_server, django_user_model, settings) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    from advisor.calibrations import ensure_default_calibration
    from pricing.services import load_bundled_data

    load_bundled_data()
    ensure_default_calibration()
    return fuzzing.live_client(
        live_server=live_server, django_user_model=django_user_model, settings=settings, username="integrator"
    )


def test_the_scenario_operations_are_selected() -> None:
    assert sorted(op.ok().definition.raw["operationId"] for op in scenario_schema.get_all_operations()) == sorted(
        OPERATIONS
    )


@pytest.mark.django_db(transaction=True)
@scenario_schema.parametrize()
@fuzzing.bounded(EXAMPLES)
def test_the_server_accepts_what_the_scenario_schema_allows_and_refuses_the_rest(case, live_client) -> None:  # type: ignore[no-untyped-def]
    response = case.call(base_url=live_client["base_url"], headers=live_client["headers"])
    case.validate_response(
        response,
        checks=[not_a_server_error, status_code_conformance, response_schema_conformance],
        headers=live_client["headers"],
    )
    try:
        case.validate_response(
            response, checks=[positive_data_acceptance, negative_data_rejection], headers=live_client["headers"]
        )
    except (Failure, FailureGroup) as caught:
        failures = list(caught.exceptions) if isinstance(caught, FailureGroup) else [caught]
        body = json.loads(response.content or b"{}") if response.status_code >= 400 else {}
        unexplained = [f for f in failures if not _explained(case, response.status_code, body, f)]
        if unexplained:
            raise
