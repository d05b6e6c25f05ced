from django.urls import path

from advisor.web import calibration_views, fleet_views, proposal_views, views

urlpatterns = [
    path("plan/", views.planner, name="planner"),
    path("plan/results/", views.planner_results, name="planner-results"),
    path("plan/save/", views.planner_save, name="planner-save"),
    path("plan/proposal.pdf", views.planner_proposal, name="planner-proposal"),
    path("fleet/", fleet_views.fleet_page, name="fleet"),
    path("fleet/<int:fleet_id>/proposals/", fleet_views.fleet_proposal_issue, name="fleet-proposal-issue"),
    path("scenarios/", views.scenario_list, name="scenario-list"),
    path("scenarios/compare/", views.scenario_compare, name="scenario-compare"),
    path("scenarios/<int:scenario_id>/", views.scenario_detail, name="scenario-detail"),
    path("scenarios/<int:scenario_id>/rename/", views.scenario_rename, name="scenario-rename"),
    path("scenarios/<int:scenario_id>/duplicate/", views.scenario_duplicate, name="scenario-duplicate"),
    path("scenarios/<int:scenario_id>/delete/", views.scenario_delete, name="scenario-delete"),
    path(
        "scenarios/<int:scenario_id>/versions/<int:number>/restore/",
        views.scenario_restore,
        name="scenario-restore",
    ),
    path("scenarios/<int:scenario_id>/proposal.pdf", views.scenario_proposal, name="scenario-proposal"),
    path("scenarios/<int:scenario_id>/share/", views.share_create, name="share-create"),
    path("scenarios/<int:scenario_id>/share/<int:link_id>/revoke/", views.share_revoke, name="share-revoke"),
    path("scenarios/<int:scenario_id>/proposals/", proposal_views.proposal_issue, name="proposal-issue"),
    path("proposals/<int:proposal_id>/", proposal_views.proposal_detail, name="proposal-detail"),
    path("proposals/<int:proposal_id>/proposal.pdf", proposal_views.proposal_pdf, name="proposal-pdf"),
    path("proposals/<int:proposal_id>/proposal.xlsx", proposal_views.proposal_xlsx, name="proposal-xlsx"),
    path("proposals/<int:proposal_id>/recompute/", proposal_views.proposal_recompute, name="proposal-recompute"),
    path("proposals/<int:proposal_id>/share/", proposal_views.proposal_share, name="proposal-share"),
    path("s/<str:token>/", views.shared, name="shared"),
    path("s/<str:token>/proposal.pdf", views.shared_proposal, name="shared-proposal"),
    path("calibrations/", calibration_views.calibration_list, name="calibration-list"),
    path("calibrations/serving/", calibration_views.calibration_serving, name="calibration-serving"),
    path("calibrations/<int:calibration_id>/", calibration_views.calibration_detail, name="calibration-detail"),
    path(
        "calibrations/<int:calibration_id>/activate/",
        calibration_views.calibration_activate,
        name="calibration-activate",
    ),
]
