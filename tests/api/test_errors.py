"""Each error class answers RFC 9457 problem+json, with pointers for bad input; throttling is per user
with a stricter scope for advice and PDFs, counted in the cache (Redis in production)."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from tests.api.conftest import assert_problem
from tests.api.examples import scenario

pytestmark = pytest.mark.django_db


def test_400_validation_lists_every_bad_field(alice) -> None:  # type: ignore[no-untyped-def]
    body = assert_problem(
        alice.post("/api/v1/advice", scenario(gpu="h900", utilization=2, cluster_sizes="8"), format="json"),
        400,
        "#/gpu",
        "#/utilization",
        "#/cluster_sizes",
    )
    assert body["type"] == "/problems/validation-error" and body["title"] == "Invalid request"
    assert body["instance"] == "/api/v1/advice"
    gpu = next(e for e in body["errors"] if e["pointer"] == "#/gpu")
    assert "h100-sxm" in gpu["detail"], "the message says what is allowed"


def test_400_parse_error_points_at_the_document(alice) -> None:  # type: ignore[no-untyped-def]
    body = assert_problem(alice.post("/api/v1/scenarios", b"{", content_type="application/json"), 400, "#")
    assert body["errors"][0]["code"] == "parse_error"


def test_400_non_finite_numbers_are_not_json(alice) -> None:  # type: ignore[no-untyped-def]
    body = b'{"gpu": "h100-sxm", "utilization": NaN}'
    assert_problem(alice.post("/api/v1/advice", body, content_type="application/json"), 400, "#")


def test_400_a_name_given_twice_in_one_object_is_refused_at_its_pointer(alice) -> None:  # type: ignore[no-untyped-def]
    # Python's json keeps the last of the two (the advice was for l4, action none); other readers keep the first.
    text = json.dumps(scenario()).replace('"gpu": "h100-sxm"', '"gpu": "h100-sxm", "gpu": "l4"')
    text = text.replace('"model": {', '"model": {"params_b": 1, "params_b": 2, ')
    assert text.count('"gpu"') == 2
    body = assert_problem(
        alice.post("/api/v1/advice", text, content_type="application/json"), 400, "#/gpu", "#/workload/model/params_b"
    )
    gpu = next(e for e in body["errors"] if e["pointer"] == "#/gpu")
    assert gpu["code"] == "duplicate_key" and '"gpu" is given more than once' in gpu["detail"]


def test_413_body_over_the_upload_limit(alice, settings) -> None:  # type: ignore[no-untyped-def]
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1024
    big = {"name": "x" * 2000, "scenario": {}}
    assert_problem(alice.post("/api/v1/scenarios", big, format="json"), 413)
    assert_problem(alice.post("/api/v1/estimate", "gpu\n" + "h100-sxm\n" * 200, content_type="text/csv"), 413)


def test_400_query_parameter(alice) -> None:  # type: ignore[no-untyped-def]
    body = assert_problem(alice.get("/api/v1/hardware-quotes?gpu=nope"), 400, "#/gpu")
    assert body["errors"][0]["parameter"] == "gpu"


def test_401_without_credentials(anon) -> None:  # type: ignore[no-untyped-def]
    body = assert_problem(anon.get("/api/v1/scenarios"), 401)
    assert body["type"] == "/problems/not-authenticated"


def test_403_not_staff(alice) -> None:  # type: ignore[no-untyped-def]
    assert_problem(alice.post("/api/v1/feeds/aws/refresh"), 403)


def test_404_unknown_object_and_unknown_api_path(alice) -> None:  # type: ignore[no-untyped-def]
    assert assert_problem(alice.get("/api/v1/scenarios/123456"), 404)["type"] == "/problems/not-found"
    assert_problem(alice.get("/api/v1/no-such-thing"), 404)
    assert_problem(alice.get("/api/v2/scenarios"), 404)


@pytest.mark.parametrize("path", ["/api/v1/scenarios/abc", "/api/v1/no-such-thing", "/api/v2/scenarios"])
def test_an_unknown_api_path_is_problem_json_in_development_mode_too(alice, settings, path) -> None:  # type: ignore[no-untyped-def]
    # Under `make run` (DEBUG=1) Django skips handler404 and answered its 23 KB HTML debug page, where the schema
    # documents problem+json (an integrator fuzzing against make run counted 24 undocumented content types).
    settings.DEBUG = True
    assert assert_problem(alice.get(path), 404)["detail"] == "No such API endpoint."
    assert_problem(alice.post(path, {}, format="json"), 404)


def test_the_schema_and_docs_paths_still_add_their_slash(alice, settings) -> None:  # type: ignore[no-untyped-def]
    # Under DEBUG a POST there raised in the slash redirect (a 500 HTML page: a reviewer).
    settings.DEBUG = True
    for path in ("/api/schema", "/api/docs"):
        for answer in (alice.get(path), alice.post(path, {}, format="json")):
            assert answer.status_code == 301 and answer["Location"] == path + "/"
    assert_problem(alice.get("/api/schema%0A"), 404)  # not read as /api/schema: `$` also matched before a newline


def test_405_method_not_allowed(alice) -> None:  # type: ignore[no-untyped-def]
    assert_problem(alice.patch("/api/v1/gpus", {}, format="json"), 405)


def test_406_not_acceptable(alice) -> None:  # type: ignore[no-untyped-def]
    assert_problem(alice.get("/api/v1/gpus", HTTP_ACCEPT="application/xml"), 406)
    body = assert_problem(alice.post("/api/v1/advice?format=csv", {}, format="json"), 406)
    assert "available: json" in body["detail"]
    # A CSV request that fails still answers problem+json, not CSV.
    assert_problem(alice.get("/api/v1/hardware-quotes?format=csv&gpu=nope"), 400, "#/gpu")


def test_415_unsupported_media_type(alice) -> None:  # type: ignore[no-untyped-def]
    assert_problem(alice.post("/api/v1/scenarios", "name=x", content_type="application/x-www-form-urlencoded"), 415)


def test_500_is_a_problem_without_internals(alice, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    def broken() -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr("advisor.api.views.gpus.all_gpus", broken)
    client = alice
    client.raise_request_exception = False
    body = assert_problem(client.get("/api/v1/gpus"), 500)
    assert "secret internals" not in str(body) and body["type"] == "/problems/server-error"
    assert "secret internals" in caplog.text, "the error is logged"


def _throttled(client: APIClient, url: str, *, method: str = "get", limit: int) -> None:
    for _ in range(limit):
        assert getattr(client, method)(url).status_code != 429
    response = getattr(client, method)(url)
    body = assert_problem(response, 429)
    assert body["type"] == "/problems/throttled" and body["retry_after_s"] >= 1
    assert int(response["Retry-After"]) >= 1


def _rates(settings, **rates: str) -> None:  # type: ignore[no-untyped-def]
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            "anon": "1000/min",
            "user": "1000/min",
            "advice": "1000/min",
            "pdf": "1000/min",
            **rates,
        },
    }


def test_user_rate_is_per_user(settings, alice, bob) -> None:  # type: ignore[no-untyped-def]
    _rates(settings, user="3/min")
    _throttled(alice, "/api/v1/gpus", limit=3)
    assert bob.get("/api/v1/gpus").status_code == 200, "another user's budget is separate"


def test_advice_scope_is_stricter_than_the_user_rate(settings, alice) -> None:  # type: ignore[no-untyped-def]
    _rates(settings, user="100/min", advice="2/min")
    for _ in range(2):
        assert alice.post("/api/v1/advice", {}, format="json").status_code == 400
    assert_problem(alice.post("/api/v1/advice", {}, format="json"), 429)
    assert alice.get("/api/v1/gpus").status_code == 200, "other endpoints keep the user budget"


def test_pdf_scope(settings, alice) -> None:  # type: ignore[no-untyped-def]
    _rates(settings, pdf="1/min")
    _throttled(alice, "/api/v1/scenarios/999/proposal.pdf", limit=1)


def test_anonymous_rate(settings, anon) -> None:  # type: ignore[no-untyped-def]
    # Authentication is checked before throttling, so the anonymous rate guards the public schema.
    _rates(settings, anon="2/min")
    _throttled(anon, "/api/schema/", limit=2)


def test_throttle_counts_live_in_redis(settings, alice, redis_url) -> None:  # type: ignore[no-untyped-def]
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url}}
    cache.clear()
    _rates(settings, user="2/min")
    _throttled(alice, "/api/v1/gpus", limit=2)
    from django.core.cache import caches

    keys = caches["default"]._cache.get_client().keys("*throttle_user_*")
    assert keys, "the throttle history is stored in Redis"


def test_412_and_422_have_types_of_their_own(alice) -> None:  # type: ignore[no-untyped-def]
    """Both answered the catch-all "type": "/problems/error", "title": "Error" while every other status had its own."""
    created = alice.post("/api/v1/scenarios", {"name": "x", "scenario": scenario()}, format="json")
    url = f"/api/v1/scenarios/{created.json()['id']}"
    stale = assert_problem(
        alice.put(url, {"name": "y", "scenario": scenario()}, format="json", HTTP_IF_MATCH='"old"'), 412
    )
    assert (stale["type"], stale["title"]) == ("/problems/precondition-failed", "Precondition failed")
    body = {"name": "keyed", "scenario": scenario()}
    assert alice.post("/api/v1/scenarios", body, format="json", HTTP_IDEMPOTENCY_KEY="k").status_code == 201
    reused = alice.post("/api/v1/scenarios", {**body, "name": "other"}, format="json", HTTP_IDEMPOTENCY_KEY="k")
    problem = assert_problem(reused, 422)
    assert (problem["type"], problem["title"]) == ("/problems/unprocessable-content", "Unprocessable content")


def test_the_anonymous_rate_is_not_escaped_by_a_made_up_x_forwarded_for(settings, anon) -> None:  # type: ignore[no-untyped-def]
    # DRF's own client identity is the whole X-Forwarded-For header when NUM_PROXIES is unset: a new made-up header
    # on each request was a fresh anonymous budget. The client address is core.ratelimit's (TRUSTED_PROXIES).
    _rates(settings, anon="2/min")
    statuses = [anon.get("/api/schema/", HTTP_X_FORWARDED_FOR=f"192.0.2.{i}").status_code for i in range(4)]
    assert statuses[2:] == [429, 429]


def test_the_problem_schema_declares_errors_omitted(client) -> None:  # type: ignore[no-untyped-def]
    """A 400 with more than MAX_ERRORS_PER_RESPONSE errors carries errors_omitted (README 'Many errors at once'),
    but the Problem component did not declare it: a generated client found it only in additional_properties."""
    problem = client.get("/api/schema/?format=json").json()["components"]["schemas"]["Problem"]
    assert problem["properties"]["errors_omitted"]["type"] == "integer"
    assert "errors_omitted" not in problem.get("required", [])
