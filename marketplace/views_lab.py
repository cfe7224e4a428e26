"""The experiments lab: start registered experiments, watch their progress, read their results.

Everyone logged in reads runs and results; staff start and cancel runs. A
run's page polls ``lab_run_status`` (JSON) while it is queued or running and
reloads once it has finished; its figures are the experiment's own plotly
figures (``simulator.experiments``), its tables download as CSV.
"""

from __future__ import annotations

import csv
import json
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from marketplace import selectors
from marketplace.http_cache import poller_revalidates
from marketplace.models.experiments import ExperimentRun
from marketplace.selectors_visibility import runs_visible_to
from marketplace.services.experiments import experiment_cancel, experiment_start
from marketplace.views import _render
from simulator import experiments

_KIND_WORDS = {"int": "a whole number", "float": "a number", "list": "a JSON list", "bool": "true or false"}


def _param_rows(experiment: experiments.Experiment, values: dict[str, Any], errors: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {
            "key": key,
            "value": value if isinstance(value, str) else json.dumps(value),
            "help": experiment.help.get(key, ""),
            "error": errors.get(key, ""),
        }
        for key, value in values.items()
    ]


def _parse_params(experiment: experiments.Experiment, post: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Form fields ``p_<key>`` (JSON text, or a bare string) -> params, and per-field errors."""
    params: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for key, default in experiment.defaults.items():
        raw = str(post.get(f"p_{key}", "")).strip()
        if raw == "":
            continue
        try:
            value = raw if isinstance(default, str) else json.loads(raw)
        except json.JSONDecodeError:
            errors[key] = f"Enter {_KIND_WORDS.get(type(default).__name__, 'a value')} like {json.dumps(default)}."
            continue
        try:
            experiment.params({key: value})
        except (TypeError, ValueError) as exc:
            errors[key] = str(exc).split(": ", 1)[-1]
            continue
        params[key] = value
    return params, errors


@login_required
@require_http_methods(["GET", "POST"])
def lab_index(request: HttpRequest) -> HttpResponse:
    """The registered experiments, each with its parameters (a run form for staff) and newest result."""
    registry = experiments.load_all()
    errors: dict[str, dict[str, str]] = {}
    posted: dict[str, dict[str, Any]] = {}
    if request.method == "POST":
        name = str(request.POST.get("name", ""))
        if name not in registry:
            raise Http404("No such experiment.")
        params, field_errors = _parse_params(registry[name], request.POST)
        if not field_errors:
            try:
                run = experiment_start(name=name, params=params, user=request.user)
            except ValidationError as exc:
                field_errors = {"__all__": "; ".join(exc.messages)}
            else:
                messages.success(request, f"Run #{run.pk} of {registry[name].title} queued.")
                return redirect("lab-run", pk=run.pk)
        errors[name] = field_errors
        posted[name] = {**registry[name].defaults, **{k: request.POST.get(f"p_{k}", "") for k in registry[name].defaults}}
    latest = selectors.experiment_latest_done(names=list(registry), user=request.user)
    cards = [
        {
            "experiment": exp,
            "latest": latest.get(name),
            "errors": errors.get(name, {}),
            "form_error": errors.get(name, {}).get("__all__", ""),
            "params": _param_rows(exp, posted.get(name, dict(exp.defaults)), errors.get(name, {})),
        }
        for name, exp in sorted(registry.items())
    ]
    status = 400 if errors else 200
    runs = selectors.experiment_runs(limit=20, user=request.user)
    return _render(request, "marketplace/lab/index.html", {"nav": "lab", "cards": cards, "runs": runs}, status=status)


@login_required
@require_GET
def lab_run(request: HttpRequest, pk: int) -> HttpResponse:
    """One run: progress while it runs, then its summary, figures and tables."""
    run = get_object_or_404(runs_visible_to(user=request.user), pk=pk)
    try:
        experiment: experiments.Experiment | None = experiments.get(run.name)
    except experiments.UnknownExperiment:
        experiment = None
    figures = (run.result or {}).get("figures", []) if run.status == ExperimentRun.Status.DONE else []
    context = {
        "nav": "lab",
        "run": run,
        "experiment": experiment,
        "figures": [{"id": f"figure-{k}", "figure": f} for k, f in enumerate(figures)],
        "tables": (run.result or {}).get("tables", []),
        "summary": (run.result or {}).get("summary", ""),
    }
    return _render(request, "marketplace/lab/run.html", context)


@login_required
@require_GET
@poller_revalidates
def lab_run_status(request: HttpRequest, pk: int) -> JsonResponse:
    """``{"status", "progress" (0-1), "message", "attempts", "max_attempts", "finished"}`` of a run, for the page's poller."""
    run = get_object_or_404(runs_visible_to(user=request.user).defer("result", "error"), pk=pk)
    return JsonResponse({"status": run.status, "progress": run.progress, "message": run.message, "attempts": run.attempts,
                         "max_attempts": run.max_attempts, "finished": run.finished})  # fmt: skip


@login_required
@require_POST
def lab_run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    get_object_or_404(runs_visible_to(user=request.user).only("pk"), pk=pk)
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
    run = get_object_or_404(runs_visible_to(user=request.user), pk=pk, status=ExperimentRun.Status.DONE)
    response = JsonResponse(run.result, json_dumps_params={"indent": 1})
    response["Content-Disposition"] = f'attachment; filename="{run.name}-{run.pk}.json"'
    return response


@login_required
@require_GET
def lab_run_table_csv(request: HttpRequest, pk: int, index: int) -> HttpResponse:
    """Table ``index`` of a finished run as CSV."""
    run = get_object_or_404(runs_visible_to(user=request.user), pk=pk, status=ExperimentRun.Status.DONE)
    tables = (run.result or {}).get("tables", [])
    if not 0 <= index < len(tables):
        raise Http404("No such table.")
    response = HttpResponse(content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{run.name}-{run.pk}-table{index}.csv"'
    writer = csv.writer(response)
    writer.writerow(tables[index]["columns"])
    writer.writerows(tables[index]["rows"])
    return response
