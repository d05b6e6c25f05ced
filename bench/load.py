"""Bounded load on loopback under gunicorn: the planner's results fragment, POST /api/v1/advice and
GET /api/v1/offers, each against GET /healthz of the same server.

    .venv/bin/python bench/load.py [--seconds 8] [--clients 6] [--workers 3] [--max-requests 5000]

It starts and stops its own gunicorn (sync workers; default 3 = 2 cores + 1, since each advice is
CPU-bound numpy work) on 127.0.0.1 with a throwaway SQLite database (migrated, bundled prices and
calibration loaded; `collectstatic` run so the production static storage is used), its own users and
API tokens; no REDIS_URL (in-process cache, eager tasks), throttle limits raised out of reach (the
throttle's cache work still runs on every request). Clients are threads on the same 2 cores, so the
figures are what the box does end to end, client overhead included.

Each load runs `--clients` threads back to back for `--seconds` or until `--max-requests`, whichever
comes first. Prints requests/s, p50/p95/p99 latency, error rate, and each endpoint's throughput and
p50 as a ratio of /healthz's.
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
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / ".venv" / "bin"
PYTHON = str(BIN / "python") if (BIN / "python").exists() else sys.executable
GUNICORN = str(BIN / "gunicorn")
SCENARIO = {
    "name": "load: 7B pretraining",
    "workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1e12, "runs_per_year": 4},
    "gpu": "h100-sxm",
    "cluster_sizes": [8, 16, 32, 64, 128],
}
Request = tuple[str, str, bytes | None, dict[str, str]]
MakeRequest = Callable[[int], Request]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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


def fetch(port: int, request: Request, timeout_s: float = 60) -> tuple[int, bytes, dict[str, str]]:
    method, path, body, headers = request
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read(), {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def run_load(port: int, make: MakeRequest, *, clients: int, seconds: float, max_requests: int) -> dict[str, float]:
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
            if i >= max_requests:
                break
            start = time.perf_counter()
            try:
                status, _, _ = fetch(port, make(i))
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
        "n": total,
        "error_rate": errors[0] / total if total else 1.0,
        "p50": pct(0.50),
        "p95": pct(0.95),
        "p99": pct(0.99),
    }


def planner_session(port: int) -> dict[str, str]:
    """Cookie and CSRF header of an anonymous planner visitor (the page's script sends the same)."""
    status, _, headers = fetch(port, ("GET", "/plan/", None, {}))
    if status != 200:
        raise SystemExit(f"GET /plan/ answered {status}")
    cookie = headers.get("set-cookie", "")
    token = next((part.split("=", 1)[1] for part in cookie.split(";") if part.strip().startswith("csrftoken=")), "")
    if not token:
        raise SystemExit("no csrftoken cookie from /plan/")
    return {
        "Cookie": f"csrftoken={token}",
        "X-CSRFToken": token,
        "Content-Type": "application/x-www-form-urlencoded",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=8.0, help="duration of each load (default 8)")
    parser.add_argument("--clients", type=int, default=6, help="concurrent clients (default 6)")
    parser.add_argument("--workers", type=int, default=3, help="gunicorn sync workers (default 3, for 2 cores)")
    parser.add_argument("--max-requests", type=int, default=5000, help="cap per load (default 5000)")
    options = parser.parse_args()
    if not Path(GUNICORN).exists():
        raise SystemExit(f"{GUNICORN} not found: run `make install` first")

    tmp = Path(tempfile.mkdtemp(prefix="load-bench-"))
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "advisor.settings",
        "SECRET_KEY": "bench-only-secret-key-0123456789abcdefghijklmnopqrstuvwxyz",
        "DEBUG": "0",
        "DATABASE_URL": f"sqlite:///{tmp / 'bench.sqlite3'}",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        # Plain HTTP on loopback; everything else stays at its production value.
        "SECURE_SSL_REDIRECT": "0",
        "SESSION_COOKIE_SECURE": "0",
        "CSRF_COOKIE_SECURE": "0",
        "STATIC_MANIFEST": "1",
        "LOG_LEVEL": "ERROR",
        "API_THROTTLE_ANON": "100000000/hour",
        "API_THROTTLE_USER": "100000000/hour",
        "API_THROTTLE_ADVICE": "100000000/hour",
        "API_THROTTLE_PDF": "100000000/hour",
    }
    env.pop("REDIS_URL", None)
    server = None
    try:
        manage(env, "migrate", "--noinput", "-v", "0")
        manage(env, "bootstrap")
        # Hashed static names, as `make serve-prod` does (into ./staticfiles, git-ignored).
        manage(env, "collectstatic", "--noinput", "-v", "0")
        form = json.loads(
            manage(
                env,
                "shell",
                "-c",
                "import json; from advisor.web import forms; "
                "print(json.dumps(forms.preset_initial('7b-pretrain'), default=str))",
            )
            .strip()
            .splitlines()[-1]
        )
        keys = [
            manage(env, "create_api_token", f"load-user-{i}", "--name", "load").strip().splitlines()[-1]
            for i in range(options.clients)
        ]
        server = subprocess.Popen(
            [
                GUNICORN,
                "advisor.wsgi:application",
                "-b",
                f"127.0.0.1:{port}",
                "-w",
                str(options.workers),
                "-k",
                "sync",
                "--timeout",
                "60",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_until_up(port)
        api = [{"Authorization": f"Token {key}", "Content-Type": "application/json"} for key in keys]
        web = planner_session(port)
        form_body = urlencode(
            {k: ("" if v is None else v) for k, v in form.items() if not isinstance(v, list | dict)}, doseq=True
        )

        def healthz(_: int) -> Request:
            return "GET", "/healthz", None, {}

        def fragment(i: int) -> Request:
            # Distinct inputs (utilization varies) so no cache answers for the pipeline.
            body = form_body + f"&utilization={0.3 + (i % 600_000) / 1_000_000:.6f}"
            return "POST", "/plan/results/", body.encode(), web

        def advice(i: int) -> Request:
            document = {**SCENARIO, "utilization": 0.3 + (i % 600_000) / 1_000_000}
            return "POST", "/api/v1/advice", json.dumps(document).encode(), api[i % len(api)]

        def offers(i: int) -> Request:
            return "GET", "/api/v1/offers?gpu=h100-sxm", None, api[i % len(api)]

        loads = {
            "GET /healthz": healthz,
            "POST /plan/results/ (fragment)": fragment,
            "POST /api/v1/advice": advice,
            "GET /api/v1/offers?gpu=h100-sxm": offers,
        }
        for name, make in loads.items():  # every path answers before anything is measured
            status, body, _ = fetch(port, make(0))
            if status != 200:
                raise SystemExit(f"{name} answered {status}: {body[:300]!r}")
        for make in loads.values():  # warm every worker
            run_load(port, make, clients=options.clients, seconds=1, max_requests=options.clients * 3)
        bounds = {"clients": options.clients, "seconds": options.seconds, "max_requests": options.max_requests}
        results = {name: run_load(port, make, **bounds) for name, make in loads.items()}
    finally:
        if server is not None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)

    print(
        f"gunicorn {options.workers} sync workers on 127.0.0.1, {options.clients} client threads, "
        f"{options.seconds:g} s or {options.max_requests} requests per load, {os.cpu_count()} CPUs for both"
    )
    header = f"{'endpoint':34} {'req/s':>8} {'n':>6} {'err %':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}"
    print(header)
    for name, r in results.items():
        cells = f"{r['rps']:8.1f} {r['n']:6.0f} {r['error_rate'] * 100:6.2f}"
        cells += f" {r['p50']:8.1f} {r['p95']:8.1f} {r['p99']:8.1f}"
        print(f"{name:34} {cells}")
    base = results["GET /healthz"]
    for name, r in results.items():
        if name != "GET /healthz":
            print(
                f"vs /healthz: {name:34} throughput x{r['rps'] / base['rps']:.3f}, "
                f"p50 x{r['p50'] / base['p50']:.1f}, p99 x{r['p99'] / base['p99']:.1f}"
            )
    failed = [name for name, r in results.items() if r["error_rate"] > 0]
    if failed:
        print("errors in: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
