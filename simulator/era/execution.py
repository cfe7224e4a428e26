"""Executing accepted reservations on a capacity that changes and on runs that fail (paper 001, Sec. 4, Fig. 3).

In the Azure Batch experiment ERA manages 20 % of a region whose other 80 % serve
non-ERA jobs, so the units ERA really has change all the time, and part of ERA's
capacity is held back as spare "for re-running failed jobs"; late jobs are "jobs that
finished later than their deadlines". This module plays that out in whole slots:

* ``capacity[t]``: the units ERA really has in slot t (the mechanisms plan on a fixed
  number, at most the nominal capacity);
* each accepted job becomes ready at its reserved start (On-demand: its arrival) and
  runs W units for T slots; ready jobs start in order of (reserved start, job id), each
  as soon as its W units are free (a later, smaller job may start past a waiting larger
  one: YARN's schedulers do not hold the queue);
* when the capacity drops below the units in use, the most recently started jobs are
  pre-empted (ERA's share is pre-emptible) and wait to run again from the start;
* a run fails with probability ``fail_p`` at a uniform slot of its run and is run again
  from the start (the failure draws are per job and attempt, the same for every mechanism
  offered the same stream: common random numbers).

A job is late when it finishes after its deadline or never finishes within the horizon.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from scheduler.era.mechanisms import Decision, ReservationMechanism
from simulator.era.workload import EraRequest


@dataclass(frozen=True)
class Execution:
    """The outcome of one mechanism's accepted jobs.

    Attributes:
        finish: per request, the slot it finished (None: rejected, or not finished in the horizon).
        accepted, late: counts; revenue: prices of accepted jobs (money);
        welfare: value of accepted jobs finished by their deadline (money); requested: all values.
        reruns: runs started again after a failure or a pre-emption.
    """

    finish: list[int | None]
    accepted: int
    late: int
    revenue: float
    welfare: float
    requested: float
    reruns: int

    @property
    def late_pct(self) -> float:
        return 100.0 * self.late / self.accepted if self.accepted else 0.0


def offer(mechanism: ReservationMechanism, requests: Sequence[EraRequest]) -> list[Decision]:
    """Offer the requests in order; one wider than the mechanism's capacity is refused."""
    return [mechanism.reserve(r.units, r.duration, r.arrival, r.deadline, r.value) if r.units <= mechanism.capacity
            else Decision(False) for r in requests]


def failure_draws(n: int, attempts: int, seed: int) -> NDArray[np.float64]:
    """(n, attempts) uniform draws in [0, 1): job k's attempt a fails when the draw is below ``fail_p``,
    at the fraction of its run given by a second draw (the array's two halves)."""
    return np.random.default_rng([seed, 7001]).random((n, 2 * attempts))


def execute(requests: Sequence[EraRequest], decisions: Sequence[Decision], capacity: NDArray[np.int64], *,
            fail_p: float, draws: NDArray[np.float64], ready_at_arrival: bool = False) -> Execution:
    """Run the accepted jobs slot by slot on ``capacity`` (module docstring).

    Args:
        capacity: (H,) units really available in each slot.
        fail_p: probability that a run fails, in [0, 1).
        draws: :func:`failure_draws` for these requests.
        ready_at_arrival: jobs are ready at their arrival instead of their reserved start (On-demand).

    Raises:
        ValueError: ``fail_p`` outside [0, 1).
    """
    if not 0.0 <= fail_p < 1.0:
        raise ValueError("fail_p must be in [0, 1)")
    attempts = draws.shape[1] // 2
    ready = sorted(((r.arrival if ready_at_arrival else int(d.start or 0)), k)
                   for k, (r, d) in enumerate(zip(requests, decisions, strict=True)) if d.accepted)
    finish: list[int | None] = [None] * len(requests)
    tries = [0] * len(requests)
    waiting: list[tuple[int, int]] = []  # (ready slot, job) heap
    running: dict[int, tuple[int, int]] = {}  # job -> (start slot, end slot of this run)
    reruns, i, horizon = 0, 0, int(capacity.size)
    for t in range(horizon):
        while i < len(ready) and ready[i][0] <= t:
            heapq.heappush(waiting, ready[i])
            i += 1
        for k in [k for k, (_, end) in running.items() if end <= t]:
            del running[k]
            a = min(tries[k] - 1, attempts - 1)
            if draws[k, a] < fail_p:  # this run failed: again from the start
                heapq.heappush(waiting, (t, k))
                reruns += 1
            else:
                finish[k] = t
        used = sum(requests[k].units for k in running)
        for k in sorted(running, key=lambda k: -running[k][0]):  # pre-empt the newest runs first
            if used <= capacity[t]:
                break
            used -= requests[k].units
            del running[k]
            heapq.heappush(waiting, (t, k))
            reruns += 1
        _start(requests, waiting, running, tries, draws, fail_p, t, int(capacity[t]) - used)
        if i == len(ready) and not waiting and not running:
            break
    return _tally(requests, decisions, finish, reruns)


def _start(requests: Sequence[EraRequest], waiting: list[tuple[int, int]], running: dict[int, tuple[int, int]], tries: list[int],
           draws: NDArray[np.float64], fail_p: float, t: int, free: int) -> None:
    """Start waiting jobs in order while their units fit (a job that does not fit waits; later ones may pass)."""
    attempts = draws.shape[1] // 2
    kept = []
    while waiting:
        item = heapq.heappop(waiting)
        r = requests[item[1]]
        if r.units > free:
            kept.append(item)
            continue
        k, a = item[1], min(tries[item[1]], attempts - 1)
        tries[k] += 1
        length = r.duration
        if draws[k, a] < fail_p:  # fails part-way: the slot of its failure
            length = max(1, math.ceil(draws[k, attempts + a] * r.duration))
        running[k] = (t, t + length)
        free -= r.units
    for item in kept:
        heapq.heappush(waiting, item)


def _tally(requests: Sequence[EraRequest], decisions: Sequence[Decision], finish: list[int | None], reruns: int) -> Execution:
    accepted = late = 0
    revenue = welfare = 0.0
    for r, d, f in zip(requests, decisions, finish, strict=True):
        if not d.accepted:
            continue
        accepted += 1
        revenue += d.price or 0.0
        if f is not None and f <= r.deadline:
            welfare += r.value
        else:
            late += 1
    return Execution(finish, accepted, late, revenue, welfare, sum(r.value for r in requests), reruns)
