"""Everything under /api/v1/ (mounted with namespace "v1": NamespaceVersioning reads the version from it)."""

from __future__ import annotations

from django.urls import path

from advisor.api.representations import with_csv_paths
from advisor.api.views import advice, calibrations, catalog, fleets, gpus, proposals, scenarios, share_links, tokens
from pricing.api import urls as pricing_urls

# Every view that also renders CSV is also at <route>.csv, answering only CSV (advisor.api.representations).
urlpatterns = with_csv_paths(
    [
        path("advice", advice.AdviceView.as_view(), name="advice"),
        path("calibrations", calibrations.CalibrationListView.as_view(), name="calibration-list"),
        path(
            "calibrations/<int:calibration_id>", calibrations.CalibrationDetailView.as_view(), name="calibration-detail"
        ),
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
        path("hardware-quotes", catalog.HardwareQuoteListView.as_view(), name="hardware-quote-list"),
        path("scenarios", scenarios.ScenarioListView.as_view(), name="scenario-list"),
        path("scenarios/<int:scenario_id>", scenarios.ScenarioDetailView.as_view(), name="scenario-detail"),
        path("scenarios/<int:scenario_id>/advice", advice.ScenarioAdviceView.as_view(), name="scenario-advice"),
        path(
            "scenarios/<int:scenario_id>/proposal.pdf", advice.ScenarioProposalView.as_view(), name="scenario-proposal"
        ),
        path(
            "scenarios/<int:scenario_id>/proposals",
            proposals.ScenarioProposalListView.as_view(),
            name="scenario-proposals",
        ),
        path(
            "scenarios/<int:scenario_id>/versions",
            scenarios.ScenarioVersionListView.as_view(),
            name="scenario-versions",
        ),
        path(
            "scenarios/<int:scenario_id>/versions/<int:number>",
            scenarios.ScenarioVersionDetailView.as_view(),
            name="scenario-version",
        ),
        path(
            "scenarios/<int:scenario_id>/share-links",
            share_links.ScenarioShareLinkListView.as_view(),
            name="scenario-share-links",
        ),
        path(
            "scenarios/<int:scenario_id>/share-links/<int:link_id>",
            share_links.ScenarioShareLinkDetailView.as_view(),
            name="scenario-share-link",
        ),
        path("proposals", proposals.ProposalListView.as_view(), name="proposal-list"),
        path(
            "proposals/<int:proposal_id>/share-links",
            share_links.ProposalShareLinkView.as_view(),
            name="proposal-share-links",
        ),
        path("proposals/<int:proposal_id>", proposals.ProposalDetailView.as_view(), name="proposal-detail"),
        path("proposals/<int:proposal_id>/proposal.pdf", proposals.ProposalPDFView.as_view(), name="proposal-pdf"),
        path(
            "proposals/<int:proposal_id>/proposal.xlsx", proposals.ProposalWorkbookView.as_view(), name="proposal-xlsx"
        ),
        path("fleet-plans", fleets.FleetPlanView.as_view(), name="fleet-plan"),
        path("fleets", fleets.FleetListView.as_view(), name="fleet-list"),
        path("fleets/<int:fleet_id>", fleets.FleetDetailView.as_view(), name="fleet-detail"),
        path("fleets/<int:fleet_id>/plan", fleets.SavedFleetPlanView.as_view(), name="fleet-saved-plan"),
        path("fleets/<int:fleet_id>/plan.pdf", fleets.FleetProposalView.as_view(), name="fleet-proposal"),
        path("fleets/<int:fleet_id>/proposals", proposals.FleetProposalListView.as_view(), name="fleet-proposals"),
        path("tokens", tokens.TokenListView.as_view(), name="token-list"),
        path("tokens/<int:token_id>", tokens.TokenDetailView.as_view(), name="token-detail"),
        # Offers, offer history, feeds, feed refresh, tasks: pricing owns them; mounted in this namespace (versioning).
        *pricing_urls.urlpatterns,
    ]
)
