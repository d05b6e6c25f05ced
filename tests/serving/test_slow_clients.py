"""The production server keeps answering /healthz while 50 connections send their headers a byte a second."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_make_serve_prod_uses_the_buffering_server_config() -> None:
    recipe = (ROOT / "Makefile").read_text().split("\nserve-prod:", 1)[1].split("\n\n", 1)[0]
    assert "gunicorn -c config/gunicorn.conf.py" in recipe
    config: dict[str, object] = {}
    exec(compile((ROOT / "config" / "gunicorn.conf.py").read_text(), "gunicorn.conf.py", "exec"), config)  # noqa: S102
    assert config["worker_class"] == "asgi" and config["wsgi_app"] == "config.asgi:application"
    assert 0 < int(config["timeout"]) <= 60 and 0 < int(config["keepalive"]) <= 10


def test_healthz_answers_under_a_second_while_slow_clients_hold_connections() -> None:
    done = subprocess.run(
        [sys.executable, "bench/slow_clients.py", "--connections", "50", "--seconds", "4", "--no-baseline"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "50 slow connections" in done.stdout and "none answered" not in done.stdout
