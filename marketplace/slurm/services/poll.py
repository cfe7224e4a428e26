"""Step 1 of the loop: before a tick, outside any lock, read Slurm's view and record it."""

from __future__ import annotations

import logging
import math
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from django.utils import timezone

from marketplace.infra import rows
from marketplace.market.models.queues import ResourceType
from marketplace.slurm.client import SlurmJob, SlurmUnavailable
from marketplace.slurm.models import SlurmStatus, SlurmTask
from marketplace.slurm.services.backend import FAILED_STATES, LOST_AFTER_S, RUNNING_STATES, key_prefix, slurm_client

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

# ------------------------------------------------------------------------------ 1. poll

def slurm_poll(*, market_id: int) -> SlurmStatus:
    """Read Slurm's view and record it (outside any transaction; see the module's step 1).

    Returns the market's status row. Never raises for an unreachable controller: it is recorded.
    """
    client = slurm_client()
    status, _ = SlurmStatus.objects.get_or_create(market_id=market_id)
    now = timezone.now()
    # nodes and partitions change rarely: read every CAPACITY_POLL_S (and whenever the last poll failed)
    due = not status.reachable or status.polled_at is None or _capacity_due(market_id)
    try:
        jobs = client.jobs()  # pings first: at once when the controller is down
        partitions = client.partitions() if due else None
        nodes = client.nodes() if due else None
        version = status.version or client.version()
    except SlurmUnavailable as exc:
        if status.reachable or status.unreachable_since is None:
            status.unreachable_since = now
        status.reachable, status.error, status.polled_at = False, str(exc)[:300], now
        status.save()
        return status
    ours = _tasks_update(market_id, jobs, now, key_prefix(market_id))
    status.reachable, status.unreachable_since, status.error, status.version, status.polled_at = True, None, "", version, now
    status.foreign_cpus = _foreign_cpus(jobs, ours)
    if partitions is not None and nodes is not None:
        status.partitions = [p.as_json() for p in partitions]
        status.nodes = [n.as_json() for n in nodes]
    status.save()
    if partitions is not None:
        _capacity_follow(market_id, {p.name: p.usable_cpus for p in partitions})
    return status


CAPACITY_POLL_S = 5.0
_CAPACITY_READ: dict[int, float] = {}  # market -> time.monotonic() of this process's last partition read


def _capacity_due(market_id: int) -> bool:
    now = time.monotonic()
    if now - _CAPACITY_READ.get(market_id, -math.inf) < CAPACITY_POLL_S:
        return False
    _CAPACITY_READ[market_id] = now
    return True


def capacity_read_now() -> None:
    """Read the partitions at the next poll, whatever the period (tests; ``slurm_check --fix``)."""
    _CAPACITY_READ.clear()


def _tasks_update(market_id: int, jobs: Sequence[SlurmJob], now: datetime, prefix: str) -> set[int]:
    """Each live task row takes Slurm's state; returns the Slurm job ids that are this market's."""
    by_key: dict[tuple[str, int], SlurmJob] = {(j.comment, j.array_task_id): j for j in jobs if j.comment.startswith(prefix)}
    live = list(SlurmTask.objects.filter(market_id=market_id, state__in=(*SlurmTask.LIVE, SlurmTask.State.CANCELLING)))
    changed: list[SlurmTask] = []
    for task in live:
        job = by_key.get((task.key, task.index))
        if job is None:
            if task.state in (SlurmTask.State.SUBMITTED, SlurmTask.State.RUNNING) and task.submitted_at is not None \
                    and (now - task.submitted_at).total_seconds() > LOST_AFTER_S:
                task.state, task.reason, task.ended_at = SlurmTask.State.LOST, "Slurm no longer lists the job", now
                changed.append(task)
            continue
        if _take_state(task, job):
            changed.append(task)
    # one prepared statement for all changed rows (``infra.rows.update_rows``): Django's ``bulk_update``
    # builds a CASE of one WHEN per row per field, whose compilation was most of a busy poll's CPU
    rows.update_rows(SlurmTask, _TAKEN, ("id",), ([getattr(t, f) for f in _TAKEN] + [t.pk] for t in changed))
    return {j.job_id for j in jobs if j.comment.startswith(prefix)}


_TAKEN = ("state", "slurm_job_id", "slurm_state", "reason", "exit_code", "started_at", "ended_at")  # what _take_state sets


def _take_state(task: SlurmTask, job: SlurmJob) -> bool:
    """Copy Slurm's view of ``job`` onto ``task``; True when anything changed."""
    before = (task.state, task.slurm_state, task.reason, task.started_at, task.ended_at)
    task.slurm_job_id = task.slurm_job_id or job.array_job_id or job.job_id
    task.slurm_state, task.reason = job.state, job.reason[:200]
    if job.start_time is not None:
        task.started_at = job.start_time
    if task.state == SlurmTask.State.CANCELLING:
        pass  # the market cancelled it: scancel's answer decides (slurm_dispatch)
    elif job.state == "COMPLETED" and job.exit_code == 0:
        task.state, task.ended_at, task.exit_code = SlurmTask.State.COMPLETED, job.end_time or timezone.now(), 0
    elif job.state in FAILED_STATES or (job.state == "COMPLETED" and job.exit_code != 0) or job.state == "CANCELLED":
        task.state, task.ended_at, task.exit_code = SlurmTask.State.FAILED, job.end_time or timezone.now(), job.exit_code
        task.reason = (job.reason or job.state)[:200]
    elif job.state in RUNNING_STATES:
        task.state = SlurmTask.State.RUNNING
    return before != (task.state, task.slurm_state, task.reason, task.started_at, task.ended_at)


def _foreign_cpus(jobs: Sequence[SlurmJob], ours: set[int]) -> dict[str, int]:
    """Cores each partition's running jobs hold that did not come from the market (someone's sbatch)."""
    held: dict[str, int] = defaultdict(int)
    for j in jobs:
        if j.state in RUNNING_STATES and j.job_id not in ours and (j.array_job_id or 0) not in ours:
            held[j.partition] += j.cpus
    return dict(held)


def _capacity_follow(market_id: int, usable: dict[str, int]) -> None:
    """A partition whose usable cores (nodes neither drained nor down, capped by ``MaxCPUsPerNode``)
    differ from its resource type's capacity changes the capacity, audited: quotes see it."""
    from marketplace.market.services.config import resource_capacity_set

    for rt in ResourceType.objects.filter(market_id=market_id):
        cores = usable.get(rt.name)
        if cores is not None and cores >= 1 and cores != rt.capacity:
            log.warning("slurm: partition %s has %s usable cores, the market had %s", rt.name, cores, rt.capacity)
            resource_capacity_set(resource_type=rt, capacity=int(cores))
