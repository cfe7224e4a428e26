"""The executor seam: the simulated cluster and an external one (a real cluster such as Slurm) behind
one model (``Cluster(executor=...)``). Fed the model's own task ends, the external executor reproduces
the simulated run exactly; partial ends, failures, kills and a saved state behave as stated."""

from __future__ import annotations

import heapq
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.fairshare.fairness import QueueTree
from simulator.cluster.model import Cluster
from simulator.records import JobSpec

TREE = QueueTree.from_paths({"root.g1.a": 1.0, "root.g1.b": 1.0, "root.g2.c": 2.0})
POLICIES = ["hltrf", "ltrf", "fifo", "drf", "tiresias"]

job = st.tuples(
    st.integers(0, 2),  # leaf
    st.tuples(st.integers(0, 6), st.integers(0, 3)),  # maps, reduces
    st.tuples(st.sampled_from([1.0, 2.5, 7.0]), st.sampled_from([1.0, 4.0])),  # task durations
    st.sampled_from([0.0, 0.5, 3.0, 10.0, 11.0]),  # submit time
)


def _cluster(policy: str, cap: list[int], executor: str) -> Cluster:
    return Cluster(cap, TREE, policy=policy, t_wait=2.0, dispatch="stride", sample_interval=5.0, executor=executor)


def _run(policy: str, cap: list[int], specs: list[JobSpec], executor: str, restore_at: int | None = None) -> tuple[list, list]:
    """Drive the cluster from event time to event time; the external executor's 'real cluster'
    ends each batch exactly when the model would. Returns (departures, fairness samples)."""
    cluster = _cluster(policy, cap, executor)
    for spec in specs:
        cluster.submit(spec)
    ends: list[tuple[float, int, int]] = []  # (end time, key, units) of batches the real cluster runs
    report = cluster.advance(0.0)
    finished, samples = list(report.finished), list(report.samples)
    steps = 0
    while True:
        for launch in cluster.take_launches():
            heapq.heappush(ends, (launch.start + launch.duration_s, launch.key, launch.units))
        t = min(cluster.next_event_time(), ends[0][0] if ends else math.inf)
        if math.isinf(t):
            break
        while ends and ends[0][0] == t:
            _, key, units = heapq.heappop(ends)
            cluster.complete(key, units, t)
        if steps == restore_at:
            cluster = Cluster.from_state(TREE, json.loads(json.dumps(cluster.to_state(), allow_nan=False)))
        report = cluster.advance(t)
        finished += report.finished
        samples += report.samples
        steps += 1
    assert not cluster.external_batches() and not cluster.take_kills()
    return [(f.job_id, f.start_time, f.finish_time) for f in finished], [(s.time, s.usage.tolist(), s.rho.tolist()) for s in samples]


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=20, deadline=None)
@given(jobs=st.lists(job, min_size=1, max_size=10), cap=st.tuples(st.integers(1, 5), st.integers(1, 3)))
def test_fed_the_model_s_own_ends_the_external_executor_reproduces_the_simulated_run(policy, jobs, cap) -> None:
    specs = [JobSpec(k, leaf, tasks, dur, t) for k, (leaf, tasks, dur, t) in enumerate(jobs)]
    simulated = _run(policy, list(cap), specs, "simulated")
    # completion times, start times and the fairness samples (usage and rho) are the same
    assert _run(policy, list(cap), specs, "external") == simulated
    # and a state saved and restored mid-run (outboxes and running batches included) continues the same
    assert _run(policy, list(cap), specs, "external", restore_at=2) == simulated


def _started(cap: list[int], specs: list[JobSpec]) -> Cluster:
    cluster = _cluster("hltrf", cap, "external")
    for spec in specs:
        cluster.submit(spec)
    cluster.advance(0.0)
    return cluster


def test_a_launch_appears_once_with_its_batch_s_final_size() -> None:
    cluster = _started([4, 2], [JobSpec(0, 0, (3, 1), (10.0, 5.0), 0.0)])
    launches = cluster.take_launches()
    assert [(t.job_id, t.j, t.units, t.duration_s, t.shared, t.start) for t in launches] == [(0, 0, 3, 10.0, True, 0.0)]
    assert cluster.take_launches() == [] and cluster.busy() == [3, 0]
    cluster.advance(100.0)  # time alone ends nothing on a real cluster
    assert cluster.busy() == [3, 0] and cluster.job_state(0)[2] == (0, 0)


def test_partial_ends_shrink_the_batch_and_the_job_departs_at_the_last() -> None:
    cluster = _started([4, 2], [JobSpec(0, 0, (3, 0), (10.0, 5.0), 0.0)])
    key = cluster.take_launches()[0].key
    cluster.complete(key, 1, 9.0)
    assert cluster.advance(9.5).finished == [] and cluster.busy() == [2, 0] and cluster.job_state(0)[2] == (1, 0)
    cluster.complete(key, 2, 12.0)
    done = cluster.advance(20.0).finished
    assert [(f.job_id, f.finish_time) for f in done] == [(0, 12.0)] and cluster.busy() == [0, 0]
    with pytest.raises(KeyError):
        cluster.complete(key, 1, 20.0)  # the batch is gone


def test_a_failure_returns_the_tasks_to_pending_and_they_launch_again() -> None:
    cluster = _started([4, 2], [JobSpec(0, 0, (2, 0), (10.0, 5.0), 0.0)])
    key = cluster.take_launches()[0].key
    cluster.fail(key, 1, 3.0)
    report = cluster.advance(3.0)
    assert report.failed_tasks == 1 and cluster.job_state(0)[0] == (0, 0) and cluster.busy() == [2, 0]
    again = cluster.take_launches()
    assert [(t.units, t.start) for t in again] == [(1, 3.0)] and again[0].key != key  # dispatched again at once
    cluster.complete(key, 1, 10.0)
    cluster.complete(again[0].key, 1, 13.0)
    assert [(f.job_id, f.finish_time) for f in cluster.advance(20.0).finished] == [(0, 13.0)]


def test_too_many_units_or_nan_are_refused() -> None:
    cluster = _started([4, 2], [JobSpec(0, 0, (2, 0), (10.0, 5.0), 0.0)])
    key = cluster.take_launches()[0].key
    for units, at in ((3, 5.0), (0, 5.0), (1, math.nan)):
        with pytest.raises(ValueError):
            cluster.complete(key, units, at)


def test_a_cancellation_kills_the_running_batches_and_says_which() -> None:
    cluster = _started([4, 2], [JobSpec(0, 0, (2, 0), (10.0, 5.0), 0.0), JobSpec(1, 1, (2, 0), (10.0, 5.0), 0.0)])
    keys = {t.job_id: t.key for t in cluster.take_launches()}
    cluster.cancel(0)
    assert cluster.take_kills() == [keys[0]] and cluster.busy() == [2, 0]
    cluster.complete(keys[1], 2, 4.0)
    assert [f.job_id for f in cluster.advance(5.0).finished] == [1]


def test_a_reservation_s_look_ahead_counts_external_batches_at_their_expected_end() -> None:
    cluster = _started([2, 1], [JobSpec(0, 0, (2, 0), (10.0, 5.0), 0.0)])
    cluster.take_launches()
    assert sorted(cluster.running_batches(0)) == [(10.0, 2, 0, True)]
    cluster.advance(15.0)  # overdue: expected no earlier than now
    assert sorted(cluster.running_batches(0)) == [(15.0, 2, 0, True)]
