"""Queue a Celery task from a request without hanging when the broker (Redis) is down.

Celery's defaults retry a broken Redis connection for about 20 s inside `delay()` and then raise a
RuntimeError; a web request must not wait that long nor answer a 500. `enqueue` probes the broker
once with a short timeout and publishes with a bounded retry; either failure raises
QueueUnavailable with a message the page or the API shows as is.
In the embedded mode (tasks run eagerly, no broker) it simply runs the task.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlsplit

from celery import Task
from celery import current_app as app
from celery.result import AsyncResult
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from kombu.exceptions import OperationalError as KombuOperationalError
from redis.exceptions import RedisError

from core.breaker import breaker_for
from core.models import IssuedTask

logger = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 2
PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5}
OUTAGE_ERRORS: tuple[type[BaseException], ...] = (KombuOperationalError, RedisError, OSError, RuntimeError)


class QueueUnavailable(Exception):
    """The task queue does not answer; nothing was queued. The message gives the wait Retry-After gives and,
    when the task has one, the command an operator can run instead (`operator_command`)."""

    def __init__(self, cause: BaseException, *, retry_after_s: int = 60, operator_command: str = "") -> None:
        self.cause = cause
        self.retry_after_s = retry_after_s
        instead = f"; an operator can run it now with `{operator_command}`." if operator_command else "."
        super().__init__(
            "The task queue (Redis) is not answering, so the task could not be queued and nothing was started. "
            f"Try again in {retry_after_s} s{instead}"
        )


def operator_command(task: Task, args: tuple[Any, ...]) -> str:
    """The command that does the task's work in the operator's shell: the task's `operator_command` option
    (`@shared_task(operator_command="python manage.py refresh_prices --feed {0}")`, formatted with the task's
    arguments), or "" for a task without one."""
    template = getattr(task, "operator_command", "")
    return template.format(*args) if template else ""


def record_issued(*, task_id: str, kind: str, owner: AbstractBaseUser | AnonymousUser | None = None) -> None:
    """Remember a task id the app handed out (the task status API answers 404 for any other id)."""
    issued_to = owner if owner is not None and owner.is_authenticated else None
    IssuedTask.objects.update_or_create(id=task_id, defaults={"kind": kind, "owner": issued_to})


def issued_task(*, task_id: str) -> IssuedTask | None:
    """The record of a task id the app handed out, or None for an id it never issued."""
    return IssuedTask.objects.filter(pk=task_id).first()


def enqueue(
    task: Task, *args: Any, owner: AbstractBaseUser | AnonymousUser | None = None, **kwargs: Any
) -> AsyncResult:
    """`task.delay(*args, **kwargs)` that fails fast with QueueUnavailable when the broker is down; the task id is
    recorded (`record_issued`, with the user it was queued for) once the task is queued."""
    result = _send(task, *args, **kwargs)
    record_issued(task_id=result.id, kind=task.name, owner=owner)
    return result


def runs_in_process() -> bool:
    """Whether a queued task runs inside the caller (the embedded mode: no broker, ``task_always_eager``)."""
    return bool(app.conf.task_always_eager)


def _send(task: Task, *args: Any, **kwargs: Any) -> AsyncResult:
    if runs_in_process():
        return task.delay(*args, **kwargs)
    # After a failure the broker is skipped for a short window: the next requests answer 503 at once.
    location = urlsplit(str(app.conf.broker_url))
    broker = breaker_for(f"task broker {location.hostname}:{location.port}")
    try:
        broker.check()
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1, timeout=PROBE_TIMEOUT_S)
        result = task.apply_async(args=args, kwargs=kwargs, retry=True, retry_policy=PUBLISH_RETRY_POLICY)
    except OUTAGE_ERRORS as error:
        if not broker.is_open():
            broker.record_failure(error)
        logger.warning("could not queue %s: %s: %s", task.name, type(error).__name__, error)
        raise QueueUnavailable(
            error, retry_after_s=broker.retry_after_s(), operator_command=operator_command(task, args)
        ) from error
    broker.record_success()
    return result
