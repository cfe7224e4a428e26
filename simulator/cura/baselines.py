"""The baselines Cura is compared with (paper 004, Sec. IV-A), and the server search.

* **Per-job clusters** (:func:`run_per_job`; Amazon Elastic MapReduce-like):
  each job gets new VMs at its own optimal configuration -- the cheapest one
  that meets its deadline when started at arrival after VM boot and framework
  start. VMs are booted for the job (``boot_s``, 60 s by default: an EC2-class
  VM boot; the paper does not state its figure) and released at its end. When
  the servers' cores are short, jobs wait in arrival order (FIFO).
* **Dedicated per-customer clusters** (:func:`run_dedicated`): every customer
  owns ready VMs (framework start only), as many of each VM type as its jobs
  use at the same time at their optimal configurations -- sized for the
  customer's peak -- so no job waits.
* **Servers needed** (:func:`servers_needed`): the fewest servers with which
  an approach meets every deadline, by bisection (the success predicate is
  assumed monotone in the servers; it is checked at the bounds).

Servers are fluid blocks of ``cores_per_server`` vCPUs (16 in the paper's
testbed): a VM of c vCPUs takes c cores; packing losses are ignored.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from scheduler.cura.profiles import VMType, prices_of, vcpus_of
from scheduler.cura.vm_aware import CuraJob
from simulator.cura.sim import JobOutcome


def cheapest(job: CuraJob, vm_types: Sequence[VMType], sizes: Sequence[int], overhead: float) -> tuple[int, int, float, float] | None:
    """(VM type, size index, run s incl. ``overhead``, cost) of the job's cheapest
    configuration finishing by its deadline when it starts at arrival; None if none.
    Ties go to the shorter run."""
    rt = job.runtime + overhead
    k = np.asarray(sizes, dtype=np.float64)[None, :]
    cost = np.where(job.arrival + rt <= job.deadline + 1e-9, k * prices_of(vm_types)[:, None] * rt, np.inf)
    order = np.lexsort((rt.ravel(), cost.ravel()))
    v, s = divmod(int(order[0]), len(sizes))
    if not math.isfinite(cost[v, s]):
        return None
    return v, s, float(rt[v, s]), float(cost[v, s])


@dataclass
class BaselineRun:
    """Outcomes of a baseline and the useful core-seconds of each (boot excluded)."""

    outcomes: list[JobOutcome]
    useful: list[float]
    servers: int


def run_per_job(
    jobs: Sequence[CuraJob], vm_types: Sequence[VMType], sizes: Sequence[int], *, servers: int, cores_per_server: int = 16,
    boot_s: float = 60.0, framework_start: float = 10.0,
) -> BaselineRun:
    """Per-job clusters on ``servers`` servers (module docstring). A job's VMs hold
    their cores from its start through boot, framework start and run."""
    cpu = vcpus_of(vm_types)
    total = servers * cores_per_server
    free = float(total)
    held: list[tuple[float, float]] = []  # (release time, cores)
    clock = 0.0
    outcomes, useful = [], []
    for job in sorted(jobs, key=lambda j: (j.arrival, j.job_id)):
        pick = cheapest(job, vm_types, sizes, boot_s + framework_start)
        if pick is None:
            outcomes.append(_never(job, rejected=True))
            useful.append(0.0)
            continue
        v, s, run, cost = pick
        need = sizes[s] * cpu[v]
        if need > total:
            outcomes.append(_never(job, rejected=False))
            useful.append(0.0)
            continue
        clock = max(clock, job.arrival)  # FIFO: nobody overtakes an earlier job
        while held and held[0][0] <= clock:
            free += heapq.heappop(held)[1]
        while free < need - 1e-9:
            t, cores = heapq.heappop(held)
            clock, free = max(clock, t), free + cores
        free -= need
        heapq.heappush(held, (clock + run, need))
        outcomes.append(
            JobOutcome(job.job_id, job.customer, job.job_class, job.arrival, job.deadline, v, sizes[s], clock, clock + run, cost)
        )
        useful.append(need * (run - boot_s))
    return BaselineRun(outcomes, useful, servers)


def run_dedicated(
    jobs: Sequence[CuraJob], vm_types: Sequence[VMType], sizes: Sequence[int], *, cores_per_server: int = 16,
    framework_start: float = 10.0,
) -> BaselineRun:
    """Dedicated per-customer clusters sized for each customer's peak (module docstring);
    ``servers`` is what the clusters need in total."""
    cpu = vcpus_of(vm_types)
    outcomes, useful = [], []
    events: dict[tuple[int, int], list[tuple[float, int]]] = {}
    for job in sorted(jobs, key=lambda j: (j.arrival, j.job_id)):
        pick = cheapest(job, vm_types, sizes, framework_start)
        if pick is None:
            outcomes.append(_never(job, rejected=True))
            useful.append(0.0)
            continue
        v, s, run, cost = pick
        outcomes.append(JobOutcome(job.job_id, job.customer, job.job_class, job.arrival, job.deadline, v, sizes[s], job.arrival,
                                   job.arrival + run, cost))
        useful.append(sizes[s] * cpu[v] * run)
        ev = events.setdefault((job.customer, v), [])
        ev += [(job.arrival, sizes[s]), (job.arrival + run, -sizes[s])]
    cores = 0.0
    for (_, v), ev in events.items():
        ev.sort(key=lambda e: (e[0], e[1]))  # a release before an arrival at the same instant
        cores += cpu[v] * max(float(np.cumsum([d for _, d in ev]).max()), 0.0)
    return BaselineRun(outcomes, useful, math.ceil(cores / cores_per_server))


def _never(job: CuraJob, *, rejected: bool) -> JobOutcome:
    return JobOutcome(job.job_id, job.customer, job.job_class, job.arrival, job.deadline, -1, 0, math.nan, math.nan, 0.0, rejected)


def servers_needed(succeeds: Callable[[int], bool], lo: int, hi: int) -> int:
    """The fewest servers in [lo, hi] for which ``succeeds`` holds, by bisection.

    Raises:
        ValueError: ``succeeds(hi)`` is false (no answer in the range).
    """
    if not succeeds(hi):
        raise ValueError(f"even {hi} servers do not meet every deadline")
    lo = max(lo, 1)
    if succeeds(lo):
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if succeeds(mid):
            hi = mid
        else:
            lo = mid
    return hi
