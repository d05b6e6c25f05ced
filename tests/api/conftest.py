from __future__ import annotations

from collections.abc import Callable

import pytest
from rest_framework.test import APIClient

from advisor.api.tokens import api_token_create

PROBLEM = "application/problem+json"


@pytest.fixture(autouse=True)
def fast_password_hashing(settings) -> None:  # type: ignore[no-untyped-def]
    """The user fixtures set passwords; PBKDF2's deliberate slowness only slows this suite down."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def anon() -> APIClient:
    return APIClient()


@pytest.fixture
def client_for(db: None) -> Callable[..., APIClient]:
    """An API client authenticated with a fresh token of `user`."""

    def make(user) -> APIClient:  # type: ignore[no-untyped-def]
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_create(user=user, name='test').key}")
        return client

    return make


@pytest.fixture
def alice(client_for, user) -> APIClient:  # type: ignore[no-untyped-def]
    return client_for(user)


@pytest.fixture
def bob(client_for, other_user) -> APIClient:  # type: ignore[no-untyped-def]
    return client_for(other_user)


@pytest.fixture
def carol(client_for, staff_user) -> APIClient:  # type: ignore[no-untyped-def]
    return client_for(staff_user)


def assert_problem(response, status: int, *pointers: str) -> dict:  # type: ignore[no-untyped-def]
    """The response is RFC 9457 problem+json with this status and (at least) these error pointers."""
    assert response.status_code == status, (response.status_code, response.content[:2000])
    assert response["Content-Type"].startswith(PROBLEM), response["Content-Type"]
    import json

    body = json.loads(response.content)
    assert body["status"] == status
    assert body["type"].startswith("/problems/")
    assert body["title"] and body["detail"] and "instance" in body
    found = [error["pointer"] for error in body.get("errors", [])]
    for expected in pointers:
        assert expected in found, (expected, body)
    for error in body.get("errors", []):
        assert error["pointer"].startswith("#") and error["detail"]
    return body
