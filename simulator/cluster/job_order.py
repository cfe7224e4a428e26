"""The shared stage under a job-level policy (Tiresias, Themis): jobs of every queue ranked together.

A job-level fair-share policy (``job_level``; ``scheduler.published``) ranks
the active jobs themselves rather than the leaf queues, as FIFO across queues
ranks them by arrival. :func:`hand_out_by_job` gives it a
:class:`~scheduler.published.jobs.JobView` of every active job and the free
units of one type, and starts its ``(position, units)`` grants in order: the
policy's choice of the job replaces the leaf's within-queue dispatch. The
grants must be work conserving (every free unit a job can use is granted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scheduler.fairshare.protocol import JobLevelAllocator
from scheduler.published.jobs import JobView

if TYPE_CHECKING:
    from simulator.cluster.jobs import JobState
    from simulator.cluster.view import ClusterView


def job_view(cluster: ClusterView, jobs: list[JobState], j: int) -> JobView:
    """The active ``jobs`` (arrival order) as a :class:`JobView` for resource type j."""
    staged = cluster.staged
    return JobView(
        resource=j, staged=staged, capacity=cluster.capacity.astype(np.float64),
        job_ids=np.array([s.job_id for s in jobs], dtype=np.int64),
        leaf=np.array([s.leaf for s in jobs], dtype=np.int64),
        arrival=np.array([s.seq for s in jobs], dtype=np.int64),
        submit=np.array([s.spec.submit_time for s in jobs], dtype=np.float64),
        eligible=np.array([s.shared_pending(j, staged) for s in jobs], dtype=np.int64),
        tasks=np.array([s.spec.tasks for s in jobs], dtype=np.int64).reshape(len(jobs), cluster.m),
        durations=np.array([s.spec.task_duration for s in jobs], dtype=np.float64).reshape(len(jobs), cluster.m),
        pending=np.array([s.pending for s in jobs], dtype=np.int64).reshape(len(jobs), cluster.m),
        running=np.array([s.running for s in jobs], dtype=np.int64).reshape(len(jobs), cluster.m),
    )  # fmt: skip


def hand_out_by_job(cluster: ClusterView, allocator: JobLevelAllocator, j: int, free: int) -> int:
    """Start the policy's grants of type j at ``cluster.now``; return the units left.

    Raises:
        RuntimeError: a grant beyond a job's eligible tasks or the free units, or
            a work-conserving policy leaving units idle that some job could use.
    """
    jobs = cluster.active_states()
    if free <= 0 or not jobs:
        return free
    view = job_view(cluster, jobs, j)
    grants = allocator.pick_jobs(view, free, cluster.now)
    left = free
    taken: dict[int, int] = {}
    for pos, units in grants:
        taken[pos] = taken.get(pos, 0) + int(units)
        if not (0 <= pos < view.n and 0 < units <= left and taken[pos] <= view.eligible[pos]):
            raise RuntimeError(f"{allocator.policy} granted {units} units to job position {pos} with {left} free")
        job = jobs[pos]
        cluster.start_tasks(job, j, int(units), shared=True)
        cluster.placement.dispatcher.record(job.job_id, j, int(units))
        left -= int(units)
    usable = int(view.eligible.sum())
    if allocator.work_conserving and left > 0 and free - left < usable:
        raise RuntimeError(f"{allocator.policy} left {left} units of type {j} idle with {usable} tasks waiting")
    return left
