"""Routes of the auction (paper 000): the bid form, jobs, utility fits; the jobs API and the price preview."""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from marketplace.auction import api, views

router = DefaultRouter()
router.register("jobs", api.JobViewSet, basename="api-job")

urlpatterns = [
    path("bid/", views.bid_new, name="bid-new"),
    path("jobs/", views.job_list, name="job-list"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/live.json", views.job_detail_live, name="job-detail-live"),
    path("jobs/live.json", views.job_list_live, name="job-list-live"),
    path("jobs/<int:pk>/cancel/", views.job_cancel_view, name="job-cancel"),
    path("jobs.csv", views.job_list_csv, name="job-list-csv"),
    path("utility/", views.utility_fits_view, name="utility-fits"),
    path("utility/adopt/", views.utility_fit_adopt_view, name="utility-fit-adopt"),
]

api_urlpatterns = [
    path("", include(router.urls)),
    path("utility-fits/", api.UtilityFitsView.as_view(), name="api-utility-fits"),
    path("utility-fits/adopt/", api.UtilityAdoptView.as_view(), name="api-utility-adopt"),
    path("bids/preview/", api.BidPreviewView.as_view(), name="api-bid-preview"),
]
