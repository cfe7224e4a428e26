"""What a job-level policy sees: every active job of the cluster at one dispatch.

Job-level policies (Tiresias, Themis; FIFO across queues is the simplest)
rank jobs across all queues rather than leaf queues. The cluster hands them a
:class:`JobView` of its active jobs and the free units of one resource type;
they answer with ``(position, units)`` grants (:data:`Grants`), which the
cluster starts in that order. Plain arrays, built by the caller; the policy
must not keep references to them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Grants = list[tuple[int, int]]


@dataclass(frozen=True)
class JobView:
    """The active jobs at one dispatch of resource type ``resource`` (shapes: k jobs, m types).

    Attributes:
        resource: the type whose free units are being handed out.
        staged: a job runs its types in order (MapReduce: reduces after maps).
        capacity: (m,) units of every type.
        job_ids: (k,) job ids, in arrival order.
        leaf: (k,) leaf-queue position of each job.
        arrival: (k,) arrival rank (0 for the first job the cluster saw).
        submit: (k,) submit time, seconds.
        eligible: (k,) tasks of ``resource`` that may start now (0: none).
        tasks, durations: (k, m) tasks and seconds per task of every type.
        pending, running: (k, m) tasks not started / running now.
    """

    resource: int
    staged: bool
    capacity: NDArray[np.float64]
    job_ids: NDArray[np.int64]
    leaf: NDArray[np.int64]
    arrival: NDArray[np.int64]
    submit: NDArray[np.float64]
    eligible: NDArray[np.int64]
    tasks: NDArray[np.int64]
    durations: NDArray[np.float64]
    pending: NDArray[np.int64]
    running: NDArray[np.int64]

    @property
    def n(self) -> int:
        """Number of active jobs."""
        return int(self.job_ids.shape[0])


def waves_time(tasks: NDArray[np.int64], durations: NDArray[np.float64], units: NDArray[np.float64], staged: bool) -> float:
    """Seconds to run ``tasks`` (m,) of ``durations`` (m,) on ``units`` (m,) units per type, in waves.

    Each type takes ``ceil(tasks / units) * duration`` (units below 1 count as 1);
    staged types run back to back, unstaged ones side by side (the longest counts).
    """
    rows = zip(tasks.tolist(), durations.tolist(), units.tolist(), strict=True)
    per_type = [math.ceil(int(n) / max(1.0, float(u)) - 1e-9) * float(d) for n, d, u in rows if n > 0]
    if not per_type:
        return 0.0
    return float(sum(per_type) if staged else max(per_type))


def greedy_in_order(view: JobView, order: list[int], free: int) -> Grants:
    """Grants in ``order`` (positions): each job takes what it can use of the units left."""
    grants: Grants = []
    for pos in order:
        if free <= 0:
            break
        units = min(int(view.eligible[pos]), free)
        if units > 0:
            grants.append((pos, units))
            free -= units
    return grants
