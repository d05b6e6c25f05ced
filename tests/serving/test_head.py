"""HEAD is answered wherever GET is: every GET route in the URL conf, signed in and anonymous."""

from __future__ import annotations

import re
import uuid

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

# A sample value per path converter; ids that match nothing still exercise the view (404 both ways).
SAMPLES = {"int": "1", "str": "x", "slug": "x", "uuid": str(uuid.UUID(int=1)), "path": "x"}
# Routes that need only one sample: not worth probing every admin model page.
SKIP_PREFIXES = ("admin/",)


def _routes(resolver: URLResolver | None = None, prefix: str = "") -> list[str]:
    resolver = resolver or get_resolver()
    found: list[str] = []
    for entry in resolver.url_patterns:
        pattern = str(entry.pattern)
        if isinstance(entry, URLResolver):
            found.extend(_routes(entry, prefix + pattern))
        elif isinstance(entry, URLPattern):
            found.append(prefix + pattern)
    return found


def _concrete(route: str) -> str | None:
    if route.startswith("^") or "(?P" in route:  # regex routes (format suffixes, admin): not a path() route
        return None
    path = re.sub(r"<(?:(\w+):)?\w+>", lambda match: SAMPLES.get(match.group(1) or "str", "x"), route)
    return "/" + path


def _paths() -> list[str]:
    paths = {_concrete(route) for route in _routes() if not route.startswith(SKIP_PREFIXES)}
    return sorted(path for path in paths if path is not None)


def test_the_url_conf_has_many_routes_to_check() -> None:
    # Guards the walker itself: an empty list would make the test below pass vacuously.
    assert len(_paths()) > 30
    assert "/healthz" in _paths()


@pytest.mark.django_db
@pytest.mark.parametrize("signed_in", [False, True], ids=["anonymous", "signed-in"])
def test_head_answers_like_get_on_every_route(signed_in: bool, user, settings) -> None:  # type: ignore[no-untyped-def]
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    client = Client()
    if signed_in:
        client.force_login(user)
    wrong = []
    checked = 0
    for path in _paths():
        got = client.get(path)
        if got.status_code in (405, 429):
            continue  # POST-only route, or a throttle reached by the sweep itself
        head = client.head(path)
        checked += 1
        if head.status_code != got.status_code or head.content:
            wrong.append((path, got.status_code, head.status_code))
    assert checked > 20
    assert wrong == [], wrong


@pytest.mark.django_db
def test_head_keeps_the_length_and_type_of_the_get() -> None:
    client = Client()
    got = client.get("/healthz")
    head = client.head("/healthz")
    assert head.status_code == got.status_code == 200
    assert head.content == b""
    assert head["Content-Type"] == got["Content-Type"]
    assert int(head["Content-Length"]) == len(got.content)


@pytest.mark.django_db
def test_no_application_server_name_is_sent() -> None:
    response = Client().get("/healthz")
    assert "gunicorn" not in response.get("Server", "").lower()
