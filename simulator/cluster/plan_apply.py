"""Applying a clearing's Plan to the cluster model (README, "The engine").

The shares go to the within-leaf dispatcher (paper 000, Sec. 3); jobs named
by a reservation leave the shared stage and run only through their
reservations (paper 001, Alg. 1: promised capacity). Functions of the
cluster's own state, kept apart from its event loop.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from scheduler.plan import Plan
from simulator.cluster.core import ClusterCore
from simulator.cluster.placement import ShareRows
from simulator.engine import WAKE


def set_shares(cluster: ClusterCore, shares: Mapping[int, NDArray[np.float64]]) -> None:
    """Replace the within-leaf shares by the latest clearing's.

    Args:
        shares: job_id -> (m,) share of each resource type inside the
            job's leaf (``Outcome.shares`` rows). Jobs without an entry
            get share 0 but stay eligible (the dispatcher falls back to
            uniform when every eligible job has share 0); ids of jobs
            the cluster no longer knows are ignored (a clearing may race
            a departure).

    Raises:
        ValueError: a share vector of the wrong shape, negative, NaN or
            infinite.
    """
    new: dict[int, NDArray[np.float64]] = {}
    for job_id, row in shares.items():
        vec = np.asarray(row, dtype=np.float64)
        if vec.shape != (cluster.m,) or not (np.all(vec >= 0) and np.all(np.isfinite(vec))):
            raise ValueError(f"job {job_id}: shares must be (m,), finite and >= 0")
        if int(job_id) in cluster._jobs:
            new[int(job_id)] = vec.copy()
    cluster.placement.set_shares(new)

def set_plan(cluster: ClusterCore, plan: Plan) -> None:
    """Apply a clearing's Plan: its shares and its reservations (README, "How the market runs").

    Jobs named by a reservation leave the shared stage: they run only
    through their reservations. Reservations of unknown jobs are kept
    (the job may arrive later); shares as in :meth:`set_shares`.

    Raises:
        ValueError: bad shares, or a reservation on a resource type the
            cluster does not have.
    """
    for r in plan.reservations:
        if r.resource >= cluster.m:
            raise ValueError(f"reservation of job {r.job_id} names resource {r.resource} of {cluster.m}")
    if _valid_shares(plan.shares, plan.n, cluster.m):
        _set_share_matrix(cluster, plan.job_ids.tolist(), plan.shares)
    else:
        set_shares(cluster, plan.share_rows())  # raises, naming the first bad row
    had_reservations = bool(cluster._reservations)  # only jobs they name can be marked reserved
    cluster._reservations = tuple(sorted(plan.reservations, key=lambda r: (r.start, r.job_id, r.resource)))
    if had_reservations or cluster._reservations:
        mark_reserved(cluster, plan.reserved_jobs())
        _wake_at_windows(cluster)


def _wake_at_windows(cluster: ClusterCore) -> None:
    """One WAKE event at every future start and end of a reservation window, so
    reserved units are handed out when a window opens (not at the next completion)
    and given back to the shared stage when it closes."""
    cluster._events.remove_if(lambda p: p[0] == WAKE)
    now = cluster.now
    for t in sorted({x for r in cluster._reservations for x in (r.start, r.end) if x > now}):
        cluster._events.push(t, WAKE, [WAKE])

def _set_share_matrix(cluster: ClusterCore, job_ids: list[int], shares: NDArray[np.float64]) -> None:
    """:meth:`set_shares` for a validated (n, m) matrix: one copy, rows as views."""
    matrix = np.array(shares, dtype=np.float64)
    jobs = cluster._jobs
    if len(set(job_ids)) != len(job_ids):  # a repeated id: the last row wins, as a mapping would have it
        cluster.placement.set_shares({job: matrix[k] for k, job in enumerate(job_ids) if job in jobs})
    elif all(job in jobs for job in job_ids):
        cluster.placement.set_shares(ShareRows(job_ids, matrix))
    else:  # a clearing raced a departure: its row is left out
        keep = [k for k, job in enumerate(job_ids) if job in jobs]
        cluster.placement.set_shares(ShareRows([job_ids[k] for k in keep], matrix[keep].reshape(-1, cluster.m)))

def mark_reserved(cluster: ClusterCore, reserved: frozenset[int]) -> None:
    """Jobs in ``reserved`` run only through their reservations; the others through the shared stage."""
    changed = False
    for job in cluster._jobs.values():
        flag = job.job_id in reserved
        if flag != job.reserved:
            job.reserved, changed = flag, True
    if changed:
        cluster._reserved_eligible[:] = 0
        for job in cluster._jobs.values():
            if job.active and job.reserved:
                for j in range(cluster.m):
                    cluster._reserved_eligible[job.leaf, j] += job.eligible_pending(j, cluster.staged)
        cluster._recount_shared()
        for leaf in range(len(cluster.placement.leaves)):
            cluster.placement.invalidate(leaf)


def _valid_shares(shares: NDArray[np.float64], n: int, m: int) -> bool:
    """True for an (n, m) matrix of finite shares >= 0 (the per-row checks of
    ``Cluster.set_shares``, at once). False may also mean a sum that overflows;
    the caller then checks row by row."""
    if not isinstance(shares, np.ndarray) or shares.shape != (n, m):
        return False
    if n == 0:
        return True
    if shares.size <= _PLAIN_ENTRIES and all(0.0 <= v <= _PLAIN_BOUND for v in shares.ravel().tolist()):
        return True  # numpy's answer too: the minimum is >= 0 and the sum cannot overflow
    return bool(shares.min() >= 0) and math.isfinite(float(shares.sum()))


_PLAIN_ENTRIES = 64  # _valid_shares reads a matrix of up to this many entries as floats (numpy calls cost more)
_PLAIN_BOUND = 1e300  # ... each at most this: _PLAIN_ENTRIES of them sum to a finite float
