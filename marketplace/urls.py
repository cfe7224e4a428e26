from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from marketplace import views
from marketplace.auth_views import ThrottledLoginView

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("dashboard/data.json", views.dashboard_data, name="dashboard-data"),
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("bid/", views.bid_new, name="bid-new"),
    path("jobs/", views.job_list, name="job-list"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/cancel/", views.job_cancel_view, name="job-cancel"),
    path("jobs.csv", views.job_list_csv, name="job-list-csv"),
    path("account/", views.account, name="account"),
    path("account/ledger.csv", views.ledger_csv, name="ledger-csv"),
    path("market/settings/", views.market_settings, name="market-settings"),
    path("admin/", admin.site.urls),
    path("api/", include("marketplace.api.urls")),
]

handler404 = "marketplace.views.not_found"  # JSON under /api/
