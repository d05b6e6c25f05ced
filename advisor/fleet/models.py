"""Saved fleet plans: the Fleet Plan input as last saved, and every saved version of it."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Fleet(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="fleets")
    name = models.CharField(max_length=200)
    document = models.JSONField(help_text="The Fleet Plan input of DESIGN.md, as last saved.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        app_label = "advisor"
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="fleet_owner_updated")]

    def __str__(self) -> str:
        return self.name


class FleetVersion(models.Model):
    """Every saved state of a fleet: an overwrite never loses what was there before."""

    fleet = models.ForeignKey(Fleet, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    name = models.CharField(max_length=200)
    document = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        app_label = "advisor"
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["fleet", "number"], name="fleet_version_unique_number")]

    def __str__(self) -> str:
        return f"{self.name} v{self.number}"
