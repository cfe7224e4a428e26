"""ERA's demand as the whole live market sees it: the spot auction's demand and price (docs/economy.md).

Paper 001 prices the i-th unit of slot t at the inverse demand of the quantity left,
``price_t(i) = inverse_demand(t, C - promised[t] - i)`` (Alg. 1 line 7), and learns the demand
curve from past reservation requests (Sec. 3.2). On a market where an auction (paper 000)
sells the same slots, every unit reserved is a unit the auction does not get: the slots a
running task frees go to reservations first. So the demand a reservation competes with is
the auction's as well, and what a unit-slot is worth to that demand is what the spot market
charges for it. This module joins the two; Basic-Econ itself is unchanged (a predictor is
its input, and these are predictors):

* :class:`SpotCurve` -- the spot market's realised rate (money per slot-second) by level of
  demand (the busy share of the type's slots, 0 to 1): the realised rates of past
  settlements pooled by level and fitted non-decreasing in the level (weighted isotonic
  regression, ``scipy.optimize.isotonic_regression``), so a busier slot never costs less.
* :func:`occupancy` -- units of a type still running a task in each coming slot (running
  tasks are never pre-empted: these units are as good as promised until the task ends).
* :func:`backlog_fill` -- the auction's queued work (slot-seconds) poured into the units
  left free, slot by slot from now on (a fluid projection of its demand).
* :class:`SpotAnchored` -- the inverse demand ERA prices with: the configured predictor's
  (past reservation requests, the paper's) or the spot market's price at the level of
  demand the slot would reach with this unit sold, whichever is higher.

The reasoning and the mapping are written in ``docs/economy.md`` ("Quotes priced from the
same market").
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import isotonic_regression

FloatArray = NDArray[np.float64]

LEVEL_BINS = 10  # demand levels are pooled in tenths of the capacity before the fit


@dataclass(frozen=True)
class SpotCurve:
    """The spot market's realised rate as a non-decreasing function of the level of demand.

    Attributes:
        levels: (k,) ascending levels in [0, 1] (the centres of the populated level bins).
        rates: (k,) non-decreasing rates at those levels, money per slot-second.
        slot_seconds: (k,) slot-seconds behind each level (the fit's weights).
    """

    levels: FloatArray
    rates: FloatArray
    slot_seconds: FloatArray

    @classmethod
    def fit(cls, levels: ArrayLike, charged: ArrayLike, slot_seconds: ArrayLike, *, bins: int = LEVEL_BINS,
            voters: ArrayLike | None = None, prior: float | None = None) -> SpotCurve | None:
        """Fit from settlements: each its level of demand (0..1), its charge (money) and the
        slot-seconds it paid for. Within a level bin the rate is total charged / total
        slot-seconds (what that demand paid per slot-second); across bins the rates are made
        non-decreasing by the weighted least-squares isotonic fit (weights: slot-seconds).

        With ``voters`` (one id per settlement: its tenant) the fit is the robust one the live market
        uses (docs/economy.md, "A price nobody moves alone"): within a level bin each voter's rate
        (its charges / its slot-seconds there) is one vote, ``prior`` (the reference rate) one more,
        and the bin's rate is the median of the votes (:func:`robust_rate`); the isotonic fit's
        weights are the votes' counts. One voter then moves a bin's rate only between the order
        statistics of the other votes next to their median, whatever it paid and however much it
        bought.

        Returns:
            None when no settlement has slot-seconds (nothing was sold yet).

        Raises:
            ValueError: arrays of different lengths, negative or non-finite entries.
        """
        u = np.clip(np.asarray(levels, dtype=np.float64).reshape(-1), 0.0, 1.0)
        c = np.asarray(charged, dtype=np.float64).reshape(-1)
        w = np.asarray(slot_seconds, dtype=np.float64).reshape(-1)
        if not (u.shape == c.shape == w.shape):
            raise ValueError("levels, charged and slot_seconds need one entry each")
        if not (np.all(np.isfinite(c)) and np.all(np.isfinite(w)) and np.all(c >= 0) and np.all(w >= 0)):
            raise ValueError("charges and slot-seconds must be finite and >= 0")
        keep = w > 0
        if not np.any(keep):
            return None
        index = np.minimum((u[keep] * bins).astype(np.int64), bins - 1)
        used = np.bincount(index, weights=w[keep], minlength=bins)
        paid = np.bincount(index, weights=c[keep], minlength=bins)
        have = used > 0
        if voters is None:
            raw = paid[have] / used[have]
            weights = used[have]
        else:
            who = np.asarray(voters).reshape(-1)
            if who.shape != u.shape:
                raise ValueError("voters need one entry per settlement")
            who, ck, wk = who[keep], c[keep], w[keep]
            votes = [robust_votes(ck[index == b], wk[index == b], who[index == b], prior=prior) for b in np.flatnonzero(have)]
            raw = np.array([float(np.median(v)) for v in votes])
            weights = np.array([float(v.size) for v in votes])
        fitted = isotonic_regression(raw, weights=weights, increasing=True).x
        centres = (np.flatnonzero(have) + 0.5) / bins
        return cls(centres.astype(np.float64), np.asarray(fitted, dtype=np.float64), used[have].astype(np.float64))

    @classmethod
    def flat(cls, rate: float) -> SpotCurve:
        """One rate at every level (money per slot-second): the reserve price before any sale."""
        if not (math.isfinite(rate) and rate >= 0):
            raise ValueError("the rate must be finite and >= 0")
        return cls(np.array([0.5]), np.array([float(rate)]), np.array([1.0]))

    def floored(self, rate: float) -> SpotCurve:
        """This curve, never below ``rate`` (money per slot-second: the reserve price); still non-decreasing."""
        return SpotCurve(self.levels, np.maximum(self.rates, float(rate)), self.slot_seconds)

    @property
    def mean_rate(self) -> float:
        """The rate over every level: total charged / total slot-seconds (money per slot-second)."""
        return float(np.dot(self.rates, self.slot_seconds) / self.slot_seconds.sum())

    def rate(self, level: ArrayLike) -> FloatArray:
        """The rate at ``level`` (array or scalar, 0..1): linear between fitted levels, flat
        beyond the first and last (never extrapolated), money per slot-second."""
        x = np.clip(np.asarray(level, dtype=np.float64), 0.0, 1.0)
        out: FloatArray = np.interp(x, self.levels, self.rates)
        return out


def robust_votes(charged: ArrayLike, slot_seconds: ArrayLike, voters: ArrayLike, *, prior: float | None = None) -> FloatArray:
    """The votes of :func:`robust_rate`: each voter's rate (its total charged / its total
    slot-seconds, money per slot-second; voters with no slot-seconds have none), then ``prior``.

    Shapes: three (n,) arrays, one entry per settlement; returns (k,) with k <= n + 1.

    Raises:
        ValueError: arrays of different lengths, negative or non-finite money or slot-seconds,
            or a prior that is not a finite number >= 0.
    """
    c = np.asarray(charged, dtype=np.float64).reshape(-1)
    w = np.asarray(slot_seconds, dtype=np.float64).reshape(-1)
    who = np.asarray(voters).reshape(-1)
    if not (c.shape == w.shape == who.shape):
        raise ValueError("charged, slot_seconds and voters need one entry each")
    if not (np.all(np.isfinite(c)) and np.all(np.isfinite(w)) and np.all(c >= 0) and np.all(w >= 0)):
        raise ValueError("charges and slot-seconds must be finite and >= 0")
    if prior is not None and not (math.isfinite(prior) and prior >= 0):
        raise ValueError("the prior must be a finite rate >= 0")
    out: list[float] = []
    if who.size:
        _, group = np.unique(who, return_inverse=True)
        paid = np.bincount(group, weights=c)
        used = np.bincount(group, weights=w)
        out = (paid[used > 0] / used[used > 0]).tolist()
    if prior is not None:
        out.append(float(prior))
    return np.asarray(out, dtype=np.float64)


def robust_rate(charged: ArrayLike, slot_seconds: ArrayLike, voters: ArrayLike, *, prior: float) -> float:
    """The market's reference rate, robust to any one tenant (docs/economy.md, "A price nobody
    moves alone"): the median of the votes, one per voter (its rate: its charges over its
    slot-seconds, however many jobs and slot-seconds it bought) and one for ``prior``.

    The bound: let x_1 <= ... <= x_n be the other votes (the prior's included). Whatever one voter
    pays for whatever it buys, the median of the n + 1 votes stays within
    [median(x + [0]), median(x + [inf])] (the median is monotone in each vote), which is
    [x_(p), x_(p+1)] when n = 2p and [(x_(p)+x_(p+1))/2, (x_(p+1)+x_(p+2))/2] when n = 2p + 1
    (x_(0) := 0 for the lower end): one voter moves the rate at most to the other votes next to their
    median. With the prior alone beside it (a newcomer on a new market), that is [prior/2, inf):
    a cheap buyer can at most halve the rate; with two honest voters, their lower vote.

    Args:
        charged, slot_seconds, voters: (n,) each settlement's charge (money), slot-seconds, and voter.
        prior: the reference rate before any sale (money per slot-second), always one vote.

    Returns:
        Money per slot-second (``prior`` when nobody has a vote).

    Raises:
        ValueError: as :func:`robust_votes`.
    """
    return float(np.median(robust_votes(charged, slot_seconds, voters, prior=prior)))


def robust_bounds(others: ArrayLike) -> tuple[float, float]:
    """(lowest, highest) :func:`robust_rate` one more voter can produce beside the votes ``others``
    (the prior's included): the median with that voter at rate 0, and at an unbounded rate."""
    x = np.sort(np.asarray(others, dtype=np.float64).reshape(-1))
    if x.size == 0:
        raise ValueError("the bound needs at least one other vote (the prior)")
    low = float(np.median(np.concatenate([[0.0], x])))
    n = x.size  # the highest: the voter's rate above every other vote
    high = float(x[n // 2]) if n % 2 == 0 else float((x[n // 2] + x[n // 2 + 1]) / 2) if n > 1 else math.inf
    return low, high


def occupancy(finish_times: ArrayLike, units: ArrayLike, *, origin: float, slot: float, horizon: int) -> NDArray[np.int64]:
    """(horizon,) units still running a task at the start of each slot k, which starts at
    ``origin + k * slot`` simulated seconds: a task that ends at f holds its units in every
    slot that starts before f (it is never pre-empted)."""
    f = np.asarray(finish_times, dtype=np.float64).reshape(-1)
    u = np.asarray(units, dtype=np.int64).reshape(-1)
    out = np.zeros(horizon + 1, dtype=np.int64)
    if f.size:
        slots = np.clip(np.ceil((f - origin) / slot - 1e-9), 0, horizon).astype(np.int64)  # slots starting before f
        np.add.at(out, slots, u)
    held: NDArray[np.int64] = (u.sum() - np.cumsum(out))[:horizon] if f.size else out[:horizon]
    return held


def backlog_fill(free: ArrayLike, backlog: float, *, slot: float) -> FloatArray:
    """(H,) units of queued work running in each coming slot when ``backlog`` slot-seconds of
    it take every unit left ``free`` (H,) from the first slot on, until it is done."""
    room = np.maximum(np.asarray(free, dtype=np.float64).reshape(-1), 0.0)
    if backlog <= 0 or room.size == 0:
        return np.zeros(room.size)
    before = np.concatenate([[0.0], np.cumsum(room * slot)[:-1]])  # slot-seconds the earlier slots absorb
    out: FloatArray = np.clip((backlog - before) / slot, 0.0, room)
    return out


class SpotAnchored:
    """Inverse demand on a market with a spot auction (module docstring; docs/economy.md).

    ``inverse_demand(t, q) = max(base.inverse_demand(t, q), slot * curve.rate(level))``, with
    ``level = min(1, (C - q + fill[t]) / C)``: ``C - q`` units of slot t are taken once this
    unit is sold (promised, running, and this one), and ``fill[t]`` more are what the
    auction's queued work would use of it. Non-increasing in q, as an inverse demand is.

    Args:
        base: the configured predictor (paper 001, Sec. 3.2), slots counted as the mechanism's.
        curve: the spot market's rate by level (money per slot-second).
        capacity: C units of the type.
        slot: seconds per slot (a unit-slot costs ``slot`` slot-seconds).
        fill: (H,) the auction's projected queued demand per slot from the mechanism's slot 0;
            slots beyond it see none.
    """

    def __init__(self, base: Any, curve: SpotCurve, capacity: int, slot: float, fill: ArrayLike) -> None:
        if capacity < 1 or not (math.isfinite(slot) and slot > 0):
            raise ValueError("capacity must be >= 1 and the slot length positive")
        self.base, self.curve, self.capacity, self.slot = base, curve, int(capacity), float(slot)
        self.fill = np.asarray(fill, dtype=np.float64).reshape(-1)

    def at(self, now: int) -> SpotAnchored:
        """As seen at slot ``now`` (the mechanism's slots): the base's ``at(now)`` when it has one
        (the demand arriving from now on, paper 001 Sec. 3.2), under the same spot floor."""
        at = getattr(self.base, "at", None)
        if not callable(at):
            return self
        seen = at(now)
        if seen is self.base:
            return self
        out = copy.copy(self)
        out.base = seen
        return out

    def inverse_demand(self, t: ArrayLike, quantity: ArrayLike) -> FloatArray:
        slots, q = np.broadcast_arrays(np.asarray(t, dtype=np.int64), np.asarray(quantity, dtype=np.float64))
        inside = (slots >= 0) & (slots < self.fill.size)
        queued = np.where(inside, self.fill[np.clip(slots, 0, max(self.fill.size - 1, 0))] if self.fill.size else 0.0, 0.0)
        level = np.minimum((self.capacity - q + queued) / self.capacity, 1.0)
        spot = self.slot * self.curve.rate(level)
        own = np.asarray(self.base.inverse_demand(slots, q), dtype=np.float64)
        out: FloatArray = np.maximum(own, spot)
        return out
