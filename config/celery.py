"""The Celery app. Configuration comes from Django settings (CELERY_* names); without REDIS_URL
tasks run eagerly in-process so the embedded default needs no broker."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def _is_celery(argv: list[str]) -> bool:
    program = Path(argv[0]) if argv else Path()
    return program.name == "celery" or program.parts[-2:] == ("celery", "__main__.py")


def _refuse(message: str) -> NoReturn:
    """One line and exit status 2, as manage.py and gunicorn stop on a configuration error."""
    print(f"configuration error: {message}", file=sys.stderr)
    raise SystemExit(2)


def refuse_a_worker_without_a_broker(argv: list[str], *, redis_url: str) -> None:
    """`celery worker` or `celery beat` without REDIS_URL started on the in-memory transport and said "ready", yet
    could never receive a task from the web processes (which run tasks in-process without it): one line instead."""
    if _is_celery(argv) and {"worker", "beat"} & set(argv[1:]) and not redis_url:
        _refuse(
            "REDIS_URL is required for a Celery worker or beat (the broker the web processes "
            "queue tasks on); without it tasks run in the web process and a worker would never receive one"
        )


def refuse_a_bad_configuration(argv: list[str]) -> None:
    """The celery program read Django's settings lazily, inside click's option parsing, so a bad value (LOG_LEVEL=LOUD,
    no SECRET_KEY in production) ended a worker or beat with a 90-line traceback and exit status 1: read them now."""
    if not _is_celery(argv):
        return  # manage.py and gunicorn's config report it themselves
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        settings.INSTALLED_APPS  # noqa: B018
    except ImproperlyConfigured as error:
        _refuse(str(error))


app = Celery("advisor")
refuse_a_bad_configuration(sys.argv)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# core is not a Django app; its housekeeping tasks (core/tasks.py) are found explicitly.
app.autodiscover_tasks(["core"])
refuse_a_worker_without_a_broker(sys.argv, redis_url=os.environ.get("REDIS_URL", "").strip())
