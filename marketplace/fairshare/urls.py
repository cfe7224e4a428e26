"""Routes of fair share (paper 002): the sshare-like page, the T_wait explorer, why a job waits."""

from django.urls import path

from marketplace.fairshare import api, views

urlpatterns = [
    path("fairshare/", views.fairshare_page, name="fairshare"),
    path("market/settings/twait-explorer.json", views.twait_explorer_data, name="twait-explorer"),
]

api_urlpatterns = [
    path("jobs/<int:pk>/waiting/", api.JobWaitingView.as_view(), name="api-job-waiting"),
    path("market/fairshare/", api.FairShareView.as_view(), name="api-fairshare"),
]
