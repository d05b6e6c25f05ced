"""Calibration fits whose queued task was lost: the row stays pending (or fitting) with no task left to fit it.

A Redis restart without persistence, or a FLUSHDB, drops the queued `fit_calibration` message (acks_late does not
help once the message itself is gone). A fit still pending or fitting CALIBRATION_FIT_STALLED_AFTER_S after it was
last queued is shown as "stalled", and the beat task `advisor.requeue_stalled_fits` queues it again; the fit is
idempotent, so a fit that was only slow is not harmed by a second message.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import current_app
from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from advisor.calibrations import FIT_TASK
from advisor.models import Calibration as CalibrationRow
from core.models import IssuedTask
from core.queueing import QueueUnavailable, enqueue

logger = logging.getLogger(__name__)

STALLED = "stalled"
WAITING = (CalibrationRow.State.PENDING, CalibrationRow.State.FITTING)


def stalled_fits() -> QuerySet[CalibrationRow]:
    """Pending or fitting calibrations whose fit was last queued (or, without a record, created) longer ago than
    CALIBRATION_FIT_STALLED_AFTER_S."""
    cutoff = timezone.now() - timedelta(seconds=settings.CALIBRATION_FIT_STALLED_AFTER_S)
    recently_queued = IssuedTask.objects.filter(created_at__gte=cutoff).values("id")
    return CalibrationRow.objects.filter(state__in=WAITING, created_at__lt=cutoff).exclude(task_id__in=recently_queued)


def shown_state(*, calibration: CalibrationRow) -> str:
    """The state a page or the API shows: the stored one, or "stalled" for a fit whose task was lost."""
    if calibration.state in WAITING and stalled_fits().filter(pk=calibration.pk).exists():
        return STALLED
    return str(calibration.state)


def requeue_stalled_fits() -> list[int]:
    """Queue the fit of each stalled calibration again (the beat task's body); the ids queued. Stops at the first
    queue outage: the next beat run tries again."""
    fit_calibration = current_app.tasks[FIT_TASK]
    queued: list[int] = []
    for row in stalled_fits().select_related("owner").order_by("pk"):
        try:
            result = enqueue(fit_calibration, row.pk, owner=row.owner)
        except QueueUnavailable as error:
            logger.warning("stalled calibration fits not re-queued: %s", error)
            break
        CalibrationRow.objects.filter(pk=row.pk, state__in=WAITING).update(task_id=result.id)
        logger.info("calibration %s: fit stalled, queued again as task %s", row.pk, result.id)
        queued.append(row.pk)
    return queued
