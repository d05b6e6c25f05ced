"""What an anonymous visitor may leave in their session: the planner input kept across sign-in.

Everything else a visitor sends is computed and answered, never stored. This one write is capped
(settings.ANONYMOUS_SESSION_MAX_BYTES, checked on the JSON the session stores): a form that big
is not a planner form, so it is simply not kept and the visitor types it again after signing in.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.http import QueryDict


def pending_planner_input(post: QueryDict) -> dict[str, list[str]] | None:
    """The planner form minus the CSRF token, or None when it is larger than the anonymous cap."""
    kept = {key: values for key, values in post.lists() if key != "csrfmiddlewaretoken"}
    if len(json.dumps(kept)) > settings.ANONYMOUS_SESSION_MAX_BYTES:
        return None
    return kept
