"""Staff-only: start a price-feed refresh (a Celery task) and poll its status."""

from __future__ import annotations

from typing import Any

from celery import current_app as app
from celery.result import AsyncResult
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.exceptions import APIException, NotFound
from rest_framework.generics import GenericAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse

from core.api.permissions import IsStaff
from core.api.query import KnownQueryParameters
from core.queueing import QueueUnavailable, enqueue
from pricing.api.serializers import TaskSerializer
from pricing.feeds import FEED_NAMES
from pricing.tasks import refresh_feed


def task_status(request: Request, result: AsyncResult) -> dict[str, Any]:
    body: dict[str, Any] = {
        "task_id": result.id,
        "status": result.state,
        "status_url": reverse("v1:task-detail", kwargs={"task_id": result.id}, request=request),
    }
    if result.state == "SUCCESS":
        body["result"] = result.result
    elif result.state == "FAILURE":
        body["error"] = f"{type(result.result).__name__}: {result.result}"
    return body


class QueueDown(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "The task queue is not answering."
    wait = 60  # Retry-After


class FeedRefreshView(GenericAPIView):
    permission_classes = [IsStaff, KnownQueryParameters]
    serializer_class = TaskSerializer

    @extend_schema(
        summary="Refresh one price feed now (staff); answers the task id and a status URL",
        request=None,
        responses={202: TaskSerializer},
    )
    def post(self, request: Request, feed: str) -> Response:
        if feed not in FEED_NAMES:
            raise NotFound(f"Unknown feed {feed!r}; feeds: {', '.join(FEED_NAMES)}.")
        try:
            result = enqueue(refresh_feed, feed)
        except QueueUnavailable as error:
            raise QueueDown(str(error)) from error
        body = task_status(request, result)
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["status_url"]})


class TaskDetailView(GenericAPIView):
    permission_classes = [IsStaff, KnownQueryParameters]
    serializer_class = TaskSerializer

    @extend_schema(summary="A background task's state and result (staff)", responses=TaskSerializer)
    def get(self, request: Request, task_id: str) -> Response:
        return Response(task_status(request, AsyncResult(task_id, app=app)))
