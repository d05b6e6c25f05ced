from __future__ import annotations

from django.contrib import admin

from pricing.models import FeedRun, HardwareQuote, Offer, OwnershipDefault, PriceObservation, Provider


@admin.register(HardwareQuote)
class HardwareQuoteAdmin(admin.ModelAdmin):
    list_display = ["gpu", "gpus_per_server", "name", "usd", "quoted_on", "power_kw", "networking_usd_per_node"]
    list_filter = ["gpu", "gpus_per_server"]
    search_fields = ["name", "source", "notes"]


@admin.register(OwnershipDefault)
class OwnershipDefaultAdmin(admin.ModelAdmin):
    list_display = ["key", "value", "unit", "as_of"]
    search_fields = ["key", "source"]


@admin.register(Provider)
class ProviderAdmin(admin.ModelAdmin):
    list_display = ["slug", "name"]


@admin.register(Offer)
class OfferAdmin(admin.ModelAdmin):
    """Offers are written by the feeds; the admin shows them read-only so history stays truthful."""

    list_display = ["provider", "instance_type", "region", "market", "gpu", "usd_per_gpu_hour", "observed_at", "feed"]
    list_filter = ["provider", "market", "gpu", "feed", "is_snapshot"]
    search_fields = ["instance_type", "region", "source"]
    list_select_related = ["provider"]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False


@admin.register(PriceObservation)
class PriceObservationAdmin(admin.ModelAdmin):
    list_display = ["offer", "usd_per_hour", "usd_per_gpu_hour", "observed_at", "recorded_at"]
    list_select_related = ["offer__provider"]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False


@admin.register(FeedRun)
class FeedRunAdmin(admin.ModelAdmin):
    list_display = ["feed", "kind", "status", "started_at", "finished_at", "fetched", "accepted", "rejected", "error"]
    list_filter = ["feed", "kind", "status"]

    def has_add_permission(self, request: object) -> bool:
        return False

    def has_change_permission(self, request: object, obj: object = None) -> bool:
        return False
