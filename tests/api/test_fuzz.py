"""Schemathesis against a live server with a real token: for a bounded number of generated requests per
operation (valid and invalid), no 5xx and every response conforms to the schema (status code, content
type, body). Bounded by FUZZ_EXAMPLES (default 12 per operation)."""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from advisor.api.tokens import api_token_create
from advisor.scenarios import scenario_create
from tests.api.examples import scenario

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "12"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


# Built at collection (pytest-django has configured Django by then); the live server answers the requests.
schema = schemathesis.openapi.from_dict(SchemaGenerator(api_version="v1").get_schema(request=None, public=True))


@pytest.fixture
def fuzz_client(live_server, django_user_model, settings, monkeypatch) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    # A real feed refresh would reach the network; the task itself is exercised in test_feeds.py.
    monkeypatch.setattr("pricing.api.refresh.refresh_feed.delay", _fake_delay)
    rates = dict.fromkeys(("anon", "user", "advice", "pdf"), "100000/min")
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    user = django_user_model.objects.create_user(username="fuzzer", password="x", is_staff=True)
    # Some real objects, so generated ids sometimes hit something (ids start at 1 on a flushed database).
    for i in range(3):
        scenario_create(owner=user, name=f"fuzz {i}", document=scenario())
    key = api_token_create(user=user, name="fuzz").key
    return {"base_url": live_server.url, "headers": {"Authorization": f"Token {key}"}}


@pytest.mark.django_db(transaction=True)
@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
        # The live server, token and objects are meant to be shared by every generated request.
        HealthCheck.function_scoped_fixture,
    ],
    derandomize=True,
)
def test_api_conforms_to_its_schema(case, fuzz_client) -> None:  # type: ignore[no-untyped-def]
    response = case.call(base_url=fuzz_client["base_url"], headers=fuzz_client["headers"])
    case.validate_response(response, checks=CHECKS)


def _fake_delay(name: str) -> Any:
    from config.celery import app

    return app.AsyncResult("fuzz-task")
