from django.contrib import admin

from advisor.models import Calibration, Scenario, ScenarioVersion, ShareLink


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
    list_display = ["scenario", "created_at", "revoked_at"]
