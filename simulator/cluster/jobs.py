"""Per-job task counters of the cluster model, input checks, report builder.

A job is kept as three count vectors (pending, running, done) per resource
type; tasks of one type are interchangeable (same duration), so the model
never materialises a job's pending tasks — a job with thousands of map tasks
costs a few integers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from simulator.records import (
    AdvanceReport,
    Counts,
    FairnessSample,
    JobFinished,
    JobSpec,
)


class JobState:
    """Mutable counters of one job (owned by ``Cluster``; not thread-safe).

    ``stage`` is the first resource type with unfinished tasks (``m`` when
    all are done). With staged execution a job may start tasks of type j only
    when every task of the types before j is done, i.e. only of type
    ``stage`` (MapReduce: reduces after all maps).
    """

    __slots__ = ("_demand", "active", "done", "job_id", "leaf", "pending", "reserved", "running", "seq", "spec", "stage",
                 "start_time")

    def __init__(self, spec: JobSpec) -> None:
        self.spec = spec
        self.job_id: int = spec.job_id  # the spec's, read on every event (the spec is frozen)
        self.leaf: int = spec.leaf
        self.pending = list(spec.tasks)
        self.running = [0] * len(spec.tasks)
        self.done = [0] * len(spec.tasks)
        self.start_time: float | None = None
        self.active = False
        self.reserved = False  # holds a reservation: runs only through it
        self.seq = -1  # arrival order (set when the job becomes active)
        self.stage = 0
        self._demand: tuple[bool, ...] | None = None
        self.advance_stage()

    def advance_stage(self) -> bool:
        """Move ``stage`` past completed types; True if it moved."""
        old = self.stage
        tasks = self.spec.tasks
        while self.stage < len(tasks) and self.done[self.stage] == tasks[self.stage]:
            self.stage += 1
        return self.stage != old

    def is_finished(self) -> bool:
        return self.stage == len(self.spec.tasks)

    def eligible_pending(self, j: int, staged: bool) -> int:
        """Pending tasks of type j that may start now."""
        if staged and j != self.stage:
            return 0
        return self.pending[j]

    def shared_pending(self, j: int, staged: bool) -> int:
        """Pending tasks of type j the shared stage may start (none for a reserved job)."""
        return 0 if self.reserved else self.eligible_pending(j, staged)

    def finish(self, j: int, units: int) -> bool:
        """``units`` running tasks of type j completed; True if ``stage`` moved."""
        self.running[j] -= units
        self.done[j] += units
        self._demand = None
        return self.advance_stage()

    def drop(self, j: int, pending: int, running: int) -> None:
        """Remove pending and running tasks of type j (a cancellation)."""
        self.pending[j] -= pending
        self.running[j] -= running
        self._demand = None

    def demand(self) -> tuple[bool, ...]:
        """Per resource type: the job has pending or running tasks of it (what it
        bids for). Cached: starting a task does not change it, only :meth:`finish`
        and :meth:`drop` do."""
        if self._demand is None:
            self._demand = tuple([p + r > 0 for p, r in zip(self.pending, self.running, strict=True)])
        return self._demand

    def counts(self) -> tuple[Counts, Counts, Counts]:
        """``(pending, running, done)`` per resource type."""
        return tuple(self.pending), tuple(self.running), tuple(self.done)

    def to_state(self) -> dict[str, Any]:
        s = self.spec
        return {
            "job_id": s.job_id,
            "leaf": s.leaf,
            "tasks": list(s.tasks),
            "task_duration": list(s.task_duration),
            "submit_time": s.submit_time,
            "pending": list(self.pending),
            "running": list(self.running),
            "done": list(self.done),
            "start_time": self.start_time,
            "active": self.active,
            "seq": self.seq,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> JobState:
        spec = JobSpec(
            job_id=int(state["job_id"]),
            leaf=int(state["leaf"]),
            tasks=tuple(int(x) for x in state["tasks"]),
            task_duration=tuple(float(x) for x in state["task_duration"]),
            submit_time=float(state["submit_time"]),
        )
        job = cls(spec)
        job.pending = [int(x) for x in state["pending"]]
        job.running = [int(x) for x in state["running"]]
        job.done = [int(x) for x in state["done"]]
        start = state["start_time"]
        job.start_time = None if start is None else float(start)
        job.active = bool(state["active"])
        job.seq = int(state.get("seq", -1))
        job.stage = 0
        job.advance_stage()
        return job


def validate_spec(spec: JobSpec, m: int, n_leaves: int) -> None:
    """Raise ValueError if ``spec`` does not fit a cluster of m types, L leaves."""
    if len(spec.tasks) != m or len(spec.task_duration) != m:
        raise ValueError(f"job {spec.job_id}: tasks and task_duration need {m} entries")
    if any(isinstance(t, bool) or not isinstance(t, (int, np.integer)) for t in spec.tasks):
        raise ValueError(f"job {spec.job_id}: task counts must be integers")
    if any(t < 0 for t in spec.tasks):
        raise ValueError(f"job {spec.job_id}: negative task count")
    if any(not d >= 0 or d == float("inf") for d in spec.task_duration):
        raise ValueError(f"job {spec.job_id}: task durations must be finite and >= 0")
    if not 0 <= spec.leaf < n_leaves:
        raise ValueError(f"job {spec.job_id}: leaf {spec.leaf} not in 0..{n_leaves - 1}")
    if spec.submit_time != spec.submit_time:
        raise ValueError(f"job {spec.job_id}: submit_time is NaN")


def as_capacity(capacity: Sequence[int] | NDArray[np.int64]) -> NDArray[np.int64]:
    """(m,) int64 slot counts; ValueError unless 1-D, non-empty, integer, >= 0."""
    cap = np.asarray(capacity)
    if cap.ndim != 1 or cap.size == 0:
        raise ValueError("capacity must be a non-empty 1-D sequence")
    if np.any(cap < 0) or np.any(cap != np.round(cap)):
        raise ValueError("capacity must be non-negative integers")
    return cap.astype(np.int64)


def inf_to_none(x: float) -> float | None:
    """JSON (and PostgreSQL jsonb) have no infinity: store it as null."""
    return None if math.isinf(x) else x


def none_to_inf(x: float | None) -> float:
    """Inverse of :func:`inf_to_none`."""
    return math.inf if x is None else float(x)


class ReportBuilder:
    """Collects what one ``Cluster.advance`` call did."""

    def __init__(self) -> None:
        self.finished: list[JobFinished] = []
        self.samples: list[FairnessSample] = []
        self.changed: dict[int, JobState] = {}
        self.first_starts: dict[int, float] = {}
        self.started = 0
        self.completed = 0
        self.failed = 0

    def build(self, now: float) -> AdvanceReport:
        progress = {jid: job.counts() for jid, job in self.changed.items()}
        return AdvanceReport(now, self.finished, self.samples, progress, self.started, self.completed, self.first_starts,
                             self.failed)
