"""A Celery worker SIGKILLed in the middle of a price refresh (inside the database transaction, after
the new prices are written, before the commit) leaves the previous prices intact; the task, acknowledged
late, is redelivered to the next worker, which takes over the dead worker's feed lock and completes.

Everything runs in subprocesses (tests/hardening/killable_worker.py) against a database of their own
(a fresh PostgreSQL database when the suite runs on PostgreSQL, else a temporary SQLite file), Redis
database 15 (above the per-xdist-worker ones) and a queue name unique to this run; the shared servers
are only used, never stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from celery import Celery
from django.db import connection

from tests.conftest import uses_postgres

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 90


def _redis_db15(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/15", "", ""))


@pytest.fixture
def own_database(tmp_path: Path) -> Iterator[str]:
    """A DATABASE_URL for the subprocesses, migrated, dropped afterwards."""
    if uses_postgres():
        import psycopg

        settings = connection.settings_dict
        name = f"gpu_advisor_kill_{uuid.uuid4().hex[:10]}"
        auth = settings["USER"] + (f":{settings['PASSWORD']}" if settings["PASSWORD"] else "")
        server = f"{settings['HOST'] or '127.0.0.1'}:{settings['PORT'] or 5432}"
        admin = f"postgresql://{auth}@{server}/postgres"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        url = f"postgres://{auth}@{server}/{name}"
        try:
            yield url
        finally:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    else:
        yield f"sqlite:///{tmp_path / 'worker-kill.sqlite3'}"


def _env(database_url: str, redis_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PAUSE_MARKER", "FAKE_PRICE")}
    env.update(DATABASE_URL=database_url, REDIS_URL=redis_url, PYTHONUNBUFFERED="1", **extra)
    return env


def _helper(env: dict[str, str], *args: str) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-m", "tests.hardening.killable_worker", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _start_worker(env: dict[str, str], queue: str, log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.hardening.killable_worker", "worker", queue],
        cwd=ROOT,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _stop(worker: subprocess.Popen[bytes], sig: signal.Signals = signal.SIGTERM) -> None:
    if worker.poll() is None:
        os.killpg(worker.pid, sig)
    worker.wait(timeout=30)


@pytest.mark.services
def test_a_worker_killed_mid_refresh_keeps_old_prices_and_the_next_run_completes(
    redis_url: str, own_database: str, tmp_path: Path
) -> None:
    broker = _redis_db15(redis_url)
    queue = f"worker-kill-{uuid.uuid4().hex[:8]}"
    base = _env(own_database, broker)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=base, check=True, timeout=300
    )
    assert _helper(base, "seed", "1.0")["status"] == "success"
    before = _helper(base, "state")
    assert before["offers"] == {"fake.8xh100.a": "1", "fake.8xh100.b": "1", "fake.8xh100.c": "1"}

    marker = tmp_path / "in-transaction"
    first = _start_worker(
        _env(own_database, broker, FAKE_PRICE="2.0", PAUSE_MARKER=str(marker)), queue, tmp_path / "a.log"
    )
    second = None
    sender = Celery(broker=broker)
    sender.conf.broker_transport_options = {"visibility_timeout": 3}
    try:
        sender.send_task("pricing.tasks.refresh_feed", args=["fakefeed"], queue=queue)
        deadline = time.monotonic() + TIMEOUT_S
        while not marker.exists():
            assert first.poll() is None, (tmp_path / "a.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the worker never reached the refresh transaction"
            time.sleep(0.2)
        _stop(first, signal.SIGKILL)
        assert first.returncode == -signal.SIGKILL

        # The new prices were written inside the transaction; the kill rolled them back.
        during = _helper(base, "state")
        assert during["offers"] == before["offers"]
        assert during["runs"] == ["success", "running"]
        assert during["locks"] == 1  # the dead worker's lock is still there

        # The next worker gets the unacknowledged task again, takes over the dead lock and completes.
        second = _start_worker(_env(own_database, broker, FAKE_PRICE="2.0"), queue, tmp_path / "b.log")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            after = _helper(base, "state")
            if after["runs"] and after["runs"][-1] == "success" and len(after["runs"]) > 2:
                break
            assert second.poll() is None, (tmp_path / "b.log").read_text()[-3000:]
            assert time.monotonic() < deadline, (
                f"no completed redelivery: {after}; {(tmp_path / 'b.log').read_text()[-2000:]}"
            )
            time.sleep(1)
        assert after["offers"] == {"fake.8xh100.a": "2", "fake.8xh100.b": "2", "fake.8xh100.c": "2"}
        # The killed run is marked failed, not left "running"; no lock left behind.
        assert after["runs"] == ["success", "failed", "success"]
        assert after["locks"] == 0
    finally:
        for worker in (first, second):
            if worker is not None:
                _stop(worker, signal.SIGKILL)
        with sender.connection_for_write() as conn:
            conn.default_channel.queue_purge(queue)
