from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from config.env import ConfigurationError, database_from_url

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_IN_ESTIMATOR = ("django", "rest_framework", "celery", "advisor", "pricing")


@pytest.mark.django_db
def test_healthz_answers_ok_when_the_database_answers(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_landing_explains_the_product_and_links_to_the_planner(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "Rent cloud GPUs or buy a cluster" in body
    assert 'href="/plan/"' in body


@pytest.mark.django_db
def test_login_page_renders_with_csrf(client: Client) -> None:
    response = client.get("/accounts/login/")
    assert response.status_code == 200
    assert "csrfmiddlewaretoken" in response.content.decode()


@pytest.mark.django_db
def test_a_user_can_log_in_and_out() -> None:
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user(username="dora", password="a-long-enough-password")
    client = Client(enforce_csrf_checks=False)
    response = client.post("/accounts/login/", {"username": "dora", "password": "a-long-enough-password"})
    assert response.status_code == 302
    assert "_auth_user_id" in client.session
    client.post("/accounts/logout/")
    assert "_auth_user_id" not in client.session


@pytest.mark.django_db
def test_no_migrations_are_missing() -> None:
    # Raises SystemExit(1) when a model change has no migration.
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def production_env() -> dict[str, str]:
    # Test-only switches (e.g. DJANGO_ALLOW_ASYNC_UNSAFE set for Playwright) must not leak into "production".
    test_only = ("SECURE_", "SESSION_COOKIE", "CSRF_COOKIE", "DJANGO_ALLOW_ASYNC_UNSAFE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(test_only)}
    env.update(
        DEBUG="0",
        SECRET_KEY="prod-like-" + "k3y-with-enough-entropy-" * 3,
        ALLOWED_HOSTS="advisor.example.com",
    )
    return env


def test_production_configuration_passes_check_deploy_without_warnings() -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_settings_refuse_to_start_without_secret_key_when_debug_is_off() -> None:
    env = production_env()
    env.pop("SECRET_KEY")
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr


def test_settings_fail_loudly_on_a_bad_boolean() -> None:
    env = production_env()
    env["DEBUG"] = "maybe"
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert "DEBUG='maybe' is not a boolean" in result.stderr


def test_database_url_parsing() -> None:
    pg = database_from_url("postgres://ann:s%40cret@db.internal:6543/advisor", base_dir=ROOT)
    assert pg["ENGINE"] == "django.db.backends.postgresql"
    assert (pg["USER"], pg["PASSWORD"], pg["HOST"], pg["PORT"], pg["NAME"]) == (
        "ann",
        "s@cret",
        "db.internal",
        "6543",
        "advisor",
    )
    assert database_from_url("sqlite:///db.sqlite3", base_dir=ROOT)["NAME"] == str(ROOT / "db.sqlite3")
    assert database_from_url("sqlite:////tmp/x.sqlite3", base_dir=ROOT)["NAME"] == "/tmp/x.sqlite3"
    with pytest.raises(ConfigurationError, match="mysql"):
        database_from_url("mysql://x@y/z", base_dir=ROOT)
    with pytest.raises(ConfigurationError, match="names no database"):
        database_from_url("postgres://x@y:5432/", base_dir=ROOT)


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:////", "sqlite:////tmp/"])
def test_a_sqlite_url_without_a_file_is_refused(url: str) -> None:
    """sqlite:// passed `check`, naming the project directory as the database, then `migrate` failed in a traceback."""
    with pytest.raises(ConfigurationError, match=rf"^DATABASE_URL='{url}' names no database file; use sqlite:///PATH"):
        database_from_url(url, base_dir=ROOT)


@pytest.mark.django_db
def test_suite_runs_on_postgresql_in_ci() -> None:
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        assert connection.vendor == "postgresql"
    else:
        assert connection.vendor in {"postgresql", "sqlite"}


def _imported_top_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_estimator_imports_nothing_from_the_web_stack() -> None:
    offenders = {
        str(path.relative_to(ROOT)): sorted(_imported_top_modules(path) & set(FORBIDDEN_IN_ESTIMATOR))
        for path in (ROOT / "estimator").rglob("*.py")
    }
    offenders = {path: names for path, names in offenders.items() if names}
    assert offenders == {}


def test_the_import_check_itself_catches_a_forbidden_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import numpy\nfrom django.conf import settings\n")
    assert _imported_top_modules(sample) & set(FORBIDDEN_IN_ESTIMATOR) == {"django"}
