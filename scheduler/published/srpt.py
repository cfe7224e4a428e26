"""Shortest remaining processing time first (SRPT), across all jobs: the size-oracle control.

The job-level control for the schedulers that read each job's exact size
(Themis' oracle variant, ERA's reservations): at every dispatch the free units
of ONE resource type go to the eligible jobs in increasing order of their
*remaining work*, the unit-seconds still to run over every type,
``sum_k (pending_k + running_k) * duration_k`` (the same task counts and
durations Themis' oracle variant reads; ``scheduler.published.jobs.JobView``),
ties to the earlier arrival. SRPT minimises the mean response time on one
server with preemption (Schrage 1968; Smith 1956 for the non-preemptive
shortest-processing-time rule); here, as for every policy of the cluster, a
running task is never preempted, so a job keeps its running tasks and only
free units are ranked.

:class:`SrptAllocator` -- the policy as a job-level fair-share-stage allocator.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.fairness import QueueTree
from scheduler.published.base import BatchBook
from scheduler.published.jobs import Grants, JobView, greedy_in_order


def remaining_work(view: JobView) -> NDArray[np.float64]:
    """(k,) unit-seconds each active job still has to run, every type: ``(pending + running) . durations``."""
    left = (view.pending + view.running).astype(np.float64)
    out: NDArray[np.float64] = (left * view.durations).sum(axis=1)
    return out


class SrptAllocator(BatchBook):
    """Shortest remaining work first across all jobs for ONE resource type (module docstring).

    Args:
        tree: the queue tree (unused for ranking: SRPT ranks jobs).
    """

    policy = "srpt"
    job_level = True

    def __init__(self, tree: QueueTree, *, t_wait: float = 0.0, history: str = "forever", history_length: float = math.inf) -> None:
        super().__init__(tree, t_wait=t_wait, history=history, history_length=history_length)

    def pick_jobs(self, view: JobView, free: int, now: float) -> Grants:
        """Grants of up to ``free`` units: the eligible jobs by (remaining work, arrival), each taking what it can use."""
        self._advance(now)
        work = remaining_work(view).tolist()
        order = sorted((p for p in range(view.n) if view.eligible[p] > 0), key=lambda p: (work[p], int(view.arrival[p])))
        return greedy_in_order(view, order, free)

    def pick_leaf(self, demanding: NDArray[np.bool_], now: float, head: NDArray[np.float64] | None = None) -> int:
        """Not used: SRPT ranks jobs (``pick_jobs``). Raises TypeError."""
        raise TypeError("SRPT is a job-level policy: the cluster calls pick_jobs")
