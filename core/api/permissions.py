"""Object ownership is enforced by the owner-scoped selectors (another user's object is a 404, not
a 403, so ids do not leak); these classes cover what is about the user rather than the object."""

from __future__ import annotations

from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView


class IsStaff(BasePermission):
    message = "Only staff may do this."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return bool(request.user and request.user.is_authenticated and request.user.is_staff)
