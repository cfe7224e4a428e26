"""Look-ahead for reservations: starting a task now must not take a unit a
reservation will need when its window opens (paper 001, Sec. 2.1: an accepted
reservation's units are guaranteed inside its window).

The reservation stage withholds a reservation's units only while its window
is open. A task started on a free unit just before a window opens would still
hold that unit inside the window, so the shared stage asks :func:`headroom`
how many units it may start now for tasks of known duration, and the
early-start stage (Rayon's extension, paper 001 Sec. 4) does the same for
reserved jobs that run ahead of their window.

Used only when the cluster knows task durations (``Cluster.known_durations``);
without durations nothing can be promised about when a task ends, and the
gap stays (a task may overrun into a window).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scheduler.plan import Reservation
    from simulator.cluster.view import ClusterView


def headroom(cluster: ClusterView, j: int, until: float, *, job_id: int | None = None) -> int:
    """Units of type j that may start now and run until ``until`` (s) without
    taking a unit from a reservation whose window opens in (now, until).

    For every such opening time s: ``C_j - need(s) - busy(s)``, where need(s)
    is the units of the reservations in force at s (capped by what their job
    still has to run) and busy(s) the running tasks still running at s,
    except reserved tasks of a job whose reservation is in force at s (they
    use its units). With ``job_id`` (early start of a reserved job), opening
    times inside that job's own reservation are skipped: its new tasks there
    run on its own reserved units.

    Returns:
        The smallest such headroom (>= 0), or ``C_j`` when no window opens in
        (now, until).
    """
    now = cluster.now
    reservations = cluster.reservations_of(j)
    starts = sorted({r.start for r in reservations if now < r.start < until})
    capacity = int(cluster.capacity[j])
    if not starts:
        return capacity
    running = cluster.running_batches(j)
    best = capacity
    for s in starts:
        active = [r for r in reservations if r.start <= s < r.end]
        if job_id is not None and any(r.job_id == job_id for r in active):
            continue
        covered = {r.job_id for r in active}
        need = sum(_still_needed(cluster, r) for r in active)
        busy = sum(units for end, units, job, shared in running if end > s and (shared or job not in covered))
        best = min(best, capacity - need - busy)
    return max(best, 0)


def _still_needed(cluster: ClusterView, r: Reservation) -> int:
    """Units reservation ``r`` may still use: its units, capped by its job's unfinished tasks of the type."""
    job = cluster.job(r.job_id)
    if job is None or not job.active:
        return r.units
    return min(r.units, job.pending[r.resource] + job.running[r.resource])


def shared_limit(cluster: ClusterView, j: int, free: int) -> int:
    """How many of ``free`` units of type j the shared stage may hand out now.

    ``free`` when no reservation window of type j opens within the longest
    task duration of type j among active jobs (or durations are unknown),
    else :func:`headroom` up to now + that duration.
    """
    if free <= 0 or not cluster.known_durations:
        return free
    now = cluster.now
    if not any(r.start > now for r in cluster.reservations_of(j)):
        return free
    longest = max((job.spec.task_duration[j] for job in cluster.active_states() if not job.reserved and job.pending[j] > 0), default=0.0)
    if longest <= 0 or math.isinf(longest):
        return free if longest <= 0 else min(free, headroom(cluster, j, math.inf))
    return min(free, headroom(cluster, j, now + longest))


class EarlyStartStage:
    """Reserved jobs inside their request window may run ahead of their reservation
    on units nobody else uses (Rayon's "empty allocation", paper 001 Sec. 4).

    After the shared stage: an active job whose reservation of type j opens
    later may start up to the reservation's units of eligible tasks now, as
    long as they end before any other reservation's window needs the units
    (:func:`headroom`). Tasks that run into the job's own window count against
    its reserved units there, so the job never holds more than it bought.
    Durations must be known (``Cluster.known_durations``); otherwise the
    stage does nothing.
    """

    name = "early_start"

    def hand_out(self, cluster: ClusterView, j: int, free: int) -> int:
        if free <= 0 or not cluster.known_durations:
            return free
        now = cluster.now
        for r in cluster.reservations_of(j):
            if r.start <= now or free <= 0:
                continue
            job = cluster.job(r.job_id)
            if job is None or not job.active or any(x.job_id == r.job_id and x.start <= now < x.end for x in cluster.reservations_on(j)):
                continue
            duration = job.spec.task_duration[j]
            room = min(r.units - job.running[j], job.eligible_pending(j, cluster.staged), free)
            if room <= 0:
                continue
            take = min(room, headroom(cluster, j, now + duration, job_id=r.job_id))
            if take > 0:
                cluster.start_tasks(job, j, take, shared=False)
                free -= take
        return free
