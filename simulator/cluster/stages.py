"""Dispatch stages: how the cluster applies a Plan to its free units (README, "How the market runs").

When units of resource type j are free at time t, the cluster offers them to
an ordered list of stages; each stage starts what it decides and passes on the
units it leaves (``hand_out``):

1. :class:`ReservationStage` -- the Plan's reservations in force at t get
   their units first (ERA, paper 001 Alg. 1: promised capacity); units a
   reservation holds but cannot use yet (its job's tasks of type j are not
   eligible) stay withheld from the later stages.
2. :class:`SharedStage` -- the rest, unit by unit: the fair-share policy
   across queues picks the leaf queue (MLRF / LTRF / H-LTRF, paper 002
   Algs. 1-2, or FIFO), then the shares inside the queue pick the job (Abacus,
   paper 000 Sec. 3, through ``scheduler.dispatch``). With known task
   durations it first leaves free the units a reservation opening before its
   tasks would end needs (``simulator.cluster.lookahead``).
3. ``EarlyStartStage`` (``simulator.cluster.lookahead``) -- reserved jobs whose
   window has not opened yet may use units left idle (Rayon, paper 001 Sec. 4).

A later mechanism adds a stage (for example Cura's VM pools) instead of
editing ``Cluster``. Stages see the cluster through
:class:`~simulator.cluster.view.ClusterView` and call its ``start_tasks``, which
starts a *batch*: tasks of one job and type started at one instant finish
together, so they are one event however many units they hold.
"""

from __future__ import annotations

from typing import Protocol, cast

import numpy as np

from scheduler.fairshare.allocator import FairShareAllocator
from scheduler.fairshare.fifo import FifoAllocator
from scheduler.fairshare.protocol import JobLevelAllocator
from simulator.cluster.job_order import hand_out_by_job
from simulator.cluster.lookahead import EarlyStartStage, shared_limit
from simulator.cluster.view import ClusterView


class DispatchStage(Protocol):
    """One stage of the cluster's dispatch pipeline."""

    name: str

    def hand_out(self, cluster: ClusterView, j: int, free: int) -> int:
        """Start tasks of type j on up to ``free`` units at ``cluster.now``;
        return the units left for the next stages (0..free)."""
        ...


class ReservationStage:
    """Reservations in force get their units first (paper 001, Sec. 3.1).

    A reservation ``(job, j, W, [start, end))`` lets its job run up to W tasks
    of type j at once inside the window. While the job still has unfinished
    tasks of type j, the W units are withheld from the shared stage, used or
    not (they were sold); outside its windows a reserved job gets no unit.
    """

    name = "reservations"

    def hand_out(self, cluster: ClusterView, j: int, free: int) -> int:
        withheld = 0
        for r in cluster.reservations_on(j):
            job = cluster.job(r.job_id)
            if job is None or not job.active:
                continue
            unfinished = job.pending[j] + job.running[j]
            if unfinished == 0:
                continue
            room = max(r.units - job.running[j], 0)
            take = min(room, free, job.eligible_pending(j, cluster.staged))
            if take > 0:
                cluster.start_tasks(job, j, take, shared=False)
                free -= take
            withheld += max(min(room - take, job.pending[j]), 0)
        return max(free - withheld, 0)


class SharedStage:
    """Fair share across queues, then shares inside the queue (papers 002 and 000).

    Unit by unit: the leaf queue comes from the resource type's fair-share
    allocator (``scheduler.registry.FAIRSHARE``), the job from the within-leaf
    dispatcher (``scheduler.registry.DISPATCH``). When only one leaf demands,
    every policy picks it, so its units are handed out without asking; a
    lone eligible job of a leaf, or the FIFO dispatcher's oldest job, takes
    as many units as it can use in one batch. FIFO across queues keeps no
    per-unit state (no usage, no starvation clocks), so it takes a short
    path: the leaf heads' arrival ranks alone pick the leaf. A job-level policy
    (``job_level``: Tiresias, Themis) ranks the active jobs of every queue itself
    and its grants start directly (``simulator.cluster.job_order``). Under static
    partitioning or maximum shares (paper 002, Sec. 6.2.3) the allocator may
    refuse every demanding leaf; the units then stay idle.
    """

    name = "shared"

    def hand_out(self, cluster: ClusterView, j: int, free: int) -> int:
        # look-ahead: units a reservation will need before a task started now would end stay free
        held = free - shared_limit(cluster, j, free)
        return self._hand_out(cluster, j, free - held) + held

    def _hand_out(self, cluster: ClusterView, j: int, free: int) -> int:
        allocator = cluster.allocator(j)
        if isinstance(allocator, FifoAllocator):
            return _oldest_first(cluster, allocator, j, free)
        if allocator.job_level:  # Tiresias, Themis: jobs across all queues (simulator.cluster.job_order)
            return hand_out_by_job(cluster, cast(JobLevelAllocator, allocator), j, free)
        if isinstance(allocator, FairShareAllocator) and allocator.work_conserving:
            return hand_out_fair_share(cluster, allocator, j, free)
        demanding = cluster.shared_demanding(j)
        now = cluster.now
        allocator.update_demand(demanding, now)
        limited = not allocator.work_conserving  # static quotas, max shares: a leaf may be refused
        started = False
        while free > 0:
            n_demanding = int(np.count_nonzero(demanding))
            if n_demanding == 0:
                break
            if n_demanding == 1 and not limited:
                leaf = int(demanding.argmax())
            else:
                head = cluster.leaf_heads(j) if allocator.uses_arrival_order else None
                leaf = int(allocator.pick_leaf(demanding, now, head))
                if leaf < 0 and limited:
                    break  # every demanding leaf is at its limit: the units stay idle
            if not (0 <= leaf < demanding.size and demanding[leaf]):
                raise RuntimeError(f"allocator picked leaf {leaf} without demand")
            sticky = n_demanding == 1 or allocator.uses_arrival_order
            want = free if sticky else 1
            job_id, units = cluster.placement.grant(leaf, j, min(want, allocator.room(leaf)) if limited else want)
            job = cluster.job(job_id)
            if job is None:
                raise RuntimeError(f"leaf {leaf} holds unknown job {job_id}")
            cluster.start_tasks(job, j, units, shared=True)
            free -= units
            started = True
            demanding = cluster.shared_demanding(j)
        if started:  # a leaf may have run out of eligible tasks
            allocator.update_demand(demanding, now)
        return free


def hand_out_fair_share(cluster: ClusterView, allocator: FairShareAllocator, j: int, free: int) -> int:
    """:meth:`SharedStage.hand_out` under the policies of paper 002 without limits (MLRF, LTRF,
    H-LTRF): the same choices on the leaves' demand as plain bools (``pick_leaf_flags``); returns
    the units left. Without reservations the look-ahead holds nothing back, so the cluster's
    dispatch calls it directly."""
    demanding = cluster.shared_flags(j)
    now = cluster.now
    allocator.update_demand_flags(demanding, now)
    started = False
    while free > 0:
        n_demanding = demanding.count(True)
        if n_demanding == 0:
            break
        leaf = demanding.index(True) if n_demanding == 1 else allocator.pick_leaf_flags(demanding, now)
        if not (0 <= leaf < len(demanding) and demanding[leaf]):
            raise RuntimeError(f"allocator picked leaf {leaf} without demand")
        job_id, units = cluster.placement.grant(leaf, j, free if n_demanding == 1 else 1)
        job = cluster.job(job_id)
        if job is None:
            raise RuntimeError(f"leaf {leaf} holds unknown job {job_id}")
        cluster.start_tasks(job, j, units, shared=True)
        free -= units
        started = True
        demanding = cluster.shared_flags(j)
    if started:  # a leaf may have run out of eligible tasks
        allocator.update_demand_flags(demanding, now)
    return free


def _oldest_first(cluster: ClusterView, allocator: FifoAllocator, j: int, free: int) -> int:
    """:meth:`SharedStage.hand_out` under FIFO across queues (YARN's ``fifo``, the
    papers' baseline): the leaf whose oldest eligible job arrived first takes
    what its dispatcher grants at once (all the units that job can use under
    FIFO dispatch), until no unit or no demand is left. A leaf demands iff it
    has a shared-eligible job, so the heads alone give the demand."""
    while free > 0:
        leaf = allocator.pick_oldest(cluster.head_ranks(j))
        if leaf < 0:
            break
        job_id, units = cluster.placement.grant(leaf, j, free)
        job = cluster.job(job_id)
        if job is None:
            raise RuntimeError(f"leaf {leaf} holds unknown job {job_id}")
        cluster.start_tasks(job, j, units, shared=True)
        free -= units
    return free


def default_stages() -> list[DispatchStage]:
    """The market's pipeline: reservations first, then the shared capacity, then
    reserved jobs running ahead of their windows on units left idle."""
    return [ReservationStage(), SharedStage(), EarlyStartStage()]
