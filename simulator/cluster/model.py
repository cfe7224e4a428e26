"""The cluster model shared by the live market and offline what-if runs.

A cluster has ``C_j`` slots of each of m resource types and a queue tree
whose leaves hold jobs. Every task occupies one slot of its type for its
duration. Whenever slots are free, they are offered to an ordered list of
dispatch stages (``simulator.cluster.stages``; README, "The engine") that apply the
latest Plan (``scheduler.plan``):

1. reservations in force get their units first (ERA, paper 001);
2. the leaf queue comes from a fair-share allocator per type (FIFO, MLRF,
   LTRF or H-LTRF, paper 002, Algs. 1-2, ``scheduler.fairshare.allocator``) and the
   job inside the leaf from the Plan's shares (Abacus, paper 000, Sec. 3: a
   free unit of j goes to job i with probability ``s_ij`` renormalised over
   eligible jobs, or the deterministic stride rule; ``scheduler.dispatch``).

Tasks of one job and type started at one instant form a *batch*: they end
together, so they are one event and one allocator entry (the cluster's cost
grows with batches, not tasks).

Time only moves inside :meth:`Cluster.advance`, through an event heap
(``simulator.engine``); everything else is deterministic given the seed, and
the whole state round-trips through JSON (:meth:`Cluster.to_state`).

The state and its queries are :class:`~simulator.cluster.core.ClusterCore`'s; the
modules this one delegates to (stages, plan application, reservations,
reconfiguration, saved state) take that core or a
:class:`~simulator.cluster.view.ClusterView`, never this module, so nothing this
module imports imports it back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.allocator import FairShareAllocator
from scheduler.fairshare.fairness import QueueTree
from scheduler.plan import Plan
from simulator.cluster import plan_apply, reconfigure
from simulator.cluster import state as cluster_state
from simulator.cluster.jobs import JobState, ReportBuilder, validate_spec
from simulator.cluster.lookahead import EarlyStartStage
from simulator.cluster.reservations import ReservationBook
from simulator.cluster.stages import ReservationStage, SharedStage, hand_out_fair_share
from simulator.engine import ARRIVE, DONE_EXT, FAIL_EXT, FINISH, WAKE
from simulator.records import AdvanceReport, FairnessSample, JobFinished, JobSpec, TaskLaunch

__all__ = ["AdvanceReport", "Cluster", "FairnessSample", "JobFinished", "JobSpec"]


class Cluster(ReservationBook):
    """Slots, jobs, fair-share allocators and a share dispatcher, run forward in time.

    Built with :class:`~simulator.cluster.core.ClusterCore`'s arguments (capacity,
    tree, policy, ``t_wait``, history, dispatch, staged, seed, sample interval,
    clock, known durations, stages), which holds the state and its queries; this
    class adds what changes it: jobs submitted and cancelled, a Plan applied, the
    configuration changed, time advanced.
    """

    # ------------------------------------------------------------------ jobs

    def submit(self, job: JobSpec) -> None:
        """Make ``job`` known from ``job.submit_time`` on.

        A job submitted at or before ``now`` is active at once (its tasks
        start at the next :meth:`advance`, which first hands out free slots
        at the current time); a later one arrives by an event. A job without
        tasks departs at its arrival, inside ``advance``.

        Raises:
            ValueError: duplicate id among the known (arriving or active)
                jobs, wrong number of entries, negative counts or durations,
                leaf out of range.
        """
        validate_spec(job, self.m, len(self.placement.leaves))
        if job.job_id in self._jobs:
            raise ValueError(f"job {job.job_id} is already known")
        state = JobState(job)
        self._jobs[job.job_id] = state
        if job.submit_time <= self.now and not state.is_finished():
            self._integrate_to(self.now)
            self._activate(state)
        else:
            self._events.push(max(job.submit_time, self.now), ARRIVE, (ARRIVE, job.job_id))

    def cancel(self, job_id: int) -> None:
        """Drop the job's pending tasks and kill its running ones now.

        Killed tasks count as used up to now. No :class:`JobFinished` is
        reported for a cancelled job.

        Raises:
            KeyError: the job is not known (never submitted or departed).
        """
        job = self._jobs[job_id]
        self._integrate_to(self.now)
        if not job.active:
            self._events.remove_if(lambda p: p[0] == ARRIVE and p[1] == job_id)
            del self._jobs[job_id]
            return
        for j in range(self.m):
            self._count_eligible(job, j, -job.eligible_pending(j, self.staged))
            job.drop(j, job.pending[j], 0)
        killed = self._events.remove_if(lambda p: p[0] == FINISH and p[1] == job_id)
        for _, _, _, (_, _, j, key, units, shared) in killed:
            job.drop(j, 0, units)
            self._ledger.add_running(job.leaf, j, -units)
            self._busy[j] -= units
            if shared:
                self._allocators[j].record_finish(key, self.now)
        for key in [k for k, p in self._external.items() if p[1] == job_id]:  # the executor is told to kill them
            _, _, j, _, units, shared, alloc_key, _, _ = self._external.pop(key)
            job.drop(j, 0, units)
            self._ledger.add_running(job.leaf, j, -units)
            self._busy[j] -= units
            if shared:
                self._allocators[j].record_finish(alloc_key, self.now)
            self.kills.append(key)
        self._retire(job)

    def set_shares(self, shares: Mapping[int, NDArray[np.float64]]) -> None:
        """Replace the within-leaf shares by the latest clearing's (``simulator.cluster.plan_apply.set_shares``).

        Raises:
            ValueError: a share vector of the wrong shape, negative, NaN or infinite.
        """
        plan_apply.set_shares(self, shares)

    def set_plan(self, plan: Plan) -> None:
        """Apply a clearing's Plan: its shares and its reservations (README, "The engine";
        ``simulator.cluster.plan_apply.set_plan``).

        Raises:
            ValueError: bad shares, or a reservation on a resource type the
                cluster does not have.
        """
        plan_apply.set_plan(self, plan)

    def set_capacity(self, capacity: Sequence[int]) -> None:
        """Change the slot counts; shrinking never kills (``simulator.cluster.reconfigure``).
        Raises ValueError on a wrong length or negative / non-integer entries."""
        reconfigure.set_capacity(self, capacity)

    def set_dispatch(self, dispatch: str) -> None:
        """Choose jobs inside leaves by another rule (``simulator.cluster.reconfigure``). Raises UnknownName."""
        reconfigure.set_dispatch(self, dispatch)

    def set_policy(self, *, policy: str | None = None, t_wait: float | None = None, history: str | None = None,
                   history_length: float | None = None) -> None:
        """Switch the fair-share policy, ``T_wait`` and/or the history mode, keeping usage where it
        can (``simulator.cluster.reconfigure``). Raises ValueError on a bad name, ``t_wait`` or length."""
        reconfigure.set_policy(self, policy=policy, t_wait=t_wait, history=history, history_length=history_length)

    # ------------------------------------------------------- external executor

    def complete(self, key: int, units: int, at: float) -> None:
        """``units`` tasks of the external batch ``key`` ended well at simulated time ``at`` (a time
        before ``now`` counts as ``now``): they are done at that time, inside the next :meth:`advance`
        that reaches it, and a job whose last tasks they were departs then.

        Raises:
            KeyError: no running external batch has that key.
            ValueError: ``units`` < 1 or more than the batch runs, or ``at`` is NaN.
        """
        self._report_end(DONE_EXT, key, units, at)

    def fail(self, key: int, units: int, at: float) -> None:
        """``units`` tasks of the external batch ``key`` failed at ``at`` (non-zero exit, a node or the
        time limit; lost by the executor): they return to pending and are dispatched again. The
        caller bounds the retries. Raises like :meth:`complete`."""
        self._report_end(FAIL_EXT, key, units, at)

    def _report_end(self, kind: int, key: int, units: int, at: float) -> None:
        payload = self._external[key]
        if not 1 <= units <= payload[4] or math.isnan(at):
            raise ValueError(f"batch {key} runs {payload[4]} tasks: cannot end {units} at {at}")
        self._events.push(max(float(at), self.now), FINISH, [kind, key, units])

    def external_batches(self) -> list[TaskLaunch]:
        """The batches the external executor runs now (units still running)."""
        return [TaskLaunch(p[3], p[1], p[2], p[4], self._jobs[p[1]].spec.task_duration[p[2]], bool(p[5]), p[7])
                for p in self._external.values()]

    def simulate_external(self) -> None:
        """Run on as the model: each external batch ends at its expected time (start + duration,
        never before now) and later starts are simulated. For look-ahead copies (``waiting.estimate_start``)."""
        for _, job_id, j, _, units, shared, alloc_key, _, expected_end in self._external.values():
            self._events.push(max(expected_end, self.now), FINISH, [FINISH, job_id, j, alloc_key, units, shared])
        self._external.clear()
        self.executor = "simulated"

    def take_launches(self) -> list[TaskLaunch]:
        """The batches started since the last call, for the external executor to run (the outbox empties)."""
        out, self.launches = self.launches, []
        return out

    def take_kills(self) -> list[int]:
        """Keys of external batches killed since the last call (cancelled jobs), for the executor to stop."""
        out, self.kills = self.kills, []
        return out

    def _external_end(self, key: int, units: int, *, failed: bool) -> None:
        payload = self._external.get(key)
        if payload is None:
            return  # its job was cancelled meanwhile: the end is moot
        _, job_id, j, _, running, shared, alloc_key, _, expected_end = payload
        job = self._jobs[job_id]
        units = min(units, running)
        left = running - units
        if left:
            payload[4] = left
        else:
            del self._external[key]
        if shared:  # the allocator's books: this batch ends now; what is left of it runs on as a new batch
            allocator = self._allocators[j]
            allocator.record_finish(alloc_key, self.now)
            if left:
                payload[6], self._next_key = self._next_key, self._next_key + 1
                expected = max(expected_end - self.now, 0.0) if self.known_durations else None
                allocator.record_start(payload[6], job.leaf, self.now, expected, left, app=job_id if job_id >= 0 else None)
        if failed:
            self._fail_units(job, j, units)
        else:
            self._finish_units(job, j, units)

    def _fail_units(self, job: JobState, j: int, units: int) -> None:
        before = job.eligible_pending(j, self.staged)
        job.drop(j, -units, units)  # back to pending: dispatched again
        self._count_eligible(job, j, job.eligible_pending(j, self.staged) - before)
        self._ledger.add_running(job.leaf, j, -units)
        self._busy[j] -= units
        self.placement.invalidate(job.leaf, j)
        self._touch(job)
        assert self._report is not None
        self._report.failed += units

    # ---------------------------------------------------------------- time

    def advance(self, until: float, *, stop_on_departure: bool = False) -> AdvanceReport:
        """Run the cluster to ``until`` (s), or to the first departure.

        Free slots are handed out first at the current time, then events are
        processed in time order; after all events of one time, free slots
        are handed out again (work conservation). Zero-duration tasks finish
        at the time they start, in the same call. With ``until = inf`` the
        call stops when no event is left.

        Args:
            until: end time, >= ``now``.
            stop_on_departure: return right after the first event time at
                which a job departed, with ``now`` = that time and the freed
                slots not yet handed out (so a market can re-clear first; the
                next call hands them out at that same time).

        Raises:
            ValueError: ``until < now`` or NaN.
        """
        if not until >= self.now:
            raise ValueError(f"cannot advance to {until}: now is {self.now}")
        self._report = report = ReportBuilder()
        try:
            self._dispatch()
            while self._step(until):
                if report.finished and stop_on_departure:
                    return report.build(self.now)
                self._dispatch()
            if not math.isinf(until):
                self.now = until  # integrals stay open: no cut where nothing changed
            return report.build(self.now)
        finally:
            self._report = None

    def _step(self, until: float) -> bool:
        """Process the next sample or event time <= until; False when none."""
        while True:
            t_event = self._events.peek_time()
            if math.isinf(t_event) and math.isinf(until):
                return False
            t_sample = self._sample_origin + self._sample_k * self.sample_interval
            if min(t_event, t_sample) > until:
                return False
            if t_sample <= t_event:
                self._integrate_to(t_sample)
                assert self._report is not None
                self._report.samples.append(self.sample())
                self._sample_k += 1
                continue
            self._integrate_to(t_event)
            while self._events.peek_time() == t_event:
                self._handle(self._events.pop()[3])
            return True

    def _handle(self, payload: Sequence[Any]) -> None:
        if payload[0] == FINISH:
            _, job_id, j, key, units, shared = payload
            self._finish_batch(self._jobs[int(job_id)], int(j), int(key), int(units), int(shared))
        elif payload[0] in (DONE_EXT, FAIL_EXT):
            self._external_end(int(payload[1]), int(payload[2]), failed=payload[0] == FAIL_EXT)
        elif payload[0] == WAKE:
            pass  # a reservation window opens or closes: the dispatch after this time hands out slots
        else:
            self._activate(self._jobs[int(payload[1])])

    # ------------------------------------------------------ state changes

    def _touch(self, job: JobState) -> None:
        if self._report is not None:
            self._report.changed[job.job_id] = job

    def _activate(self, job: JobState) -> None:
        job.active = True
        job.seq, self._next_seq = self._next_seq, self._next_seq + 1
        self._active[job.job_id] = job
        job.reserved = any(r.job_id == job.job_id for r in self._reservations)
        self.placement.add(job.job_id, job.leaf)
        for j in range(self.m):
            self._count_eligible(job, j, job.eligible_pending(j, self.staged))
        self._touch(job)
        if job.is_finished():
            self._retire(job)

    def _retire(self, job: JobState) -> None:
        """Remove a job that finished (reported) or was cancelled (not)."""
        del self._jobs[job.job_id]
        self._active.pop(job.job_id, None)
        self.placement.remove(job.job_id, job.leaf)
        self._touch(job)
        if self._report is not None and job.is_finished():
            start = self.now if job.start_time is None else job.start_time
            done = JobFinished(job.job_id, job.spec.submit_time, start, self.now)
            self._report.finished.append(done)

    def start_tasks(self, job: JobState, j: int, units: int, *, shared: bool) -> None:
        """Start ``units`` eligible pending tasks of type j of ``job`` now (a dispatch
        stage's decision). ``shared`` tasks count toward the fair-share
        allocator's usage; reserved ones do not (they were sold apart).

        Raises:
            RuntimeError: more units than the job has eligible tasks or the
                type has free slots (a stage's counts are wrong).
        """
        if units < 1 or units > job.eligible_pending(j, self.staged) or self._busy[j] + units > self.capacity[j]:
            raise RuntimeError(f"cannot start {units} tasks of type {j} for job {job.job_id}")
        duration = job.spec.task_duration[j]
        job.pending[j] -= units
        job.running[j] += units
        if job.start_time is None:
            job.start_time = self.now
            assert self._report is not None
            self._report.first_starts[job.job_id] = self.now
        self._count_start(job, j, units)
        self._busy[j] += units
        if job.pending[j] == 0:
            self.placement.invalidate(job.leaf, j)
        batch = self._batches.get((job.job_id, j)) if shared else None
        if batch is not None:  # the same job got more units at this instant: grow its batch
            batch[4] += units
            self._allocators[j].record_more(batch[3], units)
        else:
            key, self._next_key = self._next_key, self._next_key + 1
            if self.executor == "external":  # a real cluster runs it: its end is reported, not scheduled
                payload = [FINISH, job.job_id, j, key, units, 1 if shared else 0, key, self.now, self.now + duration]
                self._external[key] = payload
                self._fresh.append(payload)
            else:
                payload = [FINISH, job.job_id, j, key, units, 1 if shared else 0]
                self._events.push(self.now + duration, FINISH, payload)
            if shared:
                self._batches[(job.job_id, j)] = payload
                expected = duration if self.known_durations else None
                app = job.job_id if job.job_id >= 0 else None  # the job is the application (Sec. 6.2.1)
                self._allocators[j].record_start(key, job.leaf, self.now, expected, units, app=app)
        self._touch(job)
        assert self._report is not None
        self._report.started += units

    def _finish_batch(self, job: JobState, j: int, key: int, units: int, shared: int) -> None:
        if shared:
            self._allocators[j].record_finish(key, self.now)
        self._finish_units(job, j, units)

    def _finish_units(self, job: JobState, j: int, units: int) -> None:
        moved = job.finish(j, units)
        self._ledger.add_running(job.leaf, j, -units)
        self._busy[j] -= units
        if moved and self.staged and not job.is_finished():
            stage = job.stage
            self._count_eligible(job, stage, job.pending[stage])
            self.placement.invalidate(job.leaf, stage)
        self._touch(job)
        assert self._report is not None
        self._report.completed += units
        if job.is_finished():
            self._retire(job)

    # ------------------------------------------------------------ dispatch

    def _dispatch(self) -> None:
        """Offer every free slot to the dispatch stages, in order (``simulator.cluster.stages``).

        Allocators are told which leaves demand before and after, so an
        H-LTRF starvation clock starts when a leaf begins to demand, not at
        the next free slot (paper 002, Alg. 2: a leaf waits while it has
        pending tasks); the shared stage does that.
        """
        self._batches.clear()
        stages = self.stages
        # without reservations the default pipeline's first and last stages pass every unit on untouched
        shared_only = not self._reservations and len(stages) == 3 and type(stages[0]) is ReservationStage \
            and type(stages[1]) is SharedStage and type(stages[2]) is EarlyStartStage
        for j, capacity in enumerate(self.capacity.tolist()):
            free = int(capacity) - self._busy[j]
            if shared_only and free > 0:
                allocator = self._allocators[j]
                if type(allocator) is FairShareAllocator and allocator.work_conserving:
                    hand_out_fair_share(self, allocator, j, free)  # SharedStage.hand_out's path here, without the hops
                else:
                    stages[1].hand_out(self, j, free)
                continue
            if free <= 0 and not self._reservations:
                allocator = self._allocators[j]
                if isinstance(allocator, FairShareAllocator):
                    allocator.update_demand_flags(self.shared_flags(j), self.now)
                elif allocator.tracks_demand:
                    allocator.update_demand(self.shared_demanding(j), self.now)
                continue
            for stage in self.stages:
                free = stage.hand_out(self, j, max(free, 0))
        self._batches.clear()
        if self._fresh:  # the external executor's launches, with each batch's final size
            self.launches += [TaskLaunch(p[3], p[1], p[2], p[4], self._jobs[p[1]].spec.task_duration[p[2]], bool(p[5]), p[7])
                              for p in self._fresh]
            self._fresh.clear()

    # ------------------------------------------------------- serialisation

    def to_state(self) -> dict[str, Any]:
        """Everything needed to continue the run, JSON-serialisable (``simulator.cluster.state``)."""
        return cluster_state.dump(self)

    @classmethod
    def from_state(cls, tree: QueueTree, state: dict[str, Any]) -> Cluster:
        """Rebuild a cluster saved by :meth:`to_state` on the same ``tree``;
        ``advance`` then continues exactly as if it had never been saved.

        Raises:
            ValueError: unknown state format or a tree with another number of leaves.
        """
        cfg = cluster_state.config_of(tree, state)
        cluster = cls(state["capacity"], tree, **cfg, now=state["now"])
        cluster_state.restore(cluster, tree, state)
        return cluster
