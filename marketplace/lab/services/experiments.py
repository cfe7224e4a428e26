"""Running registered experiments (``simulator.experiments``) as background jobs.

A run is a row (``ExperimentRun``) whose status moves only by conditional
UPDATEs: ``experiment_execute`` claims a queued run (so a redelivered task
does nothing), writes progress at most every ``PROGRESS_EVERY_S`` wall
seconds (which is also the heartbeat and the point where a cancel is seen),
and stores the result or the error. With a real broker the run is a Celery
task (``experiment_run_task``); with eager Celery (the embedded default) it
runs in a background thread of the web process, so the page can show its
progress instead of blocking the request (``services.runs``).

Retries (``ExperimentRun.max_attempts``): an attempt that raises, or whose
worker died (``experiment_reap``), with attempts left goes back to queued with
``retry_at = now + backoff`` (``EXPERIMENT_RETRY_BACKOFF_S`` doubled per
attempt, at most ``EXPERIMENT_RETRY_MAX_BACKOFF_S``); a cancel is never retried.
In-thread, the retry's thread waits out the backoff; with a broker the retry
stays unpublished and the sweeper publishes it once ``retry_at`` is due (the
database, not a delayed broker message, holds the wait). Publication is
recorded in ``enqueued_at``: a run whose task never reached the broker (down at
commit, or a retry) keeps it None, and the sweeper's :func:`experiment_requeue`
(``manage.py run_clock``, in process, and beat, every ``MARKET_SWEEP_S``)
publishes it once due and the broker is back. A duplicate publication is
harmless: only one delivery claims the run.

Split runs (``services.parts``): with a broker, a run of an experiment that declares
``shards`` (and whose params do not already name one part) is a parent with one
child run per part, each child its own task (``runs.KINDS["part"]``) on the ``simulation`` queue
(``SIMULATION_MAX_ATTEMPTS`` attempts each); the parent is never published and is
combined from its parts. In ``EXPERIMENTS_IN_THREAD`` mode (no broker) the run stays
whole, one background thread.
"""

from __future__ import annotations

import logging
import time
import traceback
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from marketplace.lab.models import ExperimentRun
from marketplace.lab.services.parts import (
    is_parent,
    parent_cancel,
    parent_settle,
    parents_unsettled,
    part_progress,
    part_started,
    parts_create,
)
from marketplace.lab.services.quotas import dispatch_held, owner_lock, waiting_message, windowed
from marketplace.lab.services.runs import in_thread, run_kind, task_publish
from simulator import experiments

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 0.5
GONE = "gone"
"""What :func:`experiment_execute` returns for a run deleted before or while it ran."""
Status = ExperimentRun.Status


def experiment_start(*, name: str, params: dict[str, Any], user: Any) -> ExperimentRun:
    """Queue a run of experiment ``name`` with ``params`` (defaults overlaid); with a broker, a
    run of an experiment that declares parts is split (module docstring): the returned run is
    the parent, its parts are created in the same transaction and published after commit.

    Raises:
        PermissionDenied: ``user`` is not staff.
        ValidationError: ``{"name": ...}`` for an unknown experiment,
            ``{"params": ...}`` for an unknown key, a value of the wrong type, or
            parameters the experiment's ``shards`` refuses.
    """
    if not getattr(user, "is_staff", False):
        raise PermissionDenied("Only staff may start experiment runs.")
    try:
        experiment = experiments.get(name)
        values = experiment.params(params)
        parts = None if in_thread() else experiments.split(experiment, values)
    except experiments.UnknownExperiment as exc:
        raise ValidationError({"name": str(exc.args[0])}) from None
    except (ValueError, TypeError) as exc:
        raise ValidationError({"params": str(exc)}) from None
    with transaction.atomic():
        run = ExperimentRun.objects.create(name=name, params=values, created_by=user, message="queued")
        ids = [run.pk]
        if parts is not None:
            ids = parts_create(parent=run, parts=parts, max_attempts=int(getattr(settings, "SIMULATION_MAX_ATTEMPTS", 3)))
        transaction.on_commit(lambda: experiment_publish(run_ids=ids))
    return run


def experiment_publish(*, run_ids: list[int], countdown: float = 0.0) -> list[int]:
    """Hand runs to the workers, each as its kind's task (``services.runs.KINDS``: a
    simulation-lab run, a part of a split run, or a plain run), after ``countdown`` wall
    seconds (see :func:`services.runs.task_publish`). A parent (a run with parts) is never
    published, nor a study run past its owner's dispatch window (``services.quotas``: it waits
    in the database, published when one of the owner's runs ends). Sets ``enqueued_at`` of each
    one handed; one the broker did not take keeps it None for :func:`experiment_requeue`.
    Returns the ids published, in the order given."""
    rows = list(ExperimentRun.objects.filter(pk__in=run_ids).exclude(is_parent())
                .values_list("pk", "study_id", "parent_id", "created_by_id"))  # fmt: skip
    kinds = {pk: run_kind(study_id=study, parent_id=parent) for pk, study, parent, _ in rows}
    studied = [pk for pk in run_ids if kinds.get(pk) == "simulation"] if countdown <= 0 and windowed() else []
    # Stamped before publication: a worker that fails the run at once clears the stamp for its
    # retry (_retry_or_fail), and a stamp written after the send would hide that retry from the sweeper.
    # Study runs past their owner's window wait in the database (services.quotas), decided and
    # stamped under the owners' row locks so that two publishers never both fill one window.
    stamp = timezone.now()
    with transaction.atomic():
        owner_lock([user for pk, _, _, user in rows if pk in set(studied)])
        held = dispatch_held(run_ids=studied)
        if held:
            ExperimentRun.objects.filter(pk__in=held, status=Status.QUEUED).update(message=waiting_message())
            kinds = {pk: kind for pk, kind in kinds.items() if pk not in set(held)}
        ExperimentRun.objects.filter(pk__in=list(kinds), status=Status.QUEUED).update(enqueued_at=stamp)
    handed: set[int] = set()
    for kind in dict.fromkeys(kinds.values()):  # each kind once, in the order first seen
        handed.update(task_publish(kind=kind, ids=[pk for pk in run_ids if kinds.get(pk) == kind], countdown=countdown))
    ExperimentRun.objects.filter(pk__in=[pk for pk in kinds if pk not in handed], enqueued_at=stamp).update(enqueued_at=None)
    return [pk for pk in run_ids if pk in handed]


def retry_backoff_s(attempt: int) -> float:
    """Wall seconds before retrying after failed attempt ``attempt`` (1-based): the base
    ``EXPERIMENT_RETRY_BACKOFF_S`` doubled per earlier attempt, capped."""
    base = float(getattr(settings, "EXPERIMENT_RETRY_BACKOFF_S", 30.0))
    cap = float(getattr(settings, "EXPERIMENT_RETRY_MAX_BACKOFF_S", 600.0))
    return float(min(cap, base * 2 ** max(0, attempt - 1)))


def _retry_or_fail(run_id: int, why: str, error: str) -> bool:
    """A running run's attempt ended badly: queue it again with backoff if it has attempts
    left (True; published again once the backoff is over, see :func:`experiment_publish`), else fail it (False)."""
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


def experiment_execute(*, run_id: int, worker: str = "") -> str:
    """Run a queued run to its end; returns the final status (or the current
    one when the run was not queued: a duplicate delivery changes nothing).
    ``worker``: the Celery host name running it (kept on the run). A part of a split
    run also moves its parent (``services.parts``): running at its claim, progress with
    its own, and the parent's settle at its end (combined after the last part). A run deleted
    before or while it runs (by an administrator, or with its study) stops at its next progress
    update and returns :data:`GONE`: nothing is left to record, and that is not an error."""
    now = timezone.now()
    claimed = ExperimentRun.objects.filter(pk=run_id, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=now, heartbeat_at=now, message="started", attempts=F("attempts") + 1, retry_at=None,
        worker=worker[:120],
    )
    run = ExperimentRun.objects.filter(pk=run_id).first()
    if run is None:
        log.info("experiment run %s is gone: nothing to run", run_id)
        return GONE
    if not claimed:
        return str(run.status)
    running = ExperimentRun.objects.filter(pk=run_id, status=Status.RUNNING)
    parent = run.parent_id
    if parent is not None and not part_started(parent_id=parent):
        running.update(status=Status.CANCELLED, message="cancelled: its run has ended", finished_at=timezone.now())
        return str(Status.CANCELLED)
    status = _execute(run, parent)
    if parent is not None:
        parent_settle(parent_id=parent)
    return status


def _execute(run: ExperimentRun, parent: int | None) -> str:
    run_id = run.pk
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
        if parent is not None:
            part_progress(parent_id=parent)

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
    status = ExperimentRun.objects.filter(pk=run_id).values_list("status", flat=True).first()
    if status is None:
        log.info("experiment run %s was deleted while it ran: its result is dropped", run_id)
    return GONE if status is None else str(status)


def experiment_cancel(*, run_id: int, user: Any) -> ExperimentRun:
    """Cancel a run: a queued one at once, a running one at its next progress update. A split
    run (a parent) is cancelled at once with its parts (``services.parts.parent_cancel``);
    cancelling one part cancels the whole split run (its result needs every part).

    Raises:
        PermissionDenied: ``user`` is neither staff nor the run's creator.
        ExperimentRun.DoesNotExist: no such run.
    """
    run = ExperimentRun.objects.get(pk=run_id)
    if not (getattr(user, "is_staff", False) or run.created_by_id == getattr(user, "pk", None)):
        raise PermissionDenied("Only staff or the run's creator may cancel it.")
    if run.parent_id is not None:
        return experiment_cancel(run_id=run.parent_id, user=user)
    if ExperimentRun.objects.filter(parent_id=run_id).exists():
        parent_cancel(parent_id=run_id)
        run.refresh_from_db()
        return run
    ExperimentRun.objects.filter(pk=run_id, status=Status.QUEUED).update(
        status=Status.CANCELLED, message="cancelled before it started", finished_at=timezone.now()
    )
    ExperimentRun.objects.filter(pk=run_id, status=Status.RUNNING).update(cancel_requested=True, message="cancelling")
    run.refresh_from_db()
    return run


def experiment_reap(*, stale_after_s: float | None = None) -> int:
    """Running runs whose heartbeat is older than ``stale_after_s`` (default
    ``EXPERIMENT_STALE_S``) lost their worker: each is queued again with backoff if
    it has attempts left, else failed. A parent (a split run) has no worker and is never
    reaped; the parents of reaped parts, and parents none of whose parts is still active,
    are settled (``services.parts.parent_settle``). Returns how many runs were reaped."""
    limit = stale_after_s if stale_after_s is not None else float(getattr(settings, "EXPERIMENT_STALE_S", 300))
    cutoff = timezone.now() - timedelta(seconds=limit)
    rows = ExperimentRun.objects.filter(status=Status.RUNNING, heartbeat_at__lt=cutoff).exclude(is_parent())
    stale = list(rows.values_list("pk", "parent_id"))
    for pk, _ in stale:
        _retry_or_fail(pk, "worker lost (no heartbeat)", "")
    for parent in sorted({p for _, p in stale if p is not None} | set(parents_unsettled())):
        parent_settle(parent_id=parent)
    return len(stale)


def experiment_requeue(*, grace_s: float = 5.0) -> list[int]:
    """Publish queued runs that are not with the broker: never published (the broker was
    down at commit) for ``grace_s`` wall seconds, or a retry whose backoff is over (with a
    broker every retry is published here). The sweeper runs it (``manage.py run_clock`` in
    process, and beat); it reads only the database. A parent (a split run) is never
    published: its parts are. Returns the ids published."""
    now = timezone.now()
    due = ExperimentRun.objects.filter(status=Status.QUEUED, enqueued_at__isnull=True, cancel_requested=False).filter(
        Q(retry_at__isnull=True, created_at__lte=now - timedelta(seconds=grace_s)) | Q(retry_at__lte=now)
    ).exclude(study__check_status="checking").exclude(is_parent())  # an upload's runs wait for its check (simulation_check)
    rows = list(due.order_by("pk").values_list("pk", "retry_at", "message"))
    if not rows:
        return []
    published = experiment_publish(run_ids=[pk for pk, _, _ in rows])
    # A retry is expected here, and a run waiting for its owner's window; the others missed the broker at commit.
    lost = [pk for pk, retry_at, message in rows if retry_at is None and message != waiting_message()]
    if lost:
        log.warning("re-enqueued queued experiment runs the broker did not have: %s (published now: %s)", lost, published)
    return published
