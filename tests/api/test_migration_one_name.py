"""Migration 0012: scenarios and fleets (and their versions) saved with two names, or with no name in the document,
before the one-name rule carry their row's name in the document after it, so a client's GET -> PUT of them is
accepted (it was a 400: "the name ... and the document's own name ... differ")."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from rest_framework.test import APIClient

from tests.advisor.fleet.figures import BASE_AND_WEEK
from tests.api.examples import scenario

BEFORE = [("advisor", "0011_calibration_loo_mape_null_until_fitted")]
AFTER = [("advisor", "0012_one_name_per_saved_document")]


def _migrate(target: list[tuple[str, str]]) -> Any:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def _saved_with(apps: Any, kind: str, owner_id: int, name: str, document: dict[str, Any]) -> Any:
    """A saved item and its version 1, stored as the code before the one-name rule stored them."""
    item = apps.get_model("advisor", kind).objects.create(owner_id=owner_id, name=name, document=document)
    parent = {"Scenario": "scenario", "Fleet": "fleet"}[kind]
    apps.get_model("advisor", f"{kind}Version").objects.create(**{parent: item}, number=1, name=name, document=document)
    return item


@pytest.mark.django_db(transaction=True)
def test_items_saved_with_two_names_carry_the_rows_name_after(django_user_model) -> None:  # type: ignore[no-untyped-def]
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    try:
        _check(latest, django_user_model)
    finally:
        # Back to every app's newest migration: the tests after this one share the database.
        _migrate(latest)


def _check(latest: list[tuple[str, str]], users: Any) -> None:
    old = _migrate(BEFORE)
    user = old.get_model("auth", "User").objects.create(username="before-0012")
    unnamed = {key: value for key, value in scenario().items() if key != "name"}
    two_names = _saved_with(old, "Scenario", user.pk, "Legacy A", {**scenario(), "name": "Legacy B"})
    no_name = _saved_with(old, "Scenario", user.pk, "Legacy C", unnamed)
    same = _saved_with(old, "Scenario", user.pk, "Kept", {**scenario(), "name": "Kept"})
    fleet = _saved_with(old, "Fleet", user.pk, "Team A budget", {**BASE_AND_WEEK, "name": "2027 program"})

    new = _migrate(AFTER)
    for kind, item, name in [
        ("Scenario", two_names, "Legacy A"),
        ("Scenario", no_name, "Legacy C"),
        ("Scenario", same, "Kept"),
        ("Fleet", fleet, "Team A budget"),
    ]:
        stored = new.get_model("advisor", kind).objects.get(pk=item.pk)
        assert stored.name == name and stored.document["name"] == name, (kind, stored.document.get("name"))
        version = stored.versions.get(number=1)
        assert version.document["name"] == name
    assert _without_name(new.get_model("advisor", "Scenario").objects.get(pk=no_name.pk).document) == unnamed

    _migrate(BEFORE)  # reversible (a no-op): the rows keep the aligned names
    _migrate(latest)
    client = APIClient()
    client.force_authenticate(users.objects.get(username="before-0012"))
    for noun, field, item in [("scenarios", "scenario", two_names), ("fleets", "fleet", fleet)]:
        got = client.get(f"/api/v1/{noun}/{item.pk}")
        body = {"name": got.json()["name"], field: got.json()[field]}
        put = client.put(f"/api/v1/{noun}/{item.pk}", body, format="json", HTTP_IF_MATCH=got["ETag"])
        assert put.status_code == 200, put.content[:500]
        # The guide's restore: PUT version 1 back under its listed name.
        versions = client.get(f"/api/v1/{noun}/{item.pk}/versions") if noun == "scenarios" else None
        if versions is not None:
            first = client.get(f"/api/v1/{noun}/{item.pk}/versions/1").json()
            restore = {"name": versions.json()["results"][-1]["name"], field: first}
            assert client.put(f"/api/v1/{noun}/{item.pk}", restore, format="json").status_code == 200


def _without_name(document: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in document.items() if key != "name"}
