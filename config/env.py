"""Typed reading of environment variables: a bad value stops start-up with one line that names the
variable and what it allows (manage.py prints it without a traceback)."""

from __future__ import annotations

import ipaddress
import math
import os
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
# DRF's SimpleRateThrottle reads only the first letter of the period; we accept the spellings it documents.
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(s|sec|second|m|min|minute|h|hour|d|day)\s*$", re.IGNORECASE)
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_QUERY_PASSWORD = re.compile(r"((?:^|&)password=)[^&]*", re.IGNORECASE)
LOG_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")


class ConfigurationError(ImproperlyConfigured):
    """An environment variable holds a value the app cannot use."""


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_set(name: str) -> bool:
    """Whether the variable is set to something other than blanks."""
    return bool(os.environ.get(name, "").strip())


def env_visible(name: str) -> bool:
    """Whether the variable holds something a person can see: blanks (str.strip()) and Unicode format characters
    (category Cf: zero-width space, zero-width joiner, word joiner, BOM...) alone count as unset. For a secret, where
    a value that is blank to the eye is as good as none; env_set keeps reading only blanks as unset."""
    return any(not char.isspace() and unicodedata.category(char) != "Cf" for char in os.environ.get(name, ""))


def env_bool(name: str, default: bool = False) -> bool:
    """A blank value is the default, as for every other reader: .env.example leaves the production hardening switches
    blank ("defaults: on when DEBUG is off"), and read as false they turned HTTPS redirect and secure cookies off."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigurationError(f"{name}={raw!r} is not a boolean; use one of 1/0, true/false, yes/no, on/off")


def _bounds(minimum: float | None, maximum: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f"between {minimum} and {maximum}"
    if minimum is not None:
        return f"at least {minimum}"
    return f"at most {maximum}"


def _check_range(name: str, value: float, minimum: float | None, maximum: float | None) -> None:
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise ConfigurationError(f"{name}={value} must be {_bounds(minimum, maximum)}")


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        allowed = f" {_bounds(minimum, maximum)}" if minimum is not None or maximum is not None else ""
        raise ConfigurationError(f"{name}={raw!r} is not an integer; use a whole number{allowed}") from None
    _check_range(name, value, minimum, maximum)
    return value


def env_float(name: str, default: float, *, minimum: float | None = None, maximum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        allowed = f" {_bounds(minimum, maximum)}" if minimum is not None or maximum is not None else ""
        raise ConfigurationError(f"{name}={raw!r} is not a number; use a decimal number{allowed}")
    _check_range(name, value, minimum, maximum)
    return value


# The largest 32-bit signed C int: libraries that take a number as a C int (libpq's connect_timeout, PostgreSQL's
# statement_timeout in ms, SQLite's busy timeout in ms, Redis's database index) refuse or wrap anything above.
C_INT_MAX = 2**31 - 1

# The longest time window a setting may hold: a century (of 365-day years). Windows are added to or taken from today's
# date (an offer's age, a session's expiry, an idempotency key's retention), and Python's datetime ends at the years 1
# and 9999: with only a minimum, PRICING_STALE_AFTER_HOURS above ~17.8 million (2,000 years) passed start-up and every
# request using it raised OverflowError. A century leaves 7,900 years of margin and is longer than any window means.
TIME_WINDOW_MAX_S = 100 * 365 * 24 * 3600


def env_window(name: str, default: int, *, minimum: int, unit_s: int = 1, maximum: int | None = None) -> int:
    """A time window in whole units of `unit_s` seconds (3600: hours), at most TIME_WINDOW_MAX_S; `maximum` is a
    tighter limit of the window's own (a C int of milliseconds, say)."""
    longest = TIME_WINDOW_MAX_S // unit_s
    return env_int(name, default, minimum=minimum, maximum=longest if maximum is None else min(maximum, longest))


def env_fraction(name: str, default: float) -> float:
    """A share in 0..1 (0.5 is half)."""
    return env_float(name, default, minimum=0.0, maximum=1.0)


def env_choice(name: str, default: str, *, choices: Iterable[str]) -> str:
    """One of `choices`, matched without regard to case and returned as spelled in `choices`."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    allowed = tuple(choices)
    by_lower = {choice.lower(): choice for choice in allowed}
    if raw.strip().lower() not in by_lower:
        raise ConfigurationError(f"{name}={raw!r} is not allowed; use one of {', '.join(allowed)}")
    return by_lower[raw.strip().lower()]


def env_rate(name: str, default: str) -> str:
    """A DRF throttle rate such as 60/minute (periods: second, minute, hour, day)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    match = _RATE.match(raw)
    if not match or int(match.group(1)) < 1:
        raise ConfigurationError(
            f"{name}={raw!r} is not a rate; use COUNT/PERIOD with COUNT >= 1 and PERIOD one of second, minute, "
            "hour, day (e.g. 60/minute)"
        )
    return f"{int(match.group(1))}/{match.group(2).lower()}"


def redacted(url: str) -> str:
    """``url`` with its password replaced by *** (configuration errors go to logs and journals)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # an unbalanced bracketed host: show the scheme only
        return url.split(":", 1)[0] + "://(unreadable)"
    # libpq and redis-py also read a password from the query (?password=...).
    query = _QUERY_PASSWORD.sub(r"\1***", parts.query)
    if password:
        userinfo, _, host = parts.netloc.rpartition("@")
        parts = parts._replace(netloc=f"{userinfo.split(':', 1)[0]}:***@{host}")
    return urlunsplit(parts._replace(query=query)) if password or query != parts.query else url


def env_url(name: str, default: str, *, schemes: Iterable[str]) -> str:
    """A URL whose scheme is one of `schemes` (empty stays empty: the feature is off)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    allowed = tuple(schemes)
    refused = ConfigurationError(
        f"{name}={redacted(raw)!r} is not a URL this app can use; use {' or '.join(s + '://...' for s in allowed)}"
    )
    try:
        parts = urlsplit(raw.strip())
        _ = parts.port  # raises on a port out of range
    except ValueError:  # an unbalanced bracketed host or a bad port: the same one line, not a traceback
        raise refused from None
    if parts.scheme.lower() not in allowed or not (parts.netloc or parts.path):
        raise refused
    return raw.strip()


# Redis's `databases` setting and SELECT's index are C ints: no database is numbered above this.
REDIS_DATABASE_MAX = C_INT_MAX


def env_redis_url(name: str) -> str:
    """A Redis URL (empty stays empty: no Redis). Its database must be a number: redis-py and kombu parse it only on
    first use, so redis://host:6379/abc started, the cache missed silently and enqueueing a task raised ValueError."""
    url = env_url(name, "", schemes=("redis", "rediss", "unix"))
    if not url:
        return url
    parts = urlsplit(url)
    database = "" if parts.scheme.lower() == "unix" else parts.path.strip("/")
    databases = [database] if database else []
    databases += [value for key, value in parse_qsl(parts.query, keep_blank_values=True) if key == "db"]
    use = (
        f"use redis://HOST:PORT/N with N a database number from 0 to {REDIS_DATABASE_MAX} (0 to 15 on a default Redis)"
    )
    for value in databases:
        # ASCII digits only: str.isdigit() takes superscript and full-width digits, which int() (redis-py, kombu)
        # refuses or reads differently.
        if not re.fullmatch(r"[0-9]+", value):
            raise ConfigurationError(
                f"{name}={redacted(url)!r}: database {value!r} is not a number; {use}, or no path for database 0"
            )
        if len(value) > len(str(REDIS_DATABASE_MAX)) or int(value) > REDIS_DATABASE_MAX:  # int() of 4301 digits raises
            raise ConfigurationError(
                f"{name}={redacted(url)!r}: database {value[:20]}{'...' if len(value) > 20 else ''} is too large; {use}"
            )
    if len(databases) > 1:
        # redis-py takes the first ?db= and ignores the path when a ?db= is given: which one was meant is a guess.
        given = ", ".join(repr(value) for value in databases)
        raise ConfigurationError(f"{name}={redacted(url)!r}: the database is given more than once ({given}); {use}")
    return url


def env_list(name: str, default: list[str]) -> list[str]:
    """Comma-separated values; a blank value is the default, as for every reader (a blank region list switched a
    feed off, and a blank ALLOWED_HOSTS dropped the development hosts, though .env.example says blank = default)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_names(name: str, default: list[str]) -> list[str]:
    """Comma-separated identifiers such as region or cloud names: lowercase letters, digits, - and _."""
    names = env_list(name, default)
    for item in names:
        if not _NAME.match(item):
            raise ConfigurationError(
                f"{name} entry {item!r} is not a name; use lowercase letters, digits, '-' and '_' (e.g. us-east-1)"
            )
    return names


def env_origins(name: str, default: list[str]) -> list[str]:
    """Comma-separated origins, each with its scheme (https://advisor.example.com), as Django requires."""
    origins = env_list(name, default)
    for origin in origins:
        if urlsplit(origin).scheme not in {"http", "https"} or not urlsplit(origin).netloc:
            raise ConfigurationError(f"{name} entry {origin!r} is not an origin; use https://host[:port]")
    return origins


def env_networks(name: str, default: list[str]) -> list[str]:
    """Comma-separated IP addresses or networks (10.0.0.2, 10.0.0.0/8, fd00::/8)."""
    networks = env_list(name, default)
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise ConfigurationError(
                f"{name} entry {network!r} is not an IP address or network; use e.g. 10.0.0.2 or 10.0.0.0/8"
            ) from None
    return networks


def require_order(smaller: tuple[str, float], larger: tuple[str, float]) -> None:
    """Two settings that must keep their order (a soft limit under its hard limit, a floor under a cap)."""
    if not smaller[1] < larger[1]:
        raise ConfigurationError(f"{smaller[0]}={smaller[1]} must be less than {larger[0]}={larger[1]}")


def require_at_least(value: tuple[str, float], floor: tuple[str, float], why: str) -> None:
    """A setting that must not fall below another (a lock's expiry under the longest run it guards)."""
    if value[1] < floor[1]:
        raise ConfigurationError(f"{value[0]}={value[1]} must be at least {floor[0]}={floor[1]} ({why})")


DEPLOYMENTS = ("development", "production")


def deployment() -> str:
    """'production' or 'development'. DJANGO_ENV says so explicitly; unset, a server is recognised by what
    only a server sets (DEBUG switched off, DATABASE_URL or REDIS_URL), and a bare checkout is development."""
    explicit = env_choice("DJANGO_ENV", "", choices=DEPLOYMENTS)
    if explicit:
        return explicit
    if env_bool("DEBUG", default=False):
        return "development"
    if env_set("DEBUG") or env_set("DATABASE_URL") or env_set("REDIS_URL"):
        return "production"
    return "development"


def database_from_url(url: str, *, base_dir: Path) -> dict[str, object]:
    """Translate DATABASE_URL (sqlite:///relative/or//absolute, postgres://user:pw@host:port/name)."""
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced bracketed host ([::1/db): one line, not a traceback
        raise ConfigurationError(
            f"DATABASE_URL={redacted(url)!r} is not a URL (a host in brackets must close)"
        ) from None
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        raw_path = unquote(parts.path)
        # sqlite:// (or a path ending in /) named a directory, the project's for no path: `check` passed and
        # `migrate` failed in a traceback ("unable to open database file").
        if not raw_path.strip("/") or raw_path.endswith("/"):
            raise ConfigurationError(
                f"DATABASE_URL={redacted(url)!r} names no database file; use sqlite:///PATH (relative to the project) "
                "or sqlite:////ABSOLUTE/PATH"
            )
        # sqlite:///db.sqlite3 is relative to the project, sqlite:////tmp/x.sqlite3 is absolute.
        path = Path(raw_path[1:]) if raw_path.startswith("/") else Path(raw_path)
        if not path.is_absolute():
            path = base_dir / path
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path)}
    if scheme in {"postgres", "postgresql", "pgsql"}:
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ConfigurationError(
                f"DATABASE_URL={redacted(url)!r} names no database (postgres://user@host:5432/NAME)"
            )
        try:
            port = parts.port
        except ValueError:
            raise ConfigurationError(f"DATABASE_URL={redacted(url)!r} has an invalid port") from None
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": parts.hostname or "",
            "PORT": str(port or ""),
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
            "ATOMIC_REQUESTS": False,
        }
    raise ConfigurationError(
        f"DATABASE_URL={redacted(url)!r}: scheme {scheme!r} is not supported; use sqlite:///PATH or "
        "postgres://USER@HOST:PORT/NAME"
    )


def require_hosts_to_serve(*, allowed_hosts: list[str], production: bool) -> None:
    """A production server with no ALLOWED_HOSTS answers 400 to every request, /healthz too (the reason only in a
    traceback per request): refused when the server's application is built, so commands (migrate, bootstrap) still
    run without it."""
    if production and not allowed_hosts:
        raise ConfigurationError(
            "ALLOWED_HOSTS is required to serve in production: the host names the server answers to, comma-separated "
            "(e.g. advisor.example.com); without it every request is a 400"
        )


def require_collected_static() -> None:
    """With the hashed static storage (STATIC_MANIFEST, on in production) a server started before `collectstatic`, or
    after static files changed without it, answered /healthz but a 500 on every page ("Missing staticfiles manifest
    entry"): refused when the server's application is built, naming the step, as for ALLOWED_HOSTS."""
    import json

    from django.apps import apps
    from django.contrib.staticfiles import finders
    from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage

    if not isinstance(staticfiles_storage, ManifestFilesMixin):  # the lazy storage passes its class through
        return
    manifest = Path(staticfiles_storage.location) / staticfiles_storage.manifest_name
    remedy = "run `python manage.py collectstatic --noinput` before starting the server (make serve-prod does)"
    try:
        collected = set(json.loads(manifest.read_text(encoding="utf-8")).get("paths", {}))
    except (OSError, ValueError, AttributeError):
        raise ConfigurationError(
            f"static files are not collected: STATIC_MANIFEST is on (the production default) and {manifest} is missing "
            f"or unreadable, so every page would be a 500; {remedy}"
        ) from None
    ignore = apps.get_app_config("staticfiles").ignore_patterns
    missing = sorted(
        {path.replace(os.sep, "/") for finder in finders.get_finders() for path, _ in finder.list(ignore)} - collected
    )
    if missing:
        raise ConfigurationError(
            f"static files changed since collectstatic: {len(missing)} not in {manifest} (e.g. {missing[0]!r}), so "
            f"pages using them would be a 500; {remedy}"
        )
