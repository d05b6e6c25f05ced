"""Staff-only: start a price-feed refresh (a Celery task) and poll its status."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from celery import current_app as app
from celery.result import AsyncResult
from django.conf import settings
from django.utils import timezone
from django.utils.module_loading import import_string
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import APIException, NotFound, PermissionDenied
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from core.api.permissions import IsStaff
from core.api.query import KnownQueryParameters
from core.queueing import OUTAGE_ERRORS, QueueUnavailable, enqueue, issued_task
from pricing.api.serializers import TaskSerializer
from pricing.feeds import UnknownFeed, UnknownFeedPart, refreshable
from pricing.tasks import refresh_feed

logger = logging.getLogger(__name__)


def may_see_task(user: Any, task_id: str) -> bool:
    """Staff see every task; anyone else only a task one of ``settings.TASK_VIEWERS`` grants them (dotted
    paths of ``(*, user, task_id) -> bool``: the advisor's calibration fits), so pricing needs no import of the apps
    whose tasks these are."""
    if user.is_staff:
        return True
    return any(import_string(path)(user=user, task_id=task_id) for path in settings.TASK_VIEWERS)


class QueueDown(APIException):
    """503; DRF sends `wait` as Retry-After: the broker breaker's remaining window when it is known."""

    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The task queue is not answering."

    def __init__(self, detail: str, *, wait: int = 60) -> None:
        super().__init__(detail)
        self.wait = wait

    @classmethod
    def from_unavailable(cls, error: QueueUnavailable) -> QueueDown:
        return cls(str(error), wait=error.retry_after_s)


# An issued task still PENDING once a result would have expired: Celery cannot tell queued from lost or expired.
UNKNOWN = "unknown"
UNKNOWN_DETAIL = (
    "No result is stored for this task: its result expired or was lost (results are kept {hours:g} h). "
    "Check what it did in the feed status (GET /api/v1/feeds) or the calibration's state (GET /api/v1/calibrations)."
)


def task_status(request: Request, result: AsyncResult, *, issued_at: datetime | None = None) -> dict[str, Any]:
    """The task's state from the result backend (Redis); 503 with Retry-After when that does not answer. A task
    issued at ``issued_at`` that is still PENDING after CELERY_RESULT_EXPIRES reads "unknown", with why."""
    try:
        state = result.state
        outcome = result.result if state in ("SUCCESS", "FAILURE") else None
    except OUTAGE_ERRORS as error:
        logger.warning("task %s: result backend unavailable: %s: %s", result.id, type(error).__name__, error)
        raise QueueDown("The task store (Redis) is not answering; try again in a minute.") from error
    body: dict[str, Any] = {
        "task_id": result.id,
        "status": state,
        "status_url": reverse("v1:task-detail", kwargs={"task_id": result.id}, request=request),
    }
    expires_s = settings.CELERY_RESULT_EXPIRES
    if state == "PENDING" and issued_at is not None and timezone.now() - issued_at >= timedelta(seconds=expires_s):
        body["status"] = UNKNOWN
        body["detail"] = UNKNOWN_DETAIL.format(hours=expires_s / 3600)
    elif state == "SUCCESS":
        body["result"] = outcome
    elif state == "FAILURE":
        body["error"] = f"{type(outcome).__name__}: {outcome}"
    return body


class UnknownFeedPartError(APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_detail = "The feed has no such part."
    default_code = "unknown_feed_part"


class FeedRefreshView(GenericAPIView):
    permission_classes = [IsStaff, KnownQueryParameters]
    serializer_class = TaskSerializer
    task_queue_methods = ("POST",)  # the OpenAPI document declares its 503 (QueueDown) with Retry-After

    @extend_schema(
        summary=(
            "Refresh one price feed, or one part of a group such as skypilot:cudo, now (staff); "
            "answers the task id and a status URL"
        ),
        request=None,
        responses={202: TaskSerializer},
    )
    def post(self, request: Request, feed: str) -> Response:
        try:
            refreshable(feed)
        except UnknownFeed as error:
            raise NotFound(f"{error.args[0]}.") from error
        except UnknownFeedPart as error:
            raise UnknownFeedPartError(f"{error}.") from error
        try:
            result = enqueue(refresh_feed, feed, owner=request.user)
        except QueueUnavailable as error:
            raise QueueDown.from_unavailable(error) from error
        body = task_status(request, result)
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["status_url"]})


class TaskDetailView(GenericAPIView):
    serializer_class = TaskSerializer
    task_queue_methods = ("GET",)  # the OpenAPI document declares its 503 (QueueDown) with Retry-After

    @extend_schema(
        summary=(
            "A background task's state and result (staff: any task; others: their calibration fits); "
            "404 for an id the app never issued"
        ),
        responses=TaskSerializer,
    )
    def get(self, request: Request, task_id: str) -> Response:
        if not may_see_task(request.user, task_id):
            # The same answer whether or not the id exists: task ids are not enumerable through this.
            raise PermissionDenied("Only staff, or the owner of a calibration the task fits, can see a task.")
        issued = issued_task(task_id=task_id)
        if issued is None:
            raise NotFound(f"No task {task_id!r}: this app never issued that id.")
        return Response(task_status(request, AsyncResult(task_id, app=app), issued_at=issued.created_at))
