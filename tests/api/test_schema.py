"""The OpenAPI document builds, validates with no warnings, is versioned, and the docs need no CDN."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
import yaml
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_schema_validates_without_warnings(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "schema.yml"
    call_command("spectacular", "--api-version", "v1", "--file", str(out), "--validate", "--fail-on-warn")
    schema = yaml.safe_load(out.read_text())
    assert schema["openapi"].startswith("3.")
    assert "v1" in schema["info"]["version"]
    assert schema["paths"], "no paths"
    assert all(path.startswith("/api/v1/") for path in schema["paths"]), list(schema["paths"])
    assert "tokenAuth" in schema["components"]["securitySchemes"]


def test_every_operation_declares_problem_responses(client) -> None:  # type: ignore[no-untyped-def]
    schema = client.get("/api/schema/?format=json").json()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method == "parameters":
                continue
            for code in ("400", "401", "404", "429", "default"):
                content = operation["responses"][code]["content"]
                assert list(content) == ["application/problem+json"], (path, method, code)


def test_each_answer_has_one_media_type_and_csv_and_workbooks_have_their_own_operations(client) -> None:  # type: ignore[no-untyped-def]
    """A generated client reads a response in the first media type it lists: with JSON and CSV (or a workbook) in
    one 200 and a typed `format` parameter choosing between them, every `?format=csv` and `?format=xlsx` call
    raised (JSONDecodeError, UnicodeDecodeError). Each rendering is an operation of its own."""
    schema = client.get("/api/schema/?format=json").json()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if method == "parameters":
                continue
            assert "format" not in {p["name"] for p in operation.get("parameters", [])}, (path, method)
            for code, response in operation["responses"].items():
                if code.startswith("2") and "content" in response:
                    assert len(response["content"]) == 1, (path, method, code, list(response["content"]))
    media = {
        path: {
            method: list(op["responses"][next(c for c in op["responses"] if c.startswith("2"))].get("content", {}))
            for method, op in ops.items()
            if method != "parameters"
        }
        for path, ops in schema["paths"].items()
    }
    for listed in (
        "offers",
        "offers/{offer_id}/history",
        "feeds",
        "gpus",
        "gpus/{gpu_id}/price-history",
        "hardware-quotes",
        "scenarios",
        "calibrations",
        "calibrations/{calibration_id}/residuals",
        "tokens",
    ):
        assert media[f"/api/v1/{listed}"]["get"] == ["application/json"], listed
        assert media[f"/api/v1/{listed}.csv"]["get"] == ["text/csv"], listed
    assert media["/api/v1/estimate.csv"]["post"] == ["text/csv"]
    assert media["/api/v1/proposals/{proposal_id}"]["get"] == ["application/json"]
    xlsx = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert media["/api/v1/proposals/{proposal_id}/proposal.xlsx"]["get"] == [xlsx]


def test_schema_served_publicly(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/v1/advice" in response.content or b"/api/v1/gpus" in response.content


def test_docs_page_has_no_cdn(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    external = re.findall(r"""(?:src|href)=["'](https?://[^"']+)""", html)
    assert external == [], external
    # The assets it names are served by this app.
    assets = re.findall(r"""(?:src|href)=["'](/static/[^"']+)""", html)
    assert any(asset.endswith(".js") for asset in assets), assets
    for asset in assets:
        assert client.get(asset).status_code == 200, asset


def _served(client) -> dict:  # type: ignore[no-untyped-def]
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    return response.json()


def test_served_document_is_identical_on_every_fetch_and_resolves(client) -> None:  # type: ignore[no-untyped-def]
    from openapi_spec_validator import validate

    first = _served(client)
    assert client.get("/api/docs/").status_code == 200
    second = _served(client)
    assert first == second
    assert first["openapi"].startswith("3.1")
    for document in (first, second):
        validate(document)  # resolves every $ref: a dangling one raises


def test_component_titles_are_distinct(client) -> None:  # type: ignore[no-untyped-def]
    components = _served(client)["components"]["schemas"]
    titles = [schema["title"] for schema in components.values() if "title" in schema]
    assert len(titles) == len(set(titles)), titles


def _deref(components: dict, node: dict) -> dict:  # type: ignore[type-arg]
    while "$ref" in node:
        node = components[node["$ref"].rsplit("/", 1)[-1]]
    if "anyOf" in node and "properties" not in node:  # a nullable object: the object
        typed = [b for b in node["anyOf"] if b.get("type") != "null"]
        node = _deref(components, typed[0]) if len(typed) == 1 else node
    return node


def test_activation_checkpointing_is_boolean_or_selective(client) -> None:  # type: ignore[no-untyped-def]
    components = _served(client)["components"]["schemas"]
    workload = components["Scenario"]["properties"]["workload"]
    training = _deref(components, workload["discriminator"]["mapping"] and {"$ref": workload["oneOf"][0]["$ref"]})
    assert "tokens" in training["properties"]
    parallelism = _deref(components, training["properties"]["parallelism"])
    ac = parallelism["properties"]["activation_checkpointing"]
    assert "enum" not in ac
    branches = ac.get("oneOf") or ac["anyOf"]
    assert {"type": "boolean"} in branches and {"type": "string", "enum": ["selective"]} in branches, ac


def test_scenario_workloads_are_a_union_discriminated_by_kind(client) -> None:  # type: ignore[no-untyped-def]
    components = _served(client)["components"]["schemas"]
    workload = components["Scenario"]["properties"]["workload"]
    mapping = workload["discriminator"]["mapping"]
    assert workload["discriminator"]["propertyName"] == "kind" and set(mapping) == {"training", "inference"}
    assert [branch["$ref"] for branch in workload["oneOf"]] == [mapping["training"], mapping["inference"]]
    for kind, ref in mapping.items():
        branch = _deref(components, {"$ref": ref})
        assert branch["additionalProperties"] is False and branch["properties"]["kind"]["const"] == kind
    # Every object of the Scenario is closed, as the parser refuses unknown fields.
    for name, schema in components.items():
        if name.startswith("Scenario") and schema.get("type") == "object" and "properties" in schema:
            if name in ("ScenarioListItem", "ScenarioOutput", "ScenarioVersionListItem"):
                continue  # responses: what the server writes, not what it reads
            assert schema.get("additionalProperties") is False, name


def test_the_docs_carry_the_integration_guide(client) -> None:  # type: ignore[no-untyped-def]
    description = _served(client)["info"]["description"]
    steps = ("Generate a client", "Authenticate", "Create a scenario", "Read the recommendation", "Issue a proposal")
    for step in steps:
        assert step in description, step


# Request bodies the server closes (unknown fields are a 400 naming them), with a valid body to add a field to.
CLOSED_BODIES = [
    ("/api/v1/scenarios", "ScenarioInputRequest", {"name": "x", "scenario": {"gpu": "h100-sxm"}}),
    ("/api/v1/fleets", "FleetInputRequest", {"name": "x", "fleet": {"gpu": "h100-sxm"}}),
    ("/api/v1/tokens", "TokenCreateRequest", {"name": "x"}),
    ("/api/v1/estimate", None, {"runs": []}),
    ("/api/v1/calibrations", None, {"name": "x", "runs": []}),
]


@pytest.mark.parametrize(("path", "component", "body"), CLOSED_BODIES)
def test_request_bodies_the_server_closes_are_closed_in_the_schema(path, component, body, client, alice) -> None:  # type: ignore[no-untyped-def]
    from tests.api.conftest import assert_problem

    document = _served(client)
    schema = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    if component is not None:
        assert schema == {"$ref": f"#/components/schemas/{component}"}
        schema = document["components"]["schemas"][component]
    assert schema["additionalProperties"] is False, (path, schema)
    assert_problem(alice.post(path, {**body, "colour": "red"}, format="json"), 400, "#/colour")


def test_the_idempotency_key_schema_is_what_the_server_accepts(client, alice) -> None:  # type: ignore[no-untyped-def]
    import re

    from advisor.api.idempotency import KEY_PATTERN, MAX_KEY_LENGTH
    from tests.api.conftest import assert_problem
    from tests.api.examples import scenario

    parameters = _served(client)["paths"]["/api/v1/scenarios"]["post"]["parameters"]
    key = next(p for p in parameters if p["name"] == "Idempotency-Key")["schema"]
    assert key == {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH, "pattern": KEY_PATTERN}
    body = {"name": "keyed", "scenario": scenario()}
    # A NUL was stored on SQLite and a 500 on PostgreSQL (an outsider's probe); RFC 8941 sf-string: printable ASCII.
    for refused in ("", "   ", "k" * (MAX_KEY_LENGTH + 1), "a\x00b", "a\x01b", "a\x7fb", "cl\u00e9", "k1\n"):
        assert not re.fullmatch(KEY_PATTERN, refused) or len(refused) > MAX_KEY_LENGTH
        response = alice.post("/api/v1/scenarios", body, format="json", HTTP_IDEMPOTENCY_KEY=refused)
        assert_problem(response, 400)
    for accepted in ("k", " k ", "k" * MAX_KEY_LENGTH, "550e8400-e29b-41d4-a716-446655440000"):
        assert re.match(KEY_PATTERN, accepted)
        assert alice.post("/api/v1/scenarios", body, format="json", HTTP_IDEMPOTENCY_KEY=accepted).status_code == 201


def test_every_declared_request_body_is_required_as_the_server_requires_it(client, alice) -> None:  # type: ignore[no-untyped-def]
    from tests.api.conftest import assert_problem

    paths = _served(client)["paths"]
    bodies = {
        (method, path): operation["requestBody"]
        for path, operations in paths.items()
        for method, operation in operations.items()
        if method != "parameters" and "requestBody" in operation
    }
    assert ("post", "/api/v1/advice") in bodies and ("post", "/api/v1/fleet-plans") in bodies
    assert [key for key, body in bodies.items() if body.get("required") is not True] == []
    for path in ("/api/v1/advice", "/api/v1/fleet-plans", "/api/v1/estimate", "/api/v1/calibrations"):
        assert_problem(alice.post(path, content_type="application/json"), 400)


@pytest.mark.parametrize(
    ("component", "field"),
    [("ScenarioInputRequest", "name"), ("FleetInputRequest", "name"), ("TokenCreateRequest", "name")],
)
def test_text_the_server_refuses_is_refused_by_the_schema(client, alice, component, field) -> None:  # type: ignore[no-untyped-def]
    """NUL in any string (advisor.api.parsers) and all-blank names (DRF trims, then refuses blank): the pattern
    says both, read as JSON Schema reads it (a search, not a full match)."""
    pattern = _served(client)["components"]["schemas"][component]["properties"][field]["pattern"]
    for refused in ("a\x00b", "   ", "\x00"):
        assert re.search(pattern, refused) is None, refused
    for accepted in ("7B pretraining", " padded ", "x"):
        assert re.search(pattern, accepted), accepted
    from tests.api.conftest import assert_problem

    assert_problem(alice.post("/api/v1/tokens", {"name": "a\x00b"}, format="json"), 400, "#/name")
    assert_problem(alice.post("/api/v1/tokens", {"name": "   "}, format="json"), 400, "#/name")


def _response_validator(document: dict, path: str) -> jsonschema.Draft202012Validator:  # type: ignore[type-arg]
    schema = document["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    # OpenAPI 3.1 components are JSON Schema 2020-12: validated as such, `nullable` means nothing.
    return jsonschema.Draft202012Validator({**schema, "components": document["components"]})


@pytest.mark.parametrize("path", ["/api/v1/scenarios", "/api/v1/tokens", "/api/v1/fleets", "/api/v1/calibrations"])
def test_list_pages_validate_against_the_served_document(path: str, client, alice, user) -> None:  # type: ignore[no-untyped-def]
    """The first and only page has next and previous null; the last page has previous set and next null."""
    from advisor.api.tokens import api_token_create

    api_token_create(user=user, name="second")  # two tokens: /api/v1/tokens has a last page after a first
    validator = _response_validator(_served(client), path)
    for query in ["", "?page_size=1"]:
        first = alice.get(path + query)
        assert first.status_code == 200, first.content[:300]
        assert first.json()["previous"] is None
        assert [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(first.json())] == []
    if alice.get(path).json()["count"] > 1:
        last = alice.get(path + "?page_size=1&page=last").json()
        assert last["next"] is None and last["previous"]
        assert [e.message for e in validator.iter_errors(last)] == []


def test_the_served_document_has_no_openapi_3_0_nullable(client) -> None:  # type: ignore[no-untyped-def]
    """3.1 dropped `nullable` (JSON Schema says null with type lists); a 3.1 validator ignores it silently."""
    assert '"nullable"' not in json.dumps(_served(client))


def _header_names(response: dict) -> set[str]:  # type: ignore[type-arg]
    return set(response.get("headers", {}))


@pytest.mark.parametrize("saved", ["scenarios", "fleets"])
def test_saved_items_document_their_etag_and_if_match_alike(client, saved: str) -> None:  # type: ignore[no-untyped-def]
    """Saved fleets "live under /api/v1/fleets like scenarios" (DESIGN.md); an integrator reading the document saw
    neither an ETag nor If-Match on fleets, and their PUT overwrote whatever the client's copy was."""
    paths = _served(client)["paths"]
    detail = paths[f"/api/v1/{saved}/{{{saved[:-1]}_id}}"]
    assert "ETag" in _header_names(paths[f"/api/v1/{saved}"]["post"]["responses"]["201"])
    assert "ETag" in _header_names(detail["get"]["responses"]["200"])
    put = detail["put"]
    assert "ETag" in _header_names(put["responses"]["200"])
    if_match = next(p for p in put["parameters"] if p["name"] == "If-Match")
    assert if_match["in"] == "header" and not if_match.get("required", False)
    assert list(put["responses"]["412"]["content"]) == ["application/problem+json"]


# Every GET answered by core.api.conditional.conditional_response: (path, whether it also sends Last-Modified).
CONDITIONAL_GETS = [
    ("/api/v1/offers", True),
    ("/api/v1/offers.csv", True),
    ("/api/v1/scenarios/{scenario_id}", False),
    ("/api/v1/fleets/{fleet_id}", False),
]


def test_each_operation_that_answers_304_documents_it_and_its_validators(client, alice) -> None:  # type: ignore[no-untyped-def]
    """/offers, /offers.csv and /scenarios/{id} answered 304 to If-None-Match and no operation listed a 304: a client
    generated by openapi-python-client sent the empty 304 to its `default` branch, which parsed it as a problem and
    raised. Each documents the 304 (no body), If-None-Match, and the ETag (and Last-Modified) it sends."""
    from pricing.services import load_bundled_data
    from tests.advisor.fleet.figures import BASE_AND_WEEK
    from tests.api.examples import scenario

    load_bundled_data()
    paths = _served(client)["paths"]
    documented = {path for path, ops in paths.items() if "304" in ops.get("get", {}).get("responses", {})}
    assert documented == {path for path, _ in CONDITIONAL_GETS}
    ids = {
        "scenario_id": alice.post("/api/v1/scenarios", {"name": "s", "scenario": scenario()}, format="json").json()[
            "id"
        ],
        "fleet_id": alice.post(
            "/api/v1/fleets", {"name": "f", "fleet": {**BASE_AND_WEEK, "name": "f"}}, format="json"
        ).json()["id"],
    }
    for path, dated in CONDITIONAL_GETS:
        operation = paths[path]["get"]
        headers = {"ETag", "Last-Modified"} if dated else {"ETag"}
        assert _header_names(operation["responses"]["200"]) == headers, path
        assert (
            "content" not in operation["responses"]["304"] and _header_names(operation["responses"]["304"]) == headers
        )
        if_none_match = next(p for p in operation["parameters"] if p["name"] == "If-None-Match")
        assert if_none_match["in"] == "header" and not if_none_match.get("required", False)
        url = path.format(**ids)
        first = alice.get(url)
        assert first.status_code == 200 and headers <= set(first.headers), (path, first.status_code)
        again = alice.get(url, HTTP_IF_NONE_MATCH=first["ETag"])
        assert again.status_code == 304 and again.content == b"" and headers <= set(again.headers), path


@pytest.mark.parametrize(
    ("method", "path"),
    [("get", "/api/v1/fleets/{fleet_id}/plan"), ("post", "/api/v1/calibrations/{calibration_id}/activate")],
)
def test_the_conflicts_operations_answer_are_documented(client, method: str, path: str) -> None:  # type: ignore[no-untyped-def]
    """A saved fleet the current rules reject (GET /plan) and a calibration still fitting or whose fit failed
    (activate) answer 409; neither operation listed it (its sibling /plan.pdf did)."""
    responses = _served(client)["paths"][path][method]["responses"]
    assert list(responses["409"]["content"]) == ["application/problem+json"]
    assert responses["409"]["description"] not in ("", "Error.")


def test_a_nullable_field_of_any_value_accepts_null(client) -> None:  # type: ignore[no-untyped-def]
    """Task.result was oneOf [{}, {"type": "null"}]: null matches both branches, so oneOf refused the null a pending
    task answers. Nothing in the document may repeat that."""
    document = _served(client)
    assert '"oneOf": [{}, {"type": "null"}]' not in json.dumps(document)
    task = {"$ref": "#/components/schemas/Task", "components": document["components"]}
    validator = jsonschema.Draft202012Validator(task)
    base = {"task_id": "t", "status": "PENDING", "status_url": "http://testserver/api/v1/tasks/t"}
    for result in (None, {"calibration_id": 1, "state": "ready"}, [1], "text", 3):
        assert [e.message for e in validator.iter_errors({**base, "result": result})] == [], result


def test_operations_declare_the_body_limit_media_type_and_queue_answers(client) -> None:  # type: ignore[no-untyped-def]
    """A probe: 413 (a body over the limit, estimate's layout budget), 415 (a body that is not JSON) and 503 with
    Retry-After (the task queue down) came back only as `default`."""
    paths = client.get("/api/schema/?format=json").json()["paths"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            if method == "parameters" or "requestBody" not in operation:
                continue
            for code in ("413", "415"):
                assert list(operation["responses"][code]["content"]) == ["application/problem+json"], (path, code)
    queued = [
        ("/api/v1/tasks/{task_id}", "get"),
        ("/api/v1/feeds/{feed}/refresh", "post"),
        ("/api/v1/calibrations", "post"),
    ]
    for path, method in queued:
        unavailable = paths[path][method]["responses"]["503"]
        assert list(unavailable["content"]) == ["application/problem+json"], path
        assert unavailable["headers"]["Retry-After"]["schema"]["type"] == "integer", path
    assert "503" not in paths["/api/v1/offers"]["get"]["responses"]
    assert "413" not in paths["/api/v1/offers"]["get"]["responses"]
