"""Everything under /api/v1/ (mounted with namespace "v1": NamespaceVersioning reads the version from it)."""

from __future__ import annotations

from django.urls import URLPattern, path
from drf_spectacular.utils import extend_schema, extend_schema_view

from advisor.api.views import advice, calibrations, catalog, feeds, fleets, gpus, scenarios, tokens
from advisor.api.views.base import JSON_AND_CSV
from pricing.api import urls as pricing_urls


def _tabular(pattern: URLPattern) -> URLPattern:
    """A pricing API view (offers, feeds: lists) mounted here with CSV output added and its GET documented
    as a list of its serializer (paginated when the view paginates)."""
    callback = pattern.callback
    listing = type(callback.view_class.__name__, (callback.view_class,), {"renderer_classes": JSON_AND_CSV})
    serializer = callback.view_class.serializer_class
    listing = extend_schema_view(get=extend_schema(responses=serializer(many=True)))(listing)
    return path(str(pattern.pattern), listing.as_view(**callback.view_initkwargs), name=pattern.name)


urlpatterns = [
    path("advice", advice.AdviceView.as_view(), name="advice"),
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
    path("scenarios/<int:scenario_id>/advice", advice.ScenarioAdviceView.as_view(), name="scenario-advice"),
    path("scenarios/<int:scenario_id>/proposal.pdf", advice.ScenarioProposalView.as_view(), name="scenario-proposal"),
    path("fleet-plans", fleets.FleetPlanView.as_view(), name="fleet-plan"),
    path("fleets", fleets.FleetListView.as_view(), name="fleet-list"),
    path("fleets/<int:fleet_id>", fleets.FleetDetailView.as_view(), name="fleet-detail"),
    path("fleets/<int:fleet_id>/plan", fleets.SavedFleetPlanView.as_view(), name="fleet-saved-plan"),
    path("fleets/<int:fleet_id>/plan.pdf", fleets.FleetProposalView.as_view(), name="fleet-proposal"),
    path("feeds/<str:feed>/refresh", feeds.FeedRefreshView.as_view(), name="feed-refresh"),
    path("tasks/<str:task_id>", feeds.TaskDetailView.as_view(), name="task-detail"),
    path("tokens", tokens.TokenListView.as_view(), name="token-list"),
    path("tokens/<int:token_id>", tokens.TokenDetailView.as_view(), name="token-detail"),
    # GET offers, GET feeds: pricing owns the views; mounted in this namespace (versioning) with CSV added.
    *[_tabular(pattern) for pattern in pricing_urls.urlpatterns],
]
