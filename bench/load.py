"""Bounded load on loopback under gunicorn: the planner's results fragment, POST /api/v1/advice and
GET /api/v1/offers, each against GET /healthz of the same server.

    .venv/bin/python bench/load.py [--seconds 8] [--clients 6] [--workers 3] [--max-requests 5000]

It starts and stops its own gunicorn (ASGI workers; default 3 = 2 cores + 1, since each advice is
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
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlencode

from loadkit import Request, bench_env, fetch, gunicorn, manage, run_load

SCENARIO = {
    "name": "load: 7B pretraining",
    "workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1e12, "runs_per_year": 4},
    "gpu": "h100-sxm",
    "cluster_sizes": [8, 16, 32, 64, 128],
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
    parser.add_argument("--workers", type=int, default=3, help="gunicorn ASGI workers (default 3, for 2 cores)")
    parser.add_argument("--max-requests", type=int, default=5000, help="cap per load (default 5000)")
    options = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="load-bench-"))
    # Hashed static names as in production (`collectstatic` below, into ./staticfiles, git-ignored).
    env = bench_env(tmp, static_manifest=True)
    try:
        manage(env, "migrate", "--noinput", "-v", "0")
        manage(env, "bootstrap")
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
        with gunicorn(env, workers=options.workers) as port:
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
        shutil.rmtree(tmp, ignore_errors=True)

    print(
        f"gunicorn {options.workers} ASGI workers on 127.0.0.1, {options.clients} client threads, "
        f"{options.seconds:g} s or {options.max_requests} requests per load, {os.cpu_count()} CPUs for both"
    )
    header = f"{'endpoint':34} {'req/s':>8} {'n':>6} {'err %':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}"
    print(header)
    for name, r in results.items():
        cells = f"{r['rps']:8.1f} {r['total']:6.0f} {r['error_rate'] * 100:6.2f}"
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
