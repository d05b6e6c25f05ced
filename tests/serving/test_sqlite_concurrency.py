"""The embedded default (SQLite, `make run`) keeps every one of many concurrent saves.

Against a real server process on a SQLite file: many threads create scenarios and replace the same
one at once. Before WAL + IMMEDIATE transactions + a busy timeout, some of these answered 503
"database stopped answering" (SQLite's "database is locked" on a read-then-write transaction).
"""

from __future__ import annotations

import json
import sqlite3
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.api.examples import scenario
from tests.serving.live import free_port, manage, running, server_env

THREADS = 16
ROUNDS = 4  # each round: THREADS creates and THREADS replacements of one scenario, all at once
CREATE_TOKEN = (
    "from django.contrib.auth import get_user_model;"
    "from advisor.api.tokens import api_token_create;"
    "user = get_user_model().objects.create_user(username='writer', password='x-correct-horse');"
    "print(api_token_create(user=user, name='load').key)"
)


def _call(base: str, key: str, method: str, path: str, body: dict) -> int:
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Token {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_concurrent_saves_all_succeed_on_sqlite(tmp_path: Path) -> None:
    database = tmp_path / "embedded.sqlite3"
    env = server_env(database)
    manage(env, "migrate", "--noinput", "-v", "0")
    key = manage(env, "shell", "-c", CREATE_TOKEN).strip().splitlines()[-1]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # Threaded runserver, as `make run` starts it.
    command = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
    with running(command, env, f"{base}/healthz"):
        first = _call(base, key, "POST", "/api/v1/scenarios", {"name": "shared", "scenario": scenario()})
        assert first == 201
        shared_id = json.loads(
            urllib.request.urlopen(
                urllib.request.Request(f"{base}/api/v1/scenarios", headers={"Authorization": f"Token {key}"})
            ).read()
        )["results"][0]["id"]

        def work(index: int) -> int:
            if index % 4 == 1:
                return _call(base, key, "POST", "/api/v1/scenarios", {"name": f"s{index}", "scenario": scenario()})
            changed = {"name": f"shared-{index}", "scenario": scenario(cluster_sizes=[8, 8 * (index + 2)])}
            return _call(base, key, "PUT", f"/api/v1/scenarios/{shared_id}", changed)

        with ThreadPoolExecutor(THREADS) as pool:
            statuses = list(pool.map(work, range(THREADS * ROUNDS)))
    assert sorted(set(statuses)) == [200, 201], statuses
    with sqlite3.connect(database) as check:
        assert check.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        creates = statuses.count(201)
        assert check.execute("SELECT COUNT(*) FROM advisor_scenario").fetchone()[0] == 1 + creates
        versions = check.execute("SELECT COUNT(*) FROM advisor_scenarioversion").fetchone()[0]
    # One version per save: the first create, every create and every replacement of the shared one.
    assert versions == 1 + len(statuses)


def _wrapper_settings(database: Path) -> dict:
    """An SQLite connection as the embedded default configures it, whatever database the suite runs on (CI:
    PostgreSQL): the keys Django fills in, the SQLite engine and file, and the settings' SQLite options."""
    from django.conf import settings
    from django.db import connections

    config = dict(connections["default"].settings_dict)
    config.update(ENGINE="django.db.backends.sqlite3", NAME=str(database), TEST={})
    config.update(USER="", PASSWORD="", HOST="", PORT="", OPTIONS=dict(settings.SQLITE_OPTIONS))
    return config


def test_read_then_write_transactions_queue_instead_of_failing(tmp_path: Path, django_db_blocker) -> None:  # type: ignore[no-untyped-def]
    """Deterministic version: two read-then-write transactions overlap on purpose.

    With SQLite's default deferred BEGIN the second writer fails at once with "database is locked"
    (its snapshot is stale, so waiting cannot help); with IMMEDIATE it waits at BEGIN and succeeds.
    """
    import threading
    import time

    from django.db import connections, transaction

    alias = "serving_sqlite_probe"
    connections.settings[alias] = _wrapper_settings(tmp_path / "probe.sqlite3")
    errors: list[BaseException] = []
    first_has_read = threading.Event()

    def save(delay_before_write: float, signal: threading.Event | None) -> None:
        try:
            with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
                cursor.execute("SELECT COALESCE(MAX(n), 0) FROM counter")
                current = cursor.fetchone()[0]
                if signal is not None:
                    signal.set()
                time.sleep(delay_before_write)
                cursor.execute("INSERT INTO counter (n) VALUES (%s)", [current + 1])
        except BaseException as error:
            errors.append(error)
        finally:
            connections[alias].close()

    with django_db_blocker.unblock():
        try:
            with connections[alias].cursor() as cursor:
                cursor.execute("CREATE TABLE counter (n INTEGER NOT NULL)")
            connections[alias].close()
            slow = threading.Thread(target=save, args=(0.6, first_has_read))
            slow.start()
            first_has_read.wait(5)
            fast = threading.Thread(target=save, args=(0.0, None))
            fast.start()
            slow.join(10)
            fast.join(10)
            with connections[alias].cursor() as cursor:
                cursor.execute("SELECT n FROM counter ORDER BY n")
                rows = [row[0] for row in cursor.fetchall()]
            connections[alias].close()
        finally:
            del connections.settings[alias]
    assert errors == []
    # Serialized, not lost: the second transaction read the first one's row.
    assert rows == [1, 2]
