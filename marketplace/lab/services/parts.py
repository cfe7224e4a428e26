"""Runs split into parts for the workers: a parent ``ExperimentRun`` and one child run per part.

An experiment that declares ``shards`` and ``combine`` (``simulator.experiments``; e.g.
``published_schedulers``, one part per (trace, window) cell) is started by
``experiment_start`` as a *parent* with one child per part, all created in one
transaction (:func:`parts_create`); after commit each child is its own task on the
``simulation`` queue, so N workers run N parts at once. A worker never runs the
parent: it moves by what its parts do, each move a conditional UPDATE or made under
the parent's row lock (``select_for_update``; the parent row first, then its parts):

- queued -> running when its first part is claimed (:func:`part_started`);
- progress: the mean of its parts' progress, written with each part's progress
  (:func:`part_progress`, one UPDATE with an aggregate subquery) and when a part
  ends; the message says "k of n parts done" (:func:`parent_settle`);
- done when every part is done: ``combine(parent.params, [part results by
  part_index])``, plus ``params``, ``wall_s`` (wall seconds from the parent's
  ``started_at``) and ``workers`` (distinct worker names among the parts, when known);
- failed when a part failed for good (its attempts used up) or was cancelled on its own:
  the message names the part; queued siblings are cancelled, running ones asked to stop;
- cancelled with :func:`parent_cancel`: queued parts at once, running ones at their
  next progress update.

A parent has no heartbeat of its own and is never published: the reaper and the
sweeper's requeue leave it out (:func:`is_parent`); the reaper settles a parent none of
whose parts is active any more (a worker that died between a part's end and its settle).
"""

from __future__ import annotations

import json
import logging
import traceback
from typing import Any

from django.db import transaction
from django.db.models import Avg, Exists, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from marketplace.lab.models import ExperimentRun
from simulator import experiments

log = logging.getLogger(__name__)

Status = ExperimentRun.Status
ACTIVE = (Status.QUEUED, Status.RUNNING)


def is_parent() -> Exists:
    """``Exists`` expression: the run (``OuterRef("pk")``) has parts. Filter with it or its negation."""
    return Exists(ExperimentRun.objects.filter(parent=OuterRef("pk")))


def part_label(parent: dict[str, Any], part: dict[str, Any]) -> str:
    """The parameters of ``part`` that differ from its parent's, as ``key=value`` text (JSON values)."""
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in part.items() if parent.get(k) != v)[:120] or "the whole"


def parts_create(*, parent: ExperimentRun, parts: list[dict[str, Any]], max_attempts: int) -> list[int]:
    """Create the child runs of ``parent`` (one per element of ``parts``: its validated
    params, in ``shards`` order). Call inside the transaction that created ``parent``.
    Returns the children's ids in part order."""
    rows = ExperimentRun.objects.bulk_create([
        ExperimentRun(name=parent.name, params=p, parent=parent, part_index=k, label=part_label(parent.params, p),
                      created_by=parent.created_by, message="queued", max_attempts=max_attempts)
        for k, p in enumerate(parts)
    ])  # fmt: skip
    ExperimentRun.objects.filter(pk=parent.pk).update(message=f"queued: {len(rows)} parts")
    return [r.pk for r in rows]


def part_started(*, parent_id: int) -> bool:
    """A part of ``parent_id`` was claimed: a queued parent becomes running (its ``started_at``
    is now). Returns False when the parent has already ended (the part should not run)."""
    now = timezone.now()
    n = ExperimentRun.objects.filter(parent_id=parent_id).count()
    ExperimentRun.objects.filter(pk=parent_id, status=Status.QUEUED).update(
        status=Status.RUNNING, started_at=now, heartbeat_at=now, message=f"0 of {n} parts done")
    return bool(ExperimentRun.objects.filter(pk=parent_id, status=Status.RUNNING).exists())


def part_progress(*, parent_id: int) -> None:
    """A part wrote its progress: the running parent's progress becomes the mean of its parts' (one UPDATE)."""
    mean = ExperimentRun.objects.filter(parent_id=parent_id).values("parent_id").annotate(m=Avg("progress")).values("m")
    ExperimentRun.objects.filter(pk=parent_id, status=Status.RUNNING).update(
        progress=Coalesce(Subquery(mean), 0.0), heartbeat_at=timezone.now())


def parent_settle(*, parent_id: int) -> str:
    """Bring the parent up to date with its parts, under its row lock: combine them when all are
    done, fail it when one failed for good or was cancelled, else write its progress and
    "k of n parts done". Idempotent (an ended parent is left alone). Returns its status."""
    with transaction.atomic():
        parent = ExperimentRun.objects.select_for_update().defer("result").get(pk=parent_id)
        if parent.finished:
            return str(parent.status)
        parts = list(ExperimentRun.objects.filter(parent_id=parent_id).order_by("part_index")
                     .only("pk", "part_index", "status", "progress", "message", "error", "label", "worker"))
        lost = next((p for p in parts if p.status in (Status.FAILED, Status.CANCELLED)), None)
        mean = sum(p.progress for p in parts) / max(len(parts), 1)
        done = sum(p.status == Status.DONE for p in parts)
        if lost is not None:
            _fail(parent, len(parts), lost, mean)
        elif parts and done == len(parts):
            _combine(parent, parts)
        else:
            ExperimentRun.objects.filter(pk=parent_id, status__in=ACTIVE).update(
                progress=min(mean, 1.0), message=f"{done} of {len(parts)} parts done")
        return str(ExperimentRun.objects.values_list("status", flat=True).get(pk=parent_id))


def _combine(parent: ExperimentRun, parts: list[ExperimentRun]) -> None:
    results = list(ExperimentRun.objects.filter(parent_id=parent.pk).order_by("part_index").values_list("result", flat=True))
    now = timezone.now()
    try:
        experiment = experiments.get(parent.name)
        if experiment.combine is None:
            raise ValueError(f"experiment {parent.name!r} does not combine parts")
        result = experiment.combine(parent.params, results)
        experiments.check_result(result)
    except Exception as exc:
        log.exception("combining the parts of run %s failed", parent.pk)
        ExperimentRun.objects.filter(pk=parent.pk, status__in=ACTIVE).update(
            status=Status.FAILED, message=f"combining its {len(parts)} parts failed: {type(exc).__name__}"[:200],
            error=traceback.format_exc()[-4000:], finished_at=now)
        return
    workers = {p.worker for p in parts if p.worker}
    result = {**result, "params": parent.params}
    if parent.started_at is not None:
        result["wall_s"] = round((now - parent.started_at).total_seconds(), 3)
    if workers:
        result["workers"] = len(workers)
    on = f" on {len(workers)} worker{'s' if len(workers) != 1 else ''}" if workers else ""
    ExperimentRun.objects.filter(pk=parent.pk, status__in=ACTIVE).update(
        status=Status.DONE, progress=1.0, message=f"done: {len(parts)} parts{on}", result=result, finished_at=now)


def _fail(parent: ExperimentRun, n: int, lost: ExperimentRun, mean: float) -> None:
    index = int(lost.part_index or 0) + 1
    why = "failed" if lost.status == Status.FAILED else "was cancelled"
    ExperimentRun.objects.filter(pk=parent.pk, status__in=ACTIVE).update(
        status=Status.FAILED, progress=min(mean, 1.0), finished_at=timezone.now(),
        message=f"part {index} of {n} ({lost.label}) {why}: {lost.message}"[:200],
        error=f"part {index} of {n}, run #{lost.pk} ({lost.label}): {lost.message}\n{lost.error}"[-4000:])
    _stop_parts(parent.pk, f"cancelled: part {index} {why}")


def _stop_parts(parent_id: int, message: str) -> None:
    """Queued parts cancelled at once; running ones asked to stop (at their next progress update)."""
    parts = ExperimentRun.objects.filter(parent_id=parent_id)
    parts.filter(status=Status.QUEUED).update(status=Status.CANCELLED, message=message[:200], finished_at=timezone.now())
    parts.filter(status=Status.RUNNING).update(cancel_requested=True, message="cancelling")


def parent_cancel(*, parent_id: int) -> None:
    """Cancel a split run: the parent at once (a worker never runs it), its queued parts at
    once, its running parts at their next progress update. An ended parent is left alone."""
    with transaction.atomic():
        parent = ExperimentRun.objects.select_for_update().only("pk", "status").get(pk=parent_id)
        if parent.finished:
            return
        ExperimentRun.objects.filter(pk=parent_id, status__in=ACTIVE).update(
            status=Status.CANCELLED, message="cancelled", finished_at=timezone.now())
        _stop_parts(parent_id, "cancelled with its run")


def parents_unsettled() -> list[int]:
    """Parents still queued or running none of whose parts is: each needs :func:`parent_settle`
    (its last part's settle was lost with its worker)."""
    active = ExperimentRun.objects.filter(parent=OuterRef("pk"), status__in=ACTIVE)
    rows = ExperimentRun.objects.filter(status__in=ACTIVE).filter(is_parent()).filter(~Exists(active))
    return list(rows.order_by("pk").values_list("pk", flat=True))

