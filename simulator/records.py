"""Plain records exchanged with the cluster model (re-exported by ``cluster``).

Shapes use ``L`` for leaf queues (positions in ``QueueTree.leaves``) and
``m`` for resource types.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

Counts = tuple[int, ...]


@dataclass(frozen=True)
class JobSpec:
    """A job as the cluster sees it.

    Attributes:
        job_id: unique among the jobs the cluster currently knows.
        leaf: leaf-queue position (index into ``tree.leaves``).
        tasks: (m,) number of tasks per resource type, each >= 0.
        task_duration: (m,) seconds per task of each type, each >= 0.
        submit_time: seconds on the cluster clock when the job is known.
    """

    job_id: int
    leaf: int
    tasks: tuple[int, ...]
    task_duration: tuple[float, ...]
    submit_time: float


@dataclass(frozen=True)
class TaskLaunch:
    """A batch of tasks the cluster model started that an external executor must run
    (``Cluster(executor="external")``, a real cluster such as Slurm).

    Attributes:
        key: the batch's key; completions and failures name it (``Cluster.complete`` / ``fail``).
        job_id: the job; j: the resource type (column); units: tasks in the batch (one slot each).
        duration_s: simulated seconds each task works (the model's expectation).
        shared: True when the fair-share stage started it, False for a reservation's units.
        start: simulated time the model started it.
    """

    key: int
    job_id: int
    j: int
    units: int
    duration_s: float
    shared: bool
    start: float

    def to_list(self) -> list[float | int | bool]:
        return [self.key, self.job_id, self.j, self.units, self.duration_s, self.shared, self.start]

    @classmethod
    def from_list(cls, row: list[float | int | bool]) -> TaskLaunch:
        key, job_id, j, units, duration, shared, start = row
        return cls(int(key), int(job_id), int(j), int(units), float(duration), bool(shared), float(start))


@dataclass(frozen=True)
class JobFinished:
    """A departure. ``start_time`` is the first task's start (the submit time
    for a job without tasks); all times in seconds on the cluster clock."""

    job_id: int
    submit_time: float
    start_time: float
    finish_time: float

    @property
    def response_time(self) -> float:
        """``finish_time - submit_time`` (s)."""
        return self.finish_time - self.submit_time


@dataclass(frozen=True)
class FairnessSample:
    """Fairness state at one sample time (paper 002, Sec. 4.2, Eqs. 1-5).

    Attributes:
        time: seconds on the cluster clock.
        usage: (L, m) accumulated resource-seconds used, ``f_i(t)`` (Eq. 1),
            the exact integral of running tasks.
        demand: (L, m) current demand ``d_i``: eligible pending plus running
            tasks.
        share: (L, m) ``S_i = C_j * w_i / sum w`` (Eq. 2, with the tree's
            normalised leaf fractions).
        entitled: (L, m) ``integral of min(d_i, S_i) dt`` (Eq. 3's
            denominator: what the leaf would have had on its own partition).
        rho: (L, m) fairness degree ``usage / entitled`` (Eq. 3).
        benefit: (m,) sharing benefit ``Psi`` (Eq. 4) per type.
        loss: (m,) sharing loss ``Omega`` (Eq. 5) per type, <= 0.
        running: (L, m) tasks running now.
        utilisation: (m,) busy slots / capacity (0 where capacity is 0).
    """

    time: float
    usage: NDArray[np.float64]
    demand: NDArray[np.int64]
    share: NDArray[np.float64]
    entitled: NDArray[np.float64]
    rho: NDArray[np.float64]
    benefit: NDArray[np.float64]
    loss: NDArray[np.float64]
    running: NDArray[np.int64]
    utilisation: NDArray[np.float64]


@dataclass(frozen=True)
class AdvanceReport:
    """What happened during one ``Cluster.advance`` call.

    Attributes:
        now: the clock after the call (s).
        finished: departures in time order.
        samples: fairness samples taken, in time order.
        progress: job_id -> (pending, running, done), each (m,), for the jobs
            whose counts changed (arrived, started or finished a task).
        started_tasks, finished_tasks: task starts and completions.
        first_starts: job_id -> time its first task started, for jobs that
            started during the call.
        failed_tasks: tasks an external executor reported failed (back to pending).
    """

    now: float
    finished: list[JobFinished]
    samples: list[FairnessSample]
    progress: dict[int, tuple[Counts, Counts, Counts]]
    started_tasks: int
    finished_tasks: int
    first_starts: dict[int, float] = field(default_factory=dict)
    failed_tasks: int = 0
