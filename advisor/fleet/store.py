"""Saved fleets: services (writes) and selectors (reads), versioned and owner-scoped like scenarios.

Every write keeps the new state as a FleetVersion; reads are scoped to the owner, so another user's
fleet does not exist for you. Documents are validated (``advisor.advice.fleet.document.parse_fleet``) by
the caller before they reach these functions, so nothing invalid is stored."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.db.models import QuerySet

from advisor.fleet.models import Fleet
from advisor.versioned import versioned_create, versioned_update


def fleet_create(*, owner: User, name: str, document: dict[str, Any]) -> Fleet:
    return versioned_create(objects=Fleet.objects, owner=owner, name=name, document=document)


def fleet_update(*, fleet: Fleet, name: str | None = None, document: dict[str, Any] | None = None) -> Fleet:
    """Overwrite name and/or document; the new state becomes the next version."""
    return versioned_update(objects=Fleet.objects, item=fleet, name=name, document=document)


def fleet_delete(*, fleet: Fleet) -> None:
    fleet.delete()


def fleets_for_user(*, user: User) -> QuerySet[Fleet]:
    return Fleet.objects.filter(owner=user)


def fleet_for_user(*, user: User, fleet_id: int) -> Fleet:
    """The user's fleet; another user's (or a missing) id raises Fleet.DoesNotExist."""
    return fleets_for_user(user=user).get(pk=fleet_id)
