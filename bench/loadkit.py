"""What the load benches share: a throwaway production-like app under gunicorn on loopback, and a
bounded closed-loop load generator (client threads sending requests back to back).

Every server it starts binds 127.0.0.1 only and is stopped when the `with` block ends; every load
stops after its time (and, when given, its request count)."""

from __future__ import annotations

import http.client
import itertools
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
PYTHON = str(BIN / "python") if (BIN / "python").exists() else sys.executable
GUNICORN = str(BIN / "gunicorn")
# Throttling stays on (its cache work is part of each request) with limits no bounded run reaches.
UNREACHABLE_RATE = "100000000/hour"

Request = tuple[str, str, bytes | None, dict[str, str]]
MakeRequest = Callable[[int], Request]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def bench_env(database_dir: Path, *, static_manifest: bool) -> dict[str, str]:
    """Production settings on plain HTTP, a throwaway SQLite file, no Redis (in-process cache, eager tasks)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": "bench-only-secret-key-0123456789abcdefghijklmnopqrstuvwxyz",
        "DEBUG": "0",
        "DATABASE_URL": f"sqlite:///{database_dir / 'bench.sqlite3'}",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "STATIC_MANIFEST": "1" if static_manifest else "0",
        "LOG_LEVEL": "ERROR",
        **{f"API_THROTTLE_{scope}": UNREACHABLE_RATE for scope in ("ANON", "USER", "ADVICE", "PDF")},
    }
    env.pop("REDIS_URL", None)
    return env


def manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True, timeout=600
    ).stdout


def wait_until_up(port: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"gunicorn did not answer on port {port} within {timeout_s} s")


@contextmanager
def gunicorn(env: dict[str, str], *, workers: int, timeout_s: int = 60) -> Iterator[int]:
    """Serve the app as `make serve-prod` does (config/gunicorn.conf.py: ASGI workers) with `workers`
    workers on a free loopback port; yields the port."""
    if not Path(GUNICORN).exists():
        raise SystemExit(f"{GUNICORN} not found: run `make install` first")
    port = free_port()
    server = subprocess.Popen(
        [
            GUNICORN,
            "-c",
            str(ROOT / "config" / "gunicorn.conf.py"),
            "-b",
            f"127.0.0.1:{port}",
            "--access-logfile",
            "/dev/null",
        ],
        cwd=ROOT,
        env={**env, "GUNICORN_WORKERS": str(workers), "GUNICORN_TIMEOUT_S": str(timeout_s)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until_up(port)
        yield port
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def fetch(port: int, request: Request, timeout_s: float = 60) -> tuple[int, bytes, dict[str, str]]:
    method, path, body, headers = request
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read(), {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def run_load(
    port: int, make: MakeRequest, *, clients: int, seconds: float, max_requests: int | None = None
) -> dict[str, float]:
    """`clients` threads send requests back to back for `seconds` (or `max_requests` in all).

    Returns requests/s and latency percentiles (ms) of the requests answered 200, their count `n`, the
    failures `errors`, `total` and `error_rate`."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    counter = itertools.count()
    stop = time.monotonic() + seconds

    def client() -> None:
        mine: list[float] = []
        bad = 0
        while time.monotonic() < stop:
            i = next(counter)
            if max_requests is not None and i >= max_requests:
                break
            start = time.perf_counter()
            try:
                status, _, _ = fetch(port, make(i), timeout_s=30)
                ok = status == 200
            except OSError:
                ok = False
            if ok:
                mine.append(time.perf_counter() - start)
            else:
                bad += 1
        with lock:
            latencies.extend(mine)
            errors[0] += bad

    threads = [threading.Thread(target=client) for _ in range(clients)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    latencies.sort()
    total = len(latencies) + errors[0]

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000 if latencies else float("nan")

    return {
        "rps": len(latencies) / elapsed,
        "n": len(latencies),
        "errors": errors[0],
        "total": total,
        "error_rate": errors[0] / total if total else 1.0,
        "p50": pct(0.50),
        "p95": pct(0.95),
        "p99": pct(0.99),
        "mean": statistics.fmean(latencies) * 1000 if latencies else float("nan"),
    }
