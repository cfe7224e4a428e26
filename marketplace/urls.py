"""The site's routes: each part's pages, and under ``/api/`` each part's endpoints (Django glue only)."""

from django.contrib import admin
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt

from marketplace.api import urls as api
from marketplace.auction import urls as auction
from marketplace.dashboard import urls as dashboard
from marketplace.deadlines import urls as deadlines
from marketplace.fairshare import urls as fairshare
from marketplace.lab import urls as lab
from marketplace.pools import urls as pools
from marketplace.reservations import urls as reservations
from marketplace.web import urls as web
from marketplace.web.views import not_found, throttled_login

# The admin's login shares the site's limit on wrong passwords (one limiter for every login path).
admin.site.login = throttled_login(admin.site.login)  # type: ignore[method-assign]

PARTS = (auction, dashboard, fairshare, deadlines, reservations, pools, lab)

# The API first: Django tries the patterns in order on every request, and most requests are API
# calls (no page route starts with api/), so an API call no longer tests some fifty page routes first.
urlpatterns = [
    path("api/", include([*(pattern for part in PARTS for pattern in part.api_urlpatterns), *api.urlpatterns])),
    # any other /api/ path: the JSON 404, in debug too (Django's debug 404 page is HTML)
    re_path(r"^api/(?P<rest>[\s\S]+)\Z", csrf_exempt(not_found), name="api-not-found"),  # any character, newlines too
    *web.urlpatterns,
    *(pattern for part in PARTS for pattern in part.urlpatterns),
    path("admin/", admin.site.urls),
]

handler404 = "marketplace.web.views.not_found"  # JSON under /api/
