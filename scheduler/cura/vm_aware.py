"""Cura's online VM-aware scheduler (paper 004, Sec. III-A, Algorithm 1).

Jobs arrive with a deadline and a profile (``scheduler.cura.profiles``); the
scheduler decides for each job *when* it runs, on *which* VM pool and on *how
many* VMs, over pools of ready VMs (no boot on the critical path: a job pays
only the framework start, 10 s in the paper, Sec. IV-A). Its decisions are
``scheduler.plan.Reservation(job, resource=VM type index, units=VMs, [start, end))``.

**Costs and priorities** (pairwise deferral costs, their complexity): ``scheduler.cura.costs``.

**Algorithm 1, as implemented** (the decisions the paper leaves open are
named; ``tests/scheduler/test_cura_example.py`` replays App. A):

1. At each scheduling instant, started reservations become fixed; a waiting
   job that no configuration can finish by its deadline any more is *missed*.
2. *redo_timewindow* when a pool's reservation time window has ended (its
   deciding job finished) and jobs wait, or when a new arrival strictly
   outranks a tentative window-deciding job: cancel every tentative
   reservation; for each pool in order, the job maximising
   ``sum_j Cost(Jj, Ji) - Cost_VM(Ji, Jj, V)`` among the jobs that some
   configuration on V serves in time becomes the pool's window-deciding job,
   reserved at its lowest-cost configuration on V at the earliest start;
   ``t_window(V) = min(its end, now + window_bound)`` (lines 17-24).
3. *redo_reserve* when a new arrival strictly outranks a tentative reserved
   job (line 12 prints ``<=``; with ``<=`` every arrival that interacts with no
   one would re-plan, with the same outcome): cancel the tentative
   reservations that do not decide a window (line 27).
4. Fill: the candidates (everything cancelled, the new arrivals and, after a
   window change, the waiting jobs) are ordered once by ``P_i`` computed with
   window-restricted costs (``Cost_twindow``, line 30) and reserved in that
   order, each at its lowest-cost configuration starting within its pool's
   window (``start <= t_window``); jobs that fit no window wait. Without a
   redo the new arrivals are still filled into the windows' free capacity.
   Ties in priority go to the earlier arrival, then the lower job id; ties in
   cost to the earlier end, then fewer VMs.
5. A job no configuration on the pools could ever finish in time is refused
   at submission (:class:`Rejected`) with the earliest deadline that works.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from scheduler.cura.costs import EPS, ConfigTable, after_costs, deferral_priority, outranks, penalised, penalty
from scheduler.cura.profiles import VMType, prices_of
from scheduler.cura.timeline import Interval, PoolTimeline
from scheduler.payments import PaymentRule
from scheduler.plan import Diagnostics, Plan, Reservation


@dataclass(frozen=True)
class CuraJob:
    """A job submitted to Cura: a deadline and a profile only (paper 004, Sec. II-B).

    Attributes:
        job_id: unique id.
        arrival: submission time, simulated seconds.
        deadline: absolute completion deadline, simulated seconds (> arrival).
        runtime: (V, S) predicted seconds per VM type and cluster size (the
            profile; ``inf`` where not offered), without the framework start.
        customer: the submitting customer (for dedicated-cluster baselines).
        job_class: the profiled job it is an instance of.
    """

    job_id: int
    arrival: float
    deadline: float
    runtime: NDArray[np.float64] = field(repr=False)
    customer: int = 0
    job_class: int = 0


@dataclass(frozen=True)
class Placement:
    """A job's reservation: ``vms`` VMs of pool ``vm_type`` over [start, end); ``cost`` in money."""

    job_id: int
    vm_type: int
    size_index: int
    vms: int
    start: float
    end: float
    cost: float

    def reservation(self) -> Reservation:
        """The engine's form (``scheduler.plan.Reservation``; resource = VM type index)."""
        return Reservation(self.job_id, self.vm_type, self.vms, self.start, self.end)


class Rejected(ValueError):
    """No configuration on the pools can meet the job's deadline (Sec. III-A, Alg. 1 line 10).

    Attributes:
        job_id: the refused job.
        earliest_deadline: the earliest absolute deadline some configuration
            would meet (``inf`` if the pools cannot run the job at all).
    """

    def __init__(self, job_id: int, earliest_deadline: float) -> None:
        self.job_id = job_id
        self.earliest_deadline = earliest_deadline
        super().__init__(
            f"job {job_id}: no VM type and cluster size meets the deadline; the earliest deadline that works is "
            f"{earliest_deadline:.1f} s"
        )


class VMAwareScheduler:
    """Online VM-aware scheduling over VM pools (module docstring; paper 004 Alg. 1).

    Args:
        vm_types: (V,) VM types, in pool order.
        pool_sizes: (V,) VMs in each pool.
        sizes: (S,) cluster sizes every profile is given for.
        framework_start: seconds added to every run on pool VMs (10 s in Sec. IV-A).
        window_bound: longest reservation time window, seconds (``t_bound``, line 23).

    Raises:
        ValueError: mismatched lengths or negative pool sizes.
    """

    def __init__(
        self, vm_types: Sequence[VMType], pool_sizes: Sequence[int], sizes: Sequence[int], *,
        framework_start: float = 10.0, window_bound: float = math.inf,
    ) -> None:
        if len(pool_sizes) != len(vm_types) or any(int(n) < 0 for n in pool_sizes):
            raise ValueError("one pool size >= 0 per VM type")
        if framework_start < 0 or not window_bound > 0:
            raise ValueError("framework start must be >= 0 and the window bound > 0")
        self.vm_types = tuple(vm_types)
        self.sizes = tuple(int(k) for k in sizes)
        self.V, self.S = len(self.vm_types), len(self.sizes)
        self.framework_start = float(framework_start)
        self.window_bound = float(window_bound)
        self.pools = [PoolTimeline(int(n)) for n in pool_sizes]
        self.prices = prices_of(self.vm_types)
        self.pool_of = np.repeat(np.arange(self.V), self.S).astype(np.intp)  # (C,)
        self.vms_of = np.tile(np.asarray(self.sizes, dtype=np.float64), self.V)  # (C,)
        self.jobs: dict[int, CuraJob] = {}
        self.waiting: list[int] = []
        self.new: list[int] = []
        self.tentative: dict[int, Placement] = {}
        self.started: dict[int, Placement] = {}
        self.decider: list[int | None] = [None] * self.V
        self.window_end = np.full(self.V, -math.inf)
        self.missed: list[int] = []
        self.replans = 0
        self.cancellations = 0
        self._boots = 0  # pool-owned intervals of booting VMs have ids -1, -2, ...

    # ------------------------------------------------------------------ submission

    @property
    def pool_sizes(self) -> list[int]:
        return [p.capacity for p in self.pools]

    def fastest(self, job: CuraJob) -> float:
        """Shortest run (s, framework start included) of any configuration that fits the pools' sizes."""
        fits = self.vms_of.reshape(self.V, self.S) <= np.array(self.pool_sizes)[:, None]
        rt = np.where(fits, job.runtime, np.inf)
        return float(rt.min()) + self.framework_start

    def submit(self, job: CuraJob) -> None:
        """Queue a job for the next :meth:`plan` (Alg. 1's N_list).

        Raises:
            Rejected: no configuration can finish it by its deadline even on idle pools.
            ValueError: a known id or a profile of the wrong shape.
        """
        if job.job_id in self.jobs:
            raise ValueError(f"job {job.job_id} is already known")
        if job.runtime.shape != (self.V, self.S):
            raise ValueError(f"job {job.job_id}: the profile must be ({self.V}, {self.S})")
        earliest = job.arrival + self.fastest(job)
        if earliest > job.deadline + EPS:
            raise Rejected(job.job_id, earliest)
        self.jobs[job.job_id] = job
        self.new.append(job.job_id)

    # ------------------------------------------------------------------ tables

    def _table(self, ids: Sequence[int], now: float, windowed: bool) -> ConfigTable:
        """Configurations of ``ids`` on the pools' current timelines (see :class:`ConfigTable`)."""
        n, C = len(ids), self.V * self.S
        jobs = [self.jobs[i] for i in ids]
        rt = np.array([j.runtime.ravel() for j in jobs], dtype=np.float64).reshape(n, C) + self.framework_start
        cost = self.vms_of[None, :] * self.prices[self.pool_of][None, :] * rt
        ready = np.array([max(now, j.arrival) for j in jobs], dtype=np.float64)
        deadline = np.array([j.deadline for j in jobs], dtype=np.float64)
        latest = self.window_end[self.pool_of] if windowed else np.full(C, np.inf)
        tab = ConfigTable(
            list(ids), rt, cost, np.full((n, C), np.inf), np.full((n, C), -np.inf), np.zeros((n, C), dtype=np.bool_),
            deadline, latest, ready, self.pool_of, self.vms_of,
        )
        for v in range(self.V):
            self._columns(tab, v, now, np.arange(n))
        return tab

    def _columns(self, tab: ConfigTable, v: int, now: float, rows: NDArray[np.intp]) -> None:
        """(Re)compute pool v's configurations of ``rows`` on its current timeline."""
        if rows.size == 0:
            return
        cols = slice(v * self.S, (v + 1) * self.S)
        n = rows.size
        units = np.tile(np.asarray(self.sizes, dtype=np.float64), n)
        rt = tab.rt[rows, cols]
        # a start later than the window's end or than deadline - runtime is of no use
        lat = np.minimum(tab.latest[v * self.S], tab.deadline[rows][:, None] - rt + EPS).ravel()
        s, f = self.pools[v].earliest(now, units, rt.ravel(), np.repeat(tab.ready[rows], self.S), lat)
        start = s.reshape(n, self.S)
        tab.start[rows, cols], tab.free[rows, cols] = start, f.reshape(n, self.S)
        tab.feas[rows, cols] = np.isfinite(start) & (start + rt <= tab.deadline[rows][:, None] + EPS)

    # ------------------------------------------------------------------ reservations

    def _reserve(self, job_id: int, c: int, start: float, rt: float, cost: float) -> Placement:
        v, s = divmod(int(c), self.S)
        p = Placement(job_id, v, s, self.sizes[s], float(start), float(start + rt), float(cost))
        self.pools[v].add(Interval(job_id, p.vms, p.start, p.end, tentative=True))
        self.tentative[job_id] = p
        return p

    def _cancel(self, job_id: int) -> None:
        p = self.tentative.pop(job_id)
        self.pools[p.vm_type].remove(job_id)
        self.cancellations += 1

    def _fill(self, ids: Sequence[int], now: float) -> None:
        """Alg. 1 lines 29-31: reserve ``ids`` in decreasing priority within the windows,
        each at its lowest-cost configuration on the timeline as it stands then."""
        ids = [i for i in ids if i not in self.tentative]
        if not ids:
            return
        tab = self._table(ids, now, windowed=True)
        schedulable: list[bool] = np.any(tab.feas, axis=1).astype(bool).tolist()
        rest = [i for i, ok in zip(ids, schedulable, strict=True) if not ok]
        sub = tab.rows([q for q, ok in enumerate(schedulable) if ok])
        prio = deferral_priority(sub)
        order = sorted(range(len(sub.ids)), key=lambda q: (-prio[q], self.jobs[sub.ids[q]].arrival, sub.ids[q]))
        left = np.ones(len(sub.ids), dtype=np.bool_)
        for q in order:
            left[q] = False
            best, choice = sub.rows([q]).choose()
            if choice[0] < 0:
                rest.append(sub.ids[q])
                continue
            c = int(choice[0])
            p = self._reserve(sub.ids[q], c, float(sub.start[q, c]), float(sub.rt[q, c]), float(best[0]))
            self._columns(sub, p.vm_type, now, np.flatnonzero(left))
        self.waiting = self._by_arrival(set(self.waiting) | set(rest))

    def _decide_windows(self, ids: list[int], now: float, pools: Iterable[int]) -> list[int]:
        """Alg. 1 lines 20-24 for ``pools``: one window-deciding job each; returns the other jobs."""
        pools = list(pools)
        for v in pools:
            self.decider[v] = None
            self.window_end[v] = now
        if not ids:
            return ids
        tab = self._table(ids, now, windowed=False)
        n = len(ids)
        best, choice = tab.choose()
        pen = penalty(tab)
        after = penalised(after_costs(tab, choice, np.arange(n)), pen)
        np.fill_diagonal(after, 0.0)
        b = penalised(best, pen)
        deferred = (b.sum() - b) + after.sum(axis=1)  # sum_j Cost(Jj, Ji)
        taken = np.zeros(n, dtype=np.bool_)
        home = np.where(choice >= 0, self.pool_of[np.maximum(choice, 0)], -1)  # the pool of each job's cheapest configuration
        for v in pools:
            on_v = self.pool_of == v
            best_v, choice_v = tab.choose(on_v[None, :])
            cand = np.isfinite(best_v) & ~taken & (home == v)
            if not cand.any():
                continue
            after_v = penalised(after_costs(tab, choice_v, np.arange(n)), pen)  # after_v[j, i]: j once i on v
            np.fill_diagonal(after_v, 0.0)
            first = penalised(best_v, pen)
            score = deferred - ((n - 1) * first + after_v.sum(axis=0))
            order = sorted(np.flatnonzero(cand).tolist(), key=lambda q: (-score[q], self.jobs[ids[q]].arrival, ids[q]))
            q = order[0]
            c = int(choice_v[q])
            p = self._reserve(ids[q], c, float(tab.start[q, c]), float(tab.rt[q, c]), float(best_v[q]))
            taken[q] = True
            self.decider[v] = ids[q]
            self.window_end[v] = min(p.end, now + self.window_bound)
        return [i for q, i in enumerate(ids) if not taken[q]]

    # ------------------------------------------------------------------ the step

    def start_due(self, now: float) -> list[Placement]:
        """Tentative reservations starting at or before ``now`` become fixed (Alg. 1 line 33)."""
        due = [p for p in self.tentative.values() if p.start <= now + EPS]
        for p in due:
            del self.tentative[p.job_id]
            self.started[p.job_id] = p
            self.pools[p.vm_type].intervals[p.job_id].tentative = False
        return due

    def finished(self, now: float) -> list[Placement]:
        """Started jobs whose run ended at or before ``now`` (their VMs return to the pool)."""
        done = [p for p in self.started.values() if p.end <= now + EPS]
        for p in done:
            del self.started[p.job_id]
            self.jobs.pop(p.job_id, None)
        for pool in self.pools:
            pool.prune(now)
        return done

    def expiry_times(self, now: float) -> list[float]:
        """When each waiting job becomes one that no configuration can finish by its deadline
        (``deadline - fastest run``), for the instants after ``now``: a live driver steps there so a
        waiting job is missed (and its money released) at that instant, not at the next arrival."""
        return [t for i in self.waiting if (t := self.jobs[i].deadline - self.fastest(self.jobs[i])) > now + EPS]

    def drop_missed(self, now: float) -> None:
        """Move the waiting jobs that can no longer meet their deadline at ``now`` to :attr:`missed` (Sec. III-A)."""
        self._drop_missed(now)

    def _drop_missed(self, now: float) -> None:
        late = [i for i in self.waiting if now + self.fastest(self.jobs[i]) > self.jobs[i].deadline + EPS]
        for i in late:
            self.missed.append(i)
            self.jobs.pop(i)
        if late:
            self.waiting = [i for i in self.waiting if i not in set(late)]

    def plan(self, now: float) -> None:
        """One run of VMAWARESCHEDULE (Alg. 1) at ``now`` over the jobs submitted since the last one."""
        self._drop_missed(now)
        new, self.new = self.new, []
        ended = [v for v in range(self.V) if self.decider[v] is not None and self.window_end[v] <= now + EPS]
        busy = bool(new or self.waiting or self.tentative)
        for v in ended if not busy else ():
            self.decider[v] = None  # nothing to schedule: the pool waits without a window
        redo_window, redo_reserve = bool(ended) and busy, False
        if not redo_window and new and self.tentative:
            redo_window, redo_reserve = self._outranked(new, now)
        if redo_window:
            self.replans += 1
            cj = list(self.tentative) + new + self.waiting
            for job_id in list(self.tentative):
                self._cancel(job_id)
            self.waiting = []
            rest = self._decide_windows(self._by_arrival(cj), now, range(self.V))
            self._fill(rest, now)
            return
        if redo_reserve:
            self.replans += 1
            keep = {d for d in self.decider if d is not None}
            cj = [i for i in self.tentative if i not in keep]
            for job_id in cj:
                self._cancel(job_id)
            new = cj + new
        idle = [v for v in range(self.V) if self.decider[v] is None]
        if idle and (new or self.waiting):
            # A pool without a window takes its window-deciding job from the new and
            # waiting jobs (line 21 for that pool alone); the others keep theirs.
            cj = self._by_arrival(new + self.waiting)
            self.waiting = []
            new = self._decide_windows(cj, now, idle)
        self._fill(new, now)

    def _by_arrival(self, ids: Iterable[int]) -> list[int]:
        return sorted(set(ids), key=lambda i: (self.jobs[i].arrival, i))

    def _outranked(self, new: list[int], now: float) -> tuple[bool, bool]:
        """(redo_timewindow, redo_reserve) of Alg. 1 lines 12-13, with strict comparisons,
        on the timeline without the tentative reservations."""
        held = list(self.tentative)
        saved = {i: self.pools[p.vm_type].remove(i) for i, p in self.tentative.items()}
        try:
            tab = self._table(held + new, now, windowed=True)
            r = np.arange(len(held))
            nn = np.arange(len(held), len(held) + len(new))
            beats = outranks(tab, nn, r)
        finally:
            for i, iv in saved.items():
                if iv is not None:
                    self.pools[self.tentative[i].vm_type].add(iv)
        keep = {d for d in self.decider if d is not None}
        deciders = np.array([h in keep for h in held], dtype=np.bool_)
        redo_reserve = bool(beats.any())
        redo_window = bool(beats[:, deciders].any()) if deciders.any() else False
        return redo_window, redo_reserve

    def next_time(self, now: float) -> float:
        """The next instant something happens without an arrival: a reservation
        starts or, while jobs wait or hold tentative reservations, a window closes
        (``inf`` if none). Run ends need no event: the timelines hold them."""
        times = [p.start for p in self.tentative.values() if p.start > now + EPS]
        if self.waiting or self.tentative:
            times += [t for t in self.window_end.tolist() if t > now + EPS]
        return min(times, default=math.inf)

    def needs_plan(self, now: float) -> bool:
        """True when :meth:`plan` has something to do: new jobs, or a window that
        ended while jobs wait or hold tentative reservations."""
        if self.new:
            return True
        ended = any(d is not None and t <= now + EPS for d, t in zip(self.decider, self.window_end.tolist(), strict=True))
        return ended and bool(self.waiting or self.tentative)

    def reservations(self) -> tuple[Reservation, ...]:
        """Every started and tentative reservation, as the engine's Reservations."""
        return tuple(p.reservation() for p in [*self.started.values(), *self.tentative.values()])

    def to_plan(self) -> Plan:
        """The scheduler's decisions as a clearing's Plan (README, "The engine"): the
        reservations (resource = VM type index, units = VMs) and, for each reserved
        job, a price fixed at acceptance equal to its configuration's resource cost
        (paper 004 leaves pricing out, footnote 2; the cost is the natural figure).
        No job is left to the shared stages, so the share matrix is empty."""
        held = [*self.started.values(), *self.tentative.values()]
        return Plan(
            job_ids=np.zeros(0, dtype=np.int64),
            shares=np.zeros((0, self.V)),
            sub_budgets=np.zeros((0, self.V)),
            payments={p.job_id: PaymentRule.fixed(p.cost) for p in held},
            diagnostics=Diagnostics(mechanism="cura", rounds=0, converged=True, prices=self.prices.copy()),
            reservations=tuple(p.reservation() for p in held),
        )

    # ------------------------------------------------------------------ reconfiguration

    def resize(self, sizes: Iterable[int], now: float, ready_after: float) -> list[int]:
        """Change pool sizes (Sec. III-B). Tentative reservations are cancelled (their
        jobs wait for the next plan, which re-decides every window). A shrinking pool
        loses its VMs as their running jobs end (nothing is killed); a growing pool's
        new VMs are held by a pool-owned interval until ``ready_after`` seconds
        (shutdown + boot) after the last shrinking pool has released its VMs, so the
        servers' cores are never counted twice. Returns the new sizes.

        Raises:
            ValueError: a negative size or the wrong number of sizes.
        """
        want = [int(x) for x in sizes]
        if len(want) != self.V or min(want) < 0:
            raise ValueError(f"{self.V} pool sizes >= 0 are needed")
        for job_id in list(self.tentative):
            self._cancel(job_id)
            self.waiting.append(job_id)
        self.waiting = self._by_arrival(self.waiting)
        self.window_end[:] = now  # the next plan re-decides the windows
        released = now
        for pool, w in zip(self.pools, want, strict=True):
            if w < pool.capacity:
                times, used, _ = pool._profile(now)
                over = np.flatnonzero(used > w)
                if over.size:
                    released = max(released, float(times[over[-1] + 1]) if over[-1] + 1 < times.size else math.inf)
        ready = released + ready_after
        for pool, w in zip(self.pools, want, strict=True):
            extra = w - pool.capacity
            pool.set_capacity(w)
            if extra > 0 and ready > now:
                self._boots += 1
                pool.add(Interval(-self._boots, extra, now, ready, tentative=False))
        return self.pool_sizes
