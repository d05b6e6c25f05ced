"""Load on the API under gunicorn: `POST /api/v1/advice` against a trivial endpoint (`GET /healthz`) of
the same server, 8 concurrent clients on loopback, a bounded time each.

    .venv/bin/python bench/api_load.py [--seconds 10] [--clients 8] [--workers 2]

Everything runs against a throwaway SQLite database (migrated, bundled prices and calibration loaded,
one user with a token), so nothing of yours is touched; throttling is lifted for the run. Three loads:

- healthz: the trivial endpoint (one `SELECT 1`, no DRF, no auth), the reference of the target;
- gpus: a trivial *API* endpoint (token auth, throttles, DRF, static data), for context;
- advice, same scenario: what a procurement tool polling one scenario sees;
- advice, distinct scenarios: every request a scenario not seen before (utilization varies).

Each client is its own user (token). Prints requests/s, p50/p95/p99 latency and errors for each, and
the ratios of advice to both references. Identical advice requests are answered from the cache
(advisor/api/advice_cache.py); distinct ones run the whole pipeline.
Issue 7's target: advice at least half the trivial endpoint's throughput.
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
GUNICORN = str(ROOT / ".venv" / "bin" / "gunicorn")
TARGET_RATIO = 0.5
SCENARIO = {
    "name": "bench: 7B pretraining",
    "workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1e12, "runs_per_year": 4},
    "gpu": "h100-sxm",
    "cluster_sizes": [8, 16, 32, 64, 128],
}

Request = Callable[[int], tuple[str, str, bytes | None, dict[str, str]]]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
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


def load(port: int, make: Request, *, clients: int, seconds: float) -> dict[str, float]:
    """`clients` threads send requests back to back for `seconds`; latencies of completed requests."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    counter = itertools.count()
    stop = time.monotonic() + seconds

    def client() -> None:
        mine: list[float] = []
        bad = 0
        while time.monotonic() < stop:
            method, path, body, headers = make(next(counter))
            start = time.perf_counter()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                conn.close()
                ok = response.status == 200
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

    def pct(p: float) -> float:
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000 if latencies else float("nan")

    return {
        "rps": len(latencies) / elapsed,
        "n": len(latencies),
        "errors": errors[0],
        "p50": pct(0.50),
        "p95": pct(0.95),
        "p99": pct(0.99),
        "mean": statistics.fmean(latencies) * 1000 if latencies else float("nan"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0, help="duration of each load (default 10)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="gunicorn workers (default: CPUs)")
    options = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="api-load-"))
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "advisor.settings",
        "SECRET_KEY": "bench-only-secret-key-0123456789abcdefghijklmnopqrstuvwxyz",
        "DEBUG": "0",
        "DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "0",
        "STATIC_MANIFEST": "0",
        "LOG_LEVEL": "ERROR",
        # Throttling stays on (its cache work is part of each request) with limits the run cannot reach.
        "API_THROTTLE_ANON": "1000000/hour",
        "API_THROTTLE_USER": "1000000/hour",
        "API_THROTTLE_ADVICE": "1000000/hour",
        "API_THROTTLE_PDF": "1000000/hour",
    }
    env.pop("REDIS_URL", None)  # in-process cache and eager tasks: nothing outside this machine
    server = None
    try:
        manage(env, "migrate", "--noinput", "-v", "0")
        manage(env, "bootstrap")
        # One user per client, as separate tools would be (each has its own throttle history).
        keys = [
            manage(env, "create_api_token", f"bench-user-{i}", "--name", "bench").strip().splitlines()[-1]
            for i in range(options.clients)
        ]
        server = subprocess.Popen(
            [GUNICORN, "advisor.wsgi:application", "-b", f"127.0.0.1:{port}", "-w", str(options.workers), "-k", "sync"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_until_up(port)
        auths = [{"Authorization": f"Token {key}", "Content-Type": "application/json"} for key in keys]
        same = json.dumps(SCENARIO).encode()

        def healthz(_: int) -> tuple[str, str, bytes | None, dict[str, str]]:
            return "GET", "/healthz", None, {}

        def gpus(i: int) -> tuple[str, str, bytes | None, dict[str, str]]:
            return "GET", "/api/v1/gpus", None, auths[i % len(auths)]

        def advice_same(i: int) -> tuple[str, str, bytes | None, dict[str, str]]:
            return "POST", "/api/v1/advice", same, auths[i % len(auths)]

        def advice_distinct(i: int) -> tuple[str, str, bytes | None, dict[str, str]]:
            document = {**SCENARIO, "utilization": 0.2 + (i % 700_000) / 1_000_000}
            return "POST", "/api/v1/advice", json.dumps(document).encode(), auths[i % len(auths)]

        # Warm every worker (imports, spec table, first queries) before measuring.
        load(port, advice_same, clients=options.clients, seconds=2)
        load(port, healthz, clients=options.clients, seconds=1)
        results = {
            "GET /healthz": load(port, healthz, clients=options.clients, seconds=options.seconds),
            "GET /api/v1/gpus (token, DRF, static data)": load(
                port, gpus, clients=options.clients, seconds=options.seconds
            ),
            "POST /api/v1/advice (same scenario)": load(
                port, advice_same, clients=options.clients, seconds=options.seconds
            ),
            "POST /api/v1/advice (distinct scenarios)": load(
                port, advice_distinct, clients=options.clients, seconds=options.seconds
            ),
        }
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)

    print(
        f"gunicorn {options.workers} sync workers on 127.0.0.1, {options.clients} clients, "
        f"{options.seconds:g} s per load, {os.cpu_count()} CPUs shared by clients and server"
    )
    print(f"{'endpoint':44} {'req/s':>8} {'n':>6} {'errors':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}")
    for name, r in results.items():
        cells = f"{r['rps']:8.1f} {r['n']:6.0f} {r['errors']:6.0f} {r['p50']:8.1f} {r['p95']:8.1f} {r['p99']:8.1f}"
        print(f"{name:44} {cells}")
    same = results["POST /api/v1/advice (same scenario)"]["rps"]
    distinct = results["POST /api/v1/advice (distinct scenarios)"]["rps"]
    for name in ("GET /healthz", "GET /api/v1/gpus (token, DRF, static data)"):
        base = results[name]["rps"]
        print(f"ratio advice / {name.split(' (')[0]}: same scenario {same / base:.2f}, distinct {distinct / base:.2f}")
    verdict = "meets" if same / results["GET /healthz"]["rps"] >= TARGET_RATIO else "misses"
    print(f"issue 7 target: advice (same scenario) >= {TARGET_RATIO} x healthz: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
