"""Security settings and controls: production cookies and HSTS, CSRF on every form, rate limits on
login and token creation, unguessable and revocable share links, no secrets in the repository.

`check --deploy` itself is tested in tests/foundation/test_project.py."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from advisor import scenarios as store
from advisor.models import new_share_token
from tests.api.conftest import fast_password_hashing  # noqa: F401 (autouse: the users here set passwords)
from tests.api.examples import scenario
from tests.foundation.test_project import production_env

ROOT = Path(__file__).resolve().parents[2]


# --- production settings --------------------------------------------------------------------------


def test_production_settings_are_strict() -> None:
    code = (
        "import json; from django.conf import settings as s; print(json.dumps({k: getattr(s, k) for k in "
        "['DEBUG', 'SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', 'SESSION_COOKIE_HTTPONLY', 'SECURE_SSL_REDIRECT',"
        " 'SECURE_HSTS_SECONDS', 'SECURE_HSTS_INCLUDE_SUBDOMAINS', 'SECURE_HSTS_PRELOAD',"
        " 'SECURE_CONTENT_TYPE_NOSNIFF', 'X_FRAME_OPTIONS', 'ALLOWED_HOSTS']}))"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout.strip().splitlines()[-1])
    assert values["DEBUG"] is False
    assert values["SESSION_COOKIE_SECURE"] is True
    assert values["CSRF_COOKIE_SECURE"] is True
    assert values["SESSION_COOKIE_HTTPONLY"] is True
    assert values["SECURE_SSL_REDIRECT"] is True
    assert values["SECURE_HSTS_SECONDS"] >= 31_536_000
    assert values["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is True
    assert values["SECURE_HSTS_PRELOAD"] is True
    assert values["SECURE_CONTENT_TYPE_NOSNIFF"] is True
    assert values["X_FRAME_OPTIONS"] == "DENY"
    assert values["ALLOWED_HOSTS"] == ["advisor.example.com"]


@pytest.mark.django_db
def test_production_responses_redirect_to_https_send_hsts_and_secure_cookies(settings, user) -> None:  # type: ignore[no-untyped-def]
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_HSTS_PRELOAD = True
    settings.SESSION_COOKIE_SECURE = True
    settings.CSRF_COOKIE_SECURE = True
    client = Client()
    plain = client.get("/healthz")
    assert plain.status_code == 301
    assert plain["Location"].startswith("https://")
    secure = client.get("/accounts/login/", secure=True)
    assert secure["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert secure["X-Frame-Options"] == "DENY"
    assert secure["X-Content-Type-Options"] == "nosniff"
    assert secure.cookies["csrftoken"]["secure"]
    login = client.post("/accounts/login/", {"username": "alice", "password": "correct-horse-battery"}, secure=True)
    assert login.status_code == 302
    session_cookie = login.cookies["sessionid"]
    assert session_cookie["secure"]
    assert session_cookie["httponly"]


# --- CSRF on every form ---------------------------------------------------------------------------

POST_FORM = re.compile(r"<form\b[^>]*method=\"post\"[^>]*>(.*?)</form>", re.DOTALL | re.IGNORECASE)


def _post_forms(html: str) -> list[str]:
    return POST_FORM.findall(html)


@pytest.mark.django_db
def test_every_post_form_on_every_page_carries_a_csrf_token(staff_user) -> None:  # type: ignore[no-untyped-def]
    from pricing.services import load_bundled_data

    load_bundled_data()
    saved = store.scenario_create(owner=staff_user, name="csrf", document=scenario())
    store.share_link_create(scenario=saved)
    client = Client()
    login_page = client.get("/accounts/login/").content.decode()
    client.force_login(staff_user)
    pages = {
        "/accounts/login/": login_page,
        **{
            url: client.get(url).content.decode()
            for url in (
                "/plan/",
                "/scenarios/",
                f"/scenarios/{saved.pk}/",
                "/prices/",
                "/calibrations/",
                "/account/tokens/",
            )
        },
    }
    counted = 0
    for url, html in pages.items():
        for form in _post_forms(html):
            counted += 1
            assert 'name="csrfmiddlewaretoken"' in form, f"a POST form on {url} has no CSRF token: {form[:200]}"
    # login, logout, planner, scenario duplicate/share/delete/rename/revoke/restore?, refresh, upload, token create
    assert counted >= 10


@pytest.mark.django_db
def test_every_post_endpoint_refuses_a_request_without_csrf_token(staff_user) -> None:  # type: ignore[no-untyped-def]
    saved = store.scenario_create(owner=staff_user, name="csrf", document=scenario())
    link = store.share_link_create(scenario=saved)
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_user)
    posts = [
        "/accounts/logout/",
        "/plan/",
        "/plan/results/",
        "/plan/save/",
        "/plan/proposal.pdf",
        f"/scenarios/{saved.pk}/rename/",
        f"/scenarios/{saved.pk}/duplicate/",
        f"/scenarios/{saved.pk}/delete/",
        f"/scenarios/{saved.pk}/versions/1/restore/",
        f"/scenarios/{saved.pk}/share/",
        f"/scenarios/{saved.pk}/share/{link.pk}/revoke/",
        "/calibrations/",
        "/calibrations/1/activate/",
        "/prices/refresh/",
        "/account/tokens/",
    ]
    for url in posts:
        response = client.post(url, {"name": "x", "action": "create"})
        assert response.status_code == 403, f"POST {url} without a CSRF token answered {response.status_code}"
    # Session-authenticated API writes need the token too (DRF's SessionAuthentication enforces CSRF).
    response = client.post("/api/v1/tokens", {"name": "x"}, content_type="application/json")
    assert response.status_code == 403
    anon = Client(enforce_csrf_checks=True)
    assert anon.post("/accounts/login/", {"username": "carol", "password": "correct-horse-battery"}).status_code == 403


# --- rate limits ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_login_is_rate_limited_per_username_and_address(settings, user, other_user) -> None:  # type: ignore[no-untyped-def]
    settings.LOGIN_MAX_FAILURES = 5
    settings.LOGIN_MAX_FAILURES_PER_ADDRESS = 5
    settings.LOGIN_FAILURE_WINDOW_S = 300
    attacker = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(5):
        response = attacker.post("/accounts/login/", {"username": "alice", "password": "wrong"})
        assert response.status_code == 200  # the form again, with Django's own error
    blocked = attacker.post("/accounts/login/", {"username": "alice", "password": "correct-horse-battery"})
    assert blocked.status_code == 429
    assert int(blocked["Retry-After"]) > 0
    assert "Too many failed sign-in attempts" in blocked.content.decode()
    assert "_auth_user_id" not in attacker.session
    # The same username from another address still signs in: wrong passwords lock out their sender, not the
    # account's owner ...
    elsewhere = Client(REMOTE_ADDR="198.51.100.9")
    assert (
        elsewhere.post("/accounts/login/", {"username": "alice", "password": "correct-horse-battery"}).status_code
        == 302
    )
    # ... and the blocked address cannot move on to another account.
    assert (
        attacker.post("/accounts/login/", {"username": "bob", "password": "correct-horse-battery"}).status_code == 429
    )
    # Another user from another address signs in normally.
    fine = Client(REMOTE_ADDR="192.0.2.1")
    assert fine.post("/accounts/login/", {"username": "bob", "password": "correct-horse-battery"}).status_code == 302


@pytest.mark.django_db
def test_the_admin_login_shares_the_limit(settings, staff_user) -> None:  # type: ignore[no-untyped-def]
    settings.LOGIN_MAX_FAILURES = 3
    client = Client(REMOTE_ADDR="203.0.113.20")
    for _ in range(3):
        assert client.post("/admin/login/", {"username": "carol", "password": "wrong"}).status_code == 200
    blocked = client.post("/admin/login/", {"username": "carol", "password": "correct-horse-battery"})
    assert blocked.status_code == 429
    assert "Too many failed sign-in attempts" in blocked.content.decode()
    # ... and the main login page too: same counters.
    assert (
        client.post("/accounts/login/", {"username": "carol", "password": "correct-horse-battery"}).status_code == 429
    )
    assert client.get("/admin/login/").status_code == 200


@pytest.mark.django_db
def test_login_limit_counts_only_failures(settings, user) -> None:  # type: ignore[no-untyped-def]
    settings.LOGIN_MAX_FAILURES = 2
    for _ in range(4):
        client = Client(REMOTE_ADDR="192.0.2.50")
        assert (
            client.post("/accounts/login/", {"username": "alice", "password": "correct-horse-battery"}).status_code
            == 302
        )


@pytest.mark.django_db
def test_token_creation_is_rate_limited_in_the_api_and_on_the_page(settings, user) -> None:  # type: ignore[no-untyped-def]
    from rest_framework.test import APIClient

    settings.TOKEN_CREATE_MAX = 3
    api = APIClient()
    api.force_authenticate(user)
    for i in range(3):
        assert api.post("/api/v1/tokens", {"name": f"t{i}"}, format="json").status_code == 201
    refused = api.post("/api/v1/tokens", {"name": "t4"}, format="json")
    assert refused.status_code == 429
    assert refused["Content-Type"].startswith("application/problem+json")
    assert int(refused["Retry-After"]) > 0
    assert "Too many tokens created" in refused.json()["detail"]
    page = Client()
    page.force_login(user)
    response = page.post("/account/tokens/", {"action": "create", "name": "page"})
    assert response.status_code == 429
    assert "Too many tokens created" in response.content.decode()
    assert user.api_tokens.count() == 3
    # Revoking still works while creation is limited.
    token = user.api_tokens.first()
    assert api.delete(f"/api/v1/tokens/{token.pk}").status_code == 204


# --- share links ----------------------------------------------------------------------------------


def test_share_tokens_are_long_random_and_url_safe() -> None:
    tokens = {new_share_token() for _ in range(500)}
    assert len(tokens) == 500
    for token in tokens:
        assert len(token) >= 43  # 32 random bytes, base64url
        assert re.fullmatch(r"[A-Za-z0-9_-]+", token)


@pytest.mark.django_db
def test_a_revoked_share_link_answers_404_for_page_and_pdf(user) -> None:  # type: ignore[no-untyped-def]
    saved = store.scenario_create(owner=user, name="shared", document=scenario())
    link = store.share_link_create(scenario=saved)
    anon = Client()
    # Before revocation the link resolves (whatever the advice, not a 404).
    assert anon.get(f"/s/{link.token}/").status_code == 200
    owner = Client()
    owner.force_login(user)
    assert owner.post(reverse("share-revoke", args=[saved.pk, link.pk])).status_code == 302
    assert anon.get(f"/s/{link.token}/").status_code == 404
    assert anon.get(f"/s/{link.token}/proposal.pdf").status_code == 404
    # A near-miss of a live token finds nothing.
    live = store.share_link_create(scenario=saved)
    assert anon.get(f"/s/{live.token[:-1]}/").status_code == 404


# --- no secrets committed -------------------------------------------------------------------------

# Patterns are built from pieces so this file does not match itself.
SECRET_PATTERNS = {
    "AWS access key id": re.compile("(?:A" + "KIA|A" + "SIA)[0-9A-Z]{16}"),
    "AWS secret access key": re.compile(r"(?i)aws_?secret_?access_?key\W{0,4}[=:]\W{0,4}['\"]?[A-Za-z0-9/+]{40}['\"]?"),
    "private key": re.compile("-----BEGIN (?:RSA |EC |DSA |OPENSSH |ENCRYPTED |PGP )?PRIVATE" + " KEY-----"),
    "GitHub token": re.compile("gh[pousr]_" + "[A-Za-z0-9]{36}"),
    "Slack token": re.compile("xox[abprs]-" + "[A-Za-z0-9-]{10,}"),
    "Google API key": re.compile("AI" + "za[0-9A-Za-z_-]{35}"),
    "Stripe live key": re.compile("sk_" + "live_[0-9A-Za-z]{20,}"),
}
SECRET_FILES = re.compile(r"(^|/)(\.env|id_rsa|id_ed25519|.*\.pem|.*\.key|.*\.p12|credentials)$")


def _tracked_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, timeout=60, check=True)
    return [ROOT / name for name in listed.stdout.decode().split("\0") if name]


def test_no_secrets_are_committed() -> None:
    files = _tracked_files()
    assert len(files) > 50  # the scan saw the repository
    findings = []
    for path in files:
        relative = path.relative_to(ROOT).as_posix()
        if SECRET_FILES.search(relative):
            findings.append(f"{relative}: a secrets file is tracked")
        if not path.is_file() or path.stat().st_size > 5_000_000:
            continue
        text = path.read_bytes().decode("utf-8", errors="ignore")
        for label, pattern in SECRET_PATTERNS.items():
            for match in pattern.finditer(text):
                findings.append(f"{relative}: {label}: {match.group(0)[:12]}...")
    assert not findings, "\n".join(findings)


def test_the_secret_scan_recognises_what_it_looks_for() -> None:
    samples = {
        "AWS access key id": "A" + "KIA" + "IOSFODNN7EXAMPLE",
        "private key": "-----BEGIN RSA PRIVATE" + " KEY-----",
        "GitHub token": "ghp" + "_" + "a" * 36,
        "AWS secret access key": "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    }
    for label, sample in samples.items():
        assert SECRET_PATTERNS[label].search(sample), label
    assert SECRET_FILES.search("deploy/.env")
    assert not SECRET_FILES.search(".env.example")
