"""gunicorn settings for `make serve-prod` (gunicorn -c config/gunicorn.conf.py).

Worker class: gunicorn's own asyncio ASGI worker on Django's ASGI app (config/asgi.py). Each worker
reads requests on an event loop and hands a view to a thread only once its headers (and body) have
arrived, so slow or idle clients hold a cheap connection, not a worker: with sync workers, three
connections sending their headers a byte a second stopped `/healthz` (bench/slow_clients.py).
Every value can be overridden with GUNICORN_* environment variables, read here as integers.
"""

from __future__ import annotations

import os


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise SystemExit(f"{name}={raw!r} is not an integer") from None


wsgi_app = "config.asgi:application"
worker_class = "asgi"
# 2 x cores + 1 is gunicorn's advice for CPU-bound work (each advice runs the estimator).
workers = _int("GUNICORN_WORKERS", 2 * (os.cpu_count() or 1) + 1)
# Open connections per worker, slow ones included; past it new connections wait in the backlog.
worker_connections = _int("GUNICORN_WORKER_CONNECTIONS", 1000)
# A request still running after this is abandoned and its worker restarted (the work budget keeps
# every synchronous request well inside it; longer work runs as a Celery task).
timeout = _int("GUNICORN_TIMEOUT_S", 30)
graceful_timeout = _int("GUNICORN_GRACEFUL_TIMEOUT_S", 30)
# Idle keep-alive connections are closed after this many seconds.
keepalive = _int("GUNICORN_KEEPALIVE_S", 5)
# Request line and headers: gunicorn's defaults, stated so that they are reviewed with the rest.
limit_request_line = _int("GUNICORN_LIMIT_REQUEST_LINE", 4094)
limit_request_fields = _int("GUNICORN_LIMIT_REQUEST_FIELDS", 100)
limit_request_field_size = _int("GUNICORN_LIMIT_REQUEST_FIELD_SIZE", 8190)
# Django's ASGI handler has no lifespan support; skip the startup handshake.
asgi_lifespan = "off"
accesslog = "-"
