"""Running registered experiments (``simulator.experiments``) as background jobs.

A run is a row (``ExperimentRun``) whose status moves only by conditional
UPDATEs: ``experiment_execute`` claims a queued run (so a redelivered task
does nothing), writes progress at most every ``PROGRESS_EVERY_S`` wall
seconds (which is also the heartbeat and the point where a cancel is seen),
and stores the result or the error. With a real broker the run is a Celery
task (``experiment_run_task``); with eager Celery (the embedded default) it
runs in a background thread of the web process, so the page can show its
progress instead of blocking the request.

Retries (``ExperimentRun.max_attempts``): an attempt that raises, or whose
worker died (``experiment_reap``), with attempts left goes back to queued with
``retry_at = now + backoff`` (``EXPERIMENT_RETRY_BACKOFF_S`` doubled per
attempt, at most ``EXPERIMENT_RETRY_MAX_BACKOFF_S``) and is published again
with that countdown; a cancel is never retried. Publication is recorded in
``enqueued_at``: a run whose task never reached the broker (down at commit, or
at the retry) keeps it None, and the sweeper's :func:`experiment_requeue`
(``manage.py run_clock``, in process, and beat) publishes it once the broker is
back. A duplicate publication is harmless: only one delivery claims the run.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from marketplace.lab.models import ExperimentRun
from simulator import experiments

log = logging.getLogger(__name__)

EXPERIMENT_TASK = "marketplace.tasks.experiment_run_task"
SIMULATION_TASK = "marketplace.tasks.simulation_run_task"
SIMULATION_QUEUE = "simulation"
PROGRESS_EVERY_S = 0.5
Status = ExperimentRun.Status
_threads: list[threading.Thread] = []  # eager mode only; tests may join them


def experiment_start(*, name: str, params: dict[str, Any], user: Any) -> ExperimentRun:
    """Queue a run of experiment ``name`` with ``params`` (defaults overlaid).

    Raises:
        PermissionDenied: ``user`` is not staff.
        ValidationError: ``{"name": ...}`` for an unknown experiment,
            ``{"params": ...}`` for an unknown key or a value of the wrong type.
    """
    if not getattr(user, "is_staff", False):
        raise PermissionDenied("Only staff may start experiment runs.")
    try:
        values = experiments.get(name).params(params)
    except experiments.UnknownExperiment as exc:
        raise ValidationError({"name": str(exc.args[0])}) from None
    except (ValueError, TypeError) as exc:
        raise ValidationError({"params": str(exc)}) from None
    run = ExperimentRun.objects.create(name=name, params=values, created_by=user, message="queued")
    transaction.on_commit(lambda: _enqueue(run.pk))
    return run


def _enqueue(run_id: int) -> None:
    experiment_publish(run_ids=[run_id])


def experiment_publish(*, run_ids: list[int], countdown: float = 0.0) -> list[int]:
    """Hand runs to the workers: a simulation-lab run as ``SIMULATION_TASK`` on its queue,
    any other as ``EXPERIMENT_TASK`` (a background thread after ``countdown`` s in
    ``EXPERIMENTS_IN_THREAD`` mode). Sets ``enqueued_at`` of each one published;
    a broker error is logged and leaves it None for :func:`experiment_requeue`.
    Returns the ids published."""
    studies = dict(ExperimentRun.objects.filter(pk__in=run_ids).values_list("pk", "study_id"))
    published = []
    for pk in run_ids:
        if pk not in studies:
            continue
        if getattr(settings, "EXPERIMENTS_IN_THREAD", False):
            thread = threading.Timer(countdown, _execute_in_thread, args=(pk, studies[pk] is not None))
            thread.daemon = True
            _threads.append(thread)
            thread.start()
        elif not _send(pk, studies[pk] is not None, countdown):
            continue
        mark_enqueued([pk])
        published.append(pk)
    return published


def mark_enqueued(run_ids: list[int]) -> None:
    """Record that these runs' tasks reached the broker (those still queued: an eager run may be done already)."""
    ExperimentRun.objects.filter(pk__in=run_ids, status=Status.QUEUED).update(enqueued_at=timezone.now())


def _send(run_id: int, simulation: bool, countdown: float) -> bool:
    from marketplace.celery import app

    task, queue = (SIMULATION_TASK, SIMULATION_QUEUE) if simulation else (EXPERIMENT_TASK, None)
    try:
        app.signature(task, args=(run_id,), queue=queue).apply_async(countdown=countdown or None)
    except Exception:  # the broker is down: the run stays queued, enqueued_at None, for the sweeper
        log.exception("could not enqueue experiment run %s", run_id)
        return False
    return True


def _execute_in_thread(run_id: int, simulation: bool = False) -> None:
    try:
        if simulation:
            from marketplace.lab.services.simulations import simulation_execute

            simulation_execute(run_id=run_id)
        else:
            experiment_execute(run_id=run_id)
    finally:
        connection.close()


def retry_backoff_s(attempt: int) -> float:
    """Wall seconds before retrying after failed attempt ``attempt`` (1-based): the base
    ``EXPERIMENT_RETRY_BACKOFF_S`` doubled per earlier attempt, capped."""
    base = float(getattr(settings, "EXPERIMENT_RETRY_BACKOFF_S", 30.0))
    cap = float(getattr(settings, "EXPERIMENT_RETRY_MAX_BACKOFF_S", 600.0))
    return float(min(cap, base * 2 ** max(0, attempt - 1)))


def _retry_or_fail(run_id: int, why: str, error: str) -> bool:
    """A running run's attempt ended badly: queue it again with backoff if it has attempts
    left (True; its task is published with that countdown), else fail it (False)."""
    attempts, most = ExperimentRun.objects.values_list("attempts", "max_attempts").get(pk=run_id)
    attempts = max(attempts, 1)  # a running run has been started at least once
    running = ExperimentRun.objects.filter(pk=run_id, status=Status.RUNNING)
    now = timezone.now()
    if attempts < most and not ExperimentRun.objects.filter(pk=run_id, cancel_requested=True).exists():
        delay = retry_backoff_s(attempts)
        moved = running.update(status=Status.QUEUED, progress=0.0, error=error, retry_at=now + timedelta(seconds=delay), enqueued_at=None,
                               message=f"{why} on attempt {attempts} of {most}; retry in {delay:.0f} s"[:200])  # fmt: skip
        if moved:
            experiment_publish(run_ids=[run_id], countdown=delay)
        return bool(moved)
    tried = f" after {attempts} attempts" if most > 1 else ""
    running.update(status=Status.FAILED, message=f"{why}{tried}"[:200], error=error, finished_at=now)
    return False


def experiment_execute(*, run_id: int) -> str:
    """Run a queued run to its end; returns the final status (or the current
    one when the run was not queued: a duplicate delivery changes nothing)."""
    now = timezone.now()
    claimed = ExperimentRun.objects.filter(pk=run_id, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=now, heartbeat_at=now, message="started", attempts=F("attempts") + 1, retry_at=None
    )
    run = ExperimentRun.objects.get(pk=run_id)
    if not claimed:
        return str(run.status)
    last = [0.0]

    def progress(fraction: float, message: str) -> None:
        tick = time.monotonic()
        if tick - last[0] < PROGRESS_EVERY_S:
            return
        last[0] = tick
        moved = ExperimentRun.objects.filter(pk=run_id, status=Status.RUNNING, cancel_requested=False).update(
            progress=min(max(float(fraction), 0.0), 1.0), message=message[:200], heartbeat_at=timezone.now()
        )
        if not moved:
            raise experiments.Cancelled

    running = ExperimentRun.objects.filter(pk=run_id, status=Status.RUNNING)
    try:
        result = experiments.run(run.name, run.params, progress)
    except experiments.Cancelled:
        running.update(status=Status.CANCELLED, message="cancelled", finished_at=timezone.now())
    except Exception as exc:
        log.exception("experiment run %s failed", run_id)
        _retry_or_fail(run_id, f"failed: {type(exc).__name__}", traceback.format_exc()[-4000:])
    else:
        running.update(status=Status.DONE, progress=1.0, message="done", result=result, finished_at=timezone.now())
    return str(ExperimentRun.objects.values_list("status", flat=True).get(pk=run_id))


def experiment_cancel(*, run_id: int, user: Any) -> ExperimentRun:
    """Cancel a run: a queued one at once, a running one at its next progress update.

    Raises:
        PermissionDenied: ``user`` is neither staff nor the run's creator.
        ExperimentRun.DoesNotExist: no such run.
    """
    run = ExperimentRun.objects.get(pk=run_id)
    if not (getattr(user, "is_staff", False) or run.created_by_id == getattr(user, "pk", None)):
        raise PermissionDenied("Only staff or the run's creator may cancel it.")
    ExperimentRun.objects.filter(pk=run_id, status=Status.QUEUED).update(
        status=Status.CANCELLED, message="cancelled before it started", finished_at=timezone.now()
    )
    ExperimentRun.objects.filter(pk=run_id, status=Status.RUNNING).update(cancel_requested=True, message="cancelling")
    run.refresh_from_db()
    return run


def experiment_reap(*, stale_after_s: float | None = None) -> int:
    """Running runs whose heartbeat is older than ``stale_after_s`` (default
    ``EXPERIMENT_STALE_S``) lost their worker: each is queued again with backoff if
    it has attempts left, else failed. Returns how many were reaped."""
    limit = stale_after_s if stale_after_s is not None else float(getattr(settings, "EXPERIMENT_STALE_S", 300))
    cutoff = timezone.now() - timedelta(seconds=limit)
    stale = list(ExperimentRun.objects.filter(status=Status.RUNNING, heartbeat_at__lt=cutoff).values_list("pk", flat=True))
    for pk in stale:
        _retry_or_fail(pk, "worker lost (no heartbeat)", "")
    return len(stale)


def experiment_requeue(*, grace_s: float = 5.0) -> list[int]:
    """Publish queued runs that are not with the broker: never published (the broker was
    down at commit) for ``grace_s`` wall seconds, or a retry that is due and whose
    countdown publication failed. The sweeper runs it (``manage.py run_clock`` in
    process, and beat); it reads only the database. Returns the ids published."""
    now = timezone.now()
    due = ExperimentRun.objects.filter(status=Status.QUEUED, enqueued_at__isnull=True, cancel_requested=False).filter(
        Q(retry_at__isnull=True, created_at__lte=now - timedelta(seconds=grace_s)) | Q(retry_at__lte=now)
    ).exclude(study__check_status="checking")  # an upload's runs wait for its check (services.simulations.simulation_check)
    ids = list(due.order_by("pk").values_list("pk", flat=True))
    if not ids:
        return []
    published = experiment_publish(run_ids=ids)
    log.warning("re-enqueued %s of %s queued experiment runs the broker did not have: %s", len(published), len(ids), ids)
    return published
