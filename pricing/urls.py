from django.urls import path

from pricing import views

app_name = "pricing"

urlpatterns = [
    path("", views.price_list, name="prices"),
    path("offers/<int:pk>/", views.offer_detail, name="offer"),
    path("refresh/", views.refresh, name="refresh"),
    path("feeds/status.json", views.feed_status, name="feed-status"),
]
