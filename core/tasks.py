"""Periodic housekeeping that belongs to no app (scheduled in settings.CELERY_BEAT_SCHEDULE)."""

from __future__ import annotations

from importlib import import_module

from celery import shared_task
from django.conf import settings


@shared_task(name="core.tasks.clear_expired_sessions")
def clear_expired_sessions() -> str:
    """Delete expired sessions, as `manage.py clearsessions` does, so anonymous state does not pile up."""
    engine = import_module(settings.SESSION_ENGINE)
    engine.SessionStore.clear_expired()
    return "cleared"
