"""What an ops engineer installing from the repository hit: blank switches of .env.example read as off, passwords in
configuration errors, a production server answering 400 to everything, a worker that could never get a task."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from config.env import ConfigurationError, env_bool, redacted
from tests.foundation.test_settings_validation import _bare_env, _check

ROOT = Path(__file__).resolve().parents[2]
SECRET = "prod-like-" + "k3y-with-enough-entropy-" * 3


@pytest.mark.parametrize("default", [True, False])
def test_a_blank_switch_is_its_default(monkeypatch, default: bool) -> None:  # type: ignore[no-untyped-def]
    # .env.example leaves SECURE_SSL_REDIRECT= and the secure-cookie switches blank ("defaults: on when DEBUG is
    # off"); read as false, a production server filled in from it had no HTTPS redirect and no Secure cookies.
    monkeypatch.setenv("SOME_SWITCH", "  ")
    assert env_bool("SOME_SWITCH", default=default) is default
    monkeypatch.setenv("SOME_SWITCH", "off")
    assert env_bool("SOME_SWITCH", default=True) is False


def test_production_with_blank_switches_keeps_its_hardening() -> None:
    env = _bare_env(
        DJANGO_ENV="production",
        SECRET_KEY=SECRET,
        ALLOWED_HOSTS="advisor.example.com",
        SECURE_SSL_REDIRECT="",
        SESSION_COOKIE_SECURE="",
        CSRF_COOKIE_SECURE="",
        STATIC_MANIFEST="",
    )
    script = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
        "'Manifest' in s.STORAGES['staticfiles']['BACKEND'])"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.split() == ["True", "True", "True", "True"], result.stderr


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DATABASE_URL", "postgres://app:S3cretPW@db:99999/x"),
        ("DATABASE_URL", "mysql://app:S3cretPW@db/x"),
        ("REDIS_URL", "http://:S3cretPW@cache:6379/0"),
    ],
)
def test_a_configuration_error_does_not_print_the_password(variable: str, value: str) -> None:
    result = _check(_bare_env(SECRET_KEY=SECRET, **{variable: value}))
    assert result.returncode == 2
    assert result.stderr.startswith(f"configuration error: {variable}=")
    assert "S3cretPW" not in result.stderr and ":***@" in result.stderr


def test_redacted_keeps_a_url_without_a_password() -> None:
    assert redacted("postgres://app@db:5432/x") == "postgres://app@db:5432/x"
    assert redacted("redis://:pw@cache:6379/0") == "redis://:***@cache:6379/0"
    # A password in the query too (libpq, redis-py read it there: a reviewer).
    assert redacted("postgres://user@host/?sslmode=require&password=S3cret") == (
        "postgres://user@host/?sslmode=require&password=***"
    )


def _serve(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import config.asgi"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_production_server_needs_allowed_hosts_and_commands_do_not() -> None:
    # Without it the server started and answered 400 to every request, /healthz too; only a per-request traceback said
    # why. Commands (migrate, bootstrap) need no host names, so only the server's application refuses.
    env = _bare_env(DJANGO_ENV="production", SECRET_KEY=SECRET)
    refused = _serve(env)
    assert refused.returncode != 0
    assert "ALLOWED_HOSTS is required to serve in production" in refused.stderr
    assert _check(env).returncode == 0
    # (STATIC_MANIFEST=0: this checkout need not have run collectstatic, refused on its own below.)
    assert _serve({**env, "ALLOWED_HOSTS": "advisor.example.com", "STATIC_MANIFEST": "0"}).returncode == 0


def _manifest_storage(settings, tmp_path: Path, paths: list[str] | None) -> None:  # type: ignore[no-untyped-def]
    settings.STATIC_ROOT = tmp_path
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    if paths is not None:
        (tmp_path / "staticfiles.json").write_text(json.dumps({"paths": {p: p for p in paths}, "version": "1.1"}))


def _static_sources() -> list[str]:
    from django.apps import apps
    from django.contrib.staticfiles import finders

    ignore = apps.get_app_config("staticfiles").ignore_patterns
    return sorted({path for finder in finders.get_finders() for path, _ in finder.list(ignore)})


def test_a_server_with_the_hashed_static_storage_needs_collectstatic(settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    # Started without collectstatic, production answered /healthz but a 500 on every page ("Missing staticfiles
    # manifest entry for 'favicon.svg'"), and `check --deploy` said nothing.
    from config.env import require_collected_static

    _manifest_storage(settings, tmp_path, None)
    with pytest.raises(ConfigurationError, match=r"static files are not collected: .* run `python manage.py collect"):
        require_collected_static()
    sources = _static_sources()
    assert "favicon.svg" in sources
    # A deploy that changed static files without collectstatic failed the same way for the new files.
    _manifest_storage(settings, tmp_path, [path for path in sources if path != "favicon.svg"])
    with pytest.raises(ConfigurationError, match=r"1 not in .*staticfiles.json \(e.g. 'favicon.svg'\)"):
        require_collected_static()
    _manifest_storage(settings, tmp_path, sources)
    require_collected_static()
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    (tmp_path / "staticfiles.json").unlink()
    require_collected_static()  # plain names (tests, runserver, STATIC_MANIFEST=0): nothing to collect first


@pytest.mark.parametrize("command", ["worker", "beat"])
def test_a_celery_worker_or_beat_without_redis_refuses_in_one_line(command: str) -> None:
    # It started on the in-memory transport and said "ready", though it could never receive a task.
    celery = Path(sys.executable).with_name("celery")
    result = subprocess.run(
        [str(celery), "-A", "config", command, "--loglevel=error"],
        cwd=ROOT,
        env=_bare_env(DJANGO_ENV="production", SECRET_KEY=SECRET),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("configuration error: REDIS_URL is required for a Celery worker or beat")


@pytest.mark.parametrize("command", ["worker", "beat"])
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"SECRET_KEY": SECRET, "LOG_LEVEL": "LOUD"},
            "configuration error: LOG_LEVEL='LOUD' is not allowed; use one of",
        ),
        ({}, "configuration error: SECRET_KEY is required in production"),
    ],
)
def test_a_celery_worker_or_beat_stops_on_a_bad_value_with_one_line(
    command: str, extra: dict[str, str], message: str
) -> None:
    # Settings were read inside click's option parsing: a 90-line traceback and exit status 1, where manage.py and
    # gunicorn print one line and exit 2 (README, Configuration).
    celery = Path(sys.executable).with_name("celery")
    result = subprocess.run(
        [str(celery), "-A", "config", command, "--loglevel=error"],
        cwd=ROOT,
        env=_bare_env(DJANGO_ENV="production", REDIS_URL="redis://127.0.0.1:6379/10", **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(message) and len(result.stderr.splitlines()) == 1, result.stderr


@pytest.mark.parametrize(
    ("variable", "value"),
    [("DATABASE_URL", "postgres://user:S3cretPW@[::1/db"), ("REDIS_URL", "redis://:S3cretPW@[::1:6379/0")],
)
def test_a_url_with_an_unclosed_bracket_is_one_line_not_a_traceback(variable: str, value: str) -> None:
    result = _check(_bare_env(SECRET_KEY=SECRET, **{variable: value}))
    assert result.returncode == 2
    assert result.stderr.startswith(f"configuration error: {variable}=") and "Traceback" not in result.stderr
    assert "S3cretPW" not in result.stderr


def test_a_blank_list_is_its_default(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # .env.example says a blank value is the default; a blank region list switched the feed off (a reviewer).
    from config.env import env_list, env_names

    monkeypatch.setenv("SOME_LIST", " ")
    assert env_list("SOME_LIST", ["a", "b"]) == ["a", "b"]
    assert env_names("SOME_LIST", ["us-east-1"]) == ["us-east-1"]


@pytest.mark.parametrize("value", ["\u200b", "\u200b\u200c\u200d\u2060\ufeff", "\u00a0\u200b", " \t\u3000 "])
def test_a_secret_key_blank_to_the_eye_is_refused_in_production(value: str) -> None:
    # A hostile probe: SECRET_KEY=$'\u200b' (a zero-width space) passed in production; blanks were refused.
    result = _check(_bare_env(DJANGO_ENV="production", ALLOWED_HOSTS="x", SECRET_KEY=value))
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("configuration error: SECRET_KEY is required in production")
    assert len(result.stderr.splitlines()) == 1, result.stderr


def test_a_secret_key_with_a_zero_width_character_among_visible_ones_is_kept(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from config.env import env_set, env_visible

    monkeypatch.setenv("SECRET_KEY", "\u200bk3y")
    assert env_visible("SECRET_KEY")
    monkeypatch.setenv("SOME_VALUE", "\u200b")
    assert env_set("SOME_VALUE") and not env_visible("SOME_VALUE")  # env_set's meaning is unchanged
