"""PostgreSQL that accepts connections and never answers: the app gives up after the connect timeout
(libpq's default is to wait forever) and every statement carries a statement_timeout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.serving.hung import hung_server

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import json, time, django
django.setup()
from django.conf import settings
from django.db import OperationalError, connection
started = time.monotonic()
try:
    connection.ensure_connection()
    outcome = "connected"
except OperationalError as error:
    outcome = type(error).__name__
print(json.dumps({"outcome": outcome, "elapsed": time.monotonic() - started,
                  "options": settings.DATABASES["default"].get("OPTIONS", {}),
                  "conn_max_age": settings.DATABASES["default"]["CONN_MAX_AGE"]}))
"""


def _probe(port: int) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in {"REDIS_URL", "CI"}}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="1",
        PYTHONPATH=str(ROOT),
        DATABASE_URL=f"postgres://user:pw@127.0.0.1:{port}/advisor",
        DATABASE_CONNECT_TIMEOUT_S="1",
        DATABASE_STATEMENT_TIMEOUT_MS="5000",
    )
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_hung_database_is_given_up_after_the_connect_timeout() -> None:
    with hung_server() as port:
        result = _probe(port)
    assert result["outcome"] == "OperationalError"  # what the middleware turns into a 503 with Retry-After
    assert result["elapsed"] < 5, result
    assert result["options"]["connect_timeout"] == 1
    assert result["options"]["options"] == "-c statement_timeout=5000"
    assert result["conn_max_age"] == 0  # no per-thread persistent connections under the ASGI server
