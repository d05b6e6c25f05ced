"""What users keep: scenarios (with every saved version), frozen proposals, share links, and calibrations."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models


def new_share_token() -> str:
    # 32 bytes from the OS CSPRNG: unguessable, URL-safe.
    return secrets.token_urlsafe(32)


class Calibration(models.Model):
    """A fitted estimator calibration (the JSON document estimator.calibrate produces).

    owner is null for the calibration the product ships; a user's own fits belong to them."""

    class State(models.TextChoices):
        PENDING = "pending", "Queued for fitting"
        FITTING = "fitting", "Fitting"
        READY = "ready", "Ready"
        FAILED = "failed", "Fit failed"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="calibrations"
    )
    name = models.CharField(max_length=200)
    document = models.JSONField(help_text="Fitted parameters and fit report (estimator calibration JSON).")
    runs = models.PositiveIntegerField(help_text="Profiled runs used in the fit.")
    loo_mape = models.FloatField(
        null=True,
        blank=True,
        help_text="Held-out mean absolute percentage error of tokens/s, as a fraction; null until it is fitted.",
    )
    is_default = models.BooleanField(default=False, help_text="The shipped calibration used when a user chose none.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(
        null=True, blank=True, help_text="When it was last replaced by a new fit under the same name (null: never)."
    )
    # A large upload is fitted by the fit_calibration task: until then the row holds the validated runs.
    state = models.CharField(max_length=8, choices=State.choices, default=State.READY)
    task_id = models.CharField(max_length=64, blank=True, default="", help_text="The fit task, while one is queued.")
    error = models.TextField(blank=True, default="", help_text="Why the fit failed (state failed).")
    pending_runs = models.JSONField(null=True, blank=True, help_text="Validated run records awaiting the fit.")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="calibration_unique_name_per_owner"),
            models.UniqueConstraint(
                fields=["is_default"], condition=models.Q(is_default=True), name="calibration_single_default"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class ActiveCalibration(models.Model):
    """Which calibration a user's scenarios are predicted with (absent: the default)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="active_calibration")
    calibration = models.ForeignKey(Calibration, on_delete=models.CASCADE, related_name="+")

    def __str__(self) -> str:
        return f"{self.user} uses {self.calibration}"


class Scenario(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="scenarios")
    name = models.CharField(max_length=200)
    document = models.JSONField(help_text="The Scenario JSON of DESIGN.md, as last saved.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"])]

    def __str__(self) -> str:
        return self.name


class ScenarioVersion(models.Model):
    """Every saved state of a scenario: an overwrite never loses what was there before."""

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    name = models.CharField(max_length=200)
    document = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["scenario", "number"], name="scenario_version_unique_number")]

    def __str__(self) -> str:
        return f"{self.name} v{self.number}"


class ShareLink(models.Model):
    """A read-only link to one scenario's advice; revoking sets revoked_at, the token never comes back."""

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="share_links")
    # Links made since proposals exist show that frozen proposal; older links (null) show the scenario live.
    proposal = models.ForeignKey(
        "Proposal", null=True, blank=True, on_delete=models.CASCADE, related_name="share_links"
    )
    token = models.CharField(max_length=64, unique=True, default=new_share_token, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"share link for {self.scenario}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class ApiToken(models.Model):
    """A named, revocable API token. Only a SHA-256 digest of the key is stored; the key is shown once.

    A user may hold several (one per integration) and revoke each on its own; revoking sets
    revoked_at, so the token stays listed with when it stopped working."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, help_text="The key's first characters, to recognise it in lists.")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # The token whose key created this one (None: made from a signed-in session or the CLI).
    # Revoking a token revokes what it created, so a leaked key cannot leave live keys behind.
    created_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="created_tokens", editable=False
    )

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["user", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class Proposal(models.Model):
    """A frozen Advice: what was proposed, with the prices, quotes and calibration it used, as issued.

    Nothing here is recomputed when prices change; "recompute with today's prices" issues a new
    proposal (``recomputed_from`` points at the one it replaces). ``scenario`` may be deleted later:
    the proposal keeps its own copy of the scenario's name and document.

    A fleet proposal (``kind`` "fleet") freezes a saved fleet's Fleet Plan the same way: ``fleet`` instead of
    ``scenario``, the fleet's name and Fleet Plan input in ``scenario_name`` / ``scenario_document``, the Fleet
    Plan JSON in ``advice``."""

    KIND_SCENARIO = "scenario"
    KIND_FLEET = "fleet"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="proposals")
    kind = models.CharField(
        max_length=16,
        choices=[(KIND_SCENARIO, "Scenario advice"), (KIND_FLEET, "Fleet plan")],
        default=KIND_SCENARIO,
        help_text="What was frozen: a scenario's Advice or a saved fleet's Fleet Plan.",
    )
    fleet = models.ForeignKey(
        "advisor.Fleet", null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals"
    )
    scenario = models.ForeignKey(Scenario, null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals")
    scenario_name = models.CharField(max_length=200)
    scenario_document = models.JSONField(help_text="The Scenario JSON as it was when the proposal was issued.")
    issued_at = models.DateTimeField()
    advice = models.JSONField(help_text="The Advice JSON as issued.")
    provenance = models.JSONField(
        help_text="The offers, hardware quote and calibration the Advice used, with their sources and dates."
    )
    content_hash = models.CharField(max_length=64, help_text="SHA-256 of the canonical JSON of advice + provenance.")
    recomputed_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="recomputations"
    )

    class Meta:
        ordering = ["-issued_at", "-pk"]
        indexes = [models.Index(fields=["owner", "-issued_at"])]

    def __str__(self) -> str:
        return f"proposal {self.pk} of {self.scenario_name}"


class IdempotentResponse(models.Model):
    """The first response to a POST sent with an `Idempotency-Key`, kept per user for a day (the key's
    lifetime, settings.IDEMPOTENCY_KEY_TTL_S): a retry with the same key and body gets it back instead of
    creating a second object."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of method, path and canonical JSON body.")
    status_code = models.PositiveSmallIntegerField()
    body = models.JSONField()
    headers = models.JSONField(default=dict, help_text="Location and ETag of the first response.")
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "key"], name="idempotency_key_per_user")]

    def __str__(self) -> str:
        return f"{self.key} ({self.status_code})"


# Saved fleet plans live with the fleet code; imported here so the app registry and migrations see them.
from advisor.fleet.models import Fleet, FleetVersion  # noqa: E402, F401
