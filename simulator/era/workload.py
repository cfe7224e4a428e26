"""ERA's simulations (paper 001, Sec. 4): request streams, one mechanism over a stream,
execution, and the paper's metrics (welfare, share of requested value, revenue, late jobs).

Requests are in integer slots. :func:`fb2009_requests` derives the paper's
"6 job classes" workload from the FB-2009 trace (paper 001, Sec. 4): each trace job becomes
"W units for T slots in [A, D)" (W = its map and reduce tasks, capped; T = its
task-seconds spread over W units, in slots; A = its submit slot; D = A + T
times a random slack), its class is the sextile of its size W * T (by rank, ties broken at random: most trace
jobs have a single task), and its
value is its size times a unit value: $1 per unit-slot for the class of the
largest jobs, $10 for the other five (the paper's Yahoo set-up), times a
uniform noise in [0.5, 1.5]. :func:`day_night_requests` is the paper's Sec. 3.2
example, where the LP-based predictor beats spreading.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scheduler.era.mechanisms import Decision, ReservationMechanism
from scheduler.era.predictors import PastRequest
from simulator.workloads.traces import SwimRule, load_swim


@dataclass(frozen=True)
class EraRequest:
    """A reservation request of a simulated stream (paper 001, Sec. 2.3.1), in slots.

    Attributes:
        job_id: position in the stream; cls: its job class; units: W;
        duration: T; arrival, deadline: [A, D); value: V (money).
    """

    job_id: int
    cls: int
    units: int
    duration: int
    arrival: int
    deadline: int
    value: float

    @property
    def past(self) -> PastRequest:
        """The request as a predictor's history entry."""
        return PastRequest(self.units, self.duration, self.arrival, self.deadline, self.value)


def fb2009_requests(
    path: str | Path, *, slot_s: float = 60.0, max_units: int = 50, classes: int = 6, low_value: float = 1.0,
    high_value: float = 10.0, slack: tuple[float, float] = (1.5, 4.0), seed: int = 0, hours: float | None = None,
) -> list[EraRequest]:
    """The FB-2009 trace as a 6-class ERA workload (module docstring); sorted by arrival.

    Args:
        path: the SWIM TSV; slot_s: seconds per slot; max_units: cap on W;
        classes: size classes (sextiles by default); low_value / high_value:
        money per unit-slot of the largest class / of the others; slack:
        the window is T times a uniform factor in this range (at least T + 1);
        seed: values and slacks; hours: only the first hours of the trace (None: all 24).
    """
    jobs = load_swim(path, rule=SwimRule(), hours=hours)
    rng = np.random.default_rng(seed)
    shapes = []
    for job in jobs:
        tasks = sum(job.tasks)
        work = sum(n * d for n, d in zip(job.tasks, job.task_duration, strict=True))
        units = max(1, min(tasks, max_units))
        shapes.append((units, max(1, math.ceil(work / units / slot_s)), int(job.submit_time // slot_s)))
    sizes = np.array([w * t for w, t, _ in shapes], dtype=np.float64)
    # classes of equal count by size rank (most trace jobs have one task: ties broken at random)
    rank = np.empty(len(shapes), dtype=np.int64)
    rank[np.lexsort((rng.random(len(shapes)), sizes))] = np.arange(len(shapes))
    cls = rank * classes // max(len(shapes), 1)
    out = []
    for k, ((units, duration, arrival), c) in enumerate(zip(shapes, cls.tolist(), strict=True)):
        unit = low_value if c == classes - 1 else high_value
        factor = rng.uniform(*slack)
        deadline = arrival + max(duration + 1, math.ceil(duration * factor))
        out.append(EraRequest(k, int(c), units, duration, arrival, deadline, unit * units * duration * rng.uniform(0.5, 1.5)))
    return sorted(out, key=lambda r: (r.arrival, r.job_id))


def day_night_requests(days: int, capacity: int, *, slots_per_day: int = 24, seed: int = 0) -> list[EraRequest]:
    """Paper 001, Sec. 3.2: high-value jobs (10 per unit-slot) can run only by day (the
    first half of each day); medium (5) and low (1) ones by day or night. Each class
    asks for the whole capacity over half a day, at exactly its unit value; every
    day's requests arrive at its start, in random order."""
    rng = np.random.default_rng(seed)
    half = slots_per_day // 2
    out: list[EraRequest] = []
    for day in range(days):
        start = day * slots_per_day
        day_jobs = []
        for cls, (unit, end) in enumerate(((10.0, half), (5.0, slots_per_day), (1.0, slots_per_day))):
            need = capacity * half
            while need > 0:
                w, t = int(rng.integers(1, 5)), int(rng.integers(1, 4))
                need -= w * t
                day_jobs.append((cls, w, t, start, start + end, unit * w * t))
        for k in rng.permutation(len(day_jobs)).tolist():
            cls, w, t, a, d, v = day_jobs[k]
            out.append(EraRequest(len(out), cls, w, t, a, d, v))
    return out


@dataclass(frozen=True)
class StreamResult:
    """One mechanism over one stream: decisions and the paper's metrics.

    Attributes:
        name: the mechanism's label.
        decisions: one per request, in stream order.
        finish: slot each accepted request finished executing (None: rejected).
        welfare: value of accepted requests that finished by their deadline (money).
        requested: value of all requests (money); share = welfare / requested.
        revenue: prices of accepted requests (money).
        accepted, late: counts; late_pct = 100 * late / accepted.
        by_class: class -> (accepted, requests, welfare).
    """

    name: str
    decisions: list[Decision]
    finish: list[int | None]
    welfare: float
    requested: float
    revenue: float
    accepted: int
    late: int
    by_class: dict[int, tuple[int, int, float]]

    @property
    def share(self) -> float:
        return self.welfare / self.requested if self.requested > 0 else 0.0

    @property
    def late_pct(self) -> float:
        return 100.0 * self.late / self.accepted if self.accepted else 0.0


def run_stream(name: str, mechanism: ReservationMechanism, requests: Sequence[EraRequest], *, fifo_execution: bool = False,
               progress: Callable[[float], None] | None = None) -> StreamResult:
    """Offer ``requests`` in order to ``mechanism`` (``reserve``), then execute the accepted ones.

    Execution: a mechanism that never over-promises runs each job at its reserved
    start; with ``fifo_execution`` (On-demand, which checks only its arrival slot)
    accepted jobs queue first-come first-served from their start for W free units
    of the real capacity, and finish late when the queue delays them.
    """
    decisions = []
    for k, r in enumerate(requests):
        decisions.append(mechanism.reserve(r.units, r.duration, r.arrival, r.deadline, r.value))
        if progress is not None and k % 500 == 0:
            progress(k / max(len(requests), 1))
    if fifo_execution:
        finish = _fifo_finish(requests, decisions, mechanism.capacity)
    else:
        finish = [None if not d.accepted or d.start is None else d.start + r.duration for r, d in zip(requests, decisions, strict=True)]
    return _metrics(name, requests, decisions, finish)


def _fifo_finish(requests: Sequence[EraRequest], decisions: Sequence[Decision], capacity: int) -> list[int | None]:
    """Run accepted jobs first-come first-served (head of line waits for W free units)."""
    finish: list[int | None] = [None] * len(requests)
    order = sorted((d.start, k) for k, d in enumerate(decisions) if d.accepted and d.start is not None)
    queue: deque[int] = deque()
    ends: list[tuple[int, int]] = []  # (finish slot, units)
    free, t, i = capacity, 0, 0
    while i < len(order) or queue:
        if not queue and i < len(order):
            t = max(t, order[i][0])
        while i < len(order) and order[i][0] <= t:
            queue.append(order[i][1])
            i += 1
        ends.sort()
        while ends and ends[0][0] <= t:
            free += ends.pop(0)[1]
        while queue and requests[queue[0]].units <= free:
            k = queue.popleft()
            free -= requests[k].units
            finish[k] = t + requests[k].duration
            ends.append((t + requests[k].duration, requests[k].units))
        nxt = [e for e, _ in ends[:1]] + ([order[i][0]] if i < len(order) else [])
        if queue and not nxt:
            raise RuntimeError("a job needs more units than the capacity")
        t = max(t + 1, min(nxt)) if nxt else t + 1
    return finish


def _metrics(name: str, requests: Sequence[EraRequest], decisions: list[Decision], finish: list[int | None]) -> StreamResult:
    welfare = revenue = 0.0
    accepted = late = 0
    by_class: dict[int, list[float]] = {}
    for r, d, f in zip(requests, decisions, finish, strict=True):
        row = by_class.setdefault(r.cls, [0, 0, 0.0])
        row[1] += 1
        if not d.accepted:
            continue
        accepted += 1
        row[0] += 1
        revenue += d.price or 0.0
        if f is not None and f <= r.deadline:
            welfare += r.value
            row[2] += r.value
        else:
            late += 1
    classes = {c: (int(v[0]), int(v[1]), float(v[2])) for c, v in sorted(by_class.items())}
    return StreamResult(name, decisions, finish, welfare, sum(r.value for r in requests), revenue, accepted, late, classes)
