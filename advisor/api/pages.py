"""The token page: a logged-in user creates, lists and revokes their API tokens (session + CSRF)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from advisor.api.tokens import (
    NAME_MAX_LENGTH,
    TokenNameError,
    api_token_create,
    api_token_for_user,
    api_token_revoke,
    api_tokens_for_user,
)
from advisor.models import ApiToken
from core.auth import signed_in_user
from core.ids import parse_id
from core.ratelimit import token_create_allowed


@never_cache
@login_required
@require_http_methods(["GET", "POST"])
def tokens_page(request: HttpRequest) -> HttpResponse:
    context: dict[str, object] = {"name_max_length": NAME_MAX_LENGTH}
    status = 200
    if request.method == "POST":
        action = request.POST.get("action")
        wait = token_create_allowed(user_id=signed_in_user(request).pk) if action == "create" else None
        if wait is not None:
            context["name_error"] = f"Too many tokens created; try again in {wait} seconds."
            status = 429
        elif action == "create":
            try:
                issued = api_token_create(user=signed_in_user(request), name=request.POST.get("name", ""))
            except TokenNameError as error:
                context["name_error"] = f"Name: {error}."
                context["name_value"] = request.POST.get("name", "")[:NAME_MAX_LENGTH]
                status = 400
            else:
                # Rendered once in this response, never stored: no redirect, so the key is not in a URL or session.
                context["new_key"] = issued.key
                context["new_token"] = issued.token
        elif action == "revoke":
            token_id = parse_id(request.POST.get("token_id", ""))
            try:
                if token_id is None:
                    raise ApiToken.DoesNotExist
                token = api_token_for_user(user=signed_in_user(request), token_id=token_id)
            except ApiToken.DoesNotExist:
                messages.error(request, "No such token.")
            else:
                api_token_revoke(token=token)
                messages.success(request, f"Token “{token.name}” revoked.")
            return redirect("api-tokens")
        else:
            messages.error(request, "Unknown action.")
            return redirect("api-tokens")
    context["tokens"] = api_tokens_for_user(user=signed_in_user(request))
    return render(request, "api/tokens.html", context, status=status)
