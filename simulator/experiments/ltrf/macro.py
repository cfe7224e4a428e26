"""Running paper 002's macro-benchmark (``simulator.workloads.ltyarn``) on the fair-share stage.

:func:`simulate` replays the four workloads on one :class:`~simulator.cluster.model.Cluster`
(one resource type, memory containers; inside a leaf queue its applications share the
queue's containers equally, as YARN's Fair Scheduler does by default (``dispatch="stride"``;
``"fifo"``, the oldest application first, was the earlier set-up): timed jobs at their submit times, chained jobs (TPC-H, Spark) each
``gap`` seconds after the previous one of its queue finished, and a job's reduce phase when
its maps are done. No market clearing runs: this isolates the fair-share stage, as the
paper's experiment does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from scheduler.fairshare.fairness import QueueTree
from simulator.cluster.model import Cluster
from simulator.records import FairnessSample, JobSpec
from simulator.workloads.ltyarn import MacroJob


@dataclass
class MacroRun:
    """One replay: per queue the (submit, finish) of each job (s), the fairness samples."""

    jobs: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    samples: list[FairnessSample] = field(default_factory=list)
    first_start: dict[str, float] = field(default_factory=dict)

    def makespan(self, queue: str) -> float:
        """The queue's completion time: its last finish minus its first submit (s)."""
        rows = self.jobs[queue]
        return max(f for _, f in rows) - min(s for s, _ in rows)


def simulate(workload: Mapping[str, Sequence[MacroJob]], tree: QueueTree, leaf: Mapping[str, int], *, capacity: int, policy: str,
             t_wait: float = 0.0, starts: Mapping[str, float] | None = None, interval: float = math.inf,
             dispatch: str = "stride") -> MacroRun:
    """Replay ``workload`` (queue -> jobs) on the cluster to completion (module docstring).

    Args:
        leaf: queue -> leaf position in ``tree``; starts: queue -> its start time (s, default 0);
        interval: seconds between fairness samples (inf: none);
        dispatch: inside a leaf queue, "stride" (equal shares among its applications) or "fifo".
    """
    cluster = Cluster([capacity], tree, policy=policy, t_wait=t_wait, dispatch=dispatch, staged=False, sample_interval=interval)
    starts = starts or {}
    out = MacroRun(jobs={q: [] for q in workload})
    ids: dict[int, tuple[str, int, int, float]] = {}  # spec id -> (queue, job index, phase, job submit)
    counter = iter(range(10**9))

    def submit(queue: str, k: int, phase: int, at: float, job_submit: float) -> None:
        tasks, seconds = workload[queue][k].phases[phase]
        spec_id = next(counter)
        ids[spec_id] = (queue, k, phase, job_submit)
        cluster.submit(JobSpec(spec_id, leaf[queue], (tasks,), (seconds,), at))

    for queue, jobs in workload.items():
        t0 = float(starts.get(queue, 0.0))
        for k, job in enumerate(jobs):
            if job.submit is not None:
                submit(queue, k, 0, t0 + job.submit, t0 + job.submit)
        if jobs and jobs[0].submit is None:
            submit(queue, 0, 0, t0, t0)
    while True:
        report = cluster.advance(math.inf, stop_on_departure=True)
        out.samples += report.samples
        for spec_id, t in report.first_starts.items():
            queue = ids[spec_id][0]
            out.first_start[queue] = min(out.first_start.get(queue, math.inf), t)
        for done in report.finished:
            queue, k, phase, job_submit = ids.pop(done.job_id)
            job = workload[queue][k]
            if phase + 1 < len(job.phases):
                submit(queue, k, phase + 1, report.now, job_submit)
                continue
            out.jobs[queue].append((job_submit, report.now))
            if job.submit is None and k + 1 < len(workload[queue]):
                nxt = workload[queue][k + 1]
                submit(queue, k + 1, 0, report.now + nxt.gap, report.now + nxt.gap)
        if not ids:
            return out


def overloaded_seconds(run: MacroRun, leaf: int, share: float, until: float) -> float:
    """Seconds in ``[0, until)`` during which the leaf's demand (eligible pending plus running tasks)
    exceeded ``share`` containers, from the run's samples (each sample stands for the interval since the one before)."""
    times = [0.0] + [s.time for s in run.samples]
    return float(sum(min(b, until) - a for a, b, s in zip(times[:-1], times[1:], run.samples, strict=True)
                     if a < until and s.demand[leaf, 0] > share))


def running_of(run: MacroRun, leaf: int) -> tuple[list[float], list[int]]:
    """(sample times, running tasks of the leaf) from a run's samples."""
    return [s.time for s in run.samples], [int(s.running[leaf, 0]) for s in run.samples]


def starvation(run: MacroRun, queue: str, since: float) -> float:
    """Seconds from ``since`` until the queue's first task started (inf if it never did)."""
    return run.first_start.get(queue, math.inf) - since


def usage_at(run: MacroRun, leaves: Sequence[int], t: float) -> float:
    """Accumulated container-seconds of the leaves at the last sample at or before ``t`` (0 before any)."""
    before = [s for s in run.samples if s.time <= t]
    return float(sum(before[-1].usage[k, 0] for k in leaves)) if before else 0.0


def mean_running(run: MacroRun, leaf: int, lo: float, hi: float) -> float:
    """Mean running tasks of the leaf over the samples in [lo, hi) (0 if none)."""
    values = [float(s.running[leaf, 0]) for s in run.samples if lo <= s.time < hi]
    return float(np.mean(values)) if values else 0.0
