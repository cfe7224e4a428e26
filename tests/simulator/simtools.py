"""Test helpers: step a cluster event by event and check its invariants."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from scheduler.fairshare.fairness import QueueTree
from simulator.cluster.model import Cluster
from simulator.records import AdvanceReport, JobFinished, JobSpec

FOUR_LEAVES = {"root.g1.a": 1.0, "root.g1.b": 1.0, "root.g2.c": 1.0, "root.g2.d": 2.0}


def four_leaf_tree() -> QueueTree:
    """G1 = {a, b}, G2 = {c, d} (d weighs twice c); leaf positions 0..3."""
    return QueueTree.from_paths(FOUR_LEAVES)


def critical_path(spec: JobSpec, staged: bool) -> float:
    """Shortest possible response time of a job on an empty cluster."""
    lengths = [d for t, d in zip(spec.tasks, spec.task_duration, strict=True) if t > 0]
    if not lengths:
        return 0.0
    return sum(lengths) if staged else max(lengths)


@dataclass
class Scenario:
    capacity: list[int]
    jobs: list[JobSpec]
    shares: dict[int, list[float]]
    policy: str
    t_wait: float
    dispatch: str
    staged: bool
    known_durations: bool

    def cluster(self, sample_interval: float = 2.5) -> Cluster:
        cluster = Cluster(
            self.capacity, four_leaf_tree(), policy=self.policy, t_wait=self.t_wait,
            dispatch=self.dispatch, staged=self.staged, seed=11,
            sample_interval=sample_interval, known_durations=self.known_durations,
        )  # fmt: skip
        for job in self.jobs:
            cluster.submit(job)
        cluster.set_shares({k: np.array(v) for k, v in self.shares.items()})
        return cluster


@st.composite
def scenarios(draw: st.DrawFn, max_jobs: int = 8) -> Scenario:
    m = draw(st.integers(1, 3))
    capacity = draw(st.lists(st.integers(1, 4), min_size=m, max_size=m))
    jobs = []
    for i in range(draw(st.integers(1, max_jobs))):
        tasks = tuple(draw(st.lists(st.integers(0, 5), min_size=m, max_size=m)))
        durations = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5, 7.0]), min_size=m, max_size=m))
        submit = draw(st.sampled_from([0.0, 0.0, 1.0, 2.5, 3.0, 10.0]))
        jobs.append(JobSpec(100 + i, draw(st.integers(0, 3)), tasks, tuple(durations), submit))
    share_vec = st.lists(st.sampled_from([0.0, 0.2, 0.5, 1.0]), min_size=m, max_size=m)
    shares = {j.job_id: draw(share_vec) for j in jobs if draw(st.booleans())}
    return Scenario(
        capacity, jobs, shares,
        policy=draw(st.sampled_from(["hltrf", "ltrf", "mlrf"])),
        t_wait=draw(st.sampled_from([0.0, 1.0, math.inf])),
        dispatch=draw(st.sampled_from(["stride", "lottery"])),
        staged=draw(st.booleans()),
        known_durations=draw(st.booleans()),
    )  # fmt: skip


@dataclass
class Tracker:
    """Steps a cluster from event to event, checking invariants after each.

    It rebuilds each task's start time from the reported counts (all starts
    of one step happen at the step's time) to check the usage integral.
    """

    cluster: Cluster
    specs: dict[int, JobSpec]
    staged: bool
    starts: dict[tuple[int, int], list[float]] = field(default_factory=dict)
    state: dict[int, tuple[tuple[int, ...], ...]] = field(default_factory=dict)
    finished: list[JobFinished] = field(default_factory=list)
    started: int = 0
    completed: int = 0
    steps: int = 0

    def run(self, max_steps: int = 100_000) -> None:
        self.observe(self.cluster.advance(self.cluster.now))
        while not math.isinf(t := self.cluster.next_event_time()):
            self.observe(self.cluster.advance(t))
            assert self.steps < max_steps, "the cluster does not make progress"

    def observe(self, report: AdvanceReport) -> None:
        self.steps += 1
        self.finished += report.finished
        self.started += report.started_tasks
        self.completed += report.finished_tasks
        for job_id, counts in report.progress.items():
            self.state[job_id] = counts
            _, running, done = counts
            for j, (r, d) in enumerate(zip(running, done, strict=True)):
                starts = self.starts.setdefault((job_id, j), [])
                starts += [report.now] * (r + d - len(starts))
        self.check()

    def check(self) -> None:
        c = self.cluster
        active = c.active_jobs()
        busy = np.zeros(c.m, dtype=np.int64)
        waiting = np.zeros(c.m, dtype=bool)
        for job_id in active:
            pending, running, done = c.job_state(job_id)
            spec = self.specs[job_id]
            busy += np.array(running)
            for j in range(c.m):
                before_done = all(done[k] == spec.tasks[k] for k in range(j))
                if self.staged and running[j] + done[j] > 0:
                    assert before_done, f"job {job_id} ran type {j} before finishing earlier types"
                if pending[j] and (before_done or not self.staged):
                    waiting[j] = True
        assert np.all(busy <= c.capacity), "capacity exceeded"
        assert not np.any(waiting & (busy < c.capacity)), "a slot idles while a task waits"
        self.check_usage()

    def check_usage(self) -> None:
        """usage == durations of finished tasks + elapsed time of running ones."""
        c = self.cluster
        expected = np.zeros((len(c.tree.leaves), c.m))
        for job_id, (_, running, done) in self.state.items():
            spec = self.specs[job_id]
            for j in range(c.m):
                elapsed = sum(c.now - s for s in self.starts[(job_id, j)][done[j] :])
                assert len(self.starts[(job_id, j)]) == running[j] + done[j]
                expected[spec.leaf, j] += done[j] * spec.task_duration[j] + elapsed
        np.testing.assert_allclose(c.sample().usage, expected, rtol=1e-9, atol=1e-9)
