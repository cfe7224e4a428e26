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

What the budgets' runs share, without changing any result: the engine is
serialised once (``pickle``) and each run starts from its own copy of those
bytes (an object graph equal to ``copy.deepcopy``'s, a fraction of its cost);
and a run's first clearing is the one the shares were read from, when the
copy's snapshot with the bid submitted is, byte for byte, the snapshot with
the bid as an extra row (it is whenever the engine's rows are in order; else
the run clears again). Every later clearing of a run depends on its budget
(paper 000, Sec. 4: the auction clears on every arrival and departure, and the
bid's budget moves every price of its queue), so nothing else is shared.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
from numpy.typing import NDArray

from scheduler.plan import Plan
from scheduler.registry import MECHANISMS
from scheduler.types import MarketSnapshot
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


def _finish(sim: MarketEngine, job_id: int, start: float, first: Plan | None, horizon: float,
            max_clearings: int) -> float | None:
    """Simulated seconds from ``start`` until job ``job_id`` (submitted to ``sim``, a private copy,
    at ``start``) departs, or None past ``horizon`` seconds or ``max_clearings`` clearings. The market
    step of the live market: clear, step to the next departure, clear again (paper 000, Sec. 4);
    ``first`` is the Plan of the first clearing when the caller has it (the mechanism's Plan for
    ``sim.snapshot()``, bookings not yet added), else ``sim`` clears it. Mutates ``sim``."""
    for k in range(max_clearings):
        if k == 0 and first is not None:
            sim.apply_plan(sim.with_bookings(first))  # what ``sim.clear()`` does with that Plan
        else:
            sim.clear()
        report = sim.step(start + horizon, stop_on_departure=True)
        for done in report.departures:
            if done.job_id == job_id:
                return done.finish_time - start
        if report.now >= start + horizon:
            return None
    return None


def _same_snapshot(a: MarketSnapshot, b: MarketSnapshot) -> bool:
    """Whether two snapshots are equal field by field, arrays by dtype, shape and bytes (a clearing of
    one is then the clearing of the other)."""
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype == y.dtype
                    and x.shape == y.shape and x.tobytes() == y.tobytes()):
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True


def price_preview(engine: MarketEngine, spec: JobSpec, bid: Bid, budgets: Sequence[float], *,
                  horizon: float = 7 * 86400.0, max_clearings: int = 200,
                  finish_times: bool = True) -> list[PreviewPoint]:
    """Estimates for ``bid`` (its budget replaced by each of ``budgets``) in ``engine``'s market.

    For each budget: the shares and sub-budgets of the market's mechanism cleared on the snapshot
    with the bid added (paper 000, Alg. 1-2), and the finish time of a copy of the market with the
    bid submitted, stepped as the live market steps (module docstring).

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
    frozen: bytes | None = None  # the engine as the runs' copies start from it
    points = []
    for budget in budgets:
        trial = replace(bid, budget=float(budget))  # validates the budget
        placed = replace(spec, submit_time=engine.now)
        snap = engine.snapshot(extra=[(placed, trial)])
        plan = mechanism.clear(snap)
        row = int(np.flatnonzero(plan.job_ids == spec.job_id)[0])
        shares, sub_budgets = plan.shares[row].copy(), plan.sub_budgets[row].copy()
        converged, in_pool = plan.diagnostics.converged, spec.job_id not in plan.diagnostics.outside_pool
        finish = None
        if finish_times:
            if frozen is None:  # taken where the runs copied the engine before: after a snapshot and a clearing
                frozen = pickle.dumps(engine, protocol=pickle.HIGHEST_PROTOCOL)
            sim = pickle.loads(frozen)  # this call's own bytes
            sim.submit(placed, trial)
            first = plan if _same_snapshot(snap, sim.snapshot()) else None
            finish = _finish(sim, spec.job_id, placed.submit_time, first, horizon, max_clearings)
        points.append(PreviewPoint(float(budget), shares, sub_budgets, finish, converged, in_pool))
    return points
