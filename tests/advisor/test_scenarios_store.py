from __future__ import annotations

import pytest

from advisor import scenarios
from advisor.models import Scenario
from advisor.versioned import DocumentNameError

DOCUMENT = {"workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1e12}, "gpu": "h100-sxm"}


@pytest.mark.django_db
def test_every_save_keeps_the_previous_version(user) -> None:
    scenario = scenarios.scenario_create(owner=user, name="7B", document=DOCUMENT)
    changed = {**DOCUMENT, "gpu": "a100-80gb"}
    scenarios.scenario_update(scenario=scenario, name="7B on A100", document=changed)
    versions = list(scenarios.scenario_versions(scenario=scenario))
    assert [v.number for v in versions] == [2, 1]
    assert versions[1].document["gpu"] == "h100-sxm"
    assert versions[0].name == "7B on A100"
    restored = scenarios.scenario_restore_version(scenario=scenario, number=1)
    assert restored.document["gpu"] == "h100-sxm"
    assert restored.versions.count() == 3


@pytest.mark.django_db
def test_another_users_scenario_does_not_exist_for_you(user, other_user) -> None:
    scenario = scenarios.scenario_create(owner=user, name="mine", document=DOCUMENT)
    with pytest.raises(Scenario.DoesNotExist):
        scenarios.scenario_for_user(user=other_user, scenario_id=scenario.pk)
    assert scenarios.scenario_for_user(user=user, scenario_id=scenario.pk) == scenario


@pytest.mark.django_db
def test_names_are_validated(user) -> None:
    with pytest.raises(DocumentNameError, match="must not be empty"):
        scenarios.scenario_create(owner=user, name="   ", document=DOCUMENT)
    with pytest.raises(DocumentNameError, match="at most 200"):
        scenarios.scenario_create(owner=user, name="x" * 201, document=DOCUMENT)


@pytest.mark.django_db
def test_duplicate_belongs_to_the_new_owner_and_copies_the_document(user, other_user) -> None:
    original = scenarios.scenario_create(owner=user, name="base", document=DOCUMENT)
    copy = scenarios.scenario_duplicate(scenario=original, owner=user)
    # One item, one name: the copy's document carries the copy's name (its advice and PDF read the document's).
    assert (
        copy.pk != original.pk and copy.name == "base (copy)" and copy.document == {**DOCUMENT, "name": "base (copy)"}
    )


@pytest.mark.django_db
def test_a_rename_renames_the_document_too(user) -> None:
    # A probe: the web's rename changed only the saved name, so the advice and the PDF kept the old one.
    scenario = scenarios.scenario_create(owner=user, name="base", document={**DOCUMENT, "name": "base"})
    renamed = scenarios.scenario_rename(scenario=scenario, name="  new name ")
    assert renamed.name == "new name" and renamed.document["name"] == "new name"
    assert {k: v for k, v in renamed.document.items() if k != "name"} == {
        k: v for k, v in DOCUMENT.items() if k != "name"
    }


@pytest.mark.django_db
def test_share_links_are_unguessable_and_revocable(user) -> None:
    scenario = scenarios.scenario_create(owner=user, name="shared", document=DOCUMENT)
    first = scenarios.share_link_create(scenario=scenario)
    second = scenarios.share_link_create(scenario=scenario)
    assert first.token != second.token and len(first.token) >= 40
    assert scenarios.scenario_for_share_token(token=first.token) == scenario
    scenarios.share_link_revoke(link=first)
    assert scenarios.scenario_for_share_token(token=first.token) is None
    assert scenarios.scenario_for_share_token(token=second.token) == scenario
    assert scenarios.scenario_for_share_token(token="guess") is None
