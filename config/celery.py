"""The Celery app. Configuration comes from Django settings (CELERY_* names); without REDIS_URL
tasks run eagerly in-process so the embedded default needs no broker."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("advisor")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# core is not a Django app; its housekeeping tasks (core/tasks.py) are found explicitly.
app.autodiscover_tasks(["core"])
