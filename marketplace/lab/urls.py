"""Routes of the lab: registered experiments and simulation studies."""

from django.urls import path

from marketplace.lab import views

urlpatterns = [
    path("lab/", views.lab_index, name="lab"),
    path("lab/estimate.json", views.lab_estimate, name="lab-estimate"),
    path("lab/runs/<int:pk>/", views.lab_run, name="lab-run"),
    path("lab/runs/<int:pk>/status.json", views.lab_run_status, name="lab-run-status"),
    path("lab/runs/<int:pk>/cancel/", views.lab_run_cancel, name="lab-run-cancel"),
    path("lab/runs/<int:pk>/result.json", views.lab_run_json, name="lab-run-json"),
    path("lab/runs/<int:pk>/table/<int:index>.csv", views.lab_run_table_csv, name="lab-run-table-csv"),
    path("lab/simulations/", views.sim_index, name="sim"),
    path("lab/simulations/<int:pk>/", views.sim_study, name="sim-study"),
    path("lab/simulations/<int:pk>/status.json", views.sim_study_status, name="sim-study-status"),
    path("lab/simulations/<int:pk>/cancel/", views.sim_study_cancel, name="sim-study-cancel"),
    path("lab/simulations/<int:pk>/summary.csv", views.sim_study_summary_csv, name="sim-study-csv"),
    path("lab/simulations/<int:pk>/study.json", views.sim_study_json, name="sim-study-json"),
    path("lab/simulations/runs/<int:pk>/jobs.csv", views.sim_run_jobs_csv, name="sim-run-jobs-csv"),
]

api_urlpatterns: list = []
