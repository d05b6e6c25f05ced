"""Management commands that need the database. With it down, `bootstrap`, `advise` and `create_api_token` ended in
a traceback of 93 to 108 lines; a DatabaseCommand says it in one line instead: that the database is unavailable, where
it was looked for (host:port or the SQLite file, never the password) and the driver's first line, exit status 1."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, connections

from core.exitcodes import DATABASE_UNAVAILABLE
from core.middleware import database_unavailable

# libpq's port when DATABASE_URL names none.
POSTGRESQL_DEFAULT_PORT = 5432


def database_address(*, alias: str = DEFAULT_DB_ALIAS) -> str:
    """Where the database is looked for, without credentials: HOST:PORT, or the SQLite file."""
    settings_dict = connections[alias].settings_dict
    if connections[alias].vendor == "sqlite":
        return str(settings_dict["NAME"])
    return f"{settings_dict.get('HOST') or 'localhost'}:{settings_dict.get('PORT') or POSTGRESQL_DEFAULT_PORT}"


def database_unreachable(error: BaseException, *, alias: str = DEFAULT_DB_ALIAS) -> bool:
    """Whether `error` means the database cannot be reached: a connection error (core.middleware's rule) while no
    usable connection is open. An OperationalError on a working connection (SQLite's "no such table" before
    `migrate`) is not an outage and keeps its own report."""
    if not database_unavailable(error):
        return False
    connection = connections[alias]
    return connection.connection is None or not connection.is_usable()


def database_unavailable_line(error: BaseException, *, alias: str = DEFAULT_DB_ALIAS) -> str:
    lines = str(error).strip().splitlines()
    return f"database unavailable at {database_address(alias=alias)}: {lines[0] if lines else type(error).__name__}"


class DatabaseCommand(BaseCommand):
    """A command that reads or writes the database; an outage ends it with one line (--traceback still shows all)."""

    def execute(self, *args: Any, **options: Any) -> Any:
        try:
            return super().execute(*args, **options)
        except Exception as error:
            if not database_unreachable(error):
                raise
            raise CommandError(database_unavailable_line(error), returncode=DATABASE_UNAVAILABLE) from error
