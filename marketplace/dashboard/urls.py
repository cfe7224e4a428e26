"""Routes of the dashboard: the market's state, settings, the tenant's account, staff pages; the market's read API."""

from django.urls import path

from marketplace.dashboard import api, views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("dashboard/data.json", views.dashboard_data, name="dashboard-data"),
    path("account/", views.account, name="account"),
    path("account/ledger.csv", views.ledger_csv, name="ledger-csv"),
    path("market/settings/", views.market_settings, name="market-settings"),
    path("staff/jobs/", views.staff_jobs, name="staff-jobs"),
    path("staff/ledger/adjust/", views.staff_ledger_adjust, name="staff-ledger-adjust"),
]

api_urlpatterns = [
    path("market/", api.MarketStateView.as_view(), name="api-market"),
    path("market/allocation/", api.AllocationView.as_view(), name="api-allocation"),
    path("market/fairness/", api.FairnessSeriesView.as_view(), name="api-fairness"),
    path("market/series/", api.MarketSeriesView.as_view(), name="api-market-series"),
    path("market/prices/", api.PriceSeriesView.as_view(), name="api-prices"),
    path("market/rates/", api.RateSeriesView.as_view(), name="api-rates"),
    path("account/", api.AccountView.as_view(), name="api-account"),
    path("account/ledger/", api.LedgerView.as_view(), name="api-ledger"),
    path("staff/jobs/", api.StaffJobsView.as_view(), name="api-staff-jobs"),
    path("staff/ledger/adjust/", api.LedgerAdjustView.as_view(), name="api-staff-ledger-adjust"),
]
