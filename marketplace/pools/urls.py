"""Routes of the VM pools (paper 004, Cura): the staff pool page, tenants' Cura jobs."""

from django.urls import path

from marketplace.pools import api, views

urlpatterns = [
    path("pools/", views.pools_admin, name="pools"),
    path("cura/jobs/", views.cura_jobs, name="cura-jobs"),
    path("cura/jobs/live.json", views.cura_jobs_live, name="cura-jobs-live"),
    path("cura/jobs/<int:pk>/cancel/", views.cura_job_cancel_view, name="cura-job-cancel"),
]

api_urlpatterns = [
    path("pools/", api.PoolsView.as_view(), name="api-pools"),
    path("cura/jobs/", api.CuraJobsView.as_view(), name="api-cura-jobs"),
    path("cura/jobs/<int:pk>/", api.CuraJobDetailView.as_view(), name="api-cura-job"),
    path("cura/jobs/<int:pk>/cancel/", api.CuraJobCancelView.as_view(), name="api-cura-job-cancel"),
]
