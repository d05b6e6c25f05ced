from django.contrib import admin
from django.urls import include, path, re_path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny

from advisor import views
from advisor.api import pages as api_pages
from advisor.api.errors import api_route_not_found
from advisor.web.account_views import LogoutPage, PasswordResetPage
from core.api.query import KnownQueryParameters
from core.ratelimit import RateLimitedLoginView, login_rate_limited

# The admin's own login page counts failed attempts against the same limit as /accounts/login/.
admin.site.login = login_rate_limited(admin.site.login)  # type: ignore[method-assign]

urlpatterns = [
    path("", views.landing, name="landing"),
    path("healthz", views.healthz, name="healthz"),
    # Before Django's auth urls: the same login page with failed attempts rate-limited.
    path("accounts/login/", RateLimitedLoginView.as_view(), name="login"),
    # Also before them: a GET (a typed or bookmarked link) gets a page with the button instead of a bare 405.
    path("accounts/logout/", LogoutPage.as_view(), name="logout"),
    # And this one: reset by e-mail only where the server sends e-mail (EMAIL_HOST).
    path("accounts/password_reset/", PasswordResetPage.as_view(), name="password_reset"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", include(("advisor.api.urls", "api"), namespace="v1")),
    # The parameter check of every API view (a ?format= given twice is a 400), open to anyone as before.
    path(
        "api/schema/",
        SpectacularAPIView.as_view(api_version="v1", permission_classes=[AllowAny, KnownQueryParameters]),
        name="api-schema",
    ),
    # The split view serves its set-up script from a URL: the Content-Security-Policy allows no inline script.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    # Without their slash, by any method: the slash redirect raised on a POST under DEBUG (a 500 HTML page).
    path("api/schema", RedirectView.as_view(url="/api/schema/", permanent=True, query_string=True)),
    path("api/docs", RedirectView.as_view(url="/api/docs/", permanent=True, query_string=True)),
    # Any other /api/ path: problem+json in development mode too (Django skips handler404 under DEBUG).
    re_path(r"^api/", api_route_not_found),
    path("account/tokens/", api_pages.tokens_page, name="api-tokens"),
    path("prices/", include("pricing.urls")),
    path("", include("advisor.web.urls")),
]

# API paths that match nothing answer problem+json; other paths keep Django's 404 page.
handler404 = "advisor.api.errors.not_found_view"
