"""Everything under /api/v1/ (mounted with namespace "v1": NamespaceVersioning reads the version from it)."""

from __future__ import annotations

from django.urls import path

from advisor.api.views import catalog, gpus, scenarios, tokens

urlpatterns = [
    path("gpus", gpus.GpuListView.as_view(), name="gpu-list"),
    path("gpus/<str:gpu_id>", gpus.GpuDetailView.as_view(), name="gpu-detail"),
    path("gpus/<str:gpu_id>/price-history", catalog.GpuPriceHistoryView.as_view(), name="gpu-price-history"),
    path("offers/<int:offer_id>/history", catalog.OfferHistoryView.as_view(), name="offer-history"),
    path("hardware-quotes", catalog.HardwareQuoteListView.as_view(), name="hardware-quote-list"),
    path("scenarios", scenarios.ScenarioListView.as_view(), name="scenario-list"),
    path("scenarios/<int:scenario_id>", scenarios.ScenarioDetailView.as_view(), name="scenario-detail"),
    path("tokens", tokens.TokenListView.as_view(), name="token-list"),
    path("tokens/<int:token_id>", tokens.TokenDetailView.as_view(), name="token-detail"),
]
