"""Paper 000's Table 1 workload (Sec. 7.1.2): three users submit MapReduce jobs by
independent Poisson processes (30 minutes in the paper's runs).

    user   map task  reduce task  budget  arrival rate
    #1     30 s      20 s         $200    2 / min
    #2     15 s      40 s         $200    1.5 / min
    #3     60 s      10 s         $200    1.1 / min

Each user's (true) utility is linear, ``u(x, y) = T_m x + T_r y`` (user #1:
``3x + 2y``). The paper does not give the number of tasks per job:
``MAP_TASKS == REDUCE_TASKS`` because Sec. 7.1.2 calls the utility "proportional
to the processing demands on Map and Reduce tasks" and user #3's true ratio
"about 6:1" from its task times alone (60 s : 10 s); a job's map:reduce work is
in its task-time ratio only with as many reduce tasks as map tasks. Task times
are the Table 1 means with a +-``JITTER`` uniform spread per job (Hadoop's tasks
vary; identical jobs would make the utility fit of Fig. 11 degenerate).

The experiments (``simulator.experiments.abacus``) and the synthetic generator
``abacus_table1`` (``simulator.workloads.synthetic``) both draw from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MAP_TASKS, REDUCE_TASKS = 10, 10  # as many reduces as maps: work in the task-time ratio (module doc)
JITTER = 0.2  # task times vary +-20 % per job
MINUTES = 30.0


@dataclass(frozen=True)
class User:
    """A Table 1 user: task times (simulated s), budget ($), Poisson rate (jobs / min)."""

    name: str
    map_s: float
    reduce_s: float
    budget: float
    rate: float

    @property
    def true_weights(self) -> tuple[float, float]:
        """``(T_m, T_r)``: the paper's true linear utility, in tens of seconds (user #1: 3, 2)."""
        return self.map_s / 10.0, self.reduce_s / 10.0


TABLE1 = (
    User("user 1", 30.0, 20.0, 200.0, 2.0),
    User("user 2", 15.0, 40.0, 200.0, 1.5),
    User("user 3", 60.0, 10.0, 200.0, 1.1),
)


@dataclass(frozen=True)
class Job:
    """One generated job: id, owner (index into the users), submit time (s), tasks, seconds per task."""

    job_id: int
    user: int
    submit: float
    tasks: tuple[int, int]
    task_s: tuple[float, float]


def table1_jobs(users: Sequence[User], *, seed: int, minutes: float = MINUTES, rate_scale: float = 1.0,
                tasks: tuple[int, int] = (MAP_TASKS, REDUCE_TASKS)) -> list[Job]:
    """Poisson arrivals of every user for ``minutes`` (rates times ``rate_scale``), in time order,
    each job with ``tasks`` (map, reduce) tasks."""
    rng = np.random.default_rng(seed)
    jobs: list[tuple[float, int, tuple[float, float]]] = []
    for k, u in enumerate(users):
        t = 0.0
        while True:
            t += rng.exponential(60.0 / (u.rate * rate_scale))
            if t >= minutes * 60.0:
                break
            jitter = rng.uniform(1.0 - JITTER, 1.0 + JITTER, 2)
            jobs.append((t, k, (u.map_s * jitter[0], u.reduce_s * jitter[1])))
    jobs.sort()
    return [Job(i, k, t, tasks, ts) for i, (t, k, ts) in enumerate(jobs)]
