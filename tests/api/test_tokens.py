"""Named, hashed, revocable tokens: the command, the API and the token page."""

from __future__ import annotations

import hashlib
import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from advisor.models import ApiToken
from tests.api.conftest import assert_problem

pytestmark = pytest.mark.django_db


def _client(key: str, keyword: str = "Token") -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{keyword} {key}")
    return client


def test_command_creates_user_and_prints_a_working_token() -> None:
    out = io.StringIO()
    call_command("create_api_token", "procurement-bot", "--name", "erp", stdout=out, stderr=io.StringIO())
    key = out.getvalue().strip()
    user = get_user_model().objects.get(username="procurement-bot")
    assert not user.has_usable_password()
    token = ApiToken.objects.get(user=user)
    assert token.name == "erp"
    # Only the digest is stored, never the key.
    assert token.digest == hashlib.sha256(key.encode()).hexdigest()
    assert key not in {token.digest, token.prefix}
    assert _client(key).get("/api/v1/tokens").status_code == 200
    assert _client(key, "Bearer").get("/api/v1/tokens").status_code == 200


def test_command_reuses_an_existing_user(user) -> None:  # type: ignore[no-untyped-def]
    for _ in range(2):
        call_command("create_api_token", "alice", stdout=io.StringIO(), stderr=io.StringIO())
    assert ApiToken.objects.filter(user=user).count() == 2
    assert get_user_model().objects.filter(username="alice").count() == 1
    with pytest.raises(CommandError, match="--name"):
        call_command("create_api_token", "alice", "--name", " ", stdout=io.StringIO(), stderr=io.StringIO())


@pytest.mark.django_db
def test_command_refuses_a_username_the_user_model_does_not_allow() -> None:
    """A hostile probe created a user named 'u\x1bser' (get_or_create runs no validators) while --name was refused."""
    with pytest.raises(CommandError, match="USERNAME: Enter a valid username") as info:
        call_command("create_api_token", "u\x1bser", stdout=io.StringIO(), stderr=io.StringIO())
    assert info.value.returncode == 2 and "\\x1b" in str(info.value)
    assert not get_user_model().objects.filter(username="u\x1bser").exists()


def test_api_create_list_revoke(alice, bob, user) -> None:  # type: ignore[no-untyped-def]
    created = alice.post("/api/v1/tokens", {"name": "spreadsheet"}, format="json")
    assert created.status_code == 201
    body = created.json()
    assert body["key"].startswith("gpa_") and body["name"] == "spreadsheet" and body["is_active"]
    listed = alice.get("/api/v1/tokens").json()
    assert listed["count"] == 2 and all("key" not in item for item in listed["results"])
    # Another user can neither see nor revoke it.
    assert bob.get(f"/api/v1/tokens/{body['id']}").status_code == 404
    assert bob.delete(f"/api/v1/tokens/{body['id']}").status_code == 404
    assert _client(body["key"]).get("/api/v1/tokens").status_code == 200
    assert alice.delete(f"/api/v1/tokens/{body['id']}").status_code == 204
    assert_problem(_client(body["key"]).get("/api/v1/tokens"), 401)
    revoked = alice.get(f"/api/v1/tokens/{body['id']}").json()
    assert revoked["is_active"] is False and revoked["revoked_at"]


def test_api_create_validates_name(alice) -> None:  # type: ignore[no-untyped-def]
    assert_problem(alice.post("/api/v1/tokens", {}, format="json"), 400, "#/name")
    assert_problem(alice.post("/api/v1/tokens", {"name": "x" * 101}, format="json"), 400, "#/name")
    assert_problem(alice.post("/api/v1/tokens", {"name": "   "}, format="json"), 400, "#/name")
    assert_problem(alice.post("/api/v1/tokens", {"name": "ok", "scope": "all"}, format="json"), 400, "#/scope")


@pytest.mark.parametrize(
    "header",
    ["Token", "Token a b", "Token gpa_not-a-real-key", "Token not-our-format", "Bearer \u00e9t\u00e9"],
)
def test_bad_credentials_are_401_problems(header: str) -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header.encode("utf-8").decode("latin-1"))
    body = assert_problem(client.get("/api/v1/tokens"), 401)
    assert body["type"] == "/problems/not-authenticated"


def test_inactive_user_token_rejected(user) -> None:  # type: ignore[no-untyped-def]
    from advisor.api.tokens import api_token_create

    key = api_token_create(user=user, name="t").key
    user.is_active = False
    user.save()
    assert_problem(_client(key).get("/api/v1/tokens"), 401)


def test_token_page_requires_login(client) -> None:  # type: ignore[no-untyped-def]
    response = client.get("/account/tokens/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_token_page_create_shows_key_once_and_revoke(client, user, other_user) -> None:  # type: ignore[no-untyped-def]
    client.force_login(user)
    response = client.post("/account/tokens/", {"action": "create", "name": "erp"})
    assert response.status_code == 200
    token = ApiToken.objects.get(user=user, name="erp")
    key = response.context["new_key"]
    assert key.encode() in response.content
    assert _client(key).get("/api/v1/tokens").status_code == 200
    listing = client.get("/account/tokens/")
    assert b"erp" in listing.content and key.encode() not in listing.content
    # Another user's token id cannot be revoked from this page.
    from advisor.api.tokens import api_token_create

    foreign = api_token_create(user=other_user, name="bobs").token
    client.post("/account/tokens/", {"action": "revoke", "token_id": str(foreign.pk)})
    foreign.refresh_from_db()
    assert foreign.is_active
    client.post("/account/tokens/", {"action": "revoke", "token_id": str(token.pk)})
    token.refresh_from_db()
    assert not token.is_active
    assert _client(key).get("/api/v1/tokens").status_code == 401


def test_token_page_rejects_empty_name(client, user) -> None:  # type: ignore[no-untyped-def]
    client.force_login(user)
    response = client.post("/account/tokens/", {"action": "create", "name": " "})
    assert response.status_code == 400
    assert b"Name: must not be empty" in response.content
    assert not ApiToken.objects.filter(user=user).exists()
    assert client.post("/account/tokens/", {"action": "revoke", "token_id": "x"}).status_code == 302


def test_token_page_revokes_only_a_token_id_written_in_ascii_digits(client, user) -> None:  # type: ignore[no-untyped-def]
    from advisor.api.tokens import api_token_create

    client.force_login(user)
    token = api_token_create(user=user, name="kept").token
    # int() reads Arabic-Indic digits ("٣" is 3): the page writes ASCII digits, so these name no token.
    arabic = str(token.pk).translate(str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩"))
    for raw in [arabic, f" {token.pk} ", "²", "9" * 30]:
        response = client.post("/account/tokens/", {"action": "revoke", "token_id": raw}, follow=True)
        assert "No such token." in response.content.decode(), raw
        token.refresh_from_db()
        assert token.is_active, raw


def test_pages_link_to_the_token_page_when_logged_in(client, user) -> None:  # type: ignore[no-untyped-def]
    assert b'href="/account/tokens/"' not in client.get("/").content
    client.force_login(user)
    assert b'href="/account/tokens/"' in client.get("/").content


@pytest.mark.parametrize("wait", [355, 1])
def test_the_token_creation_limit_says_when_to_retry_once(alice, settings, monkeypatch, wait: int) -> None:  # type: ignore[no-untyped-def]
    """The 429 read "Too many tokens created; try again in 355 seconds. Expected available in 355 seconds." (the
    view's sentence, then DRF's own appended to it)."""
    monkeypatch.setattr("advisor.api.views.tokens.token_create_allowed", lambda *, user_id: wait)
    body = assert_problem(alice.post("/api/v1/tokens", {"name": "one too many"}, format="json"), 429)
    unit = "second" if wait == 1 else "seconds"
    assert body["detail"] == f"Too many tokens created; try again in {wait} {unit}."
    assert body["retry_after_s"] == wait
