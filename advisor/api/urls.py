"""Everything under /api/v1/ (mounted with namespace "v1": NamespaceVersioning reads the version from it)."""

from __future__ import annotations

from django.urls import path

from advisor.api.views import gpus, tokens

urlpatterns = [
    path("gpus", gpus.GpuListView.as_view(), name="gpu-list"),
    path("gpus/<str:gpu_id>", gpus.GpuDetailView.as_view(), name="gpu-detail"),
    path("tokens", tokens.TokenListView.as_view(), name="token-list"),
    path("tokens/<int:token_id>", tokens.TokenDetailView.as_view(), name="token-detail"),
]
