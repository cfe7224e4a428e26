"""Price preview: what a budget would buy in the market as it stands (paper 000's auction on a copy).

For a bid not yet placed, and a few candidate budgets, compute on *copies* of a
market engine (``simulator.market.engine.MarketEngine``; the engine passed in is never
touched):

* its share per resource type and sub-budgets: the market's own mechanism
  (``scheduler.registry.MECHANISMS``; Abacus, paper 000 Alg. 1-2) cleared on
  the current snapshot plus the bid (``MarketEngine.snapshot(extra=...)``);
* its estimated finish time: the copy with the bid submitted now is run by the
  same market step (clear, step to the next departure, clear again, ...) until
  the bid departs.

It is an estimate: it assumes nobody else arrives or cancels, and task times
are the declared ones; later bids change both. The step is capped at
``max_clearings`` clearings and ``horizon`` simulated seconds; past either the
finish time is None ("later than the horizon").
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from scheduler.registry import MECHANISMS
from simulator.market.engine import MarketEngine
from simulator.market.records import Bid
from simulator.records import JobSpec

__all__ = ["PreviewPoint", "preview_budgets", "price_preview"]


@dataclass(frozen=True)
class PreviewPoint:
    """One budget's estimate.

    Attributes:
        budget: money units.
        shares: (m,) the bid's within-queue share per resource type now.
        sub_budgets: (m,) its sub-budgets (money per type).
        finish_s: estimated simulated seconds from now to completion, or None
            (beyond the horizon or the clearing cap).
        converged: whether the auction converged for this budget.
        in_pool: False when an SLO bid would be left out of the prolific pool.
    """

    budget: float
    shares: NDArray[np.float64]
    sub_budgets: NDArray[np.float64]
    finish_s: float | None
    converged: bool
    in_pool: bool


def preview_budgets(entered: float, factors: Sequence[float] = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)) -> list[float]:
    """The budgets a preview evaluates around the entered one (``entered`` > 0)."""
    if not (math.isfinite(entered) and entered > 0):
        raise ValueError("the entered budget must be finite and > 0")
    return [entered * f for f in factors]


def _finish(engine: MarketEngine, spec: JobSpec, bid: Bid, horizon: float, max_clearings: int) -> float | None:
    """Simulated seconds until ``spec`` departs from a copy of ``engine`` (None past the caps)."""
    sim = copy.deepcopy(engine)
    start = sim.now
    sim.submit(replace(spec, submit_time=start), bid)
    for _ in range(max_clearings):
        sim.clear()
        report = sim.step(start + horizon, stop_on_departure=True)
        if any(d.job_id == spec.job_id for d in report.departures):
            return next(d.finish_time for d in report.departures if d.job_id == spec.job_id) - start
        if report.now >= start + horizon:
            return None
    return None


def price_preview(engine: MarketEngine, spec: JobSpec, bid: Bid, budgets: Sequence[float], *,
                  horizon: float = 7 * 86400.0, max_clearings: int = 200,
                  finish_times: bool = True) -> list[PreviewPoint]:
    """Estimates for ``bid`` (its budget replaced by each of ``budgets``) in ``engine``'s market.

    Args:
        engine: the market now (never mutated; copies are stepped).
        spec: the bid's work and leaf queue; ``job_id`` must be unknown to the engine.
        bid: its utility, weights and SLO (the budget is taken from ``budgets``).
        budgets: money units, each > 0.
        horizon: simulated seconds the finish-time run may look ahead.
        max_clearings: clearings the finish-time run may do.
        finish_times: False to skip the (costlier) finish-time runs.

    Returns:
        One :class:`PreviewPoint` per budget, in order.

    Raises:
        ValueError: a known job id, a non-positive budget, or a bid the engine refuses.
    """
    if engine.knows(spec.job_id):
        raise ValueError(f"job {spec.job_id} is already in the market")
    mechanism = MECHANISMS.build(engine.config.mechanism)
    points = []
    for budget in budgets:
        trial = replace(bid, budget=float(budget))  # validates the budget
        snap = engine.snapshot(extra=[(replace(spec, submit_time=engine.now), trial)])
        plan = mechanism.clear(snap)
        row = int(np.flatnonzero(plan.job_ids == spec.job_id)[0])
        finish = _finish(engine, spec, trial, horizon, max_clearings) if finish_times else None
        points.append(PreviewPoint(
            float(budget), plan.shares[row].copy(), plan.sub_budgets[row].copy(), finish,
            plan.diagnostics.converged, spec.job_id not in plan.diagnostics.outside_pool,
        ))
    return points
