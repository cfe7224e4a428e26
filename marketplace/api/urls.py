from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from marketplace.api import abacus, deadlines, fairshare, pools, reservations, staff, views
from marketplace.api.auth import TokenView

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
    path("jobs/<int:pk>/waiting/", fairshare.JobWaitingView.as_view(), name="api-job-waiting"),
    path("market/fairshare/", fairshare.FairShareView.as_view(), name="api-fairshare"),
    path("account/ledger/", views.LedgerView.as_view(), name="api-ledger"),
    path("deadline/quote/", deadlines.DeadlineQuoteView.as_view(), name="api-deadline-quote"),
    path("deadline/book/", deadlines.DeadlineBookView.as_view(), name="api-deadline-book"),
    path("auth/token/", TokenView.as_view(), name="api-token"),
    path("utility-fits/", abacus.UtilityFitsView.as_view(), name="api-utility-fits"),
    path("utility-fits/adopt/", abacus.UtilityAdoptView.as_view(), name="api-utility-adopt"),
    path("bids/preview/", abacus.BidPreviewView.as_view(), name="api-bid-preview"),
    path("pools/", pools.PoolsView.as_view(), name="api-pools"),
    path("cura/jobs/", pools.CuraJobsView.as_view(), name="api-cura-jobs"),
    path("cura/jobs/<int:pk>/cancel/", pools.CuraJobCancelView.as_view(), name="api-cura-job-cancel"),
    path("staff/jobs/", staff.StaffJobsView.as_view(), name="api-staff-jobs"),
    path("staff/ledger/adjust/", staff.LedgerAdjustView.as_view(), name="api-staff-ledger-adjust"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("reservations/", reservations.ReservationListView.as_view(), name="api-reservations"),
    path("reservations/quotes/", reservations.QuoteListView.as_view(), name="api-quotes"),
    path("reservations/quotes/<int:pk>/", reservations.QuoteDetailView.as_view(), name="api-quote"),
    path("reservations/quotes/<int:pk>/accept/", reservations.QuoteAcceptView.as_view(), name="api-quote-accept"),
    path("reservations/quotes/<int:pk>/decline/", reservations.QuoteDeclineView.as_view(), name="api-quote-decline"),
    path("reservations/request/", reservations.RequestView.as_view(), name="api-reservation-request"),
    path("reservations/prices/", reservations.PriceCurveView.as_view(), name="api-reservation-prices"),
    path("cluster/allocation/", reservations.ClusterAllocationView.as_view(), name="api-cluster-allocation"),
    path("cluster/update/", reservations.ClusterUpdateView.as_view(), name="api-cluster-update"),
]
