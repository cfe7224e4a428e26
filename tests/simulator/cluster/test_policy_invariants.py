"""The lab's generic invariants, for every fair-share policy in the registry (old and published ones).

On random workloads (two staged resource types, random trees of leaf queues),
after every event time of the cluster:

* no over-allocation: no type runs more tasks than it has units, no job more
  tasks than it has, and a job runs only tasks of its current stage;
* work conserved: a work-conserving policy (every policy but static
  partitioning) leaves no unit idle while a queued task of its type could start;
* every job finishes, and a saved cluster continues exactly as the original.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.fairshare.fairness import QueueTree
from scheduler.registry import FAIRSHARE
from simulator.cluster.model import Cluster
from simulator.records import JobSpec

TREES = {
    "flat": QueueTree.flat(["a", "b", "c"], [1.0, 2.0, 1.0]),
    "two-level": QueueTree.from_paths({"root.g1.a": 1.0, "root.g1.b": 1.0, "root.g2.c": 2.0, "root.g2.d": 1.0}),
}

job = st.tuples(
    st.integers(0, 3),  # leaf (mod the tree's leaves)
    st.tuples(st.integers(0, 6), st.integers(0, 3)),  # maps, reduces
    st.tuples(st.sampled_from([1.0, 2.5, 7.0]), st.sampled_from([1.0, 4.0])),  # durations
    st.sampled_from([0.0, 0.5, 3.0, 10.0, 11.0]),  # submit time
)


def _check(cluster: Cluster, specs: dict[int, JobSpec], conserving: bool) -> None:
    busy = [0] * cluster.m
    waiting = [0] * cluster.m
    for jid in cluster.active_jobs():
        pending, running, done = cluster.job_state(jid)
        tasks = specs[jid].tasks
        stage = next((j for j in range(cluster.m) if done[j] < tasks[j]), cluster.m)
        for j in range(cluster.m):
            assert running[j] >= 0 and pending[j] + running[j] + done[j] == tasks[j]
            assert running[j] == 0 or j == stage, "a task ran before its stage"
            busy[j] += running[j]
            waiting[j] += pending[j] if j == stage else 0
    for j in range(cluster.m):
        assert busy[j] <= cluster.capacity[j], f"type {j} over-allocated"
        if conserving and busy[j] < cluster.capacity[j]:
            assert waiting[j] == 0, f"type {j}: {cluster.capacity[j] - busy[j]} units idle, {waiting[j]} tasks waiting"


@pytest.mark.parametrize("policy", FAIRSHARE.names())
@settings(max_examples=25, deadline=None)
@given(jobs=st.lists(job, min_size=1, max_size=12), cap=st.tuples(st.integers(1, 5), st.integers(1, 3)),
       tree=st.sampled_from(sorted(TREES)))
def test_no_over_allocation_and_work_conserved(policy: str, jobs: list[tuple[int, tuple[int, int], tuple[float, float], float]],
                                               cap: tuple[int, int], tree: str) -> None:
    queue_tree = TREES[tree]
    specs = {k: JobSpec(k, leaf % len(queue_tree.leaves), tasks, dur, t) for k, (leaf, tasks, dur, t) in enumerate(jobs)}
    plain = _run(policy, queue_tree, list(cap), specs, restore_at=None)
    assert _run(policy, queue_tree, list(cap), specs, restore_at=3) == plain, "a restored cluster continues as the original"


def _run(policy: str, tree: QueueTree, cap: list[int], specs: dict[int, JobSpec], restore_at: int | None) -> dict[int, float]:
    """Finish time per job, checking the invariants after every event time."""
    cluster = Cluster(cap, tree, policy=policy, t_wait=2.0, dispatch="fifo", sample_interval=math.inf)
    for spec in specs.values():
        cluster.submit(spec)
    conserving = bool(cluster.allocator(0).work_conserving)
    finished = {f.job_id: f.finish_time for f in cluster.advance(0.0).finished}
    _check(cluster, specs, conserving)
    steps = 0
    while not math.isinf(t := cluster.next_event_time()):
        if steps == restore_at:
            cluster = Cluster.from_state(tree, json.loads(json.dumps(cluster.to_state(), allow_nan=False)))
        finished |= {f.job_id: f.finish_time for f in cluster.advance(t).finished}
        _check(cluster, specs, conserving)
        steps += 1
    if conserving:
        assert set(finished) == set(specs), "every job finishes"
    return finished


@pytest.mark.parametrize("policy", FAIRSHARE.names())
def test_the_why_waiting_views_read_every_policy(policy: str) -> None:
    # the live market's fair-share pages (simulator.cluster.waiting) on a cluster with a waiting job
    from simulator.cluster.waiting import estimate_start, explain_wait, fairshare_rows

    tree = TREES["two-level"]
    cluster = Cluster([2, 1], tree, policy=policy, t_wait=2.0, dispatch="fifo", sample_interval=math.inf)
    for k in range(4):
        cluster.submit(JobSpec(k, k, (3, 1), (5.0, 2.0), 0.0))
    cluster.advance(1.0)
    waiting = next(jid for jid in cluster.active_jobs() if cluster.job_state(jid)[0][0] > 0)
    reason = explain_wait(cluster, waiting, 0)
    assert reason.policy == policy and reason.position >= 1
    assert len(fairshare_rows(cluster, 0)) == len(tree.names)
    start = estimate_start(cluster, waiting)
    assert start is not None and start >= cluster.now
