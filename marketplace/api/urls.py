from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.authtoken.views import obtain_auth_token
from rest_framework.routers import DefaultRouter

from marketplace.api import pools, views

router = DefaultRouter()
router.register("jobs", views.JobViewSet, basename="api-job")

urlpatterns = [
    path("", include(router.urls)),
    path("market/", views.MarketStateView.as_view(), name="api-market"),
    path("market/allocation/", views.AllocationView.as_view(), name="api-allocation"),
    path("market/fairness/", views.FairnessSeriesView.as_view(), name="api-fairness"),
    path("market/series/", views.MarketSeriesView.as_view(), name="api-market-series"),
    path("market/prices/", views.PriceSeriesView.as_view(), name="api-prices"),
    path("account/", views.AccountView.as_view(), name="api-account"),
    path("account/ledger/", views.LedgerView.as_view(), name="api-ledger"),
    path("pools/", pools.PoolsView.as_view(), name="api-pools"),
    path("cura/jobs/", pools.CuraJobsView.as_view(), name="api-cura-jobs"),
    path("auth/token/", obtain_auth_token, name="api-token"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
]
