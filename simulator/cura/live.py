"""Cura's scheduler as a live service's state: one step at a time, kept as JSON between ticks.

The live market (``marketplace.pools.services.jobs``) cannot hold a
:class:`scheduler.cura.vm_aware.VMAwareScheduler` in memory between requests, so
:class:`CuraDriver` wraps one (and the optional
:class:`scheduler.cura.reconfig.ReconfigurationManager`, paper 004 Sec. III-B)
with exact JSON round-tripping (:meth:`CuraDriver.to_state` /
:meth:`CuraDriver.from_state`; ``inf`` is written as a string, since
PostgreSQL's ``jsonb`` has no infinity).

One :meth:`CuraDriver.step` at a scheduling instant does what one iteration
of :func:`simulator.cura.sim.run_cura` does there: runs that ended return
their VMs, the arrivals are submitted, the pool manager may re-size the pools
at the end of its window, Alg. 1 re-plans when it has something to do (a new
arrival, or a reservation window that closed while jobs wait), and due
reservations start. :meth:`CuraDriver.advance` steps through every instant
up to a time (reservation starts, window ends, run ends, the manager's window
ends), so a live tick of any length makes the decisions the simulator makes
(``tests/marketplace/test_cura_live.py`` checks job by job).

**The cluster's truth.** A job may really run ``scale`` times as long as its
profile predicts (the simulated cluster's truth, as a market job's task
durations are). Its reservation was sized on the estimate; when it starts, its
VMs are held for the real run, and if that is longer every tentative
reservation is cancelled and re-planned at once (as after a reconfiguration,
:meth:`scheduler.cura.vm_aware.VMAwareScheduler.resize`): committed runs never overlap
beyond a pool's size. The measured run is what the learnt profile
(:func:`scheduler.cura.profiles.learn_profile`) is fitted on.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scheduler.cura.profiles import VMType
from scheduler.cura.reconfig import ReconfigurationManager, ReconfigurationRecord
from scheduler.cura.timeline import Interval
from scheduler.cura.vm_aware import CuraJob, Placement, Rejected, VMAwareScheduler

EPS = 1e-9


def _f(x: float) -> float | str:
    """A float as JSON (``inf``/``-inf`` as strings)."""
    return float(x) if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def _g(x: float | str) -> float:
    return float(x)


@dataclass
class StepEvents:
    """What one :meth:`CuraDriver.advance` did: reservations that started (with the
    run's real end), runs that finished, jobs missed while waiting, and the
    pool manager's decisions."""

    started: list[Placement] = field(default_factory=list)
    finished: list[Placement] = field(default_factory=list)
    missed: list[int] = field(default_factory=list)
    reconfigurations: list[ReconfigurationRecord] = field(default_factory=list)


class CuraDriver:
    """Alg. 1 (and Sec. III-B) driven one instant at a time (module docstring).

    Args:
        scheduler: the VM-aware scheduler over the pools.
        reconfig: the pool manager, or None for fixed pools.
    """

    def __init__(self, scheduler: VMAwareScheduler, reconfig: ReconfigurationManager | None = None, now: float = 0.0) -> None:
        self.sched = scheduler
        self.reconfig = reconfig
        self.now = float(now)
        self.scale: dict[int, float] = {}  # job id -> real run / estimated run (the cluster's truth)

    # ------------------------------------------------------------------ the step

    def submit(self, job: CuraJob, *, scale: float = 1.0) -> None:
        """Queue an arrival for the next step. Raises :class:`Rejected` like ``VMAwareScheduler.submit``."""
        if not scale > 0:
            raise ValueError("the real-to-estimated run ratio must be > 0")
        self.sched.submit(job)
        if scale != 1.0:
            self.scale[job.job_id] = float(scale)

    def next_time(self) -> float:
        """The next instant something happens without an arrival (``inf`` if none)."""
        nxt = min(self.sched.next_time(self.now), *self.sched.expiry_times(self.now), math.inf)
        if self.reconfig is not None:  # the manager's windows follow one another, as while the simulator has arrivals
            nxt = min(nxt, self.reconfig.window_start + self.reconfig.window)
        return nxt

    def step(self, now: float, events: StepEvents | None = None) -> StepEvents:
        """One scheduling instant at ``now`` (>= the driver's clock): the order of
        :func:`simulator.cura.sim.run_cura`'s loop body after the arrivals."""
        if now + EPS < self.now:
            raise ValueError(f"cannot step back from {self.now} to {now}")
        ev = events if events is not None else StepEvents()
        self.now = max(self.now, float(now))
        sched = self.sched
        ev.finished += sched.finished(self.now)
        for p in ev.finished:
            self.scale.pop(p.job_id, None)
        if self.reconfig is not None:
            rec = self.reconfig.step(sched, self.now)
            if rec is not None:
                ev.reconfigurations.append(rec)
        known = dict(sched.jobs)
        for _ in range(len(sched.jobs) + 2):  # a longer real run re-plans; each round starts >= 1 job or stops
            known.update(sched.jobs)
            if sched.needs_plan(self.now):
                sched.plan(self.now)
            due = sched.start_due(self.now)
            longer = [self._hold_real_run(p) for p in due]
            ev.started += [sched.started[p.job_id] for p in due]
            if self.reconfig is not None:
                for p in due:
                    self.reconfig.observe(sched.jobs[p.job_id], sched.sizes, p.cost)
            if not any(longer):
                break
            self._replan_tentative()
        sched.drop_missed(self.now)  # a waiting job past hope is missed now, whether or not anything was planned
        ev.missed += sched.missed
        if self.reconfig is not None:
            for job_id in sched.missed:
                self.reconfig.observe(known[job_id], sched.sizes, None)
        sched.missed.clear()
        return ev

    def advance(self, until: float, events: StepEvents | None = None) -> StepEvents:
        """Step through every instant strictly before ``until``; runs that end by
        ``until`` are reported finished. An instant at ``until`` itself is left for
        the next call or for :meth:`step` with the arrivals of that instant, as the
        simulator decides an instant's events and arrivals together."""
        ev = events if events is not None else StepEvents()
        while True:
            nxt = self.next_time()
            if not nxt < until - EPS:
                break
            self.step(nxt, ev)
        done = self.sched.finished(until)  # run ends need no event: the timelines hold them
        ev.finished += done
        for p in done:
            self.scale.pop(p.job_id, None)
        return ev

    def _hold_real_run(self, p: Placement) -> bool:
        """Hold the VMs for the real run; True if it is longer than the reservation."""
        scale = self.scale.get(p.job_id, 1.0)
        if scale == 1.0:
            return False
        fs = self.sched.framework_start
        end = p.start + fs + (p.end - p.start - fs) * scale
        real = dataclasses.replace(p, end=end)
        self.sched.started[p.job_id] = real
        self.sched.pools[p.vm_type].add(Interval(p.job_id, p.vms, p.start, end, tentative=False))
        return end > p.end + EPS

    def _replan_tentative(self) -> None:
        """Cancel every tentative reservation; the next plan re-decides the windows."""
        sched = self.sched
        for job_id in list(sched.tentative):
            sched._cancel(job_id)
            sched.waiting.append(job_id)
        sched.waiting = sched._by_arrival(sched.waiting)
        sched.window_end[:] = self.now

    def cancel(self, job_id: int) -> None:
        """The tenant withdrew the job: its reservation or its run's VMs are freed now."""
        s = self.sched
        if job_id in s.tentative:
            s._cancel(job_id)
        p = s.started.pop(job_id, None)
        if p is not None:
            s.pools[p.vm_type].remove(job_id)
        s.waiting = [i for i in s.waiting if i != job_id]
        s.new = [i for i in s.new if i != job_id]
        s.jobs.pop(job_id, None)
        self.scale.pop(job_id, None)
        for v, d in enumerate(s.decider):
            if d == job_id:  # its window ends now: the next plan re-decides it
                s.window_end[v] = self.now

    def resize(self, sizes: Sequence[int], ready_after: float = 0.0) -> None:
        """Staff changed the pools by hand: the scheduler's pools follow."""
        if list(sizes) != self.sched.pool_sizes:
            self.sched.resize(sizes, self.now, ready_after)

    # ------------------------------------------------------------------ JSON

    def to_state(self) -> dict[str, Any]:
        """Everything needed to continue exactly, as JSON-safe data."""
        s = self.sched
        state: dict[str, Any] = {
            "now": self.now,
            "scale": [[k, v] for k, v in self.scale.items()],
            "vm_types": [[t.name, t.vcpus, t.memory_gb, t.price] for t in s.vm_types],
            "sizes": list(s.sizes), "framework_start": s.framework_start, "window_bound": _f(s.window_bound),
            "pools": [[p.capacity, [[iv.owner, iv.units, _f(iv.start), _f(iv.end), iv.tentative] for iv in p.intervals.values()]]
                      for p in s.pools],
            "jobs": [[j.job_id, j.arrival, j.deadline, [[_f(x) for x in row] for row in j.runtime.tolist()], j.customer, j.job_class]
                     for j in s.jobs.values()],
            "waiting": list(s.waiting), "new": list(s.new),
            "tentative": [_placement(p) for p in s.tentative.values()],
            "started": [_placement(p) for p in s.started.values()],
            "decider": list(s.decider), "window_end": [_f(x) for x in s.window_end.tolist()],
            "missed": list(s.missed), "replans": s.replans, "cancellations": s.cancellations, "boots": s._boots,
        }
        r = self.reconfig
        if r is not None:
            state["reconfig"] = {
                "core_budget": r.core_budget, "window": r.window, "beta": r.beta, "shutdown_s": r.shutdown_s,
                "boot_s": r.boot_s, "framework_start": r.framework_start, "window_start": r.window_start,
                "demand": r.demand.tolist(), "floor": r.floor.tolist(), "extra": r.extra, "seen": r.seen,
            }
        return state

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> CuraDriver:
        """The driver :meth:`to_state` wrote."""
        types = [VMType(str(n), int(c), float(m), float(p)) for n, c, m, p in state["vm_types"]]
        s = VMAwareScheduler(types, [int(p[0]) for p in state["pools"]], state["sizes"],
                             framework_start=float(state["framework_start"]), window_bound=_g(state["window_bound"]))
        for pool, (_, ivs) in zip(s.pools, state["pools"], strict=True):
            for owner, units, start, end, tentative in ivs:
                pool.add(Interval(int(owner), int(units), _g(start), _g(end), bool(tentative)))
        for job_id, arrival, deadline, rt, customer, job_class in state["jobs"]:
            runtime = np.array([[_g(x) for x in row] for row in rt], dtype=np.float64)
            s.jobs[int(job_id)] = CuraJob(int(job_id), float(arrival), float(deadline), runtime, int(customer), int(job_class))
        s.waiting, s.new = [int(i) for i in state["waiting"]], [int(i) for i in state["new"]]
        s.tentative = {p.job_id: p for p in map(_unplacement, state["tentative"])}
        s.started = {p.job_id: p for p in map(_unplacement, state["started"])}
        s.decider = [None if d is None else int(d) for d in state["decider"]]
        s.window_end = np.array([_g(x) for x in state["window_end"]], dtype=np.float64)
        s.missed = [int(i) for i in state["missed"]]
        s.replans, s.cancellations, s._boots = int(state["replans"]), int(state["cancellations"]), int(state["boots"])
        reconfig = None
        if "reconfig" in state:
            r = state["reconfig"]
            reconfig = ReconfigurationManager(types, int(r["core_budget"]), window=r["window"], beta=r["beta"],
                                              shutdown_s=r["shutdown_s"], boot_s=r["boot_s"], framework_start=r["framework_start"])
            reconfig.window_start, reconfig.extra, reconfig.seen = float(r["window_start"]), float(r["extra"]), int(r["seen"])
            reconfig.demand = np.array(r["demand"], dtype=np.float64)
            reconfig.floor = np.array(r["floor"], dtype=np.int64)
        driver = cls(s, reconfig, float(state["now"]))
        driver.scale = {int(k): float(v) for k, v in state["scale"]}
        return driver


def _placement(p: Placement) -> list[Any]:
    return [p.job_id, p.vm_type, p.size_index, p.vms, p.start, p.end, p.cost]


def _unplacement(x: list[Any]) -> Placement:
    return Placement(int(x[0]), int(x[1]), int(x[2]), int(x[3]), float(x[4]), float(x[5]), float(x[6]))


__all__ = ["CuraDriver", "Rejected", "StepEvents"]
