"""Everything under /api/v1/ (mounted with namespace "v1": NamespaceVersioning reads the version from it)."""

from __future__ import annotations

from django.urls import include, path

from advisor.api.views import calibrations, catalog, gpus, scenarios, tokens

urlpatterns = [
    path("calibrations", calibrations.CalibrationListView.as_view(), name="calibration-list"),
    path("calibrations/<int:calibration_id>", calibrations.CalibrationDetailView.as_view(), name="calibration-detail"),
    path(
        "calibrations/<int:calibration_id>/residuals",
        calibrations.CalibrationResidualsView.as_view(),
        name="calibration-residuals",
    ),
    path(
        "calibrations/<int:calibration_id>/activate",
        calibrations.CalibrationActivateView.as_view(),
        name="calibration-activate",
    ),
    path("estimate", calibrations.EstimateView.as_view(), name="estimate"),
    path("gpus", gpus.GpuListView.as_view(), name="gpu-list"),
    path("gpus/<str:gpu_id>", gpus.GpuDetailView.as_view(), name="gpu-detail"),
    path("gpus/<str:gpu_id>/price-history", catalog.GpuPriceHistoryView.as_view(), name="gpu-price-history"),
    path("offers/<int:offer_id>/history", catalog.OfferHistoryView.as_view(), name="offer-history"),
    path("hardware-quotes", catalog.HardwareQuoteListView.as_view(), name="hardware-quote-list"),
    path("scenarios", scenarios.ScenarioListView.as_view(), name="scenario-list"),
    path("scenarios/<int:scenario_id>", scenarios.ScenarioDetailView.as_view(), name="scenario-detail"),
    path("tokens", tokens.TokenListView.as_view(), name="token-list"),
    path("tokens/<int:token_id>", tokens.TokenDetailView.as_view(), name="token-detail"),
    # GET offers, GET feeds (pricing owns them; they share this namespace for versioning).
    path("", include("pricing.api.urls")),
]
