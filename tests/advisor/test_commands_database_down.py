"""Commands that need the database, with PostgreSQL down: one line naming where it was looked for (never its
password) and exit status 1, as `refresh_prices` says it, not a traceback of 90-odd lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.foundation.test_project import production_env

ROOT = Path(__file__).resolve().parents[2]
# Port 1 (tcpmux) has no listener on a test machine: the connection is refused at once.
DOWN = "postgres://advisor:s3cret-pw@127.0.0.1:1/advisor"


@pytest.mark.parametrize(
    "command",
    [["bootstrap"], ["advise", "examples/7b-training.json"], ["create_api_token", "alice"]],
)
def test_a_command_says_the_database_is_unavailable_in_one_line(command: list[str]) -> None:
    env = production_env()
    env.update(DATABASE_URL=DOWN, DATABASE_CONNECT_TIMEOUT_S="1")
    env.pop("REDIS_URL", None)
    result = subprocess.run(
        [sys.executable, "manage.py", *command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("CommandError: database unavailable at 127.0.0.1:1: ")
    assert "s3cret-pw" not in result.stderr


@pytest.mark.django_db
def test_an_error_on_a_working_connection_is_not_called_an_outage() -> None:
    from django.db import DatabaseError, connection

    from core.commands import database_unreachable

    with pytest.raises(DatabaseError) as raised, connection.cursor() as cursor:
        cursor.execute("SELECT * FROM no_such_table_here")
    assert not database_unreachable(raised.value)
