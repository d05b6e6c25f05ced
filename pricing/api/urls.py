"""Relative paths of the pricing API; the advisor's API urls include this list under /api/v1/ (namespace v1)."""

from django.urls import path

from pricing.api import refresh, views

urlpatterns = [
    path("offers", views.OfferListApi.as_view(), name="offer-list"),
    path("offers/<int:offer_id>/history", views.OfferHistoryView.as_view(), name="offer-history"),
    path("feeds", views.FeedListApi.as_view(), name="feed-list"),
    path("feeds/<str:feed>/refresh", refresh.FeedRefreshView.as_view(), name="feed-refresh"),
    path("tasks/<str:task_id>", refresh.TaskDetailView.as_view(), name="task-detail"),
]
