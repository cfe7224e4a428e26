"""Cura's reservations executed by the market engine (README, "The engine": one engine for every mechanism).

A market backed by VM pools has one resource type per VM type, its capacity
the pool size. :func:`run_on_engine` drives ``scheduler.cura.vm_aware.VMAwareScheduler``
as :func:`simulator.cura.sim.run_cura` does, and hands its decisions to
``simulator.market.engine.MarketEngine`` as a Plan (``VMAwareScheduler.to_plan``):
when a reservation starts, its job joins the engine as a gang of ``VMs``
tasks of its VM type lasting the configuration's runtime, and the engine's
reservation stage runs it inside its window. The engine, not the scheduler,
then reports the departures and the charges (the fixed prices).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Sequence

from scheduler.cura.profiles import VMType
from scheduler.cura.vm_aware import CuraJob, Rejected, VMAwareScheduler
from scheduler.fairshare.fairness import QueueTree
from simulator.market.engine import MarketEngine
from simulator.market.records import Bid, Charge, MarketConfig
from simulator.records import JobFinished, JobSpec


def run_on_engine(
    jobs: Sequence[CuraJob], vm_types: Sequence[VMType], pool_sizes: Sequence[int], sizes: Sequence[int], *,
    framework_start: float = 10.0,
) -> tuple[list[JobFinished], list[Charge], VMAwareScheduler]:
    """Schedule ``jobs`` with Cura and execute them on a :class:`MarketEngine` whose
    capacity is ``pool_sizes`` (fixed pools). Returns (departures, charges, scheduler)."""
    V = len(vm_types)
    config = MarketConfig(mechanism="equal", fairshare="fifo", dispatch="fifo")
    engine = MarketEngine.create(list(pool_sizes), QueueTree.flat(["cura"]), config, staged=False)
    sched = VMAwareScheduler(vm_types, pool_sizes, sizes, framework_start=framework_start)
    order = sorted(jobs, key=lambda j: (j.arrival, j.job_id))
    departures: list[JobFinished] = []
    charges: list[Charge] = []
    now, i = 0.0, 0
    while True:
        nxt = min(order[i].arrival if i < len(order) else math.inf, sched.next_time(now))
        if not math.isfinite(nxt):
            break
        report = engine.step(nxt)
        departures += report.departures
        charges += report.charges
        now = nxt
        sched.finished(now)
        while i < len(order) and order[i].arrival <= now + 1e-9:
            with contextlib.suppress(Rejected):  # refused at submission: it never reaches the engine
                sched.submit(order[i])
            i += 1
        if sched.needs_plan(now):
            sched.plan(now)
        for p in sched.start_due(now):
            tasks = tuple(p.vms if v == p.vm_type else 0 for v in range(V))
            duration = tuple(p.end - p.start if v == p.vm_type else 0.0 for v in range(V))
            engine.submit(JobSpec(p.job_id, 0, tasks, duration, now), Bid(max(p.cost, 1e-9), (1.0,) * V))
        charges += engine.apply_plan(sched.to_plan())
    report = engine.step(math.inf if not departures and not engine.known_jobs() else _last_end(sched, now))
    departures += report.departures
    charges += report.charges
    return departures, charges, sched


def _last_end(sched: VMAwareScheduler, now: float) -> float:
    return max([now, *(p.end for p in sched.started.values())]) + 1.0
