"""Tiresias (Gu et al., NSDI'19): discretised 2D-LAS queues and the starvation promotion."""

from __future__ import annotations

import math

import pytest

from scheduler.fairshare.fairness import QueueTree
from scheduler.published.tiresias import TiresiasAllocator, promoted, queue_of
from simulator.cluster.model import Cluster
from simulator.records import JobSpec


@pytest.mark.parametrize(("service", "queue"), [(0.0, 0), (1799.0, 0), (1800.0, 1), (3600.0, 2), (1e9, 3)])
def test_queue_of_counts_the_thresholds_reached(service: float, queue: int) -> None:
    assert queue_of(service, (1800.0, 3600.0, 7200.0)) == queue


def test_promotion_rule() -> None:
    assert not promoted(waited=15.0, executed=10.0, knob=2.0)
    assert promoted(waited=20.0, executed=10.0, knob=2.0)
    assert not promoted(waited=1e9, executed=0.0, knob=2.0)  # a job that never ran is in Q0 anyway


def _starved(knob: float, stream: int) -> dict[int, float]:
    """One unit; job 0 (2 tasks x 10 s) at t = 0; jobs 1..stream (1 task x 5 s) every 5 s from t = 1.
    Queues: Q0 below 10 unit-s of service, Q1 above. Returns finish times."""
    cluster = Cluster([1], QueueTree.flat(["a", "b"]), policy="tiresias", dispatch="fifo", staged=False, sample_interval=math.inf)
    alloc = cluster.allocator(0)
    assert isinstance(alloc, TiresiasAllocator)
    alloc.thresholds, alloc.promote_knob = (10.0,), knob
    cluster.submit(JobSpec(0, 0, (2,), (10.0,), 0.0))
    for k in range(1, stream + 1):
        cluster.submit(JobSpec(k, 1, (1,), (5.0,), 1.0 + 5.0 * (k - 1)))
    finish = {}
    while not math.isinf(t := cluster.next_event_time()):
        finish |= {f.job_id: f.finish_time for f in cluster.advance(t).finished}
    return finish


def test_a_starved_job_is_promoted_after_knob_times_its_execution() -> None:
    # by hand: job 0 runs [0, 10) and reaches 10 unit-s: Q1. The stream's jobs (Q0, 0 service)
    # take the unit from t = 10: [10, 15), [15, 20), [20, 25), [25, 30). At t = 30 job 0 has waited
    # 20 s = 2 x its 10 s of execution: promoted to Q0, where it is the oldest -> runs [30, 40)
    assert _starved(knob=2.0, stream=20)[0] == 40.0
    # without promotion it waits for the whole stream: 10 + 20 x 5 + 10
    assert _starved(knob=math.inf, stream=20)[0] == 120.0


def test_service_is_counted_in_unit_seconds_and_state_round_trips() -> None:
    tree = QueueTree.flat(["a"])
    alloc = TiresiasAllocator(tree, thresholds=(100.0,))
    alloc.record_start(0, 0, 0.0, units=3, app=7)
    assert alloc.service(7, 10.0) == (30.0, 10.0)
    alloc.record_finish(0, 40.0)
    assert alloc.queue(7, 40.0) == 1  # 120 unit-s >= 100
    again = TiresiasAllocator.from_state(tree, alloc.to_state())
    assert again.service(7, 50.0) == alloc.service(7, 50.0) == (120.0, 40.0)
