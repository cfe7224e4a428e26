"""Trace jobs as ERA reservation requests, decided online by Basic-Econ (paper 001, Sec. 2-3).

For a lab run where ERA sells reservations on the cluster: each job, in
arrival order, asks for each of its stages (map then reduce; one stage for an
SWF job) "W units for T slots" inside its window, Basic-Econ (Alg. 1) prices
the cheapest feasible starts, and the job accepts iff its value covers the
total price (the price never depends on the value: truthful by design,
Sec. 3.1). Accepted jobs become bookings for ``simulator.runner.run`` (their
reservations and fixed price); the others run best-effort in the shared stage.

Request of a job (stated choices, as ``simulator.era.workload`` does for
ERA's own experiment): stage j asks ``W_j = min(tasks_j, C_j)`` units for
``T_j = ceil(ceil(tasks_j / W_j) * duration_j / slot)`` slots; the window
opens at the first slot boundary after the submit time, ``A``, and closes at
``D = A + ceil(window_factor * sum_j T_j)``; a later stage's window opens when
the earlier stage's reservation ends. The demand predictor is the spreading
predictor (Sec. 3.2) learnt from the same jobs with values drawn
independently (prior knowledge of the job distribution).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from scheduler.era.mechanisms import BasicEcon, Offer
from scheduler.era.predictors import PastRequest, SpreadingPredictor
from scheduler.plan import Reservation
from simulator.workloads.traces import TraceJob


@dataclass(frozen=True)
class Stage:
    """One stage's request: resource type, W units, T slots."""

    resource: int
    units: int
    slots: int


@dataclass
class EraOutcome:
    """What ERA decided over a run's jobs.

    Attributes:
        bookings: job id -> its reservations (one per stage) and the job's total price.
        revenue: prices of the accepted jobs (money).
        accepted, offered: counts of jobs.
    """

    bookings: dict[int, list[tuple[Reservation, float]]] = field(default_factory=dict)
    revenue: float = 0.0
    accepted: int = 0
    offered: int = 0


def stages_of(job: TraceJob, capacity: Sequence[int], slot_s: float) -> list[Stage]:
    """The job's per-stage requests (module docstring), in type order."""
    out = []
    for j, (n, d) in enumerate(zip(job.tasks, job.task_duration, strict=True)):
        if n <= 0:
            continue
        units = min(int(n), int(capacity[j]))
        out.append(Stage(j, units, max(1, math.ceil(math.ceil(n / units) * d / slot_s - 1e-9))))
    return out


def _window(job: TraceJob, stages: list[Stage], origin: float, slot_s: float, window_factor: float) -> tuple[int, int]:
    arrival = max(0, math.ceil((job.submit_time - origin) / slot_s - 1e-9))
    return arrival, arrival + math.ceil(window_factor * sum(s.slots for s in stages))


def era_decide(jobs: Sequence[TraceJob], capacity: Sequence[int], values: Mapping[int, float], history_values: Mapping[int, float], *,
               slot_s: float, window_factor: float) -> EraOutcome:  # fmt: skip
    """Offer ``jobs`` (arrival order) to Basic-Econ, one mechanism per resource type (module docstring).

    ``values``: job id -> value V (money); ``history_values``: the predictor's values.
    Raises ValueError on a non-positive slot length or a window factor below 1.
    """
    if not slot_s > 0 or window_factor < 1:
        raise ValueError("slot_s must be > 0 and window_factor >= 1")
    order = sorted(jobs, key=lambda j: (j.submit_time, j.job_id))
    if not order:
        return EraOutcome()
    origin = order[0].submit_time
    plans = [(job, stages_of(job, capacity, slot_s)) for job in order]
    windows = [_window(job, st, origin, slot_s, window_factor) for job, st in plans]
    horizon = max(d for _, d in windows) + 1
    mechanisms = [BasicEcon(int(c), horizon, _predictor(plans, windows, history_values, j, horizon)) for j, c in enumerate(capacity)]
    out = EraOutcome(offered=len(order))
    for (job, stages), (arrival, deadline) in zip(plans, windows, strict=True):
        offers = _quote(mechanisms, stages, arrival, deadline)
        if offers is None or values[job.job_id] < sum(o.price for o in offers):
            continue
        price = float(sum(o.price for o in offers))
        out.bookings[job.job_id] = []
        for stage, offer in zip(stages, offers, strict=True):
            mechanisms[stage.resource].commit(stage.units, offer.start, stage.slots)
            start, end = origin + offer.start * slot_s, origin + (offer.start + stage.slots) * slot_s
            out.bookings[job.job_id].append((Reservation(job.job_id, stage.resource, stage.units, start, end), price))
        out.revenue += price
        out.accepted += 1
    return out


def _quote(mechanisms: list[BasicEcon], stages: list[Stage], arrival: int, deadline: int) -> list[Offer] | None:
    """The cheapest starts of the stages in turn (each after the previous ends), or None."""
    offers: list[Offer] = []
    opens = arrival
    for k, stage in enumerate(stages):
        closes = deadline - sum(s.slots for s in stages[k + 1:])
        if closes - opens < stage.slots:
            return None
        offer = mechanisms[stage.resource].quote(stage.units, stage.slots, opens, closes)
        if offer is None:
            return None
        offers.append(offer)
        opens = offer.start + stage.slots
    return offers


def _predictor(plans: list[tuple[TraceJob, list[Stage]]], windows: list[tuple[int, int]], values: Mapping[int, float], j: int,
               horizon: int) -> SpreadingPredictor:  # fmt: skip
    """Spreading predictor of type j: each job's stage-j request with its share of the history value."""
    past = []
    for (job, stages), (a, d) in zip(plans, windows, strict=True):
        size = sum(s.units * s.slots for s in stages)
        for s in stages:
            if s.resource == j:
                past.append(PastRequest(s.units, s.slots, a, d, values[job.job_id] * s.units * s.slots / size))
    return SpreadingPredictor(past, horizon)
