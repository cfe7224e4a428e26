"""The simulation lab's pages: create a study, watch its runs, compare the configurations.

Everyone logged in reads studies; staff and tenants start them (their
creator or staff cancel). The study page polls ``sim_study_status`` while a
run is queued or running (progress bars survive a reload: progress lives in
the database) and shows, once all have finished, the comparison figures and
the summary table with 95 % intervals over seeds.
"""

from __future__ import annotations

import csv
import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from marketplace.charts_simulations import comparison_figures
from marketplace.forms_simulations import StudyForm
from marketplace.models import ExperimentRun, SimulationStudy
from marketplace.services.simulations import simulation_cancel, simulation_gather, simulation_start
from marketplace.simulation_files import jobs_rows, study_document, summary_rows
from marketplace.views import _render

ACTIVE = (ExperimentRun.Status.QUEUED, ExperimentRun.Status.RUNNING)


@login_required
@require_http_methods(["GET", "POST"])
def sim_index(request: HttpRequest) -> HttpResponse:
    """The study form and the recent studies."""
    form = StudyForm(request.POST or None, request.FILES or None)
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                study = simulation_start(**form.study_kwargs(), user=request.user)
            except ValidationError as exc:
                for field, errors in exc.message_dict.items():
                    form.add_error(None if field not in form.fields else field, errors)
            else:
                messages.success(request, f"Study #{study.pk}: {study.runs.count()} runs queued.")
                return redirect("sim-study", pk=study.pk)
        status = 400
    studies = SimulationStudy.objects.select_related("created_by")[:20]
    return _render(request, "marketplace/lab/simulations.html", {"nav": "sim", "form": form, "studies": studies}, status=status)


def _runs(study: SimulationStudy) -> list[ExperimentRun]:
    return list(ExperimentRun.objects.filter(study=study).defer("result", "error").order_by("pk"))


@login_required
@require_GET
def sim_study(request: HttpRequest, pk: int) -> HttpResponse:
    """A study: its runs' progress, then the comparison and the summary table."""
    study = get_object_or_404(SimulationStudy, pk=pk)
    runs = _runs(study)
    finished = not any(r.status in ACTIVE for r in runs)
    if finished and study.summary is None and simulation_gather(study_id=study.pk):
        study.refresh_from_db()
    figures: dict[str, list[dict[str, Any]]] = {}
    if finished:
        first: dict[str, int] = {}
        for r in runs:
            if r.status == ExperimentRun.Status.DONE:
                first.setdefault(r.label, r.pk)
        results = dict(ExperimentRun.objects.filter(pk__in=first.values()).values_list("pk", "result"))
        figs = comparison_figures([(label, results[pk]) for label, pk in first.items()])
        figures = {k: [{"id": f"{k}-{n}", "figure": f} for n, f in enumerate(v)] for k, v in figs.items()}
    context = {"nav": "sim", "study": study, "runs": runs, "finished": finished, "figures": figures, "summary": study.summary}
    return _render(request, "marketplace/lab/study.html", context)


@login_required
@require_GET
def sim_study_status(request: HttpRequest, pk: int) -> JsonResponse:
    """``{"finished", "runs": [{"id", "label", "seed", "status", "progress", "message"}]}`` for the poller."""
    runs = _runs(get_object_or_404(SimulationStudy.objects.only("pk"), pk=pk))
    rows = [
        {"id": r.pk, "label": r.label, "seed": r.params.get("seed"), "status": r.status, "progress": r.progress, "message": r.message}
        for r in runs
    ]
    return JsonResponse({"finished": not any(r.status in ACTIVE for r in runs), "runs": rows})


@login_required
@require_POST
def sim_study_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    get_object_or_404(SimulationStudy.objects.only("pk"), pk=pk)
    n = simulation_cancel(study_id=pk, user=request.user)
    messages.info(request, f"Study #{pk}: cancel requested for {n} run(s).")
    return redirect("sim-study", pk=pk)


@login_required
@require_GET
def sim_study_summary_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """The summary table as CSV: per configuration and metric, mean, 95 % half-width and seeds."""
    study = get_object_or_404(SimulationStudy, pk=pk)
    if not study.summary:
        raise Http404("The study has not finished.")
    response = HttpResponse(content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="study-{pk}-summary.csv"'
    csv.writer(response).writerows(summary_rows(study.summary))
    return response


@login_required
@require_GET
def sim_study_json(request: HttpRequest, pk: int) -> HttpResponse:
    """The whole study as JSON: settings, summary, and per run its params, metrics and series."""
    study = get_object_or_404(SimulationStudy, pk=pk)
    runs = ExperimentRun.objects.filter(study=study).order_by("pk").values("id", "label", "status", "params", "result")
    settings_ = {"id": study.pk, "title": study.title, "workload": study.workload, "capacity": study.capacity, "base": study.base,
                 "vary": study.vary, "live": study.live}  # fmt: skip
    body = study_document(settings_, study.summary, runs)
    response = HttpResponse(json.dumps(body, indent=1), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="study-{pk}.json"'
    return response


@login_required
@require_GET
def sim_run_jobs_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """A finished run's per-job records as CSV (simulated seconds since the first arrival)."""
    run = get_object_or_404(ExperimentRun, pk=pk, study__isnull=False, status=ExperimentRun.Status.DONE)
    response = HttpResponse(content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="run-{pk}-jobs.csv"'
    csv.writer(response).writerows(jobs_rows(run.result["jobs"]))
    return response
