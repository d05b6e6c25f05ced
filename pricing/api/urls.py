"""Relative paths, included under /api/v1/ by the API's own urls module."""

from django.urls import path

from pricing.api import views

urlpatterns = [
    path("offers", views.OfferListApi.as_view(), name="offer-list"),
    path("feeds", views.FeedListApi.as_view(), name="feed-list"),
]
