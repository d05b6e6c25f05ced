"""Scenarios CRUD: owner-only (another user's id is a 404), validated with pointers, versioned, paginated."""

from __future__ import annotations

import pytest

from advisor.models import Scenario
from tests.advisor.fleet.figures import BASE_AND_WEEK
from tests.api.conftest import assert_problem
from tests.api.examples import DESIGN_SCENARIO, scenario

pytestmark = pytest.mark.django_db


def _create(client, name: str = "plan", document: dict | None = None) -> dict:  # type: ignore[no-untyped-def]
    response = client.post("/api/v1/scenarios", {"name": name, "scenario": document or scenario()}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_create_returns_201_with_id_and_location(alice) -> None:  # type: ignore[no-untyped-def]
    body = _create(alice, "7B pretraining", DESIGN_SCENARIO)  # the document's own name: a second one is refused
    assert isinstance(body["id"], int) and body["name"] == "7B pretraining" and body["version"] == 1
    assert body["scenario"] == DESIGN_SCENARIO
    got = alice.get(f"/api/v1/scenarios/{body['id']}")
    assert got.status_code == 200 and got.json()["scenario"] == DESIGN_SCENARIO


def test_put_replaces_and_keeps_versions(alice) -> None:  # type: ignore[no-untyped-def]
    created = _create(alice)
    changed = scenario(gpu="a100-80gb")
    response = alice.put(f"/api/v1/scenarios/{created['id']}", {"name": "renamed", "scenario": changed}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["name"] == "renamed" and response.json()["scenario"]["gpu"] == "a100-80gb"
    assert alice.get(f"/api/v1/scenarios/{created['id']}").json()["version"] == 2
    assert Scenario.objects.get(pk=created["id"]).versions.count() == 2


def test_delete(alice) -> None:  # type: ignore[no-untyped-def]
    created = _create(alice)
    assert alice.delete(f"/api/v1/scenarios/{created['id']}").status_code == 204
    assert_problem(alice.get(f"/api/v1/scenarios/{created['id']}"), 404)


def test_other_users_scenario_is_404_for_every_method(alice, bob) -> None:  # type: ignore[no-untyped-def]
    created = _create(alice)
    url = f"/api/v1/scenarios/{created['id']}"
    missing = assert_problem(bob.get("/api/v1/scenarios/999999"), 404)
    for response in (
        bob.get(url),
        bob.put(url, {"name": "mine now", "scenario": scenario()}, format="json"),
        bob.delete(url),
    ):
        body = assert_problem(response, 404)
        # Indistinguishable from a missing id: nothing leaks that it exists.
        assert body["detail"] == missing["detail"]
    assert bob.get("/api/v1/scenarios").json()["count"] == 0
    assert Scenario.objects.get(pk=created["id"]).name == "plan"


@pytest.mark.parametrize(
    ("body", "pointers"),
    [
        ({"scenario": scenario()}, ["#/name"]),
        ({"name": "x"}, ["#/scenario"]),
        ({"name": "", "scenario": scenario()}, ["#/name"]),
        ({"name": "x" * 201, "scenario": scenario()}, ["#/name"]),
        ({"name": "x", "scenario": scenario(), "owner": 3}, ["#/owner"]),
        ({"name": "x", "scenario": scenario(gpu="h900")}, ["#/scenario/gpu"]),
        ({"name": "x", "scenario": scenario(surprise=1)}, ["#/scenario/surprise"]),
        ({"name": "x", "scenario": scenario(utilization=1.5, cluster_sizes=[0])}, ["#/scenario/utilization"]),
        ({"name": "x", "scenario": [1, 2]}, ["#/scenario"]),
        (
            {"name": "x", "scenario": {**scenario(), "workload": {"kind": "training", "model": {"params_b": -1}}}},
            ["#/scenario/workload/model/params_b", "#/scenario/workload/tokens"],
        ),
    ],
)
def test_invalid_input_names_each_field(alice, body, pointers) -> None:  # type: ignore[no-untyped-def]
    problem = assert_problem(alice.post("/api/v1/scenarios", body, format="json"), 400, *pointers)
    assert problem["type"] == "/problems/validation-error"
    assert not Scenario.objects.exists()


def test_put_validates_too(alice) -> None:  # type: ignore[no-untyped-def]
    created = _create(alice)
    response = alice.put(f"/api/v1/scenarios/{created['id']}", {"name": "x", "scenario": {"gpu": 1}}, format="json")
    assert_problem(response, 400, "#/scenario/gpu", "#/scenario/workload")
    assert alice.get(f"/api/v1/scenarios/{created['id']}").json()["version"] == 1


def test_list_is_paginated_and_owner_scoped(alice, bob) -> None:  # type: ignore[no-untyped-def]
    for i in range(5):
        _create(alice, f"s{i}")
    _create(bob, "bobs")
    page = alice.get("/api/v1/scenarios?page_size=2").json()
    assert page["count"] == 5 and len(page["results"]) == 2 and page["next"] and page["previous"] is None
    last = alice.get("/api/v1/scenarios?page_size=2&page=3").json()
    assert len(last["results"]) == 1 and last["next"] is None
    names = {
        item["name"]
        for p in (1, 2, 3)
        for item in alice.get(f"/api/v1/scenarios?page_size=2&page={p}").json()["results"]
    }
    assert names == {f"s{i}" for i in range(5)}
    past_end = alice.get("/api/v1/scenarios?page_size=2&page=99")
    assert past_end.status_code == 200
    assert past_end.json()["count"] == 5 and past_end.json()["results"] == [] and past_end.json()["next"] is None
    assert "page=3" in past_end.json()["previous"]
    for query, parameter in (
        ("page=0", "page"),
        ("page=x", "page"),
        ("page_size=0", "page_size"),
        ("page_size=501", "page_size"),
        ("page_size=a", "page_size"),
    ):
        body = assert_problem(alice.get(f"/api/v1/scenarios?{query}"), 400, f"#/{parameter}")
        assert body["errors"][0]["parameter"] == parameter
    assert "from 1" in alice.get("/api/v1/scenarios?page=-1&page_size=2").json()["errors"][0]["detail"]


def test_a_saved_scenario_comes_back_valid_against_the_served_schema(alice, client) -> None:  # type: ignore[no-untyped-def]
    """A document is stored as given and returned as saved, so the server takes only what the schema allows: a
    choice spelled otherwise is a 400 (it used to be saved, then broke a generated client on GET), 8.0 is an
    integer and is kept."""
    import jsonschema

    refused = scenario(gpu="H100-SXM", workload={"kind": "Training", "model": {"params_b": 1}, "tokens": 1e9})
    assert_problem(
        alice.post("/api/v1/scenarios", {"name": "x", "scenario": refused}, format="json"),
        400,
        "#/scenario/gpu",
        "#/scenario/workload/kind",
    )
    created = alice.post("/api/v1/scenarios", {"name": "x", "scenario": scenario(cluster_sizes=[8.0])}, format="json")
    assert created.status_code == 201, created.content
    fetched = alice.get(f"/api/v1/scenarios/{created.json()['id']}").json()
    components = client.get("/api/schema/?format=json").json()["components"]
    output = {"$ref": "#/components/schemas/ScenarioOutput", "components": components}
    validator = jsonschema.Draft202012Validator(output)
    assert [e.message for e in validator.iter_errors(fetched)] == []
    assert fetched["scenario"]["cluster_sizes"] == [8]


def test_the_envelope_name_is_the_documents_name(alice) -> None:  # type: ignore[no-untyped-def]
    # An outside client saved {"name": "7B pretraining", "scenario": {no name}} as the guide shows: the list said
    # "7B pretraining" but the advice, PDF and workbook said "Untitled scenario" (the document's default).
    document = scenario()
    created = _create(alice, "7B pretraining", document)
    assert created["scenario"] == {**document, "name": "7B pretraining"}
    advice = alice.get(f"/api/v1/scenarios/{created['id']}/advice").json()
    assert advice["scenario"]["name"] == "7B pretraining"
    url = f"/api/v1/scenarios/{created['id']}"
    put = alice.put(url, {"name": "7B v2", "scenario": document}, format="json")
    assert put.status_code == 200, put.content
    assert put.json()["scenario"]["name"] == "7B v2"
    same = alice.put(url, {"name": "7B v3", "scenario": {**document, "name": "7B v3"}}, format="json")
    assert same.status_code == 200 and same.json()["scenario"]["name"] == "7B v3"


def test_two_different_names_are_refused_naming_both(alice) -> None:  # type: ignore[no-untyped-def]
    body = {"name": "x", "scenario": scenario(name="y")}
    assert_problem(alice.post("/api/v1/scenarios", body, format="json"), 400, "#/name", "#/scenario/name")
    created = _create(alice, "x")
    assert_problem(
        alice.put(f"/api/v1/scenarios/{created['id']}", body, format="json"), 400, "#/name", "#/scenario/name"
    )
    assert Scenario.objects.get(pk=created["id"]).versions.count() == 1


ONE_NAME_DOORS = [
    ("/api/v1/scenarios", "scenario", scenario),
    ("/api/v1/fleets", "fleet", lambda **kw: {**BASE_AND_WEEK, **kw}),
]


@pytest.mark.parametrize("path, field, document", ONE_NAME_DOORS, ids=["scenario", "fleet"])
@pytest.mark.parametrize("own", [" base ", "base\u00a0", "base\u3000", "   "])
def test_a_document_name_is_compared_and_stored_stripped(alice, path, field, document, own) -> None:  # type: ignore[no-untyped-def]
    # A reviewer: {"name": "base", <document>: {"name": " base "}} was saved with the document keeping " base " (and
    # "base\u2028", "base\x85": line breaks, now refused anywhere in a name, below), so the advice and PDF printed
    # another name than the list. A blank one is no name.
    created = alice.post(path, {"name": "base", field: document(name=own)}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["name"] == "base" and created.json()[field]["name"] == "base"


@pytest.mark.parametrize("path, field, document", ONE_NAME_DOORS, ids=["scenario", "fleet"])
@pytest.mark.parametrize("line_break", ["\u2028", "\u2029", "\x85", "\r", "\n"])
def test_a_name_with_a_line_break_is_refused_naming_the_field(alice, path, field, document, line_break) -> None:  # type: ignore[no-untyped-def]
    # A name is one line; LF and CR were refused (control characters), the other line breaks were stored.
    name = f"Q3{line_break}plan"
    body = assert_problem(alice.post(path, {"name": name, field: document()}, format="json"), 400, "#/name")
    assert "line break" in str(body) or "control character" in str(body), body
    # In the document it is refused at the document's name (CR and LF by the document's schema, as controls; the
    # others as a second name beside the envelope's).
    in_document = {"name": "Q3plan", field: document(name=name)}
    assert_problem(alice.post(path, in_document, format="json"), 400, f"#/{field}/name")


def test_every_saved_version_can_be_listed_and_read(alice, bob) -> None:  # type: ignore[no-untyped-def]
    # An outside client could see "version": 3 but had no operation to read versions 1 and 2 (F1).
    created = _create(alice, "v1", scenario())
    url = f"/api/v1/scenarios/{created['id']}"
    alice.put(url, {"name": "v2", "scenario": scenario(gpu="a100-80gb")}, format="json")
    alice.put(url, {"name": "v3", "scenario": scenario(cluster_sizes=[16])}, format="json")
    listed = alice.get(f"{url}/versions")
    assert listed.status_code == 200, listed.content
    page = listed.json()
    assert page["count"] == 3 and [v["number"] for v in page["results"]] == [3, 2, 1]
    assert [v["name"] for v in page["results"]] == ["v3", "v2", "v1"]
    assert all(set(v) == {"number", "saved_at", "name"} for v in page["results"])
    first = alice.get(f"{url}/versions/1")
    assert first.status_code == 200 and first.json() == {**scenario(), "name": "v1"}
    assert alice.get(f"{url}/versions/2").json()["gpu"] == "a100-80gb"
    assert alice.get(f"{url}/versions?page_size=1").json()["next"]
    # Another user's scenario and a version that does not exist answer 404, as every owned item does.
    assert_problem(bob.get(f"{url}/versions"), 404)
    assert_problem(bob.get(f"{url}/versions/1"), 404)
    assert_problem(alice.get(f"{url}/versions/4"), 404)
    assert_problem(alice.get(f"{url}/versions/0"), 404)
    assert_problem(alice.get(f"{url}/versions/{10**23}"), 404)
    assert_problem(alice.get(f"{url}/versions/x"), 404)


@pytest.mark.parametrize("line_break", ["\u2028", "\u2029", "\x85"])
def test_every_stored_name_refuses_a_line_break_by_one_rule(line_break: str) -> None:
    # A reviewer: scenario and fleet names refused U+2028/U+2029/U+0085 (advisor.versioned), while token and
    # calibration names (core.textcheck.clean_name) and the JSON Schema pattern still took them. One character class.
    import re

    from advisor.scenario_model import NAME_TEXT
    from core.textcheck import clean_name

    with pytest.raises(ValueError, match="line breaks"):
        clean_name(f"Q3{line_break}plan", max_length=200)
    assert re.fullmatch(NAME_TEXT, f"Q3{line_break}plan") is None
    assert re.fullmatch(NAME_TEXT, f"base{line_break}") is None  # the pattern does not strip: refused at the end too
    assert re.fullmatch(NAME_TEXT, "Q3 plan") is not None


@pytest.mark.parametrize("path, field, document", ONE_NAME_DOORS, ids=["scenario", "fleet"])
def test_two_different_names_say_what_works_and_it_does(alice, path, field, document) -> None:  # type: ignore[no-untyped-def]
    # A hostile probe: the message said "give one of them, or the same", but leaving out the envelope's name is
    # "This field is required"; only leaving out the document's own name (or giving the same) saves.
    body = assert_problem(alice.post(path, {"name": "x", field: document(name="y")}, format="json"), 400)
    detail = body["errors"][0]["detail"]
    assert "give one of them" not in detail and "leave the document's own name out" in detail, detail
    unnamed = {key: value for key, value in document(name="y").items() if key != "name"}
    assert alice.post(path, {"name": "x", field: unnamed}, format="json").status_code == 201
    assert alice.post(path, {"name": "y", field: document(name="y")}, format="json").status_code == 201


BIDI_CONTROLS = [
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\u200e",
    "\u200f",
]


@pytest.mark.parametrize("bidi", BIDI_CONTROLS)
def test_a_name_with_a_bidi_control_is_refused_by_the_one_rule(alice, bidi: str) -> None:  # type: ignore[no-untyped-def]
    # An outsider (F6): "budget cap \u202e000,05$\u202c per year" was stored and rendered as "budget cap $50,000 per
    # year" on the proposal page and the PDF cover. Bidi embedding, override and isolate controls and the direction
    # marks are refused in names, by the same character class as the controls (API, schema pattern, clean_name).
    import re

    from advisor.scenario_model import NAME_TEXT
    from core.textcheck import clean_name

    name = f"budget cap {bidi}000,05$ per year"
    with pytest.raises(ValueError, match="bidirectional"):
        clean_name(name, max_length=200)
    assert re.fullmatch(NAME_TEXT, name) is None
    body = assert_problem(
        alice.post("/api/v1/scenarios", {"name": name, "scenario": scenario()}, format="json"), 400, "#/name"
    )
    assert "bidirectional" in str(body), body
    in_document = {"name": "plain", "scenario": scenario(name=name)}
    assert_problem(alice.post("/api/v1/scenarios", in_document, format="json"), 400, "#/scenario/name")


INVISIBLE_NAMES = {
    "zero-width space": "\u200b",
    "byte order mark": "\ufeff",
    "zero-width joiner": "a\u200db",
    "Hangul filler": "\u3164",
    "Hangul choseong filler": "\u115f",
    "Hangul jungseong filler": "\u1160",
    "halfwidth Hangul filler": "\uffa0",
    "combining marks alone": "\u0301\u0301",
    "tag characters": "ok\U000e0041\U000e0042",
    "noncharacter": "a\uffff",
    "private use": "a\ue000",
    "astral private use": "a\U000f0000",
    "astral noncharacter": "a\U0001ffff",
}


@pytest.mark.parametrize("name", INVISIBLE_NAMES.values(), ids=INVISIBLE_NAMES.keys())
def test_a_name_that_hides_or_shows_nothing_is_refused_naming_what(alice, name: str) -> None:  # type: ignore[no-untyped-def]
    # An outsider's probe (F9): "\u200b", "\u3164", "\u0301\u0301", tags, noncharacters and private-use characters
    # were stored as names (200/201): a name that renders blank, or as another name ("mi\u200bne" beside "mine").
    from core.textcheck import clean_name

    with pytest.raises(ValueError) as refused:
        clean_name(name, max_length=200)
    said = str(refused.value)
    assert "U+" in said and ("visible" in said or "invisible" in said), said
    body = assert_problem(
        alice.post("/api/v1/scenarios", {"name": name, "scenario": scenario()}, format="json"), 400, "#/name"
    )
    assert "U+" in str(body) or "visible" in str(body), body
    in_document = {"name": "plain", "scenario": scenario(name=f"plain{name}")}
    assert_problem(alice.post("/api/v1/scenarios", in_document, format="json"), 400, "#/scenario/name")


@pytest.mark.parametrize("name", ["café", "東京 plan", "Q3 \u2764\ufe0f", "a\u0301 b", "\U0001f680 launch"])
def test_visible_names_in_any_script_are_kept_and_stored_in_nfc(alice, name: str) -> None:  # type: ignore[no-untyped-def]
    import unicodedata

    from core.textcheck import clean_name

    decomposed = unicodedata.normalize("NFD", name)
    assert clean_name(decomposed, max_length=200) == unicodedata.normalize("NFC", name)
    created = alice.post("/api/v1/scenarios", {"name": decomposed, "scenario": scenario()}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["name"] == unicodedata.normalize("NFC", name)


def test_an_old_item_stored_with_an_invisible_name_is_kept_and_its_update_says_what_to_change(alice) -> None:  # type: ignore[no-untyped-def]
    # Stored names are left as they are (no migration); saving one again names the character to remove.
    created = alice.post("/api/v1/scenarios", {"name": "mine", "scenario": scenario()}, format="json").json()
    Scenario.objects.filter(pk=created["id"]).update(name="mi\u200bne")
    assert alice.get(f"/api/v1/scenarios/{created['id']}").json()["name"] == "mi\u200bne"
    again = {"name": "mi\u200bne", "scenario": scenario()}
    body = assert_problem(alice.put(f"/api/v1/scenarios/{created['id']}", again, format="json"), 400, "#/name")
    assert "U+200B at character 3: remove it" in str(body), body
