"""Fixtures shared by the whole suite, and the guard that makes missing services loud in CI."""

from __future__ import annotations

import contextlib
import os
import socket
import types
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import pytest
from django.conf import settings

IN_CI = os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _answers(url: str, default_port: int) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or default_port), timeout=2):
            return True
    except OSError:
        return False


def pytest_sessionstart(session: pytest.Session) -> None:
    """In CI the suite must run on PostgreSQL and Redis; say which one is missing and stop."""
    if not IN_CI:
        return
    missing = []
    database_url = os.environ.get("DATABASE_URL", "")
    if not database_url.startswith(("postgres://", "postgresql://")):
        missing.append(f"PostgreSQL (DATABASE_URL is {database_url!r}, CI needs postgres://...)")
    elif not _answers(database_url, 5432):
        missing.append(f"PostgreSQL is not answering at {database_url}")
    redis_url = os.environ.get("REDIS_URL", "")
    if not redis_url:
        missing.append("Redis (REDIS_URL is unset)")
    elif not _answers(redis_url, 6379):
        missing.append(f"Redis is not answering at {redis_url}")
    if missing:
        raise pytest.UsageError("CI=true but required services are missing: " + "; ".join(missing))


@pytest.fixture
def redis_url() -> str:
    """The Redis URL for tests that need a real Redis; skipped (with the reason) only outside CI."""
    url = os.environ.get("REDIS_URL", "")
    if url and _answers(url, 6379):
        return url
    reason = f"needs Redis: REDIS_URL={url!r} is unset or not answering"
    if IN_CI:
        pytest.fail(reason)
    pytest.skip(reason)


def torch_module() -> types.ModuleType:
    """The torch module for tests of the profiler (its extra, installed by `make test`); skipped (with the reason)
    only outside CI, as redis_url is."""
    try:
        import torch
    except ImportError as error:
        reason = f"needs torch (the profiler extra): {error}"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(reason)
    return torch


@pytest.fixture(autouse=True)
def _eager_celery_by_default(settings: object) -> Iterator[None]:
    """Tasks run in-process unless a test starts a real worker."""
    from config.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = previous


@pytest.fixture(autouse=True)
def _isolated_cache() -> Iterator[None]:
    from django.core.cache import cache

    yield
    # A cache outage must not hide the test's own result.
    with contextlib.suppress(Exception):
        cache.clear()


@pytest.fixture
def user(django_user_model):  # type: ignore[no-untyped-def]
    return django_user_model.objects.create_user(username="alice", password="correct-horse-battery")


@pytest.fixture
def other_user(django_user_model):  # type: ignore[no-untyped-def]
    return django_user_model.objects.create_user(username="bob", password="correct-horse-battery")


@pytest.fixture
def staff_user(django_user_model):  # type: ignore[no-untyped-def]
    return django_user_model.objects.create_user(username="carol", password="correct-horse-battery", is_staff=True)


def uses_postgres() -> bool:
    return settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def reset_celery_connections() -> None:
    """Celery caches its result backend (per thread) and its producer pool; drop both so new conf applies."""
    from kombu import pools

    from config.celery import app

    app._local.__dict__.pop("backend", None)
    if app._pool is not None:
        app._pool.force_close_all()
        app._pool = None
    # kombu keeps producer pools in a process-wide registry keyed by broker URL; a stopped worker closes the one
    # for its URL, and the app's cached producer pool would keep pointing at it.
    app.amqp._producer_pool = None
    pools.reset()


@contextmanager
def celery_broker(url: str) -> Iterator[None]:
    """Send tasks through a real broker at ``url`` (not in-process) for the duration, then restore."""
    from config.celery import app

    previous = {key: app.conf[key] for key in ("broker_url", "result_backend", "task_always_eager")}
    app.conf.update(broker_url=url, result_backend=url, task_always_eager=False)
    reset_celery_connections()
    try:
        yield
    finally:
        app.conf.update(previous)
        reset_celery_connections()
