"""SRPT across jobs: the size-oracle control ranks free units by remaining work."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scheduler.fairshare.fairness import QueueTree
from scheduler.published.jobs import JobView
from scheduler.published.srpt import SrptAllocator, remaining_work
from simulator.cluster.model import Cluster
from simulator.records import JobSpec


def test_remaining_work_counts_pending_and_running_tasks_of_every_type() -> None:
    view = JobView(
        resource=0, staged=True, capacity=np.array([4.0, 2.0]), job_ids=np.array([1, 2]), leaf=np.array([0, 0]),
        arrival=np.array([0, 1]), submit=np.zeros(2), eligible=np.array([3, 1]), tasks=np.array([[4, 1], [1, 0]]),
        durations=np.array([[10.0, 50.0], [30.0, 0.0]]), pending=np.array([[3, 1], [1, 0]]), running=np.array([[1, 0], [0, 0]]),
    )
    # job 1: 4 maps x 10 + 1 reduce x 50 = 90; job 2: 1 x 30 = 30
    assert remaining_work(view).tolist() == [90.0, 30.0]
    assert SrptAllocator(QueueTree.flat(["a"])).pick_jobs(view, 2, 0.0) == [(1, 1), (0, 1)]


def test_on_one_unit_the_smallest_remaining_job_goes_first() -> None:
    # one unit; at t = 0 a long job (3 x 10 s) runs its first task; at t = 1 two jobs of 1 x 4 s and
    # 2 x 1 s arrive. At t = 10 the long job has 20 s left, the others 4 and 2: 2 x 1 s [10, 12),
    # then 4 s [12, 16), then the long job's two tasks [16, 36). FIFO would end them at 30, 34, 36.
    cluster = Cluster([1], QueueTree.flat(["a", "b"]), policy="srpt", dispatch="fifo", staged=False, sample_interval=math.inf)
    cluster.submit(JobSpec(0, 0, (3,), (10.0,), 0.0))
    cluster.submit(JobSpec(1, 1, (1,), (4.0,), 1.0))
    cluster.submit(JobSpec(2, 1, (2,), (1.0,), 1.0))
    finish = {}
    while not math.isinf(t := cluster.next_event_time()):
        finish |= {f.job_id: f.finish_time for f in cluster.advance(t).finished}
    assert finish == {2: 12.0, 1: 16.0, 0: 36.0}


def test_srpt_ranks_jobs_not_leaves() -> None:
    with pytest.raises(TypeError):
        SrptAllocator(QueueTree.flat(["a"])).pick_leaf(np.array([True]), 0.0)
