"""Themis (Mahajan et al., NSDI'20): finish-time fairness rho on a two-job example, and the auction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scheduler.fairshare.fairness import QueueTree
from scheduler.published.jobs import JobView
from scheduler.published.themis import ThemisAllocator, finish_time_fairness, ideal_time
from simulator.cluster.model import Cluster
from simulator.records import JobSpec

# two jobs on 4 units, both at t = 0: A has 8 tasks of 10 s, B 2 tasks of 10 s; N = 2
A, B = (np.array([8]), np.array([10.0])), (np.array([2]), np.array([10.0]))
CAP = np.array([4.0])


def test_rho_two_job_example_by_hand() -> None:
    # T_ideal on a 1/2 share (2 units): A ceil(8/2) x 10 = 40 s, B ceil(2/2) x 10 = 10 s
    assert ideal_time(*A, CAP, 2.0, staged=False) == 40.0
    assert ideal_time(*B, CAP, 2.0, staged=False) == 10.0
    # FIFO: A takes all 4 units for 2 waves (done at 20), B then runs (done at 30)
    assert finish_time_fairness(20.0, 40.0) == 0.5
    assert finish_time_fairness(30.0, 10.0) == 3.0  # B: sharing tripled its time
    # shared 2 / 2: B done at 10 (rho 1); A gets 4 units from t = 10: 2 + 4 + 2 tasks, done at 30
    assert finish_time_fairness(10.0, 10.0) == 1.0
    assert finish_time_fairness(30.0, 40.0) == 0.75
    assert finish_time_fairness(0.0, 0.0) == 1.0 and math.isinf(finish_time_fairness(1.0, 0.0))


def _view() -> JobView:
    return JobView(
        resource=0, staged=False, capacity=CAP, job_ids=np.array([1, 2]), leaf=np.array([0, 1]), arrival=np.array([0, 1]),
        submit=np.zeros(2), eligible=np.array([8, 2]), tasks=np.array([[8], [2]]), durations=np.array([[10.0], [10.0]]),
        pending=np.array([[8], [2]]), running=np.zeros((2, 1), dtype=np.int64),
    )


def test_auction_with_every_job_bidding_splits_two_and_two() -> None:
    # f = 0: both bid. Proportional fairness over 4 units: one each (rho 2 each), then one more
    # each (rho 1 each). Partial allocation: without A, B still gets 2 (c_A = 1); without B, A gets 4
    # (rho 1/2): c_B = (1 / 1) / (1 / 0.5) = 1/2 of 2 units = 1; the leftover unit goes to the
    # worse-off bidder, B (rho 2 with one unit against A's 1)
    alloc = ThemisAllocator(QueueTree.flat(["a", "b"]), fairness_knob=0.0)
    grants = dict(alloc.pick_jobs(_view(), 4, 0.0))
    assert grants == {0: 2, 1: 2}


def test_with_the_default_knob_only_the_worst_job_bids_and_the_rest_is_leftover() -> None:
    # f = 0.8: ceil(0.2 x 2) = 1 bidder. Both have rho = inf with no unit; with one unit both 2:
    # the earlier arrival, A, bids and wins all 4 units (c = 1 alone); B gets no leftover
    alloc = ThemisAllocator(QueueTree.flat(["a", "b"]))
    assert dict(alloc.pick_jobs(_view(), 4, 0.0)) == {0: 4}


def test_in_the_cluster_themis_bounds_rho_where_fifo_does_not() -> None:
    finish = {}
    for policy in ("fifo", "themis"):
        cluster = Cluster([4], QueueTree.flat(["a", "b"]), policy=policy, dispatch="fifo", staged=False, sample_interval=math.inf)
        if policy == "themis":
            cluster.allocator(0).fairness_knob = 0.0
        cluster.submit(JobSpec(1, 0, (8,), (10.0,), 0.0))
        cluster.submit(JobSpec(2, 1, (2,), (10.0,), 0.0))
        done = {f.job_id: f.finish_time for f in cluster.advance(0.0).finished}
        while not math.isinf(t := cluster.next_event_time()):
            done |= {f.job_id: f.finish_time for f in cluster.advance(t).finished}
        finish[policy] = done
    assert finish["fifo"] == {1: 20.0, 2: 30.0}  # rho 0.5 and 3
    assert finish["themis"] == {1: 30.0, 2: 10.0}  # rho 0.75 and 1
    worst = {p: max(f[1] / 40.0, f[2] / 10.0) for p, f in finish.items()}
    assert worst == {"fifo": 3.0, "themis": 1.0}


def test_bad_knob_is_refused_and_state_round_trips() -> None:
    with pytest.raises(ValueError):
        ThemisAllocator(QueueTree.flat(["a"]), fairness_knob=1.0)
    alloc = ThemisAllocator(QueueTree.flat(["a", "b"]))
    alloc.pick_jobs(_view(), 4, 0.0)
    again = ThemisAllocator.from_state(QueueTree.flat(["a", "b"]), alloc.to_state())
    assert again.contention(1, 5.0) == alloc.contention(1, 5.0) == 2.0


def test_sizes_from_attained_service() -> None:
    tree = QueueTree.flat(["a", "b"])
    alloc = ThemisAllocator(tree, sizes="attained")
    assert alloc.task_estimate(1, 0.0) == 1.0  # nothing finished anywhere: the 1 s prior
    alloc.record_start(0, 0, 0.0, units=2, app=1)
    assert alloc.task_estimate(1, 7.0) == 7.0  # its running tasks are 7 s old: at least that
    alloc.record_finish(0, 12.0)
    assert alloc.task_estimate(1, 20.0) == 12.0  # the mean of its finished tasks
    assert alloc.task_estimate(2, 20.0) == 12.0  # a job with none: the cluster's mean
    alloc.record_start(1, 1, 20.0, units=1, app=2)
    alloc.record_finish(1, 24.0)
    assert alloc.task_estimate(2, 30.0) == 4.0 and alloc.task_estimate(3, 30.0) == pytest.approx((24.0 + 4.0) / 3)
    # the estimates replace the view's durations (here exact 10 s) before the auction
    seen = alloc._estimated(_view(), 30.0)
    assert seen.durations.tolist() == [[12.0], [4.0]] and seen.tasks.tolist() == _view().tasks.tolist()
    again = ThemisAllocator.from_state(tree, alloc.to_state())
    assert again.sizes == "attained" and again.task_estimate(2, 30.0) == 4.0
    with pytest.raises(ValueError, match="sizes"):
        ThemisAllocator(tree, sizes="guess")
