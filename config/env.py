"""Typed reading of environment variables: a bad value stops start-up with a message that names it."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ConfigurationError(RuntimeError):
    """An environment variable holds a value the app cannot use."""


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigurationError(f"{name}={raw!r} is not a boolean; use one of 1/0, true/false, yes/no, on/off")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ConfigurationError(f"{name}={value} must be at least {minimum}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def database_from_url(url: str, *, base_dir: Path) -> dict[str, object]:
    """Translate DATABASE_URL (sqlite:///relative/or//absolute, postgres://user:pw@host:port/name)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        raw_path = unquote(parts.path)
        # sqlite:///db.sqlite3 is relative to the project, sqlite:////tmp/x.sqlite3 is absolute.
        path = Path(raw_path[1:]) if raw_path.startswith("/") else Path(raw_path)
        if not path.is_absolute():
            path = base_dir / path
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path)}
    if scheme in {"postgres", "postgresql", "pgsql"}:
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise ConfigurationError(f"DATABASE_URL={url!r} names no database (postgres://user@host:5432/NAME)")
        try:
            port = parts.port
        except ValueError:
            raise ConfigurationError(f"DATABASE_URL={url!r} has an invalid port") from None
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
    raise ConfigurationError(f"DATABASE_URL={url!r}: scheme {scheme!r} is not supported; use sqlite:/// or postgres://")
