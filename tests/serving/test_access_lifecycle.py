"""Access that does not outlive its grant: tokens cannot mint tokens, a password change revokes
tokens, and a share link shows the shared numbers but nothing of the owner's account."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from advisor import scenarios as store
from advisor.api.tokens import api_token_create
from advisor.models import ApiToken, Proposal

pytestmark = pytest.mark.django_db

SECRET_NAME = "alice-the-owner"
SECRET_EMAIL = "alice.private@example.org"


@pytest.fixture
def owner(django_user_model, settings):  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return django_user_model.objects.create_user(
        username=SECRET_NAME, email=SECRET_EMAIL, password="old-correct-horse", first_name="Alice", last_name="Owner"
    )


def _token_client(user: Any) -> tuple[APIClient, str]:
    key = api_token_create(user=user, name="first").key
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client, key


def test_revoking_a_token_revokes_the_tokens_it_created(owner) -> None:  # type: ignore[no-untyped-def]
    client, _ = _token_client(owner)
    first = ApiToken.objects.get(user=owner)
    child_key = client.post("/api/v1/tokens", {"name": "second"}, format="json").json()["key"]
    child = APIClient()
    child.credentials(HTTP_AUTHORIZATION=f"Token {child_key}")
    grandchild_key = child.post("/api/v1/tokens", {"name": "third"}, format="json").json()["key"]
    grandchild = APIClient()
    grandchild.credentials(HTTP_AUTHORIZATION=f"Token {grandchild_key}")
    session_made = api_token_create(user=owner, name="made from a session")
    assert grandchild.get("/api/v1/scenarios").status_code == 200
    revoke = Client()
    revoke.force_login(owner)
    assert revoke.post("/account/tokens/", {"action": "revoke", "token_id": first.pk}).status_code in (200, 302)
    assert client.get("/api/v1/scenarios").status_code == 401
    assert child.get("/api/v1/scenarios").status_code == 401
    assert grandchild.get("/api/v1/scenarios").status_code == 401
    # A token made from a session was not created by the revoked key: it keeps working.
    session_made.token.refresh_from_db()
    assert session_made.token.revoked_at is None


def test_a_signed_in_session_still_creates_tokens(owner) -> None:  # type: ignore[no-untyped-def]
    session = APIClient(enforce_csrf_checks=False)
    session.force_login(owner)
    response = session.post("/api/v1/tokens", {"name": "from the session"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["key"].startswith("gpa_")


def test_a_password_change_revokes_the_users_tokens(owner, other_user) -> None:  # type: ignore[no-untyped-def]
    client, _ = _token_client(owner)
    others, _ = _token_client(other_user)
    assert client.get("/api/v1/scenarios").status_code == 200
    owner.set_password("new-correct-horse-staple")
    owner.save()
    assert client.get("/api/v1/scenarios").status_code == 401
    assert not ApiToken.objects.filter(user=owner, revoked_at__isnull=True).exists()
    assert others.get("/api/v1/scenarios").status_code == 200  # nobody else's


def test_the_password_change_form_revokes_tokens_too(owner) -> None:  # type: ignore[no-untyped-def]
    client, _ = _token_client(owner)
    web = Client()
    web.force_login(owner)
    response = web.post(
        "/accounts/password_change/",
        {
            "old_password": "old-correct-horse",
            "new_password1": "Vq9-zLm3-Tr8p-Wx",
            "new_password2": "Vq9-zLm3-Tr8p-Wx",
        },
    )
    assert response.status_code == 302, response.content[:500]
    assert client.get("/api/v1/scenarios").status_code == 401


def test_signing_in_does_not_revoke_tokens(owner) -> None:  # type: ignore[no-untyped-def]
    client, _ = _token_client(owner)
    assert Client().login(username=SECRET_NAME, password="old-correct-horse")
    assert client.get("/api/v1/scenarios").status_code == 200


def test_a_share_link_shows_no_account_detail(owner) -> None:  # type: ignore[no-untyped-def]
    from pypdf import PdfReader

    from tests.web.conftest import load_bundled_data

    load_bundled_data()
    scenario = store.scenario_create(
        owner=owner,
        name="Shared plan",
        document={
            "name": "Shared plan",
            "workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1.0e12},
            "gpu": "h100-sxm",
            "cluster_sizes": [8, 16],
        },
    )
    web = Client()
    web.force_login(owner)
    assert web.post(f"/scenarios/{scenario.pk}/share/").status_code == 302
    link = Proposal.objects.get().share_links.get()
    anonymous = Client()
    page = anonymous.get(f"/s/{link.token}/")
    pdf = anonymous.get(f"/s/{link.token}/proposal.pdf")
    assert page.status_code == 200 and pdf.status_code == 200
    text = " ".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf.content)).pages)
    assert "Shared plan" in page.content.decode() and "Shared plan" in text  # the shared numbers are there
    for secret in (SECRET_NAME, SECRET_EMAIL, "Alice Owner"):
        assert secret not in page.content.decode()
        assert secret not in text
    # The owner's own copy still names who prepared it.
    own = web.get(f"/proposals/{Proposal.objects.get().pk}/proposal.pdf")
    own_text = " ".join(p.extract_text() for p in PdfReader(io.BytesIO(own.content)).pages)
    assert "Alice Owner" in own_text
