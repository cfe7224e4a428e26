"""Themis: finish-time fair allocation by a partial-allocation auction (Mahajan, Balasubramanian, Sivaraman, Chawla, Akella; NSDI'20).

*Finish-time fairness* (Sec. 3): ``rho = T_shared / T_ideal``, where
``T_shared`` is the job's finish time in the shared cluster and ``T_ideal``
its running time on a dedicated ``1/N`` share of the cluster, N the average
contention over its life; ``rho <= 1`` means sharing did not hurt it
(:func:`finish_time_fairness`, :func:`ideal_time`). Allocation (Sec. 4-5):
at each round the free resources are offered to the ``1 - f`` fraction of the
jobs with the worst (largest) ``rho`` -- ``f`` is the fairness knob; each bids
its ``rho`` for every allocation; the auction picks the allocation maximising
the product of ``1 / rho`` (proportional fairness) and gives every winner only
the fraction ``c_i`` of it that equals the others' loss from its presence,
``prod_{j != i} V_j(x*) / prod_{j != i} V_j(x*_{-i})`` (partial allocation,
Cole, Gkatzelis and Goel); what is left goes to the jobs outside the auction,
so nothing idles.

:class:`ThemisAllocator` runs that auction for ONE resource type at every
dispatch of the cluster, on the units free then. Set-up and deviations:

* ``f = 0.8`` (the knob's value in the re-implementations of Shockwave's and
  the Themis authors' simulators, ``s_tms_filter = 0.8``); at least one job bids;
* a job is an app; its ``rho`` for ``g`` more units of the type being handed
  out is ``(now - submit + T_rem(g)) / T_ideal`` with the fluid estimate
  ``T_rem = (pending + running tasks of the type) * duration / (running + g)``,
  its later stages at a ``1/N`` share. ``sizes="oracle"`` (the default) reads
  the exact task durations; ``sizes="attained"`` estimates them from progress,
  as the authors do (their Agent measures the app's rate from what it has run):
  a job's task duration of a type is the mean of its finished tasks of that
  type, else the mean of every finished task of that type in the cluster
  (1 s before any has finished), and never less than the age of its oldest
  running task of that type (attained service); task counts are known, as the
  number of iterations of a training job is;
* N is the number of active jobs, time-averaged over the job's life as seen
  at the cluster's dispatches;
* the hidden payment ``c_i * x*_i`` is rounded to the nearest unit, not down:
  free units come one or a few at a time in a cluster without preemption, and
  flooring would hand almost every unit to the leftover rule;
* leftovers go first to the jobs outside the auction, worst ``rho`` first, then
  back to the bidders.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.fairness import QueueTree
from scheduler.published.base import BatchBook
from scheduler.published.jobs import Grants, JobView, waves_time

FAIRNESS_KNOB = 0.8
SIZES = ("oracle", "attained")
PRIOR_S = 1.0  # the estimated task duration before any task of the type has finished


def finish_time_fairness(shared_time: float, ideal_time_s: float) -> float:
    """``rho = T_shared / T_ideal`` (Themis, Sec. 3); 1 when both are 0, inf when only the ideal is.
    Raises ValueError on negative or NaN times."""
    if not (shared_time >= 0 and ideal_time_s >= 0):
        raise ValueError("times must be >= 0")
    if ideal_time_s == 0:
        return 1.0 if shared_time == 0 else math.inf
    return shared_time / ideal_time_s


def ideal_time(
    tasks: NDArray[np.int64], durations: NDArray[np.float64], capacity: NDArray[np.float64], contention: float, staged: bool
) -> float:
    """``T_ideal``: the job's tasks in waves on a ``1/N`` share ``max(1, C / N)`` of every type (Themis, Sec. 3)."""
    units = np.asarray(capacity, dtype=np.float64) / max(1.0, float(contention))
    return waves_time(np.asarray(tasks), np.asarray(durations, dtype=np.float64), units, staged)


class _Bidder:
    """One job's ``log rho(g)`` for ``g`` more units of the type on offer (module docstring)."""

    __slots__ = ("arrival", "cap", "elapsed", "ideal", "later", "running", "staged", "work")

    def __init__(self, view: JobView, pos: int, contention: float, now: float) -> None:
        j = view.resource
        d = view.durations[pos]
        left = view.pending[pos] + view.running[pos]
        self.elapsed = now - float(view.submit[pos])
        self.ideal = ideal_time(view.tasks[pos], d, view.capacity, contention, view.staged)
        self.work = float(left[j]) * float(d[j])
        self.running = int(view.running[pos, j])
        self.cap = int(view.eligible[pos])
        rest = left.copy()
        rest[j] = 0
        self.later = waves_time(rest, d, view.capacity / max(1.0, contention), view.staged)
        self.staged, self.arrival = view.staged, int(view.arrival[pos])

    def log_rho(self, g: int) -> float:
        units = self.running + g
        if units <= 0:
            return math.inf if self.work > 0 else math.log(max(self.elapsed + self.later, 1e-9) / max(self.ideal, 1e-9))
        current = self.work / units
        remaining = current + self.later if self.staged else max(current, self.later)
        return math.log(max(self.elapsed + remaining, 1e-9) / max(self.ideal, 1e-9))


def proportional_fair(bidders: list[_Bidder], free: int) -> list[int]:
    """Units per bidder maximising ``prod 1/rho`` (sum of ``-log rho``) over ``free`` units, one unit
    at a time to the largest drop of ``log rho`` (optimal for the decreasing, convex fluid ``rho``);
    infinite drops (a bidder holding nothing) first, the worse-off then earlier-arrived first."""
    got = [0] * len(bidders)
    heap: list[tuple[float, float, int, int]] = []

    def push(i: int) -> None:
        b = bidders[i]
        if got[i] < b.cap:
            now_, nxt = b.log_rho(got[i]), b.log_rho(got[i] + 1)
            gain = math.inf if math.isinf(now_) else now_ - nxt
            heapq.heappush(heap, (-gain, -nxt, b.arrival, i))

    for i in range(len(bidders)):
        push(i)
    for _ in range(free):
        if not heap:
            break
        i = heapq.heappop(heap)[3]
        got[i] += 1
        push(i)
    return got


def hidden_payments(bidders: list[_Bidder], won: list[int], free: int) -> list[float]:
    """Each winner's fraction ``c_i`` of its allocation (partial allocation; module docstring)."""
    out = [1.0] * len(bidders)
    for i, units in enumerate(won):
        if units == 0 or len(bidders) == 1:
            continue
        others = [b for k, b in enumerate(bidders) if k != i]
        without = proportional_fair(others, free)
        log_c = 0.0
        for b, g_with, g_without in zip(others, [w for k, w in enumerate(won) if k != i], without, strict=True):
            a, z = b.log_rho(g_without), b.log_rho(g_with)
            if math.isinf(z) and math.isinf(a):
                continue
            log_c += a - z  # log V(x*) - log V(x*_-i), V = 1 / rho
        out[i] = min(1.0, math.exp(log_c)) if log_c > -math.inf else 0.0
    return out


class ThemisAllocator(BatchBook):
    """Themis's finish-time fair auction across all jobs for ONE resource type (module docstring).

    Args:
        tree: the queue tree (unused for ranking: Themis ranks jobs).
        fairness_knob: f in [0, 1); the worst ``ceil((1 - f) * n)`` jobs bid.
        sizes: "oracle" (exact task durations) or "attained" (estimated from progress; module docstring).

    Raises ValueError on a knob outside [0, 1) or an unknown ``sizes``.
    """

    policy = "themis"
    job_level = True

    def __init__(
        self, tree: QueueTree, *, t_wait: float = 0.0, history: str = "forever", history_length: float = math.inf,
        fairness_knob: float = FAIRNESS_KNOB, sizes: str = "oracle",
    ) -> None:
        if not 0.0 <= fairness_knob < 1.0:
            raise ValueError("fairness_knob must be in [0, 1)")
        if sizes not in SIZES:
            raise ValueError(f"sizes must be one of {SIZES}")
        super().__init__(tree, t_wait=t_wait, history=history, history_length=history_length)
        self.fairness_knob, self.sizes = float(fairness_knob), sizes
        self._contention = 0.0  # N since the last dispatch
        self._area = 0.0  # integral of N over time
        self._seen: dict[int, tuple[float, float]] = {}  # job -> (first seen, area then)
        self._done: dict[int, tuple[int, float]] = {}  # job -> (finished tasks, their seconds) of this type
        self._all = (0, 0.0)  # every finished task of this type: (count, seconds)
        self._types: list[ThemisAllocator] = [self]  # the cluster's allocators, one per type (link)

    @staticmethod
    def link(allocators: Sequence[Any]) -> None:
        """Let one cluster's per-type allocators read each other's finished tasks (the estimate of ``sizes="attained"``)."""
        for a in allocators:
            a._types = list(allocators)

    def _on_finish(self, leaf: int, app: int, units: int, start: float, now: float) -> None:
        n, total = self._done.get(app, (0, 0.0))
        self._done[app] = (n + units, total + units * (now - start))
        self._all = (self._all[0] + units, self._all[1] + units * (now - start))

    def task_estimate(self, app: int, now: float) -> float:
        """Estimated seconds per task of this type for job ``app`` from progress (module docstring)."""
        n, total = self._done.get(app, (0, 0.0))
        est = total / n if n else (self._all[1] / self._all[0] if self._all[0] else PRIOR_S)
        starts = [b[1] for b in self._batches.values() if b[3] == app]
        return max(est, now - min(starts)) if starts else est

    def _estimated(self, view: JobView, now: float) -> JobView:
        """``view`` with every job's task durations replaced by their estimates (one column per type)."""
        types = self._types if len(self._types) == view.durations.shape[1] else [self] * view.durations.shape[1]
        ids = view.job_ids.tolist()
        est = np.array([[a.task_estimate(int(job), now) for a in types] for job in ids], dtype=np.float64).reshape(view.durations.shape)
        return replace(view, durations=est)

    def _on_time(self, before: float, now: float) -> None:
        if math.isfinite(before):
            self._area += self._contention * (now - before)

    def contention(self, job_id: int, now: float) -> float:
        """N averaged since the job was first seen (the current N before any time passed)."""
        seen = self._seen.get(job_id)
        if seen is None or now <= seen[0]:
            return max(1.0, self._contention)
        area = self._area + self._contention * max(now - self._clock, 0.0)  # N holds since the clock
        return max(1.0, (area - seen[1]) / (now - seen[0]))

    def _observe(self, view: JobView, now: float) -> None:
        ids = set(view.job_ids.tolist())
        for job in ids - set(self._seen):
            self._seen[job] = (now, self._area)
        for job in set(self._seen) - ids:
            del self._seen[job]
            self._done.pop(job, None)
        self._contention = float(view.n)

    def pick_jobs(self, view: JobView, free: int, now: float) -> Grants:
        """The auction over ``free`` units of ``view.resource`` at ``now`` (module docstring)."""
        self._advance(now)
        self._observe(view, now)
        if self.sizes == "attained":
            view = self._estimated(view, now)
        positions = [p for p in range(view.n) if view.eligible[p] > 0]
        if not positions or free <= 0:
            return []
        bidders = [_Bidder(view, p, self.contention(int(view.job_ids[p]), now), now) for p in positions]
        worst = sorted(range(len(bidders)), key=lambda k: (-bidders[k].log_rho(0), -bidders[k].log_rho(1), bidders[k].arrival))
        n_bid = max(1, math.ceil((1.0 - self.fairness_knob) * len(bidders) - 1e-9))
        auction = worst[:n_bid]
        won = proportional_fair([bidders[k] for k in auction], free)
        fraction = hidden_payments([bidders[k] for k in auction], won, free)
        given = {k: math.floor(c * w + 0.5) for k, c, w in zip(auction, fraction, won, strict=True)}
        left = free - sum(given.values())
        for k in worst[n_bid:] + sorted(auction, key=lambda k: (-bidders[k].log_rho(given[k]), bidders[k].arrival)):
            if left <= 0:
                break
            extra = min(bidders[k].cap - given.get(k, 0), left)
            given[k] = given.get(k, 0) + extra
            left -= extra
        return [(positions[k], units) for k, units in given.items() if units > 0]

    def pick_leaf(self, demanding: NDArray[np.bool_], now: float, head: NDArray[np.float64] | None = None) -> int:
        """Not used: Themis ranks jobs (``pick_jobs``). Raises TypeError."""
        raise TypeError("Themis is a job-level policy: the cluster calls pick_jobs")

    def _extra_state(self) -> dict[str, Any]:
        return {"knob": self.fairness_knob, "contention": self._contention, "area": self._area,
                "seen": [[k, t, a] for k, (t, a) in self._seen.items()], "sizes": self.sizes,
                "done": [[k, n, x] for k, (n, x) in self._done.items()], "all": list(self._all)}  # fmt: skip

    def _load_extra(self, extra: dict[str, Any]) -> None:
        self.fairness_knob = float(extra["knob"])
        self._contention, self._area = float(extra["contention"]), float(extra["area"])
        self._seen = {int(k): (float(t), float(a)) for k, t, a in extra["seen"]}
        self.sizes = str(extra.get("sizes", "oracle"))
        self._done = {int(k): (int(n), float(x)) for k, n, x in extra.get("done", [])}
        count, seconds = extra.get("all", [0, 0.0])
        self._all = (int(count), float(seconds))
