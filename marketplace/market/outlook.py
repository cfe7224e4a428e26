"""How busy the cluster is now and when its slots free: what quotes promise capacity from (docs/economy.md).

Reads only. The live engine (``services.market.engine_load``: this process's copy, or the stored
state) knows every running batch's end (task durations are known) and every job's queued tasks,
as of the last clock tick. A quote on a busy cluster needs exactly that: running tasks are never
pre-empted, so a slot they hold is free only when they end, and freed slots go to reservations
and bookings before the auction (``simulator.cluster.stages``: the reservation stage is first).
The auction's queued work is the demand a reservation displaces (``scheduler.era.spot``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from marketplace.market.models.market import Market
from marketplace.market.services.market import engine_context, engine_peek


@dataclass(frozen=True)
class Outlook:
    """The cluster as of the last tick, per resource type in the market's order.

    Attributes:
        now: the engine's simulated time (the market clock at the last tick).
        capacity: (m,) slots.
        busy: (m,) slots running a task now (any task).
        finishes: per type, (finish times (k,), units (k,)) of the running batches of jobs the
            auction serves (not a reservation's or a booking's: their units are promised anyway).
        backlog: (m,) slot-seconds of the auction's queued tasks (pending tasks x seconds per task).
    """

    now: float
    capacity: NDArray[np.int64]
    busy: NDArray[np.int64]
    finishes: list[tuple[NDArray[np.float64], NDArray[np.int64]]]
    backlog: NDArray[np.float64]

    @property
    def m(self) -> int:
        return int(self.capacity.shape[0])

    def busy_at(self, j: int, t: float) -> int:
        """Slots of type j the auction's running tasks still hold at simulated time ``t``."""
        f, u = self.finishes[j]
        return int(u[f > t].sum())

    def free_times(self, j: int) -> list[float]:
        """The distinct times (ascending, after now) at which the auction's running tasks of type j end."""
        return sorted({float(x) for x in self.finishes[j][0].tolist() if x > self.now})


def market_outlook(*, market: Market) -> Outlook:
    """The :class:`Outlook` of the market's live engine (an idle cluster before the first tick, or
    after a structure change no tick has seen yet). Reads only (``services.market.engine_peek``)."""
    context = engine_context(market)
    engine = engine_peek(market=market, context=context)
    if engine is None:
        m = len(context.types)
        capacity = np.array([t.capacity for t in context.types], dtype=np.int64)
        empty = [(np.zeros(0), np.zeros(0, dtype=np.int64)) for _ in range(m)]
        return Outlook(float(market.sim_time), capacity, np.zeros(m, dtype=np.int64), empty, np.zeros(m))
    cluster = engine.cluster
    m = cluster.m
    booked = {r.job_id for r in engine.booked()}
    finishes = []
    for j in range(m):
        batches = [(t, units) for t, units, job, shared in cluster.running_batches(j) if shared and job not in booked]
        finishes.append((np.array([b[0] for b in batches], dtype=np.float64), np.array([b[1] for b in batches], dtype=np.int64)))
    backlog = np.zeros(m)
    for state in cluster.active_states():
        if state.job_id not in booked:
            backlog += np.asarray(state.pending, dtype=np.float64) * np.asarray(state.spec.task_duration, dtype=np.float64)
    return Outlook(float(cluster.now), cluster.capacity.astype(np.int64), np.array(cluster.busy(), dtype=np.int64), finishes, backlog)


def cluster_now(*, market: Market, outlook: Outlook | None = None) -> list[dict[str, object]]:
    """Per resource type, how busy the cluster is now and what that does to quotes (the reservation
    and deadline pages show it): slots, slots running a task, the auction's queued work
    (slot-seconds), seconds until the auction's running tasks have all ended (None: none runs),
    the first time one ends, and the spot market's realised rate (money per slot-second)."""
    from marketplace.market.adapters import resource_types
    from marketplace.market.prices import realised_rates

    outlook = outlook or market_outlook(market=market)
    types = resource_types(market)
    rates = realised_rates(market=market, types=types)
    rows: list[dict[str, object]] = []
    for j, t in enumerate(types):
        ends = outlook.free_times(j) if j < outlook.m else []
        rows.append({
            "name": t.name, "capacity": int(t.capacity), "busy": int(outlook.busy[j]) if j < outlook.m else 0,
            "queued": float(outlook.backlog[j]) if j < outlook.m else 0.0,
            "first_free_in": (ends[0] - outlook.now) if ends else None, "all_free_in": (ends[-1] - outlook.now) if ends else None,
            "spot_rate": rates.get(t.name),
        })
    return rows
