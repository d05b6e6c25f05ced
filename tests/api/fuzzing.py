"""What the schemathesis tests against a live server share: the served OpenAPI document as a schemathesis
schema, hypothesis settings for a bounded, reproducible run, and a signed-in client with a real token."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import schemathesis
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, settings

from advisor.api.tokens import api_token_create
from advisor.scenarios import scenario_create
from tests.api.examples import scenario


def served_schema() -> Any:
    """Built at collection (pytest-django has configured Django by then); the live server answers the requests."""
    return schemathesis.openapi.from_dict(SchemaGenerator(api_version="v1").get_schema(request=None, public=True))


def bounded(examples: int) -> Callable[[Any], Any]:
    """`examples` generated requests per operation, the same ones every run."""
    return settings(
        max_examples=examples,
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


def live_client(
    *, live_server: Any, django_user_model: Any, settings: Any, username: str, is_staff: bool = False
) -> dict[str, Any]:
    """A user with three saved scenarios (so generated ids sometimes name one) and a token; throttles out of reach."""
    rates = dict.fromkeys(("anon", "user", "advice", "pdf"), "100000/min")
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    user = django_user_model.objects.create_user(username=username, password="x", is_staff=is_staff)
    for i in range(3):
        scenario_create(owner=user, name=f"saved {i}", document=scenario())
    key = api_token_create(user=user, name="fuzz").key
    return {"base_url": live_server.url, "headers": {"Authorization": f"Token {key}"}}
