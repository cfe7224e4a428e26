"""The site's routes: each part's pages, and under ``/api/`` each part's endpoints (Django glue only)."""

from django.contrib import admin
from django.urls import include, path

from marketplace.api import urls as api_urls
from marketplace.auction import urls as auction
from marketplace.dashboard import urls as dashboard
from marketplace.deadlines import urls as deadlines
from marketplace.fairshare import urls as fairshare
from marketplace.lab import urls as lab
from marketplace.pools import urls as pools
from marketplace.reservations import urls as reservations
from marketplace.web import urls as web

PARTS = (auction, dashboard, fairshare, deadlines, reservations, pools, lab)

urlpatterns = [
    *web.urlpatterns,
    *(pattern for part in PARTS for pattern in part.urlpatterns),
    path("admin/", admin.site.urls),
    path("api/", include([*(pattern for part in PARTS for pattern in part.api_urlpatterns), *api_urls.urlpatterns])),
]

handler404 = "marketplace.web.views.not_found"  # JSON under /api/
