"""Reads of the lab: experiment runs and simulation studies, filtered to what a user may read."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from marketplace.lab.models import ExperimentRun, SimulationStudy
from marketplace.market import roles


def experiment_runs(*, name: str | None = None, limit: int = 50, user: Any = None) -> list[ExperimentRun]:
    """The newest runs (of experiment ``name`` when given), newest first, without their results;
    with ``user``, only those ``user`` may read (:func:`runs_visible_to`). The parts of a split
    run are left out (its page lists them: :func:`experiment_parts`)."""
    runs = (ExperimentRun.objects.all() if user is None else runs_visible_to(user=user)).filter(parent__isnull=True)
    runs = runs.defer("result", "error").select_related("created_by")
    if name:
        runs = runs.filter(name=name)
    return list(runs[:limit])


def experiment_latest_done(*, names: list[str], user: Any = None) -> dict[str, ExperimentRun]:
    """For each experiment name, its newest finished-successfully run (results deferred), never
    a part of a split run; with ``user``, among those ``user`` may read (:func:`runs_visible_to`)."""
    runs = (ExperimentRun.objects.all() if user is None else runs_visible_to(user=user)).filter(parent__isnull=True)
    out: dict[str, ExperimentRun] = {}
    for run in runs.filter(name__in=names, status=ExperimentRun.Status.DONE).defer("result", "error"):
        out.setdefault(run.name, run)
    return out


def experiment_parts(*, run_id: int) -> list[ExperimentRun]:
    """The parts of split run ``run_id`` in part order, results deferred (empty: not a split run)."""
    return list(ExperimentRun.objects.filter(parent_id=run_id).defer("result", "error").order_by("part_index"))


def studies_visible_to(*, user: Any) -> QuerySet[SimulationStudy]:
    """The simulation studies ``user`` may read: every study replayed from a trace or a
    generator (public: simulated data only); studies replayed from the live market
    (``SimulationStudy.Kind.LIVE``: every tenant's recent bids, per job) only for staff
    and cluster managers, who see every tenant's jobs anyway.
    """
    studies = SimulationStudy.objects.all()
    return studies if roles.sees_all_tenants(user) else studies.exclude(kind=SimulationStudy.Kind.LIVE)


def runs_visible_to(*, user: Any) -> QuerySet[ExperimentRun]:
    """The lab's runs ``user`` may read: a run of a live-market study only under the rule
    of :func:`studies_visible_to`; every other run (paper experiments, trace studies) is public."""
    runs = ExperimentRun.objects.all()
    return runs if roles.sees_all_tenants(user) else runs.exclude(study__kind=SimulationStudy.Kind.LIVE)
