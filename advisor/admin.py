from django.contrib import admin

from advisor.models import Calibration, Proposal, Scenario, ScenarioVersion, ShareLink


@admin.register(Calibration)
class CalibrationAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "runs", "loo_mape", "is_default", "created_at"]
    list_filter = ["is_default"]


class ScenarioVersionInline(admin.TabularInline):
    model = ScenarioVersion
    extra = 0
    readonly_fields = ["number", "name", "document", "created_at"]


@admin.register(Scenario)
class ScenarioAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "updated_at"]
    inlines = [ScenarioVersionInline]


@admin.register(ShareLink)
class ShareLinkAdmin(admin.ModelAdmin):
    list_display = ["scenario", "proposal", "created_at", "revoked_at"]


@admin.register(Proposal)
class ProposalAdmin(admin.ModelAdmin):
    """Read-only: an issued proposal is frozen, even for staff."""

    list_display = ["pk", "scenario_name", "owner", "issued_at", "content_hash"]
    readonly_fields = [f.name for f in Proposal._meta.fields]

    def has_change_permission(self, request, obj=None) -> bool:
        return False
