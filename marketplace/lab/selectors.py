"""Reads of the lab: experiment runs and simulation studies, filtered to what a user may read.

Services write (``services/``), these read; the views call nothing else to reach the rows. A
"get" returns None for a row that does not exist or that the user may not read (the page
answers 404 for both, so a hidden study's id is not confirmed).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from marketplace.lab.models import ExperimentRun, SimulationStudy
from marketplace.market import roles


def _studies_visible_to(user: Any) -> QuerySet[SimulationStudy]:
    """The simulation studies ``user`` may read: every study replayed from a trace or a
    generator (public: simulated data only); studies replayed from the live market
    (``SimulationStudy.Kind.LIVE``: every tenant's recent bids, per job) only for staff
    and cluster managers, who see every tenant's jobs anyway.
    """
    studies = SimulationStudy.objects.all()
    return studies if roles.sees_all_tenants(user) else studies.exclude(kind=SimulationStudy.Kind.LIVE)


def _runs_visible_to(user: Any) -> QuerySet[ExperimentRun]:
    """The lab's runs ``user`` may read: a run of a live-market study only under the rule
    of :func:`_studies_visible_to`; every other run (paper experiments, trace studies) is public."""
    runs = ExperimentRun.objects.all()
    return runs if roles.sees_all_tenants(user) else runs.exclude(study__kind=SimulationStudy.Kind.LIVE)


def experiment_list(*, user: Any, name: str | None = None, limit: int = 50) -> list[ExperimentRun]:
    """The newest runs ``user`` may read (of experiment ``name`` when given), newest first,
    without their results. The parts of a split run are left out (its page lists them:
    :func:`experiment_parts`)."""
    runs = _runs_visible_to(user).filter(parent__isnull=True).defer("result", "error").select_related("created_by")
    if name:
        runs = runs.filter(name=name)
    return list(runs[:limit])


def experiment_latest_done(*, names: list[str], user: Any) -> dict[str, ExperimentRun]:
    """For each experiment name, its newest finished-successfully run that ``user`` may read
    (results deferred), never a part of a split run."""
    runs = _runs_visible_to(user).filter(parent__isnull=True, name__in=names, status=ExperimentRun.Status.DONE)
    out: dict[str, ExperimentRun] = {}
    for run in runs.defer("result", "error"):
        out.setdefault(run.name, run)
    return out


def experiment_get(
    *, run_id: int, user: Any, done: bool = False, in_study: bool = False, with_result: bool = True
) -> ExperimentRun | None:
    """Run ``run_id`` with its creator, or None when it does not exist or ``user`` may not read
    it; ``done``: only a run finished successfully; ``in_study``: only a simulation study's
    run; ``with_result=False`` defers the stored result and error (the poller's read)."""
    runs = _runs_visible_to(user).select_related("created_by")
    if done:
        runs = runs.filter(status=ExperimentRun.Status.DONE)
    if in_study:
        runs = runs.filter(study__isnull=False)
    if not with_result:
        runs = runs.defer("result", "error")
    return runs.filter(pk=run_id).first()


def experiment_visible(*, run_id: int, user: Any) -> bool:
    """True when run ``run_id`` exists and ``user`` may read it."""
    return _runs_visible_to(user).filter(pk=run_id).exists()


def experiment_parts(*, run_id: int) -> list[ExperimentRun]:
    """The parts of split run ``run_id`` in part order, results deferred (empty: not a split run)."""
    return list(ExperimentRun.objects.filter(parent_id=run_id).defer("result", "error").order_by("part_index"))


def experiment_part_count(*, run_id: int) -> int:
    """How many parts split run ``run_id`` has (0: not a split run)."""
    return ExperimentRun.objects.filter(parent_id=run_id).count()


def experiment_results(*, run_ids: Iterable[int]) -> dict[int, Any]:
    """Run id -> its stored result (None while it has none), for the runs ``run_ids``."""
    return dict(ExperimentRun.objects.filter(pk__in=list(run_ids)).values_list("pk", "result"))


def simulation_list(*, user: Any, limit: int = 20) -> list[SimulationStudy]:
    """The newest simulation studies ``user`` may read, with their creators."""
    return list(_studies_visible_to(user).select_related("created_by")[:limit])


def simulation_get(*, study_id: int, user: Any) -> SimulationStudy | None:
    """Study ``study_id``, or None when it does not exist or ``user`` may not read it."""
    return _studies_visible_to(user).filter(pk=study_id).first()


def simulation_visible(*, study_id: int, user: Any) -> bool:
    """True when study ``study_id`` exists and ``user`` may read it."""
    return _studies_visible_to(user).filter(pk=study_id).exists()


def simulation_runs(*, study_id: int) -> list[ExperimentRun]:
    """A study's runs in the order they were created (configuration, then seed), results deferred."""
    return list(ExperimentRun.objects.filter(study_id=study_id).defer("result", "error").order_by("pk"))


def simulation_run_count(*, study_id: int) -> int:
    """How many runs study ``study_id`` has."""
    return ExperimentRun.objects.filter(study_id=study_id).count()


def simulation_run_records(*, study_id: int) -> list[dict[str, Any]]:
    """A study's runs in creation order as ``{"id", "label", "status", "params", "result"}`` (the JSON download)."""
    return list(ExperimentRun.objects.filter(study_id=study_id).order_by("pk").values("id", "label", "status", "params", "result"))


def experiment_past_durations(*, names: list[str], limit: int = 5) -> dict[str, list[float]]:
    """Wall seconds (start to finish) of each experiment's newest finished whole runs (not the parts of
    a split run, not the simulation lab's), newest first, at most ``limit`` per experiment: what the
    lab quotes before a run of an experiment that has no model of its own (``Experiment.estimate``)."""
    out: dict[str, list[float]] = {}
    done = (ExperimentRun.objects.filter(name__in=names, status=ExperimentRun.Status.DONE, parent__isnull=True,
                                         study__isnull=True, started_at__isnull=False, finished_at__isnull=False)
            .order_by("-finished_at").values_list("name", "started_at", "finished_at"))
    for name, started, finished in done[: limit * max(1, len(names))]:
        if len(out.setdefault(name, [])) < limit:
            out[name].append((finished - started).total_seconds())
    return out
