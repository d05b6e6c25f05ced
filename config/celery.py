"""The Celery app. Configuration comes from Django settings (CELERY_* names); without REDIS_URL
tasks run eagerly in-process so the embedded default needs no broker."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def refuse_a_worker_without_a_broker(argv: list[str], *, redis_url: str) -> None:
    """`celery worker` or `celery beat` without REDIS_URL started on the in-memory transport and said "ready", yet
    could never receive a task from the web processes (which run tasks in-process without it): one line instead."""
    program = Path(argv[0]) if argv else Path()
    is_celery = program.name == "celery" or program.parts[-2:] == ("celery", "__main__.py")
    if is_celery and {"worker", "beat"} & set(argv[1:]) and not redis_url:
        raise SystemExit(
            "configuration error: REDIS_URL is required for a Celery worker or beat (the broker the web processes "
            "queue tasks on); without it tasks run in the web process and a worker would never receive one"
        )


app = Celery("advisor")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# core is not a Django app; its housekeeping tasks (core/tasks.py) are found explicitly.
app.autodiscover_tasks(["core"])
refuse_a_worker_without_a_broker(sys.argv, redis_url=os.environ.get("REDIS_URL", "").strip())
