"""Cura in the simulator: jobs over VM pools through the VM-aware scheduler (paper 004, Secs. III-IV).

:func:`run_cura` drives :class:`scheduler.cura.vm_aware.VMAwareScheduler` (Alg. 1)
through a workload on a simulated clock -- arrivals, reservation starts, run
ends and reservation-window ends are the events -- with an optional
:class:`scheduler.cura.reconfig.ReconfigurationManager` (Sec. III-B). Jobs on
pool VMs pay only the framework start (instant VM allocation, Sec. II-C 1).
It returns each job's outcome, a series of pool sizes and busy VMs, and the
reconfiguration records. The baselines are in ``simulator.cura.baselines``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from scheduler.cura.profiles import VMType, vcpus_of
from scheduler.cura.reconfig import ReconfigurationManager, ReconfigurationRecord
from scheduler.cura.vm_aware import CuraJob, Rejected, VMAwareScheduler


@dataclass(frozen=True)
class JobOutcome:
    """What happened to one job (times in simulated seconds, cost in money).

    ``vm_type`` is -1 and ``start``/``end`` are NaN for a job that never ran
    (rejected at submission, or missed while waiting).
    """

    job_id: int
    customer: int
    job_class: int
    arrival: float
    deadline: float
    vm_type: int
    vms: int
    start: float
    end: float
    cost: float
    rejected: bool = False

    @property
    def ran(self) -> bool:
        return self.vm_type >= 0

    @property
    def met(self) -> bool:
        """Finished by its deadline."""
        return self.ran and self.end <= self.deadline + 1e-9

    @property
    def response(self) -> float:
        """``end - arrival`` (s); NaN if it never ran."""
        return self.end - self.arrival


@dataclass(frozen=True)
class PoolSample:
    """Pool sizes and VMs held by running jobs (or booting) at one instant."""

    time: float
    sizes: tuple[int, ...]
    busy: tuple[int, ...]


@dataclass
class CuraRun:
    """The result of :func:`run_cura`."""

    outcomes: list[JobOutcome]
    samples: list[PoolSample] = field(default_factory=list)
    reconfigurations: list[ReconfigurationRecord] = field(default_factory=list)
    replans: int = 0
    cancellations: int = 0

    @property
    def all_met(self) -> bool:
        return all(o.met for o in self.outcomes)


def equal_split(vm_types: Sequence[VMType], core_budget: int) -> list[int]:
    """Pool sizes giving every VM type the same share of the cores (whole VMs)."""
    share = core_budget / len(vm_types)
    return [int(share // t.vcpus) for t in vm_types]


def run_cura(
    jobs: Sequence[CuraJob], vm_types: Sequence[VMType], pool_sizes: Sequence[int], sizes: Sequence[int], *,
    framework_start: float = 10.0, reconfig: ReconfigurationManager | None = None, sample_every: float = 60.0,
    tick: float = 0.0, stop_on_miss: bool = False,
) -> CuraRun:
    """Run ``jobs`` (sorted by arrival) through Cura's scheduler on pools of ``pool_sizes`` VMs.

    Args:
        jobs: the workload; profiles are (V, S) over ``vm_types`` x ``sizes``.
        framework_start: seconds per run on pool VMs (10 s, paper Sec. IV-A).
        reconfig: the pool manager, or None for fixed pools.
        sample_every: seconds between pool samples (simulated).
        tick: > 0 batches arrivals to the next multiple of ``tick`` seconds
            (the paper's "one unit of time"); 0 schedules at each arrival.
        stop_on_miss: stop at the first job refused or missed (a server search
            only needs to know that one was); later jobs count as never run.

    Returns:
        A :class:`CuraRun`; ``outcomes`` in job order.
    """
    sched = VMAwareScheduler(vm_types, pool_sizes, sizes, framework_start=framework_start)
    order = sorted(jobs, key=lambda j: (j.arrival, j.job_id))
    by_id = {j.job_id: j for j in order}
    outcomes: dict[int, JobOutcome] = {}
    run = CuraRun([])
    now, i, next_sample, refused = 0.0, 0, 0.0, False
    while True:
        arrival = order[i].arrival if i < len(order) else math.inf
        if tick > 0 and math.isfinite(arrival):
            arrival = math.ceil(arrival / tick - 1e-9) * tick
        nxt = min(arrival, sched.next_time(now))
        if reconfig is not None and i < len(order):
            nxt = min(nxt, reconfig.window_start + reconfig.window)
        if not math.isfinite(nxt):
            break
        while next_sample <= nxt:
            run.samples.append(_sample(sched, next_sample))
            next_sample += sample_every
        now = nxt
        sched.finished(now)
        while i < len(order) and order[i].arrival <= now + 1e-9:
            refused |= not _submit(sched, order[i], outcomes)
            i += 1
        if reconfig is not None:
            rec = reconfig.step(sched, now)
            if rec is not None:
                run.reconfigurations.append(rec)
        if sched.needs_plan(now):
            sched.plan(now)
        for p in sched.start_due(now):
            j = by_id[p.job_id]
            outcomes[p.job_id] = JobOutcome(
                j.job_id, j.customer, j.job_class, j.arrival, j.deadline, p.vm_type, p.vms, p.start, p.end, p.cost,
            )
            if reconfig is not None:
                reconfig.observe(j, sched.sizes, p.cost)
        for job_id in sched.missed:
            j = by_id[job_id]
            outcomes[job_id] = _never(j, rejected=False)
            if reconfig is not None:
                reconfig.observe(j, sched.sizes, None)
        if stop_on_miss and (sched.missed or refused):
            break
        sched.missed.clear()
    run.samples.append(_sample(sched, now))
    run.outcomes = [outcomes.get(j.job_id, _never(j, rejected=False)) for j in jobs]
    run.replans, run.cancellations = sched.replans, sched.cancellations
    return run


def _submit(sched: VMAwareScheduler, job: CuraJob, outcomes: dict[int, JobOutcome]) -> bool:
    """Submit; False (and a rejected outcome) if the scheduler refuses the job."""
    try:
        sched.submit(job)
    except Rejected:
        outcomes[job.job_id] = _never(job, rejected=True)
        return False
    return True


def _never(j: CuraJob, *, rejected: bool) -> JobOutcome:
    return JobOutcome(j.job_id, j.customer, j.job_class, j.arrival, j.deadline, -1, 0, math.nan, math.nan, 0.0, rejected)


def _sample(sched: VMAwareScheduler, t: float) -> PoolSample:
    return PoolSample(t, tuple(sched.pool_sizes), tuple(p.used_at(t) for p in sched.pools))


@dataclass(frozen=True)
class Summary:
    """The paper's four metrics for one approach (Sec. IV-A, "Metrics").

    Attributes:
        servers: physical servers provisioned.
        met: fraction of jobs that finished by their deadline.
        mean_response: mean ``end - arrival`` of the jobs that ran, seconds.
        per_job_cost: server-seconds per job (servers x horizon / jobs): the
            per-job share of the infrastructure.
        utilisation: useful core-seconds of job execution (VM creation and
            booting excluded) / (servers x cores x horizon), in [0, 1].
        horizon: seconds from 0 to the last job end.
    """

    servers: int
    met: float
    mean_response: float
    per_job_cost: float
    utilisation: float
    horizon: float


def summarise(
    outcomes: Sequence[JobOutcome], vm_types: Sequence[VMType], servers: int, cores_per_server: int, *,
    useful: Sequence[float] | None = None,
) -> Summary:
    """:class:`Summary` of a run. ``useful`` (per outcome, core-seconds) overrides
    ``vms * vCPUs * (end - start)`` (per-job clusters exclude their boot)."""
    cpu = vcpus_of(vm_types)
    ran = [o for o in outcomes if o.ran]
    horizon = max((o.end for o in ran), default=0.0)
    if useful is None:
        useful = [o.vms * cpu[o.vm_type] * (o.end - o.start) if o.ran else 0.0 for o in outcomes]
    capacity = servers * cores_per_server * horizon
    n = max(len(outcomes), 1)
    return Summary(
        servers=servers,
        met=sum(o.met for o in outcomes) / n,
        mean_response=float(np.mean([o.response for o in ran])) if ran else math.nan,
        per_job_cost=servers * horizon / n,
        utilisation=float(sum(useful) / capacity) if capacity > 0 else 0.0,
        horizon=horizon,
    )
