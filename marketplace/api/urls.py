"""Routes every API client shares: the token endpoint and the OpenAPI schema and its pages.

The docs pages are third-party (Swagger UI, ReDoc from drf-spectacular-sidecar): Swagger UI's
set-up script is served as a file (the split view), and both may use inline styles, which the
site's Content-Security-Policy allows on these two pages only."""

from csp.decorators import csp_update
from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView

from marketplace.api.auth import TokenView

DOCS_POLICY = {"style-src": ["'unsafe-inline'"], "worker-src": ["blob:"], "img-src": ["data:"]}

urlpatterns = [
    path("auth/token/", TokenView.as_view(), name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", csp_update(DOCS_POLICY)(SpectacularSwaggerSplitView.as_view(url_name="api-schema")), name="api-docs"),
    path("redoc/", csp_update(DOCS_POLICY)(SpectacularRedocView.as_view(url_name="api-schema")), name="api-redoc"),
]
