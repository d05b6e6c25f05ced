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
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from loadkit import Request, bench_env, gunicorn, manage, run_load

TARGET_RATIO = 0.5
SCENARIO = {
    "name": "bench: 7B pretraining",
    "workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1e12, "runs_per_year": 4},
    "gpu": "h100-sxm",
    "cluster_sizes": [8, 16, 32, 64, 128],
}


def _measure(port: int, keys: list[str], options: argparse.Namespace) -> dict[str, dict[str, float]]:
    auths = [{"Authorization": f"Token {key}", "Content-Type": "application/json"} for key in keys]
    same = json.dumps(SCENARIO).encode()

    def healthz(_: int) -> Request:
        return "GET", "/healthz", None, {}

    def gpus(i: int) -> Request:
        return "GET", "/api/v1/gpus", None, auths[i % len(auths)]

    def advice_same(i: int) -> Request:
        return "POST", "/api/v1/advice", same, auths[i % len(auths)]

    def advice_distinct(i: int) -> Request:
        document = {**SCENARIO, "utilization": 0.2 + (i % 700_000) / 1_000_000}
        return "POST", "/api/v1/advice", json.dumps(document).encode(), auths[i % len(auths)]

    # Warm every worker (imports, spec table, first queries) before measuring.
    run_load(port, advice_same, clients=options.clients, seconds=2)
    run_load(port, healthz, clients=options.clients, seconds=1)
    results = {
        "GET /healthz": run_load(port, healthz, clients=options.clients, seconds=options.seconds),
        "GET /api/v1/gpus (token, DRF, static data)": run_load(
            port, gpus, clients=options.clients, seconds=options.seconds
        ),
        "POST /api/v1/advice (same scenario)": run_load(
            port, advice_same, clients=options.clients, seconds=options.seconds
        ),
        "POST /api/v1/advice (distinct scenarios)": run_load(
            port, advice_distinct, clients=options.clients, seconds=options.seconds
        ),
    }
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0, help="duration of each load (default 10)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="gunicorn workers (default: CPUs)")
    options = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="api-load-"))
    env = bench_env(tmp, static_manifest=False)
    try:
        manage(env, "migrate", "--noinput", "-v", "0")
        manage(env, "bootstrap")
        # One user per client, as separate tools would be (each has its own throttle history).
        keys = [
            manage(env, "create_api_token", f"bench-user-{i}", "--name", "bench").strip().splitlines()[-1]
            for i in range(options.clients)
        ]
        with gunicorn(env, workers=options.workers) as port:
            results = _measure(port, keys, options)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(
        f"gunicorn {options.workers} ASGI workers on 127.0.0.1, {options.clients} clients, "
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
