"""Saved scenarios: services (writes) and selectors (reads) shared by the web pages and the API.

Every write keeps the previous state as a ScenarioVersion, so nothing a user saved is lost by an
overwrite. Reads are always scoped to the owner: another user's scenario does not exist for you.
Documents are validated by the caller through advisor.scenario before they reach these functions."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from advisor.models import Scenario, ScenarioVersion, ShareLink
from advisor.versioned import versioned_create, versioned_update
from core.fields import char_max_length

NAME_MAX_LENGTH = char_max_length(Scenario, "name")


def scenario_create(*, owner: User, name: str, document: dict[str, Any]) -> Scenario:
    return versioned_create(objects=Scenario.objects, owner=owner, name=name, document=document)


def scenario_update(*, scenario: Scenario, name: str | None = None, document: dict[str, Any] | None = None) -> Scenario:
    """Overwrite name and/or document; the new state becomes the next version."""
    return versioned_update(objects=Scenario.objects, item=scenario, name=name, document=document)


def scenario_rename(*, scenario: Scenario, name: str) -> Scenario:
    """The new name on the item and in its document: one item, one name (the API's rule, advisor.versioned
    .named_document; a probe: a renamed scenario's advice and PDF kept the old name)."""
    return scenario_update(scenario=scenario, name=name, document={**scenario.document, "name": name.strip()})


def scenario_duplicate(*, scenario: Scenario, owner: User, name: str | None = None) -> Scenario:
    copy_name = name or f"{scenario.name} (copy)"[:NAME_MAX_LENGTH]
    return scenario_create(owner=owner, name=copy_name, document={**scenario.document, "name": copy_name.strip()})


@transaction.atomic
def scenario_restore_version(*, scenario: Scenario, number: int) -> Scenario:
    version = scenario_version(scenario=scenario, number=number)
    return scenario_update(scenario=scenario, name=version.name, document=version.document)


def scenario_delete(*, scenario: Scenario) -> None:
    scenario.delete()


def share_link_create(*, scenario: Scenario) -> ShareLink:
    return ShareLink.objects.create(scenario=scenario)


def share_link_revoke(*, link: ShareLink) -> None:
    if link.revoked_at is None:
        ShareLink.objects.filter(pk=link.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
        link.refresh_from_db(fields=["revoked_at"])


# --- selectors ---


def scenarios_for_user(*, user: User) -> QuerySet[Scenario]:
    return Scenario.objects.filter(owner=user)


def scenario_for_user(*, user: User, scenario_id: int) -> Scenario:
    """Raises Scenario.DoesNotExist for a missing id and for another user's scenario alike."""
    return Scenario.objects.get(owner=user, pk=scenario_id)


def scenario_versions(*, scenario: Scenario) -> QuerySet[ScenarioVersion]:
    return scenario.versions.all()


def scenario_version(*, scenario: Scenario, number: int) -> ScenarioVersion:
    """Raises ScenarioVersion.DoesNotExist for a number the scenario never had."""
    return scenario.versions.get(number=number)


def share_link_for_scenario(*, scenario: Scenario, link_id: int) -> ShareLink | None:
    """The scenario's share link ``link_id`` (revoked or not); None for a missing id and another scenario's link."""
    return ShareLink.objects.filter(scenario=scenario, pk=link_id).first()


def active_share_links(*, scenario: Scenario) -> QuerySet[ShareLink]:
    """Oldest first (by id: the order they were made), a stable order to page through."""
    return scenario.share_links.filter(revoked_at__isnull=True).order_by("id")


def scenario_for_share_token(*, token: str) -> Scenario | None:
    link = ShareLink.objects.select_related("scenario").filter(token=token, revoked_at__isnull=True).first()
    return link.scenario if link else None
