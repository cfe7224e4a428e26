"""The experiments lab: start registered experiments, watch their progress, read their results.

Everyone logged in reads runs and results; staff start and cancel runs. A
run's page polls ``lab_run_status`` (JSON) while it is queued or running and
reloads once it has finished; its figures are the experiment's own plotly
figures (``simulator.experiments``), its tables download as CSV.
"""

from __future__ import annotations

import csv
import json
import math
from typing import Any, TypeVar

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from marketplace.lab.charts import comparison_figures
from marketplace.lab.files import (
    jobs_rows,
    public_params,
    public_result,
    server_roots,
    study_document,
    summary_by_metric,
    summary_rows,
)
from marketplace.lab.forms import LiveForm, StudyForm, param_rows, parse_params, posted_values, run_estimate
from marketplace.lab.models import ExperimentRun, SimulationStudy
from marketplace.lab.selectors import (
    experiment_get,
    experiment_latest_done,
    experiment_list,
    experiment_part_count,
    experiment_parts,
    experiment_past_durations,
    experiment_results,
    experiment_visible,
    simulation_get,
    simulation_list,
    simulation_run_count,
    simulation_run_records,
    simulation_runs,
    simulation_visible,
)
from marketplace.lab.services.experiments import experiment_cancel, experiment_start
from marketplace.lab.services.simulations import (
    simulation_cancel,
    simulation_from_market,
    simulation_gather,
    simulation_start,
    study_type_names,
)
from marketplace.lab.services.uploads import limit_text, upload_discard, upload_store
from marketplace.market import selectors
from marketplace.market.roles import sees_all_tenants
from marketplace.web.http_cache import poller_revalidates
from marketplace.web.middleware import allows_body
from marketplace.web.plotly_bundle import BUNDLE_STYLES, bundle_for
from marketplace.web.shortcuts import csv_safe, render_page
from simulator import experiments

T = TypeVar("T")


def _found(row: T | None) -> T:
    """``row``, or 404 when the selector found none (missing, or hidden from this user)."""
    if row is None:
        raise Http404("No such run or study.")
    return row


@login_required
@require_http_methods(["GET", "POST"])
def lab_index(request: HttpRequest) -> HttpResponse:
    """The registered experiments, each with its parameters (a run form for staff) and newest result."""
    registry = experiments.load_all()
    errors: dict[str, dict[str, str]] = {}
    posted: dict[str, dict[str, Any]] = {}
    estimated: dict[str, dict[str, Any]] = {}  # the posted parameters' estimate beside their errors
    refused: dict[str, dict[str, str]] = {}
    if request.method == "POST":
        name = str(request.POST.get("name", ""))
        if name not in registry:
            raise Http404("No such experiment.")
        params, field_errors = parse_params(registry[name], request.POST)
        if not field_errors:
            try:
                run = experiment_start(name=name, params=params, user=request.user)
            except ValidationError as exc:
                field_errors = {"__all__": "; ".join(exc.messages)}
            else:
                messages.success(request, f"Run #{run.pk} of {registry[name].title} queued.")
                return redirect("lab-run", pk=run.pk)
        errors[name] = field_errors
        estimated[name] = params
        if set(field_errors) - {"__all__"}:  # no estimate for parameters the run would refuse (as the page's script says)
            refused[name] = {"text": "no estimate", "basis": "", "which": f"a field to correct ({', '.join(sorted(field_errors))})"}
        posted[name] = posted_values(registry[name], request.POST)
    latest = experiment_latest_done(names=list(registry), user=request.user)
    past = experiment_past_durations(names=list(registry))
    cards = [
        {
            "experiment": exp,
            "estimate": refused.get(name) or run_estimate(exp, past.get(name, []), estimated.get(name)),
            "latest": latest.get(name),
            "errors": errors.get(name, {}),
            "form_error": errors.get(name, {}).get("__all__", ""),
            "params": param_rows(exp, posted.get(name, dict(exp.defaults)), errors.get(name, {})),
        }
        for name, exp in sorted(registry.items())
    ]
    status = 400 if errors else 200
    runs = experiment_list(limit=20, user=request.user)
    return render_page(request, "lab/index.html", {"nav": "lab", "cards": cards, "runs": runs}, status=status)


@login_required
@require_GET
def lab_estimate(request: HttpRequest) -> JsonResponse:
    """``{"estimate": {"seconds", "text", "basis"} | null, "errors": {field: message}}``: the wall time a run of
    experiment ``name`` with the form's fields (``p_<key>``, as the run form sends them) would take, before it
    starts (``forms.run_estimate``); the Experiments page asks it as the fields change. 404 for an unknown name."""
    registry = experiments.load_all()
    name = str(request.GET.get("name", ""))
    if name not in registry:
        raise Http404("No such experiment.")
    params, field_errors = parse_params(registry[name], request.GET)
    past = experiment_past_durations(names=[name]).get(name, [])
    return JsonResponse({"estimate": run_estimate(registry[name], past, params), "errors": field_errors})


@login_required
@require_GET
def lab_run(request: HttpRequest, pk: int) -> HttpResponse:
    """One run: progress while it runs, then its summary, figures and tables."""
    run = _found(experiment_get(run_id=pk, user=request.user))
    try:
        experiment: experiments.Experiment | None = experiments.get(run.name)
    except experiments.UnknownExperiment:
        experiment = None
    figures = (run.result or {}).get("figures", []) if run.status == ExperimentRun.Status.DONE else []
    bundle = bundle_for(figures)  # the basic bundle unless a figure needs the full one (box, histogram)
    context = {
        "nav": "lab",
        "run": run,
        "parts": [_part_row(p) for p in experiment_parts(run_id=run.pk)],
        "siblings": experiment_part_count(run_id=run.parent_id) if run.parent_id else 0,
        "params": public_params(run.params),
        "experiment": experiment,
        "figures": [{"id": f"figure-{k}", "figure": f} for k, f in enumerate(figures)],
        "plotly_bundle": bundle,
        "plotly_styles": BUNDLE_STYLES[bundle],
        "tables": [_shown_table(t) for t in (run.result or {}).get("tables", [])],
        "summary": (run.result or {}).get("summary", ""),
        # the estimate it had before it started: the page's only time left until the run's own pace shows
        "estimate": run_estimate(experiment, [], run.params) if experiment is not None and not run.finished else None,
    }
    return render_page(request, "lab/run.html", context)


def _shown_table(table: dict[str, Any]) -> dict[str, Any]:
    """A result table as the page shows it: floats to 4 significant digits, whole with thousands separators from 1,000 (never 1.5e+04)
    (the CSV keeps every digit); ``many``: the CSS classes of a table of more than 8 columns (compact,
    its headers wrapping) or more than 14 (smaller still), so every column shows at a desktop width."""
    def cell(value: Any) -> Any:
        if not (isinstance(value, float) and math.isfinite(value)):
            return value
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.2e}"

    columns = list(table.get("columns", []))
    many = "many-columns very" if len(columns) > 14 else "many-columns" if len(columns) > 8 else ""
    return {**table, "rows": [[cell(v) for v in row] for row in table.get("rows", [])], "many": many}


def _part_row(part: ExperimentRun) -> dict[str, Any]:
    """One part of a split run for its parent's page: ``wall_s`` is its last attempt's wall
    seconds so far (None before it started)."""
    end = part.finished_at or (timezone.now() if part.status == ExperimentRun.Status.RUNNING else None)
    wall = round((end - part.started_at).total_seconds(), 1) if part.started_at and end and end >= part.started_at else None
    return {"id": part.pk, "part": (part.part_index or 0) + 1, "label": part.label, "status": part.status, "progress": part.progress,
            "attempts": part.attempts, "max_attempts": part.max_attempts, "wall_s": wall, "worker": part.worker}  # fmt: skip


@login_required
@require_GET
@poller_revalidates
def lab_run_status(request: HttpRequest, pk: int) -> JsonResponse:
    """``{"status", "progress" (0-1), "message", "attempts", "max_attempts", "finished", "elapsed_s"}`` of a run, for the
    page's poller (``elapsed_s``: wall seconds since it started, null before it starts and once it has finished);
    a split run adds ``"parts"``: per part ``{"id", "part" (1-based), "label", "status", "progress", "attempts",
    "max_attempts", "wall_s", "worker"}``."""
    run = _found(experiment_get(run_id=pk, user=request.user, with_result=False))
    elapsed = (timezone.now() - run.started_at).total_seconds() if run.started_at and not run.finished else None
    body: dict[str, Any] = {"status": run.status, "progress": run.progress, "message": run.message, "attempts": run.attempts,
                            "max_attempts": run.max_attempts, "finished": run.finished, "elapsed_s": elapsed}  # fmt: skip
    parts = experiment_parts(run_id=run.pk)
    if parts:
        body["parts"] = [_part_row(p) for p in parts]
    return JsonResponse(body)


@login_required
@require_POST
def lab_run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    if not experiment_visible(run_id=pk, user=request.user):
        raise Http404("No such run.")
    try:
        experiment_cancel(run_id=pk, user=request.user)
    except PermissionDenied:
        raise
    messages.info(request, f"Run #{pk}: cancel requested.")
    return redirect("lab-run", pk=pk)


@login_required
@require_GET
def lab_run_json(request: HttpRequest, pk: int) -> HttpResponse:
    """The stored result (figures, tables, summary, params) as a JSON download."""
    run = _found(experiment_get(run_id=pk, user=request.user, done=True))
    response = JsonResponse(public_result(run.result, server_roots()), json_dumps_params={"indent": 1})
    response["Content-Disposition"] = f'attachment; filename="{run.name}-{run.pk}.json"'
    return response


@login_required
@require_GET
def lab_run_table_csv(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """Table ``index`` of a finished run as CSV."""
    run = _found(experiment_get(run_id=pk, user=request.user, done=True))
    tables = (run.result or {}).get("tables", [])
    if not 0 <= index < len(tables):
        raise Http404("No such table.")
    response = HttpResponse(content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{run.name}-{run.pk}-table{index}.csv"'
    writer = csv.writer(response)
    writer.writerows(csv_safe([tables[index]["columns"], *tables[index]["rows"]]))
    return response


ACTIVE = (ExperimentRun.Status.QUEUED, ExperimentRun.Status.RUNNING)


FORM_FIELDS_BYTES = 64 * 1024  # the study form's other fields and the multipart framing, beside the file


def _upload_too_big(request: HttpRequest, limit: int, size: int) -> HttpResponse:
    """The study form again, saying the file is over the limit (its body was never read)."""
    error = f"The upload ({size / 2**20:.1f} MB) is larger than {limit_text()}; nothing was stored."
    return _index(request, StudyForm(), LiveForm(prefix="live"), 413, upload_error=error)


@allows_body(lambda: int(settings.SIMULATION_UPLOAD_MAX_BYTES) + FORM_FIELDS_BYTES, too_big=_upload_too_big)
@login_required
@require_http_methods(["GET", "POST"])
def sim_index(request: HttpRequest) -> HttpResponse:
    """The study form and the recent studies. An upload is only stored here; a worker reads it
    (``services.simulations.simulation_check``) and the study's page shows the outcome."""
    form = StudyForm(request.POST or None, request.FILES or None)
    status = 200
    if request.method == "POST" and request.POST.get("live"):
        return _live(request)
    if request.method == "POST":
        if form.is_valid():
            study = _start_study(request, form)
            if study is not None:
                word = "checking the uploaded trace, then" if study.check_status else ""
                n = simulation_run_count(study_id=study.pk)
                messages.success(request, f"Study #{study.pk}: {word} {n} runs queued.".replace("  ", " "))
                return redirect("sim-study", pk=study.pk)
        status = 400
    return _index(request, form, LiveForm(prefix="live"), status)


def _start_study(request: HttpRequest, form: StudyForm) -> SimulationStudy | None:
    """Store the upload (if any) and start the study; None with the form's errors set (nothing left on disk)."""
    stored = None
    try:
        upload = form.upload_to_store()
        stored = str(upload_store(upload=upload)) if upload is not None else None
        return simulation_start(**form.study_kwargs(stored), user=request.user)
    except ValidationError as exc:
        if stored is not None:
            upload_discard(stored)
        for field, errors in exc.message_dict.items():
            form.add_error(None if field not in form.fields else field, errors)
        return None


def _index(request: HttpRequest, form: StudyForm, live: LiveForm, status: int, upload_error: str = "") -> HttpResponse:
    studies = simulation_list(user=request.user, limit=20)
    live_market = selectors.market_or_none() if sees_all_tenants(request.user) else None  # the live replay shows every tenant's bids
    context = {"nav": "sim", "form": form, "live_form": live, "studies": studies, "live_market": live_market,
               "upload_error": upload_error}
    return render_page(request, "lab/simulations.html", context, status=status)


def _live(request: HttpRequest) -> HttpResponse:
    live = LiveForm(request.POST, prefix="live")
    market = selectors.market_or_none()
    if market is None:
        live.add_error(None, "There is no live market to start from.")
    elif live.is_valid():
        d = live.cleaned_data
        try:
            study = simulation_from_market(market=market, user=request.user, window_h=d["window_h"], vary=d["vary"], values=d["values"])
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                live.add_error(field if field in live.fields else None, errors)
        else:
            messages.success(request, f"Study #{study.pk}: the live market's last {d['window_h']:g} h replayed.")
            return redirect("sim-study", pk=study.pk)
    return _index(request, StudyForm(), live, 400)


def live_comparison(study: SimulationStudy, results: dict[str, dict[str, Any]]) -> list[list[Any]]:
    """Rows "what the live market did" then each configuration (its first seed) on the same jobs:
    jobs finished, mean response over the jobs finished both live and simulated (simulated s), revenue."""
    live = study.live or {}
    live_resp = {int(k): v for k, v in live.get("response_s", {}).items()}
    rows: list[list[Any]] = []
    sims: list[tuple[str, dict[int, float], Any]] = []
    for label, result in results.items():
        cols = result["jobs"]
        resp = {j: r for j, r in zip(cols["job_id"], cols["response_s"], strict=True) if r is not None}
        sims.append((label, resp, result["metrics"]["revenue"]))
    common = set(live_resp).intersection(*[set(r) for _, r, _ in sims]) if sims else set(live_resp)

    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 3) if values else None

    live_mean = mean([live_resp[j] for j in common])
    rows.append(["live market (what happened)", live.get("finished"), live_mean, round(live.get("revenue", 0.0), 4)])
    for label, resp, revenue in sims:
        tag = " (the market's own settings, simulated)" if label == live.get("baseline") else ""
        rows.append([label + tag, len(resp), mean([resp[j] for j in common]), revenue])
    return rows


@login_required
@require_GET
def sim_study(request: HttpRequest, pk: int) -> HttpResponse:
    """A study: its runs' progress, then the comparison and the summary table."""
    study = _found(simulation_get(study_id=pk, user=request.user))
    runs = simulation_runs(study_id=study.pk)
    finished = not any(r.status in ACTIVE for r in runs)
    if finished and study.summary is None and simulation_gather(study_id=study.pk):
        study = _found(simulation_get(study_id=pk, user=request.user))  # with the table just gathered
    figures: dict[str, list[dict[str, Any]]] = {}
    live_rows: list[list[Any]] = []
    if finished:
        first: dict[str, int] = {}
        for r in runs:
            if r.status == ExperimentRun.Status.DONE:
                first.setdefault(r.label, r.pk)
        results = experiment_results(run_ids=first.values())
        by_label = {label: results[pk] for label, pk in first.items()}
        figs = comparison_figures(list(by_label.items()), type_names=study_type_names(runs[0].params) if runs else None)
        live_rows = live_comparison(study, by_label) if study.live else []
        figures = {k: [{"id": f"{k}-{n}", "figure": f} for n, f in enumerate(v)] for k, v in figs.items()}
    context = {"nav": "sim", "study": study, "runs": runs, "finished": finished, "figures": figures, "summary": study.summary,
               "summary_table": summary_by_metric(study.summary or {}),
               "live_rows": live_rows, "upload_limit": limit_text()}
    return render_page(request, "lab/study.html", context)


@login_required
@require_GET
@poller_revalidates
def sim_study_status(request: HttpRequest, pk: int) -> JsonResponse:
    """``{"finished", "runs": [{"id", "label", "seed", "status", "attempts", "max_attempts", "progress", "message"}]}`` for the poller."""
    if not simulation_visible(study_id=pk, user=request.user):
        raise Http404("No such study.")
    runs = simulation_runs(study_id=pk)
    rows = [
        {"id": r.pk, "label": r.label, "seed": r.params.get("seed"), "status": r.status, "attempts": r.attempts,
         "max_attempts": r.max_attempts, "progress": r.progress, "message": r.message}
        for r in runs
    ]
    return JsonResponse({"finished": not any(r.status in ACTIVE for r in runs), "runs": rows})


@login_required
@require_POST
def sim_study_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    if not simulation_visible(study_id=pk, user=request.user):
        raise Http404("No such study.")
    n = simulation_cancel(study_id=pk, user=request.user)
    messages.info(request, f"Study #{pk}: cancel requested for {n} run(s).")
    return redirect("sim-study", pk=pk)


@login_required
@require_GET
def sim_study_summary_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """The summary table as CSV: per configuration and metric, mean, 95 % half-width and seeds."""
    study = _found(simulation_get(study_id=pk, user=request.user))
    if not study.summary:
        raise Http404("The study has not finished.")
    response = HttpResponse(content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="study-{pk}-summary.csv"'
    csv.writer(response).writerows(csv_safe(summary_rows(study.summary)))
    return response


@login_required
@require_GET
def sim_study_json(request: HttpRequest, pk: int) -> HttpResponse:
    """The whole study as JSON: settings, summary, and per run its params, metrics and series."""
    study = _found(simulation_get(study_id=pk, user=request.user))
    runs = simulation_run_records(study_id=study.pk)
    settings_ = {"id": study.pk, "title": study.title, "workload": public_params(study.workload), "trace_name": study.trace_name,
                 "capacity": study.capacity, "base": study.base, "vary": study.vary, "live": study.live}  # fmt: skip
    body = study_document(settings_, study.summary, ({**r, "params": public_params(r["params"])} for r in runs))
    response = HttpResponse(json.dumps(body, indent=1), content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="study-{pk}.json"'
    return response


@login_required
@require_GET
def sim_run_jobs_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """A finished run's per-job records as CSV (simulated seconds since the first arrival)."""
    run = _found(experiment_get(run_id=pk, user=request.user, done=True, in_study=True))
    response = HttpResponse(content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="run-{pk}-jobs.csv"'
    csv.writer(response).writerows(csv_safe(jobs_rows(run.result["jobs"])))
    return response
