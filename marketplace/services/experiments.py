"""Running registered experiments (``simulator.experiments``) as background jobs.

A run is a row (``ExperimentRun``) whose status moves only by conditional
UPDATEs: ``experiment_execute`` claims a queued run (so a redelivered task
does nothing), writes progress at most every ``PROGRESS_EVERY_S`` wall
seconds (which is also the heartbeat and the point where a cancel is seen),
and stores the result or the error. With a real broker the run is a Celery
task (``experiment_run_task``); with eager Celery (the embedded default) it
runs in a background thread of the web process, so the page can show its
progress instead of blocking the request.
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
from django.utils import timezone

from marketplace.models import ExperimentRun
from simulator import experiments

log = logging.getLogger(__name__)

EXPERIMENT_TASK = "marketplace.tasks.experiment_run_task"
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
    if getattr(settings, "EXPERIMENTS_IN_THREAD", False):
        thread = threading.Thread(target=_execute_in_thread, args=(run_id,), name=f"experiment-{run_id}", daemon=True)
        _threads.append(thread)
        thread.start()
        return
    from marketplace.celery import app

    try:
        app.tasks[EXPERIMENT_TASK].delay(run_id)
    except Exception:  # the broker is down: the run stays queued (shown as such) until started again
        log.exception("could not enqueue experiment run %s", run_id)


def _execute_in_thread(run_id: int) -> None:
    try:
        experiment_execute(run_id=run_id)
    finally:
        connection.close()


def experiment_execute(*, run_id: int) -> str:
    """Run a queued run to its end; returns the final status (or the current
    one when the run was not queued: a duplicate delivery changes nothing)."""
    now = timezone.now()
    claimed = ExperimentRun.objects.filter(pk=run_id, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=now, heartbeat_at=now, message="started"
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
        running.update(status=Status.FAILED, message=f"failed: {type(exc).__name__}"[:200],
                       error=traceback.format_exc()[-4000:], finished_at=timezone.now())  # fmt: skip
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
    """Mark running runs whose heartbeat is older than ``stale_after_s`` (default
    ``EXPERIMENT_STALE_S``) failed: their worker died. Returns how many."""
    limit = stale_after_s if stale_after_s is not None else float(getattr(settings, "EXPERIMENT_STALE_S", 300))
    cutoff = timezone.now() - timedelta(seconds=limit)
    return ExperimentRun.objects.filter(status=Status.RUNNING, heartbeat_at__lt=cutoff).update(
        status=Status.FAILED, message="worker lost (no heartbeat)", finished_at=timezone.now()
    )
