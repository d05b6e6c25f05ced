"""Storage anonymous visitors can fill is capped, and sessions expire and are cleared by beat."""

from __future__ import annotations

import secrets
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from core.tasks import clear_expired_sessions

pytestmark = pytest.mark.django_db


def _stored_bytes() -> int:
    return sum(len(row.session_data) for row in Session.objects.all())


def test_a_huge_anonymous_save_stores_nothing_user_sized() -> None:
    client = Client()
    # 4 MB of form fields: inside the upload limit, far beyond any planner form.
    # Random, so that the session's compression cannot hide the size.
    huge = {f"field_{i}": secrets.token_hex(20_000) for i in range(100)}
    response = client.post("/plan/save/", {"name": "plan", **huge})
    assert response.status_code == 302
    assert _stored_bytes() < 4 * settings.ANONYMOUS_SESSION_MAX_BYTES


def test_a_planner_sized_anonymous_save_is_kept_across_sign_in() -> None:
    client = Client()
    response = client.post("/plan/save/", {"name": "kept plan", "gpu": "h100-sxm", "params_b": "7"})
    assert response.status_code == 302
    assert client.session["planner_pending"]["name"] == ["kept plan"]


def test_sessions_expire() -> None:
    assert 0 < settings.SESSION_COOKIE_AGE <= 30 * 24 * 3600
    assert not settings.SESSION_EXPIRE_AT_BROWSER_CLOSE or settings.SESSION_COOKIE_AGE


def test_beat_clears_expired_sessions() -> None:
    entries = [
        entry for entry in settings.CELERY_BEAT_SCHEDULE.values() if entry["task"] == clear_expired_sessions.name
    ]
    assert len(entries) == 1 and entries[0]["schedule"] <= 24 * 3600
    now = timezone.now()
    Session.objects.create(session_key="old" * 10, session_data="x", expire_date=now - timedelta(seconds=1))
    Session.objects.create(session_key="new" * 10, session_data="x", expire_date=now + timedelta(days=1))
    assert clear_expired_sessions.delay().get(timeout=10) == "cleared"
    assert list(Session.objects.values_list("session_key", flat=True)) == ["new" * 10]


def test_the_worker_finds_the_housekeeping_task() -> None:
    from config.celery import app

    app.loader.import_default_modules()
    assert clear_expired_sessions.name in app.tasks
