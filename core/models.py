"""Rows that belong to no app: the ids of the background tasks the app has handed out."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class IssuedTask(models.Model):
    """A Celery task id the app queued (core.queueing.enqueue), so the task status API can tell an id it never
    issued (404) from an issued task whose result expired or was lost (Celery reads both as PENDING)."""

    id = models.CharField(primary_key=True, max_length=64)
    kind = models.CharField(max_length=100, help_text="The Celery task name.")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    def __str__(self) -> str:
        return f"{self.kind} {self.id}"
