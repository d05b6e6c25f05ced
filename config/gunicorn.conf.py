"""gunicorn settings for `make serve-prod` (gunicorn -c config/gunicorn.conf.py).

Worker class: gunicorn's own asyncio ASGI worker on Django's ASGI app (config/asgi.py). Each worker
reads requests on an event loop and hands a view to a thread only once its headers (and body) have
arrived, so slow or idle clients hold a cheap connection, not a worker: with sync workers, three
connections sending their headers a byte a second stopped `/healthz` (bench/slow_clients.py).
Every value can be overridden with GUNICORN_* environment variables (.env.example), read and bounded by
config/env.py's readers; Django's settings are read here too, so a bad one stops gunicorn as it stops manage.py.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# gunicorn puts its working directory (the project root, as for config.asgi below) on sys.path first.
from config.env import env_int, require_hosts_to_serve

wsgi_app = "config.asgi:application"
worker_class = "asgi"
# gunicorn prints a traceback for an exception in its config file; a bad value ends it with manage.py's one line.
try:
    # 2 x cores + 1 is gunicorn's advice for CPU-bound work (each advice runs the estimator).
    workers = env_int("GUNICORN_WORKERS", 2 * (os.cpu_count() or 1) + 1, minimum=1)
    # Open connections per worker, slow ones included; past it new connections wait in the backlog.
    worker_connections = env_int("GUNICORN_WORKER_CONNECTIONS", 1000, minimum=1)
    # A request still running after this is abandoned and its worker restarted (the work budget keeps
    # every synchronous request well inside it; longer work runs as a Celery task). 0 would switch it off.
    timeout = env_int("GUNICORN_TIMEOUT_S", 30, minimum=1)
    graceful_timeout = env_int("GUNICORN_GRACEFUL_TIMEOUT_S", 30, minimum=1)
    # Idle keep-alive connections are closed after this many seconds (0: each connection after its response).
    keepalive = env_int("GUNICORN_KEEPALIVE_S", 5, minimum=0)
    # Request line and headers: gunicorn's defaults, stated so that they are reviewed with the rest. gunicorn
    # reads 0 as unlimited, and documents at most 8190 bytes of request line and 32768 fields.
    limit_request_line = env_int("GUNICORN_LIMIT_REQUEST_LINE", 4094, minimum=1, maximum=8190)
    limit_request_fields = env_int("GUNICORN_LIMIT_REQUEST_FIELDS", 100, minimum=1, maximum=32768)
    limit_request_field_size = env_int("GUNICORN_LIMIT_REQUEST_FIELD_SIZE", 8190, minimum=1)
    # Django's settings too, here in the arbiter: read first by each worker, a bad one (LOG_LEVEL=LOUD, production
    # without ALLOWED_HOSTS) failed every worker's boot, and gunicorn exited 3 after a 73-line traceback. Only the
    # settings: loading the apps here would preload them into every worker, so HUP would not reload the code.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    require_hosts_to_serve(allowed_hosts=settings.ALLOWED_HOSTS, production=settings.DEPLOYMENT == "production")
except ImproperlyConfigured as error:  # config.env's ConfigurationError is one
    print(f"configuration error: {error}", file=sys.stderr)
    raise SystemExit(2) from None
# Django's ASGI handler has no lifespan support; skip the startup handshake.
asgi_lifespan = "off"
accesslog = "-"


def on_starting(server: Any) -> None:
    """gunicorn 25+ opens a control socket (for `gunicornc`) at one path per user, $XDG_RUNTIME_DIR/gunicorn.ctl or
    ~/.gunicorn/gunicorn.ctl: every instance on a host (a blue/green second serve-prod, bench/load.py's) took it over,
    and stopping one deleted it under the others. Unless --control-socket names one, each instance gets its own in
    that directory, named after its bind (gunicorn-127.0.0.1-8000.ctl); --no-control-socket switches it off."""
    cfg = server.cfg
    if cfg.control_socket != cfg.settings["control_socket"].default:
        return  # named on the command line or in GUNICORN_CMD_ARGS
    name = re.sub(r"[^A-Za-z0-9.]+", "-", "+".join(cfg.bind)).strip("-")
    if len(name) > 48:  # a Unix socket path has ~100 bytes
        name = hashlib.sha256(name.encode()).hexdigest()[:16]
    cfg.set("control_socket", str(Path(cfg.control_socket).with_name(f"gunicorn-{name}.ctl")))
