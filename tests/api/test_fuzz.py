"""Schemathesis against a live server with a real token: for a bounded number of generated requests per
operation (valid and invalid), no 5xx and every response conforms to the schema (status code, content
type, body). Bounded by FUZZ_EXAMPLES (default 12 per operation)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api import fuzzing

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "12"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


schema = fuzzing.served_schema()


@pytest.fixture
def fuzz_client(live_server, django_user_model, settings, monkeypatch) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    # A real feed refresh would reach the network; the task itself is exercised in test_feeds.py.
    monkeypatch.setattr("pricing.api.refresh.refresh_feed.delay", _fake_delay)
    return fuzzing.live_client(
        live_server=live_server,
        django_user_model=django_user_model,
        settings=settings,
        username="fuzzer",
        is_staff=True,
    )


@pytest.mark.django_db(transaction=True)
@schema.parametrize()
@fuzzing.bounded(EXAMPLES)
def test_api_conforms_to_its_schema(case, fuzz_client) -> None:  # type: ignore[no-untyped-def]
    response = case.call(base_url=fuzz_client["base_url"], headers=fuzz_client["headers"])
    case.validate_response(response, checks=CHECKS)


def _fake_delay(name: str) -> Any:
    from config.celery import app

    return app.AsyncResult("fuzz-task")
