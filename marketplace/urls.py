from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from marketplace import (
    deadline_pages,
    views,
    views_abacus,
    views_fairshare,
    views_lab,
    views_pools,
    views_reservations,
    views_simulations,
    views_staff,
)
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
    path("utility/", views_abacus.utility_fits, name="utility-fits"),
    path("utility/adopt/", views_abacus.utility_fit_adopt_view, name="utility-fit-adopt"),
    path("lab/", views_lab.lab_index, name="lab"),
    path("lab/runs/<int:pk>/", views_lab.lab_run, name="lab-run"),
    path("lab/runs/<int:pk>/status.json", views_lab.lab_run_status, name="lab-run-status"),
    path("lab/runs/<int:pk>/cancel/", views_lab.lab_run_cancel, name="lab-run-cancel"),
    path("lab/runs/<int:pk>/result.json", views_lab.lab_run_json, name="lab-run-json"),
    path("lab/runs/<int:pk>/table/<int:index>.csv", views_lab.lab_run_table_csv, name="lab-run-table-csv"),
    path("lab/simulations/", views_simulations.sim_index, name="sim"),
    path("lab/simulations/<int:pk>/", views_simulations.sim_study, name="sim-study"),
    path("lab/simulations/<int:pk>/status.json", views_simulations.sim_study_status, name="sim-study-status"),
    path("lab/simulations/<int:pk>/cancel/", views_simulations.sim_study_cancel, name="sim-study-cancel"),
    path("lab/simulations/<int:pk>/summary.csv", views_simulations.sim_study_summary_csv, name="sim-study-csv"),
    path("lab/simulations/<int:pk>/study.json", views_simulations.sim_study_json, name="sim-study-json"),
    path("lab/simulations/runs/<int:pk>/jobs.csv", views_simulations.sim_run_jobs_csv, name="sim-run-jobs-csv"),
    path("reservations/", views_reservations.reservation_list, name="reservation-list"),
    path("reservations/new/", views_reservations.reservation_new, name="reservation-new"),
    path("reservations/quotes/<int:pk>/", views_reservations.reservation_quote_view, name="reservation-quote"),
    path("reservations/quotes/<int:pk>/<str:action>/", views_reservations.reservation_quote_action, name="reservation-quote-action"),
    path("reservations/market/", views_reservations.reservation_market, name="reservation-market"),
    path("deadline/", deadline_pages.deadline_page, name="deadline-quote"),
    path("fairshare/", views_fairshare.fairshare_page, name="fairshare"),
    path("market/settings/twait-explorer.json", views_fairshare.twait_explorer_data, name="twait-explorer"),
    path("pools/", views_pools.pools_admin, name="pools"),
    path("cura/jobs/", views_pools.cura_jobs, name="cura-jobs"),
    path("cura/jobs/<int:pk>/cancel/", views_pools.cura_job_cancel_view, name="cura-job-cancel"),
    path("staff/jobs/", views_staff.staff_jobs, name="staff-jobs"),
    path("staff/ledger/adjust/", views_staff.staff_ledger_adjust, name="staff-ledger-adjust"),
    path("admin/", admin.site.urls),
    path("api/", include("marketplace.api.urls")),
]

handler404 = "marketplace.views.not_found"  # JSON under /api/
