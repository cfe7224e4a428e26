"""Tiresias: discretised two-dimensional least attained service (Gu, Chowdhury, Shin, Zhu, Jeon, Qian, Liu, Guo; NSDI'19).

Tiresias schedules jobs without knowing their durations (Sec. 3): a job's
priority is its *attained service* in two dimensions, units held times time
executed (2D-LAS, Sec. 3.2); the continuous priority is discretised into K
queues by thresholds on attained service -- a job starts in the highest queue
``Q_0`` and is demoted when its service passes its queue's threshold; queues
are served in order, jobs inside a queue in arrival (FIFO) order (Sec. 3.2,
"Discretized 2D-LAS"). Against starvation a job whose pending time since its
last promotion reaches ``PROMOTE_KNOB`` times its execution time since then is
promoted back to ``Q_0`` and its counters restart (the authors' simulator,
SymbioticLab/Tiresias ``run_sim.py``, ``dlas_sim_jobs``: ``last_pending_time >=
executed_time * solve_starvation``). The pending time is *cumulative*: it grows
while the job waits after it first ran and is reset only at a promotion, never
when the job runs again (``last_pending_time`` is zeroed only beside
``executed_time``).

* :func:`queue_of`, :func:`promoted` -- the two rules as functions.
* :class:`TiresiasAllocator` -- the policy as a job-level fair-share-stage
  allocator for ONE resource type: service is counted in unit-seconds of that
  type (the 2D product), from the cluster's ``record_start`` / ``record_finish``.

Set-up and deviations: the queue thresholds default to the authors' (two
queues, one limit of 3,600 unit-seconds: the simulator README's first example,
"there are two queues, and the threshold for Q1 is 3600 seconds", and ``jobs.py``'s
per-GPU-class ``g_job``: ``num_queue = 2``, ``queue_limit[0] = 3600``);
:data:`THREE_LIMITS_S` (30 min, 1 h and 2 h: ``Q0:[0, 30min)`` ... ``Q3:[2h, inf)``,
the ``dlas_sim_jobs`` docstring) is a labelled variant. The knob defaults to 2 (our
choice: the paper leaves it to the operator, the authors' simulator's default is
0, off). The cluster never preempts: a job loses its
place only at task boundaries (Tiresias preempts whole jobs), and a job in a
higher queue takes the free units before those in lower ones.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.running import from_json_float, json_float
from scheduler.published.base import BatchBook
from scheduler.published.jobs import Grants, JobView, greedy_in_order

THRESHOLDS_S: tuple[float, ...] = (3600.0,)  # the authors' default: two queues
THREE_LIMITS_S: tuple[float, ...] = (1800.0, 3600.0, 7200.0)  # the variant of the dlas_sim_jobs docstring
PROMOTE_KNOB = 2.0


def queue_of(service: float, thresholds: Sequence[float]) -> int:
    """Queue index of a job with ``service`` attained (0 = highest priority): the number of
    thresholds it has reached (Sec. 3.2; demotion at ``service >= threshold``)."""
    return sum(1 for limit in thresholds if service >= limit)


def promoted(waited: float, executed: float, knob: float) -> bool:
    """Starvation rule: promote a job that ran ``executed`` s since its last promotion and has
    been pending ``waited`` s in total since then (cumulative, not since it last ran), iff it
    ran at all and ``waited >= knob * executed``."""
    return executed > 0 and waited >= knob * executed


class TiresiasAllocator(BatchBook):
    """Discretised 2D-LAS across all jobs for ONE resource type (module docstring).

    Args:
        tree: the queue tree (unused for ranking: Tiresias ranks jobs).
        thresholds: increasing attained-service limits of the queues, unit-seconds.
        promote_knob: the starvation knob (inf: never promote).
    """

    policy = "tiresias"
    job_level = True

    def __init__(
        self, tree: QueueTree, *, t_wait: float = 0.0, history: str = "forever", history_length: float = math.inf,
        thresholds: Sequence[float] = THRESHOLDS_S, promote_knob: float = PROMOTE_KNOB,
    ) -> None:
        limits = [float(x) for x in thresholds]
        if any(b <= a for a, b in itertools.pairwise(limits)) or any(x <= 0 for x in limits) or not promote_knob >= 0:
            raise ValueError("thresholds must be increasing and > 0, promote_knob >= 0")
        super().__init__(tree, t_wait=t_wait, history=history, history_length=history_length)
        self.thresholds, self.promote_knob = tuple(limits), float(promote_knob)
        self._jobs: dict[int, list[float]] = {}  # app -> [service, executed, last change, pending, promotions]

    def _record(self, app: int, now: float) -> list[float]:
        rec = self._jobs.get(app)
        if rec is None:
            rec = self._jobs[app] = [0.0, 0.0, now, 0.0, 0.0]
        return rec

    def _accrue(self, rec: list[float], units_before: int, now: float) -> None:
        dt = now - rec[2]
        rec[0] += units_before * dt
        if units_before > 0:
            rec[1] += dt
        elif rec[1] > 0:  # pending after it ran (since its last promotion): run_sim's last_pending_time
            rec[3] += dt
        rec[2] = now

    def _on_start(self, leaf: int, app: int, units: int, now: float) -> None:
        self._accrue(self._record(app, now), self.job_units(app) - units, now)

    def _on_finish(self, leaf: int, app: int, units: int, start: float, now: float) -> None:
        self._accrue(self._record(app, now), self.job_units(app) + units, now)

    def service(self, app: int, now: float) -> tuple[float, float]:
        """``(attained service in unit-seconds, executed seconds)`` of job ``app`` since its last promotion."""
        rec = self._jobs.get(app)
        if rec is None:
            return 0.0, 0.0
        units = self.job_units(app)
        return rec[0] + units * (now - rec[2]), rec[1] + (now - rec[2] if units else 0.0)

    def pending(self, app: int, now: float) -> float:
        """Seconds job ``app`` has been pending (holding no unit) since its last promotion, counted
        from when it first ran after it; cumulative, reset only by a promotion."""
        rec = self._jobs.get(app)
        if rec is None:
            return 0.0
        return rec[3] + (now - rec[2] if self.job_units(app) == 0 and rec[1] > 0 else 0.0)

    def queue(self, app: int, now: float) -> int:
        """The job's queue now, after the starvation rule (promotes as a side effect)."""
        service, executed = self.service(app, now)
        q = queue_of(service, self.thresholds)
        rec = self._jobs.get(app)
        if rec is not None and q > 0 and self.job_units(app) == 0 and promoted(self.pending(app, now), executed, self.promote_knob):
            rec[0], rec[1], rec[2], rec[3] = 0.0, 0.0, now, 0.0
            rec[4] += 1
            return 0
        return q

    def promotions(self, app: int) -> int:
        """How many times job ``app`` was promoted."""
        rec = self._jobs.get(app)
        return 0 if rec is None else int(rec[4])

    def pick_jobs(self, view: JobView, free: int, now: float) -> Grants:
        """Grants of up to ``free`` units: jobs by (queue, arrival), each taking what it can use."""
        self._advance(now)
        ids = view.job_ids.tolist()
        eligible = view.eligible.tolist()
        keys = [(self.queue(int(ids[p]), now), int(view.arrival[p]), p) for p in range(view.n) if eligible[p] > 0]
        self._forget_departed(set(ids))
        return greedy_in_order(view, [p for _, _, p in sorted(keys)], free)

    def _forget_departed(self, active: set[int]) -> None:
        for app in [a for a in self._jobs if a not in active and not self.job_units(a)]:
            del self._jobs[app]

    def pick_leaf(self, demanding: NDArray[np.bool_], now: float, head: NDArray[np.float64] | None = None) -> int:
        """Not used: Tiresias ranks jobs (``pick_jobs``). Raises TypeError."""
        raise TypeError("Tiresias is a job-level policy: the cluster calls pick_jobs")

    def _extra_state(self) -> dict[str, Any]:
        jobs = [[k, *v] for k, v in self._jobs.items()]
        return {"thresholds": list(self.thresholds), "knob": json_float(self.promote_knob), "jobs": jobs}

    def _load_extra(self, extra: dict[str, Any]) -> None:
        self.thresholds, self.promote_knob = tuple(float(x) for x in extra["thresholds"]), from_json_float(extra["knob"], math.inf)
        self._jobs = {int(k): [float(x) for x in rest] for k, *rest in extra["jobs"]}
