"""Start-up validation of the environment: a bad value stops `manage.py check` with one line naming the
variable and what it allows (no traceback, non-zero exit); a bare checkout runs in development mode."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

from config import env as env_module
from config.env import ConfigurationError, env_choice, env_fraction, env_rate, env_url, env_window
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
        ("DATABASE_URL", "sqlite://", "names no database file; use sqlite:///PATH"),
        ("REDIS_URL", "http://cache:6379/0", "use redis://... or rediss://... or unix://..."),
        # Accepted, then the cache missed silently and enqueueing a task raised ValueError (int('abc')).
        ("REDIS_URL", "redis://:pw@cache:6379/abc", "database 'abc' is not a number; use redis://HOST:PORT/N"),
        ("DJANGO_ENV", "staging", "use one of development, production"),
        ("CSRF_TRUSTED_ORIGINS", "advisor.example.com", "use https://host[:port]"),
        ("MAX_UPLOAD_ROWS", "0", "must be at least 1"),
        ("CELERY_TASK_SOFT_TIME_LIMIT", "2000", "must be less than CELERY_TASK_TIME_LIMIT=900"),
        ("PRICING_MIN_USD_PER_GPU_HOUR", "60", "must be less than PRICING_MAX_USD_PER_GPU_HOUR=50.0"),
        # A lock shorter than a refresh may run let a second refresh take over a live one ("its worker died").
        ("PRICING_LOCK_TTL_S", "60", "must be at least PRICING_REFRESH_TIME_LIMIT_S=660"),
        ("PRICING_REFRESH_SOFT_TIME_LIMIT_S", "700", "must be less than PRICING_REFRESH_TIME_LIMIT_S=660"),
        # A hostile probe: far above these, every refresh overflowed the calendar computing the lock's expiry.
        ("PRICING_LOCK_TTL_S", "400000000000", "must be between 60 and 604800"),
        ("PRICING_LOCK_TTL_S", "99999999999999999999999999", "must be between 60 and 604800"),
        ("PRICING_REFRESH_TIME_LIMIT_S", "400000000", "must be between 1 and 86400"),
        ("PRICING_REFRESH_SOFT_TIME_LIMIT_S", "300000000", "must be between 1 and 86400"),
        # An ops probe: these passed start-up, then /prices/ and `advise`, a correct sign-in and POST
        # /api/v1/scenarios answered 500 (OverflowError: the window taken from today's date left the calendar).
        ("PRICING_STALE_AFTER_HOURS", "100000000000", "must be between 1 and 876000"),
        ("SESSION_COOKIE_AGE_S", "10000000000000", "must be between 300 and 3153600000"),
        ("IDEMPOTENCY_KEY_TTL_S", "10000000000000", "must be between 60 and 3153600000"),
        ("API_THROTTLE_ANON", "0/minute", "COUNT >= 1"),
        ("PRICING_AWS_REGIONS", "us-east-1,US East", "'US East' is not a name"),
        ("TRUSTED_PROXIES", "10.0.0.2,proxy.local", "'proxy.local' is not an IP address or network"),
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


# The files whose environment reads .env.example documents: Django's settings, their readers, the server's config.
CONFIG_SOURCES = ("config/settings.py", "config/env.py", "config/gunicorn.conf.py")
# Read there but not for an operator to set: CI is the test runner's switch; GPU_ADVISOR_DEV_NOTICE marks that the
# development notice was printed, so that runserver's reloader child does not print it again.
INTERNAL_VARIABLES = {"CI", "GPU_ADVISOR_DEV_NOTICE"}
# config/env.py's typed readers (env_int, env_bool, ...), whose first argument is the variable's name.
ENV_READERS = {name for name in vars(env_module) if name.startswith("env_")}
# A line of .env.example that sets a variable, or shows one commented out (whose blank would not mean the default).
_EXAMPLE_LINE = re.compile(r"^(#\s*)?([A-Z][A-Z0-9_]*)=(.*)$")
# What an operator fills in on a server (the example's DEBUG=1 is for a checkout).
PRODUCTION_SERVER = {
    "DJANGO_ENV": "production",
    "DEBUG": "0",
    "SECRET_KEY": "prod-like-" + "k3y-with-enough-entropy-" * 3,
    "ALLOWED_HOSTS": "advisor.example.com",
    "DATABASE_URL": "postgres://advisor:pw@db.example.com:5432/advisor",
    "REDIS_URL": "redis://cache.example.com:6379/0",
}


def _variable_names_built_at_run_time(prefix: str) -> list[str]:
    """An f-string name, spelled out from the setting it fills (one PRICING_REFRESH_HOURS_<FEED> per feed)."""
    assert prefix == "PRICING_REFRESH_HOURS_", f"{prefix}...: a variable name built at run time; spell it out here"
    return [f"{prefix}{feed.upper()}" for feed in settings.PRICING_REFRESH_HOURS]


def _name_read(call_or_subscript: ast.AST) -> ast.expr | None:
    """The name argument of an environment read: a config.env reader (env_int(...)), os.environ.get(...),
    os.getenv(...) or os.environ[...]."""
    if isinstance(call_or_subscript, ast.Subscript) and isinstance(call_or_subscript.ctx, ast.Load):
        return call_or_subscript.slice if ast.unparse(call_or_subscript.value) == "os.environ" else None
    if not isinstance(call_or_subscript, ast.Call) or not call_or_subscript.args:
        return None
    function = ast.unparse(call_or_subscript.func)
    if function.split(".")[-1] in ENV_READERS or function in {"os.environ.get", "os.getenv"}:
        return call_or_subscript.args[0]
    return None


def variables_read() -> set[str]:
    """Every variable the configuration reads, from its syntax tree (a call split over lines is one node)."""
    names: set[str] = set()
    for source in CONFIG_SOURCES:
        for node in ast.walk(ast.parse((ROOT / source).read_text(), source)):
            name = _name_read(node)
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                names.add(name.value)
            elif isinstance(name, ast.JoinedStr) and isinstance(name.values[0], ast.Constant):
                names.update(_variable_names_built_at_run_time(str(name.values[0].value)))
    return names


def example_lines() -> list[tuple[str, str, bool]]:
    """(name, value, commented out) for each variable .env.example shows."""
    found = [_EXAMPLE_LINE.match(line) for line in ENV_EXAMPLE.read_text().splitlines()]
    return [(match[2], match[3], bool(match[1])) for match in found if match]


def example_values() -> dict[str, str]:
    return {name: value for name, value, commented_out in example_lines() if not commented_out}


def test_env_example_lists_every_variable_the_configuration_reads_and_only_those() -> None:
    listed = [name for name, _, _ in example_lines()]
    read = variables_read()
    assert {"DJANGO_ENV", "SECRET_KEY", "GUNICORN_WORKERS", "PRICING_REFRESH_HOURS_AWS"} <= read  # the parse works
    assert sorted(read - INTERNAL_VARIABLES - set(listed)) == [], "read by config/ but missing from .env.example"
    assert sorted(set(listed) - read) == [], "in .env.example but read nowhere in config/"
    assert sorted({name for name in listed if listed.count(name) > 1}) == [], "listed twice in .env.example"


def test_every_value_in_env_example_is_accepted_and_reads_the_same_exported_by_a_shell() -> None:
    values = example_values()
    # The README's way to load it without docker or systemd: `set -a; . ./.env; set +a`.
    script = "set -a; . ./.env.example; set +a; exec \"$0\" -c 'import json, os; print(json.dumps(dict(os.environ)))'"
    shell = subprocess.run(
        ["bash", "-c", script, sys.executable], cwd=ROOT, env=_bare_env(), capture_output=True, text=True, timeout=60
    )
    assert shell.returncode == 0 and not shell.stderr, shell.stderr
    exported = json.loads(shell.stdout)
    assert {name: exported.get(name) for name in values} == values
    env = _bare_env(**values)
    env.update(SECRET_KEY="example-" + "k" * 40)
    result = _check(env)
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def _settings_under(env: dict[str, str]) -> dict[str, str]:
    """Every setting (its repr) that Django reads from config/settings.py in a fresh process with this environment."""
    script = (
        "import json; from django.conf import settings; "
        "print(json.dumps({name: repr(getattr(settings, name)) for name in dir(settings) if name.isupper()}))"
    )
    env = {**env, "DJANGO_SETTINGS_MODULE": "config.settings"}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    loaded: dict[str, str] = json.loads(result.stdout)
    return loaded


def test_env_example_on_a_production_server_keeps_every_default_and_the_hardening_on() -> None:
    # Depends on a blank boolean (SECURE_SSL_REDIRECT=) reading as its default, as a blank number already does.
    from_example = _settings_under(_bare_env(**{**example_values(), **PRODUCTION_SERVER}))
    hardening = ("SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE")
    assert {name: from_example[name] for name in hardening} == dict.fromkeys(hardening, "True")
    assert "CompressedManifestStaticFilesStorage" in from_example["STORAGES"]
    assert from_example["SECURE_HSTS_SECONDS"] == "31536000"
    # Each value shown is the default: copying the file changes nothing an operator did not edit.
    defaults = _settings_under(_bare_env(**PRODUCTION_SERVER))
    assert {name: value for name, value in from_example.items() if defaults.get(name) != value} == {}


def test_a_bare_checkout_runs_in_development_mode_and_says_so_once() -> None:
    result = _check(_bare_env())
    assert result.returncode == 0, result.stderr
    notices = [line for line in result.stderr.splitlines() if "development mode" in line]
    assert len(notices) == 1, result.stderr
    assert "SQLite" in notices[0]
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "server_sign",
    [
        {"DJANGO_ENV": "production"},
        {"DATABASE_URL": "sqlite:///db.sqlite3"},
        {"REDIS_URL": "redis://127.0.0.1:1/0"},
        # Blanks are unset, as for every other reader: a templated `SECRET_KEY=   ` was accepted as the key.
        {"DJANGO_ENV": "production", "SECRET_KEY": "   "},
    ],
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


# Names of the settings that are time windows: added to or taken from a date, a cache expiry or a timeout.
_TIME_WINDOW = re.compile(r"_(S|MS|SECONDS|HOURS|DAYS|TIME_LIMIT)$|^PRICING_REFRESH_HOURS_$")
# Counted in hours but a work budget (hours of runs one fleet plan places), never a span added to a date.
_NOT_TIME_WINDOWS = {"FLEET_MAX_PLACEMENT_HOURS"}


def test_every_time_window_setting_has_a_maximum() -> None:
    """Only a minimum let a window of millions of years start, then overflow the calendar per request."""
    source = ROOT / "config" / "settings.py"
    unbounded = []
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        name = _name_read(node)
        if isinstance(name, ast.JoinedStr) and isinstance(name.values[0], ast.Constant):
            name = name.values[0]
        if not (isinstance(node, ast.Call) and isinstance(name, ast.Constant) and _TIME_WINDOW.search(name.value)):
            continue
        if name.value in _NOT_TIME_WINDOWS:
            continue
        if ast.unparse(node.func) != "env_window" and "maximum" not in {keyword.arg for keyword in node.keywords}:
            unbounded.append(name.value)
    assert unbounded == []


@pytest.mark.parametrize("unit_s", [1, 3600, 24 * 3600])
def test_the_longest_window_keeps_date_arithmetic_in_range(monkeypatch, unit_s: int) -> None:  # type: ignore[no-untyped-def]
    import datetime as dt

    monkeypatch.setenv("SOME_WINDOW", str(env_module.TIME_WINDOW_MAX_S // unit_s))
    longest = env_window("SOME_WINDOW", 1, minimum=1, unit_s=unit_s)
    now = dt.datetime.now(dt.UTC)
    assert now - dt.timedelta(seconds=longest * unit_s) < now < now + dt.timedelta(seconds=longest * unit_s)
    monkeypatch.setenv("SOME_WINDOW", str(longest + 1))
    with pytest.raises(ConfigurationError, match=rf"^SOME_WINDOW={longest + 1} must be between 1 and {longest}$"):
        env_window("SOME_WINDOW", 1, minimum=1, unit_s=unit_s)


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


_PRODUCTION_WITHOUT_HOSTS = {"DJANGO_ENV": "production", "SECRET_KEY": PRODUCTION_SERVER["SECRET_KEY"]}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {**PRODUCTION_SERVER, "LOG_LEVEL": "LOUD"},
            "LOG_LEVEL='LOUD' is not allowed; use one of CRITICAL, ERROR, WARNING, INFO, DEBUG",
        ),
        (_PRODUCTION_WITHOUT_HOSTS, "ALLOWED_HOSTS is required to serve in production"),
    ],
)
@pytest.mark.parametrize("check_only", [True, False])
def test_gunicorn_stops_on_a_bad_django_setting_with_one_line(env: dict[str, str], message: str, check_only) -> None:  # type: ignore[no-untyped-def]
    """Read first by each worker, a bad setting failed every worker's boot: a 73-line traceback and exit status 3."""
    gunicorn = Path(sys.executable).parent / "gunicorn"
    mode = ["--check-config"] if check_only else ["--bind", "127.0.0.1:0", "--workers", "1"]
    result = subprocess.run(
        [str(gunicorn), *mode, "-c", "config/gunicorn.conf.py"],
        cwd=ROOT,
        env=_bare_env(**env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith(f"configuration error: {message}")
    assert len(result.stderr.splitlines()) == 1, result.stderr


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


@pytest.mark.parametrize(
    ("value", "accepted"),
    [
        ("redis://cache:6379/0", True),
        ("redis://cache:6379", True),
        ("rediss://cache:6380/15/", True),
        ("unix:///run/redis.sock?db=3", True),
        ("redis://cache:6379/abc", False),
        ("redis://cache:6379/1/2", False),
        ("unix:///run/redis.sock?db=x", False),
        ("redis://cache:6379/0?db=", False),
    ],
)
def test_redis_url_needs_a_numbered_database(monkeypatch, value: str, accepted: bool) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("REDIS_URL", value)
    if accepted:
        assert env_module.env_redis_url("REDIS_URL") == value
    else:
        with pytest.raises(ConfigurationError, match="is not a number"):
            env_module.env_redis_url("REDIS_URL")


@pytest.mark.parametrize(
    ("value", "refusal"),
    [
        # A hostile probe: str.isdigit() took these, then int() refused them when a task was enqueued.
        ("redis://cache:6379/\u00b2", "database '\u00b2' is not a number"),
        ("redis://cache:6379/\u0661", "database '\u0661' is not a number"),
        ("redis://cache:6379/\uff11", "database '\uff11' is not a number"),
        ("unix:///run/redis.sock?db=\u00b3", "database '\u00b3' is not a number"),
        # Redis refused SELECT at first use, and the cache missed silently.
        ("redis://cache:6379/99999999999999999999999", "database 99999999999999999999... is too large"),
        ("redis://cache:6379/2147483648", "database 2147483648 is too large"),
        # redis-py took the first of two.
        ("redis://cache:6379?db=1&db=2", "the database is given more than once ('1', '2')"),
        ("redis://cache:6379/1?db=2", "the database is given more than once ('1', '2')"),
    ],
)
def test_redis_url_database_is_ascii_digits_within_bounds_and_given_once(monkeypatch, value: str, refusal: str) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("REDIS_URL", value)
    with pytest.raises(ConfigurationError) as caught:
        env_module.env_redis_url("REDIS_URL")
    message = str(caught.value)
    assert message.startswith("REDIS_URL=") and refusal in message and "\n" not in message
    assert "from 0 to 2147483647" in message


def test_redis_url_accepts_the_largest_database_number(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("REDIS_URL", "redis://cache:6379/2147483647")
    assert env_module.env_redis_url("REDIS_URL") == "redis://cache:6379/2147483647"


def test_each_gunicorn_instance_has_its_own_control_socket() -> None:
    # gunicorn 25+'s one control socket per user (~/.gunicorn/gunicorn.ctl) was taken over by every instance on the
    # host (a blue/green second serve-prod, bench/load.py), and stopping one deleted it under the others.
    from types import SimpleNamespace

    from gunicorn.config import Config

    on_starting = _gunicorn_settings()["on_starting"]
    paths = []
    for bind in (["127.0.0.1:18100"], ["127.0.0.1:18103"], ["unix:/run/advisor/gunicorn.sock"]):
        cfg = Config()
        cfg.set("bind", bind)
        default = Path(cfg.control_socket)
        on_starting(SimpleNamespace(cfg=cfg))  # type: ignore[operator]
        assert Path(cfg.control_socket).parent == default.parent
        paths.append(Path(cfg.control_socket).name)
    assert paths == [
        "gunicorn-127.0.0.1-18100.ctl",
        "gunicorn-127.0.0.1-18103.ctl",
        "gunicorn-unix-run-advisor-gunicorn.sock.ctl",
    ]
    cfg = Config()
    cfg.set("control_socket", "/run/advisor/ctl")  # --control-socket given: kept
    on_starting(SimpleNamespace(cfg=cfg))  # type: ignore[operator]
    assert cfg.control_socket == "/run/advisor/ctl"
