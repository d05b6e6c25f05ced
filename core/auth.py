"""The signed-in user of a request, narrowed once in the view so services can take a `User`.

`request.user` is `User | AnonymousUser` for both Django and DRF requests; the services that own
per-user rows (scenarios, calibrations, proposals, tokens) need the real account.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

if TYPE_CHECKING:
    from rest_framework.request import Request


def signed_in_user(request: HttpRequest | Request) -> User:
    """`request.user` in a view that login_required or IsAuthenticated guards.

    An anonymous visitor here means a view lost its guard: refuse (403) rather than act for nobody.
    """
    user = request.user
    if isinstance(user, AnonymousUser):
        raise PermissionDenied("Sign in first.")
    return user
