"""Start-up validation of the environment: a bad value stops `manage.py check` with one line naming the
variable and what it allows (no traceback, non-zero exit); a bare checkout runs in development mode."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from config import env as env_module
from config.env import ConfigurationError, env_choice, env_fraction, env_rate, env_url
from tests.foundation.test_project import production_env

ROOT = Path(__file__).resolve().parents[2]
ENV_EXAMPLE = ROOT / ".env.example"


def _check(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "check", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def _bare_env(**extra: str) -> dict[str, str]:
    """What a fresh shell has: no variable of this app."""
    env = {key: os.environ[key] for key in ("PATH", "HOME", "PYTHONPATH", "LANG") if key in os.environ}
    env.update(extra)
    return env


@pytest.mark.parametrize(
    ("variable", "value", "allowed"),
    [
        # The five from issue 24, then one per kind of reader.
        ("PRICING_MAX_USD_PER_GPU_HOUR", "abc", "is not a number"),
        ("LOG_LEVEL", "LOUD", "use one of CRITICAL, ERROR, WARNING, INFO, DEBUG"),
        ("API_THROTTLE_USER", "lots", "use COUNT/PERIOD"),
        ("PRICING_MIN_FRACTION_OF_LAST_RUN", "5", "must be between 0.0 and 1.0"),
        ("DATABASE_URL", "mysql:/x", "use sqlite:///PATH or postgres://"),
        ("REDIS_URL", "http://cache:6379/0", "use redis://... or rediss://... or unix://..."),
        ("DJANGO_ENV", "staging", "use one of development, production"),
        ("CSRF_TRUSTED_ORIGINS", "advisor.example.com", "use https://host[:port]"),
        ("MAX_UPLOAD_ROWS", "0", "must be at least 1"),
        ("CELERY_TASK_SOFT_TIME_LIMIT", "2000", "must be less than CELERY_TASK_TIME_LIMIT=900"),
        ("PRICING_MIN_USD_PER_GPU_HOUR", "60", "must be less than PRICING_MAX_USD_PER_GPU_HOUR=50.0"),
        ("API_THROTTLE_ANON", "0/minute", "COUNT >= 1"),
        ("PRICING_AWS_REGIONS", "us-east-1,US East", "'US East' is not a name"),
    ],
)
def test_a_bad_value_stops_check_with_one_line_naming_it(variable: str, value: str, allowed: str) -> None:
    env = production_env()
    env[variable] = value
    result = _check(env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"configuration error: {variable}")
    assert allowed in lines[0]


def test_every_value_in_env_example_is_accepted_and_every_variable_is_read() -> None:
    pairs = [line.split("=", 1) for line in ENV_EXAMPLE.read_text().splitlines() if line and not line.startswith("#")]
    # settings.py reads each variable, or env.py does for settings (DJANGO_ENV, through deployment()).
    settings_source = Path(importlib.import_module(settings.SETTINGS_MODULE).__file__ or "").read_text()
    settings_source += Path(env_module.__file__ or "").read_text()
    unread = [
        name
        for name, _ in pairs
        if f'"{name}"' not in settings_source and not name.startswith("PRICING_REFRESH_HOURS_")
    ]
    assert not unread, f"variables in .env.example that settings.py never reads: {unread}"
    env = _bare_env(**dict(pairs))
    env.update(SECRET_KEY="example-" + "k" * 40)
    result = _check(env)
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_a_bare_checkout_runs_in_development_mode_and_says_so_once() -> None:
    result = _check(_bare_env())
    assert result.returncode == 0, result.stderr
    notices = [line for line in result.stderr.splitlines() if "development mode" in line]
    assert len(notices) == 1, result.stderr
    assert "SQLite" in notices[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "server_sign",
    [{"DJANGO_ENV": "production"}, {"DATABASE_URL": "sqlite:///db.sqlite3"}, {"REDIS_URL": "redis://127.0.0.1:1/0"}],
)
def test_anything_that_says_server_refuses_to_start_without_secret_key(server_sign: dict[str, str]) -> None:
    result = _check(_bare_env(**server_sign))
    assert result.returncode == 2
    assert result.stderr.strip().startswith("configuration error: SECRET_KEY is required in production")
    assert "Traceback" not in result.stderr


def test_production_refuses_debug() -> None:
    result = _check(_bare_env(DJANGO_ENV="production", DEBUG="1", SECRET_KEY="x" * 50))
    assert result.returncode == 2
    assert "DEBUG=1 is not allowed with DJANGO_ENV=production" in result.stderr


# --- the production server's config (gunicorn) ----------------------------------------------------------
GUNICORN_CONF = ROOT / "config" / "gunicorn.conf.py"


def _gunicorn_settings() -> dict[str, object]:
    """config/gunicorn.conf.py run as gunicorn runs it (a module executed from the project root)."""
    namespace: dict[str, object] = {"__name__": "gunicorn_conf"}
    exec(compile(GUNICORN_CONF.read_text(), str(GUNICORN_CONF), "exec"), namespace)  # noqa: S102
    return namespace


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        # 0 workers starts an arbiter that serves nothing; `gunicorn --check-config` passed it.
        ("GUNICORN_WORKERS", "0", "GUNICORN_WORKERS=0 must be at least 1"),
        ("GUNICORN_WORKER_CONNECTIONS", "0", "GUNICORN_WORKER_CONNECTIONS=0 must be at least 1"),
        # 0 switches gunicorn's request timeout off: a stuck request would hold its worker for ever.
        ("GUNICORN_TIMEOUT_S", "0", "GUNICORN_TIMEOUT_S=0 must be at least 1"),
        ("GUNICORN_GRACEFUL_TIMEOUT_S", "-5", "GUNICORN_GRACEFUL_TIMEOUT_S=-5 must be at least 1"),
        ("GUNICORN_KEEPALIVE_S", "-1", "GUNICORN_KEEPALIVE_S=-1 must be at least 0"),
        # 0 means unlimited to gunicorn; its documented maxima are 8190 bytes and 32768 fields.
        ("GUNICORN_LIMIT_REQUEST_LINE", "0", "GUNICORN_LIMIT_REQUEST_LINE=0 must be between 1 and 8190"),
        ("GUNICORN_LIMIT_REQUEST_LINE", "9000", "GUNICORN_LIMIT_REQUEST_LINE=9000 must be between 1 and 8190"),
        ("GUNICORN_LIMIT_REQUEST_FIELDS", "0", "GUNICORN_LIMIT_REQUEST_FIELDS=0 must be between 1 and 32768"),
        ("GUNICORN_LIMIT_REQUEST_FIELD_SIZE", "0", "GUNICORN_LIMIT_REQUEST_FIELD_SIZE=0 must be at least 1"),
        ("GUNICORN_WORKERS", "two", "GUNICORN_WORKERS='two' is not an integer; use a whole number at least 1"),
    ],
)
def test_gunicorn_refuses_a_value_it_cannot_use_with_one_line(monkeypatch, capsys, variable, value, message) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv(variable, value)
    with pytest.raises(SystemExit) as stopped:
        _gunicorn_settings()
    assert stopped.value.code == 2
    assert capsys.readouterr().err == f"configuration error: {message}\n"


def test_gunicorn_reads_blank_as_the_default_and_the_lowest_values_allowed(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    for name in ("GUNICORN_WORKERS", "GUNICORN_TIMEOUT_S", "GUNICORN_KEEPALIVE_S", "GUNICORN_LIMIT_REQUEST_LINE"):
        monkeypatch.setenv(name, "")
    config = _gunicorn_settings()
    assert (config["workers"], config["timeout"], config["keepalive"]) == (2 * (os.cpu_count() or 1) + 1, 30, 5)
    assert config["limit_request_line"] == 4094
    for name in ("GUNICORN_WORKERS", "GUNICORN_TIMEOUT_S", "GUNICORN_LIMIT_REQUEST_LINE"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("GUNICORN_KEEPALIVE_S", "0")  # no keep-alive: gunicorn closes each connection after its response
    config = _gunicorn_settings()
    assert (config["workers"], config["timeout"], config["keepalive"], config["limit_request_line"]) == (1, 1, 0, 1)


def test_gunicorn_check_config_stops_on_zero_workers_with_one_line() -> None:
    gunicorn = Path(sys.executable).parent / "gunicorn"
    result = subprocess.run(
        [str(gunicorn), "--check-config", "-c", "config/gunicorn.conf.py"],
        cwd=ROOT,
        env=_bare_env(GUNICORN_WORKERS="0"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == "configuration error: GUNICORN_WORKERS=0 must be at least 1\n"


# --- the readers, in-process ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"), [("60/minute", "60/minute"), (" 5 / Hour ", "5/hour"), ("10/s", "10/s"), ("3/day", "3/day")]
)
def test_rates_in_drf_syntax_are_accepted_and_normalised(monkeypatch, raw: str, expected: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SOME_RATE", raw)
    assert env_rate("SOME_RATE", "1/day") == expected


@pytest.mark.parametrize("raw", ["lots", "60", "60/fortnight", "-1/minute", "1.5/hour", "/minute"])
def test_rates_outside_drf_syntax_are_refused(monkeypatch, raw: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SOME_RATE", raw)
    with pytest.raises(ConfigurationError, match=re.escape(f"SOME_RATE={raw!r} is not a rate")):
        env_rate("SOME_RATE", "1/day")


@pytest.mark.parametrize(("raw", "ok"), [("0", True), ("1", True), ("0.25", True), ("1.01", False), ("-0.1", False)])
def test_fractions_are_bounded_to_0_1(monkeypatch, raw: str, ok: bool) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SHARE", raw)
    if ok:
        assert env_fraction("SHARE", 0.5) == float(raw)
    else:
        with pytest.raises(ConfigurationError, match=r"SHARE=.* must be between 0\.0 and 1\.0"):
            env_fraction("SHARE", 0.5)


def test_choices_match_without_case_and_come_back_as_spelled(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LEVEL", "warning")
    assert env_choice("LEVEL", "INFO", choices=("INFO", "WARNING")) == "WARNING"


def test_an_empty_url_leaves_the_feature_off_and_a_wrong_scheme_is_named(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CACHE_URL", "")
    assert env_url("CACHE_URL", "", schemes=("redis",)) == ""
    monkeypatch.setenv("CACHE_URL", "memcached://x")
    with pytest.raises(ConfigurationError, match=r"CACHE_URL='memcached://x' .* use redis://"):
        env_url("CACHE_URL", "", schemes=("redis",))
