"""Slow clients against the production server: /healthz must keep answering well under a second.

    .venv/bin/python bench/slow_clients.py [--connections 50] [--seconds 10] [--workers 1] [--worker-class asgi]

Starts its own gunicorn with config/gunicorn.conf.py (production settings, a throwaway SQLite file)
on a free 127.0.0.1 port, opens `--connections` connections that send a request's headers one byte
a second, and while they are held times GET /healthz on fresh connections every 0.2 s. Everything
stops after `--seconds`. Prints the slowest and median /healthz and, for comparison, the same
figures under gunicorn's sync worker (the naive baseline, what `make serve-prod` ran before);
exits 1 when the slowest /healthz under the chosen worker class took `--limit-s` (default 1 s) or more.
Only loopback is ever contacted.
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loadkit import ROOT, bench_env, free_port, manage, wait_until_up

HOST = "127.0.0.1"
SLOW_REQUEST = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: slow-client-bench\r\nX-Padding: " + b"a" * 200


@contextmanager
def server(env: dict[str, str], *, workers: int, worker_class: str) -> Iterator[int]:
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "-b", f"{HOST}:{port}", "-w", str(workers), "-k", worker_class]
    if worker_class == "asgi":
        command += ["-c", str(ROOT / "config" / "gunicorn.conf.py"), "--access-logfile", "/dev/null"]
    else:
        command += ["config.wsgi:application"]  # gunicorn's defaults on the WSGI app: the old serve-prod
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        wait_until_up(port)
        yield port
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def slow_client(port: int, stop: threading.Event) -> None:
    """Send the request a byte a second until told to stop (never finishing the headers)."""
    try:
        with socket.create_connection((HOST, port), timeout=5) as sock:
            for byte in SLOW_REQUEST:
                if stop.wait(1.0):
                    return
                sock.sendall(bytes([byte]))
    except OSError:
        return  # the server closed it: that is allowed


def time_healthz(port: int, stop: threading.Event, limit_s: float) -> list[float]:
    times: list[float] = []
    while not stop.is_set():
        started = time.perf_counter()
        try:
            conn = http.client.HTTPConnection(HOST, port, timeout=limit_s * 5)
            conn.request("GET", "/healthz")
            ok = conn.getresponse().status == 200
            conn.close()
        except OSError:
            ok = False
        elapsed = time.perf_counter() - started
        times.append(elapsed if ok else float("inf"))
        stop.wait(0.2)
    return times


def measure(env: dict[str, str], *, connections: int, seconds: float, workers: int, worker_class: str) -> list[float]:
    with server(env, workers=workers, worker_class=worker_class) as port:
        stop = threading.Event()
        holders = [threading.Thread(target=slow_client, args=(port, stop), daemon=True) for _ in range(connections)]
        for holder in holders:
            holder.start()
        time.sleep(1.5)  # every slow connection is open and has sent its first bytes
        timer = threading.Timer(seconds, stop.set)
        timer.start()
        times = time_healthz(port, stop, limit_s=1.0)
        timer.cancel()
        stop.set()
        for holder in holders:
            holder.join(5)
    return times


def summary(times: list[float]) -> str:
    answered = [elapsed for elapsed in times if elapsed != float("inf")]
    if not answered:
        return f"{len(times)} /healthz tried, none answered"
    worst = "some got no answer" if len(answered) < len(times) else f"slowest {max(answered) * 1000:.0f} ms"
    return (
        f"{len(answered)}/{len(times)} /healthz answered, median {statistics.median(answered) * 1000:.0f} ms, {worst}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=1, help="gunicorn workers (default 1: the hardest case)")
    parser.add_argument("--worker-class", default="asgi")
    parser.add_argument("--limit-s", type=float, default=1.0)
    parser.add_argument("--no-baseline", action="store_true", help="skip the sync-worker comparison")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="slow-clients-") as tmp:
        env = bench_env(Path(tmp), static_manifest=False)
        manage(env, "migrate", "--noinput", "-v", "0")
        times = measure(
            env,
            connections=options.connections,
            seconds=options.seconds,
            workers=options.workers,
            worker_class=options.worker_class,
        )
        print(
            f"{options.worker_class}, {options.workers} worker(s), {options.connections} slow connections: "
            + summary(times)
        )
        if not options.no_baseline:
            baseline = measure(
                env,
                connections=options.connections,
                seconds=options.seconds,
                workers=options.workers,
                worker_class="sync",
            )
            print(f"baseline sync, {options.workers} worker(s), same load: " + summary(baseline))
    ok = bool(times) and max(times) < options.limit_s
    print("OK" if ok else f"FAIL: a /healthz took {options.limit_s} s or more (or got no answer)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
