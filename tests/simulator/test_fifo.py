"""FIFO across queues and inside them makes the market engine a plain FIFO cluster.

A reference simulator written here (global FIFO over the jobs in arrival
order; MapReduce staging: a job's tasks of type j start once all its tasks of
the types before j are done; at one instant completions first, then arrivals,
then free slots are handed out) gives every job the engine's completion time.
Integer submit times and durations make ties at one instant frequent.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import numpy as np
import pytest

from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.fifo import FifoAllocator
from simulator.integrals import ShareIntegrals
from simulator.runner import MarketParams, run
from simulator.workloads.traces import TraceJob

TREE = QueueTree.from_paths({"root.g1.alice": 1, "root.g1.bob": 1, "root.g2.carol": 2})
LEAF = {"alice": 0, "bob": 1, "carol": 2}
FIFO = MarketParams(mechanism="equal", fairshare="fifo", dispatch="fifo", seed=0)


def fifo_reference(jobs: Sequence[TraceJob], capacity: Sequence[int]) -> dict[int, float]:
    """job id -> finish time under global FIFO (module docstring)."""
    order = sorted(jobs, key=lambda j: (j.submit_time, j.job_id))
    m, free = len(capacity), list(capacity)
    stage: dict[int, int] = {}  # rank -> current type
    pending: dict[int, int] = {}  # rank -> tasks of that type not started
    left: dict[int, int] = {}  # rank -> tasks of that type not finished
    active: list[int] = []  # ranks, oldest first
    running: list[tuple[float, int, int, int, int]] = []  # (end, seq, rank, type, units)
    finish: dict[int, float] = {}
    nxt, seq, t = 0, 0, 0.0

    def enter(rank: int, first: int) -> bool:
        """Move the job to its next type with tasks; False (and finished) if none."""
        job, j = order[rank], first
        while j < m and job.tasks[j] == 0:
            j += 1
        if j == m:
            finish[job.job_id] = t
            return False
        stage[rank], pending[rank], left[rank] = j, job.tasks[j], job.tasks[j]
        return True

    while nxt < len(order) or running:
        t = min(running[0][0] if running else math.inf, order[nxt].submit_time if nxt < len(order) else math.inf)
        while running and running[0][0] == t:
            _, _, rank, j, units = heapq.heappop(running)
            free[j] += units
            left[rank] -= units
            if left[rank] == 0 and not enter(rank, j + 1):
                active.remove(rank)
        while nxt < len(order) and order[nxt].submit_time <= t:
            if enter(nxt, 0):
                active.append(nxt)
            nxt += 1
        for rank in active:
            j = stage[rank]
            take = min(free[j], pending[rank])
            if take:
                free[j] -= take
                pending[rank] -= take
                heapq.heappush(running, (t + order[rank].task_duration[j], seq, rank, j, take))
                seq += 1
    return finish


def random_jobs(seed: int, n: int = 40) -> list[TraceJob]:
    rng = np.random.default_rng(seed)
    jobs = []
    for k in range(n):
        user = ["alice", "bob", "carol"][int(rng.integers(3))]
        tasks = (int(rng.integers(0, 12)), int(rng.integers(0, 5)))
        durations = (float(rng.integers(1, 6)), float(rng.integers(1, 9)))
        jobs.append(TraceJob(k, float(rng.integers(0, 60)), user, "g", tasks, durations))
    return jobs


@pytest.mark.parametrize("seed", range(12))
def test_engine_as_fifo_cluster_matches_the_reference(seed: int) -> None:
    jobs = random_jobs(seed)
    result = run(jobs, tree=TREE, leaf_of_user=LEAF, capacity=[6, 3], params=FIFO)
    got = {f.job_id: f.finish_time for f in result.finished}
    assert got == fifo_reference(jobs, [6, 3])


def test_the_oldest_job_of_any_queue_goes_first() -> None:
    # carol's job arrives first and takes every map slot; alice's and bob's wait for it
    jobs = [
        TraceJob(1, 0.0, "carol", "g", (4, 0), (10.0, 0.0)),
        TraceJob(2, 1.0, "bob", "g", (2, 0), (5.0, 0.0)),
        TraceJob(3, 2.0, "alice", "g", (2, 0), (5.0, 0.0)),
    ]
    result = run(jobs, tree=TREE, leaf_of_user=LEAF, capacity=[4, 1], params=FIFO)
    assert {f.job_id: f.finish_time for f in result.finished} == {1: 10.0, 2: 15.0, 3: 15.0}


@pytest.mark.parametrize("seed", range(5))
def test_pick_oldest_agrees_with_pick_leaf(seed: int) -> None:
    rng = np.random.default_rng(seed)
    allocator = FifoAllocator(TREE)
    for _ in range(50):
        head = [math.inf if rng.random() < 0.4 else float(rng.integers(0, 5)) for _ in range(3)]
        demanding = np.array([not math.isinf(h) for h in head])
        assert allocator.pick_oldest(head) == allocator.pick_leaf(demanding, 0.0, np.array(head))


def test_share_integrals_match_per_job_sums() -> None:
    rng = np.random.default_rng(3)
    table, want, rows = ShareIntegrals(2), {}, {}
    shares: dict[int, np.ndarray] = {}
    now = 0.0
    for step in range(60):
        now += float(rng.uniform(0.1, 5.0))
        if step % 3 == 0:  # a job arrives
            rows[step], want[step] = table.add(now), np.zeros(2)
        if step % 7 == 6 and len(rows) > 1:  # the oldest departs; its row is reused
            job = min(rows)
            table.remove(rows.pop(job))
            want.pop(job)
            shares.pop(job, None)
        for job in shares:  # close the integrals, as a clearing does
            want[job] = want[job] + shares[job] * (now - table.mark(rows[job]))
        table.close(now)
        shares = {job: rng.uniform(0, 1, 2) for job in rows if rng.random() < 0.8}
        table.assign([rows[job] for job in shares], np.array([shares[job] for job in shares]).reshape(-1, 2))
        for job in rows:
            np.testing.assert_array_equal(table.area(rows[job]), want[job])
            share = table.share(rows[job])
            assert (share is None) == (job not in shares)
            if share is not None:
                np.testing.assert_array_equal(share, shares[job])
