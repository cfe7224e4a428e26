"""ERA reservations: Basic-Econ scheduling and pricing, and its baselines (paper 001).

A request (paper 001, Sec. 2.3.1) reads "W units for T slots, somewhere in
[A, D), worth at most V". Time is in integer slots of the market's slot
length, counted from the mechanism's origin (slot 0 = now); ``horizon`` is the
number of slots the mechanism plans. Every mechanism here has the same
interface (:class:`ReservationMechanism`):

* ``quote(units, duration, arrival, deadline)`` -- the cheapest feasible start
  and its price, or None; computed without the value V (truthful by design,
  paper 001 Sec. 3.1) and without committing anything;
* ``prices(...)`` -- the price of every start in [A, D - T] (inf where infeasible),
  which the quote page charts;
* ``reserve(units, duration, arrival, deadline, value)`` -- the quote, then
  accept iff ``V >= price`` and promise the units (a :class:`Decision`);
* ``commit(units, start, duration)`` / ``release(units, start, end)`` -- add or
  take back promised capacity (an accepted quote; a job that finished early).

:class:`BasicEcon` is Algorithm 1 of paper 001 (Sec. 3.1); :class:`Greedy`
(FirstFit) and :class:`OnDemand` are the baselines of its Sec. 4.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


class Predictor(Protocol):
    """Inverse demand: slot t and quantity q -> the highest unit price at which
    the predicted demand of slot t exceeds q (paper 001, Sec. 3.2). ``t`` and
    ``quantity`` may be numpy arrays (broadcast together); scalar-only
    implementations are accepted too (called element by element)."""

    def inverse_demand(self, t: Any, quantity: Any) -> Any: ...


@dataclass(frozen=True)
class Offer:
    """A quote: the cheapest feasible start and its price.

    Attributes:
        start: slot index of the start, in [arrival, deadline - duration].
        price: money units for the whole request (W units for T slots).
    """

    start: int
    price: float


@dataclass(frozen=True)
class Decision:
    """The answer to a request: accepted, and if so its start (slot) and price (money)."""

    accepted: bool
    start: int | None = None
    price: float | None = None


class ReservationMechanism(Protocol):
    """The interface Basic-Econ and the baselines share (module docstring)."""

    capacity: int
    horizon: int
    promised: NDArray[np.int64]

    def prices(self, units: int, duration: int, arrival: int, deadline: int) -> FloatArray: ...

    def quote(self, units: int, duration: int, arrival: int, deadline: int) -> Offer | None: ...

    def reserve(self, units: int, duration: int, arrival: int, deadline: int, value: float) -> Decision: ...

    def commit(self, units: int, start: int, duration: int) -> None: ...

    def release(self, units: int, start: int, end: int) -> None: ...


def check_request(units: int, duration: int, arrival: int, deadline: int, capacity: int, horizon: int) -> None:
    """Validate a request against a mechanism's capacity and horizon.

    Raises:
        ValueError: units outside [1, capacity], duration < 1, an empty or
            inverted window, a window that cannot hold the duration, or one
            outside [0, horizon].
    """
    if not 1 <= units <= capacity:
        raise ValueError(f"units must be in [1, {capacity}]")
    if duration < 1:
        raise ValueError("duration must be >= 1 slot")
    if not 0 <= arrival < deadline:
        raise ValueError("the window [arrival, deadline) is empty, inverted or in the past")
    if deadline - arrival < duration:
        raise ValueError("the duration is longer than the window")
    if deadline > horizon:
        raise ValueError(f"the window ends after the horizon ({horizon} slots)")


class _Promises:
    """Promised capacity per slot, shared by every mechanism here."""

    def __init__(self, capacity: int, horizon: int, promised: NDArray[np.int64] | None = None) -> None:
        if capacity < 1 or horizon < 1:
            raise ValueError("capacity and horizon must be >= 1")
        self.capacity, self.horizon = int(capacity), int(horizon)
        if promised is None:
            self.promised: NDArray[np.int64] = np.zeros(self.horizon, dtype=np.int64)
        else:
            self.promised = np.array(promised, dtype=np.int64).reshape(-1)
            if self.promised.shape != (self.horizon,) or self.promised.min(initial=0) < 0:
                raise ValueError("promised must be (horizon,) and >= 0")

    def commit(self, units: int, start: int, duration: int) -> None:
        """Promise ``units`` in [start, start + duration).

        Raises:
            ValueError: the slots lie outside the horizon or have no room
                (a stale quote: re-price instead).
        """
        end = start + duration
        if not (0 <= start < end <= self.horizon):
            raise ValueError("a promise must lie inside the horizon")
        if np.any(self.promised[start:end] + units > self.capacity):
            raise ValueError("not enough unpromised capacity in those slots")
        self.promised[start:end] += units

    def release(self, units: int, start: int, end: int) -> None:
        """Take back ``units`` promised in [start, end) (a job that finished
        early or was cancelled; paper 001 Sec. 2.3.2 ``update``). Slots before 0
        or after the horizon are ignored.

        Raises:
            ValueError: more units than are promised there.
        """
        lo, hi = max(start, 0), min(end, self.horizon)
        if lo >= hi:
            return
        if np.any(self.promised[lo:hi] < units):
            raise ValueError("cannot release more than is promised")
        self.promised[lo:hi] -= units

    def room(self, units: int, arrival: int, deadline: int) -> NDArray[np.bool_]:
        """(D - A,) slots of [A, D) with ``units`` unpromised units."""
        out: NDArray[np.bool_] = self.promised[arrival:deadline] + units <= self.capacity
        return out

    def _decide(self, offer: Offer | None, value: float, units: int, duration: int) -> Decision:
        if not (np.isfinite(value) and value > 0):
            raise ValueError("a value must be finite and > 0")
        if offer is None or value < offer.price:
            return Decision(False)
        self.commit(units, offer.start, duration)
        return Decision(True, offer.start, offer.price)


def window_sums(cost: FloatArray, duration: int) -> FloatArray:
    """(L - T + 1,) sums of every T consecutive entries of ``cost`` (L,), by prefix sums.

    Infinite entries (no room) make their windows infinite; they are counted
    apart so one inf never turns the finite sums into nan.
    """
    blocked = ~np.isfinite(cost)
    finite = np.where(blocked, 0.0, cost)
    sums = np.concatenate([[0.0], np.cumsum(finite)])
    bad = np.concatenate([[0], np.cumsum(blocked)])
    total = sums[duration:] - sums[:-duration]
    out: FloatArray = np.where(bad[duration:] - bad[:-duration] > 0, np.inf, total)
    return out


def _first_min(totals: FloatArray, scores: FloatArray | None = None) -> int | None:
    """Index of the smallest finite score, None if all are inf. Ties go to the
    earliest start; scores within 1e-9 (relative) of the minimum count as ties,
    so rounding in the prefix sums never moves a start later."""
    s = totals if scores is None else scores
    if s.size == 0 or not np.isfinite(s).any():
        return None
    low = float(np.min(s))
    return int(np.argmax(s <= low + 1e-9 * max(1.0, abs(low))))


def _first_min_penalised(totals: FloatArray, penalty: float) -> int | None:
    """:func:`_first_min` of ``totals[k] * exp(penalty * k)``, compared as logarithms so a large
    penalty or a long window never overflows ``exp``: a free start (total 0) scores 0, the earliest
    wins; otherwise ``log total + penalty * k``, ties within 1e-9 (the same relative tie as the product's)."""
    if totals.size == 0 or not np.isfinite(totals).any():
        return None
    free = totals <= 0
    if free.any():
        return int(np.argmax(free))
    with np.errstate(divide="ignore"):
        s = np.log(totals) + penalty * np.arange(totals.size)
    low = float(np.min(s))
    return int(np.argmax(s <= low + 1e-9))


class BasicEcon(_Promises):
    """Basic-Econ scheduling and pricing (paper 001, Sec. 3.1, Algorithm 1).

    For each slot t of the window and each additional unit i = 1..W the unit
    price is ``price_t(i) = inverse_demand(t, C - promised[t] - i)`` (infinite
    when ``promised[t] + i > C``); ``cost[t] = sum_i price_t(i)``; the price of
    the start t is ``total[t] = cost[t] + ... + cost[t + T - 1]`` (prefix sums,
    never a double loop); the quote is the cheapest start (earliest on ties).

    Args:
        capacity: C units of the resource type, >= 1.
        horizon: slots planned, >= 1 (slot 0 = the mechanism's origin).
        predictor: any object with ``inverse_demand(t, quantity)``.
        list_price: the on-demand unit price (money per unit-slot); with it
            every finite unit price is clamped to
            ``[(1 - max_discount) * list_price, list_price]`` (the Azure
            experiment, paper 001 Sec. 4). None: no clamp.
        max_discount: the largest discount off ``list_price``, in [0, 1].
        late_penalty: the exponential penalty for later starts: the start is
            chosen by ``total[t] * exp(late_penalty * (t - A))`` (paper 001,
            Sec. 4); the price charged stays ``total[t*]``. 0: none.
        promised: initial promised units per slot (``(horizon,)``), or None.

    Raises:
        ValueError: bad capacity, horizon, discount or penalty.
    """

    def __init__(
        self, capacity: int, horizon: int, predictor: Predictor, *, list_price: float | None = None,
        max_discount: float = 0.35, late_penalty: float = 0.0, promised: NDArray[np.int64] | None = None,
    ) -> None:
        super().__init__(capacity, horizon, promised)
        if not 0.0 <= max_discount <= 1.0:
            raise ValueError("max_discount must be in [0, 1]")
        if not (np.isfinite(late_penalty) and late_penalty >= 0):
            raise ValueError("late_penalty must be finite and >= 0")
        if list_price is not None and not (np.isfinite(list_price) and list_price > 0):
            raise ValueError("list_price must be finite and > 0")
        self.predictor = predictor
        self.list_price, self.max_discount, self.late_penalty = list_price, float(max_discount), float(late_penalty)

    def unit_prices(self, units: int, arrival: int, deadline: int, *, now: int | None = None) -> FloatArray:
        """(D - A, W) ``price_t(i)`` for t in [A, D), i = 1..W (Alg. 1 line 7), clamped.

        Money per unit-slot; inf where ``promised[t] + i > C``. ``now`` is the
        current slot the predictor counts demand from (paper 001, Sec. 3.2;
        None: the arrival A, a request quoted when it arrives).
        """
        slots = np.arange(arrival, deadline, dtype=np.int64)
        i = np.arange(1, units + 1, dtype=np.int64)
        quantity = self.capacity - self.promised[arrival:deadline, None] - i[None, :]
        predictor = _at(self.predictor, arrival if now is None else now)
        price = _inverse(predictor, slots[:, None], quantity).astype(np.float64)
        if self.list_price is not None:
            price = np.clip(price, (1.0 - self.max_discount) * self.list_price, self.list_price)
        out: FloatArray = np.where(quantity < 0, np.inf, price)
        return out

    def prices(self, units: int, duration: int, arrival: int, deadline: int, *, now: int | None = None) -> FloatArray:
        """(D - T - A + 1,) ``total[t]`` for every start t in [A, D - T] (Alg. 1 lines 9-10).

        Money units for the whole request; inf where some slot has no room.
        ``now``: as :meth:`unit_prices`.

        Raises:
            ValueError: as :func:`check_request`.
        """
        check_request(units, duration, arrival, deadline, self.capacity, self.horizon)
        cost = self.unit_prices(units, arrival, deadline, now=now).sum(axis=1)
        return window_sums(cost, duration)

    def quote(self, units: int, duration: int, arrival: int, deadline: int, *, now: int | None = None) -> Offer | None:
        """The cheapest start and its price (Alg. 1 line 11), or None when no start has room.

        ``now``: as :meth:`unit_prices`.

        Raises:
            ValueError: as :func:`check_request`.
        """
        totals = self.prices(units, duration, arrival, deadline, now=now)
        k = _first_min(totals) if self.late_penalty <= 0 else _first_min_penalised(totals, self.late_penalty)
        return None if k is None else Offer(arrival + k, float(totals[k]))

    def reserve(self, units: int, duration: int, arrival: int, deadline: int, value: float, *,
                now: int | None = None) -> Decision:
        """Accept iff ``value >= price`` of the quote, and promise the units (Alg. 1 lines 12-16).

        The price never depends on ``value`` (it is compared once, after pricing).
        ``now``: as :meth:`unit_prices`.

        Raises:
            ValueError: as :func:`check_request`, or a value that is not finite and > 0.
        """
        return self._decide(self.quote(units, duration, arrival, deadline, now=now), value, units, duration)


def _at(predictor: Predictor, now: int) -> Predictor:
    """The predictor as seen at slot ``now``: its ``at(now)`` when it has one (demand arriving
    from now on, paper 001 Sec. 3.2), else the predictor itself."""
    at = getattr(predictor, "at", None)
    return at(now) if callable(at) else predictor


def _inverse(predictor: Predictor, t: NDArray[np.int64], quantity: NDArray[np.int64]) -> FloatArray:
    """``predictor.inverse_demand`` on broadcast arrays, element by element if it takes only scalars."""
    shape = np.broadcast_shapes(t.shape, quantity.shape)
    try:
        out = np.asarray(predictor.inverse_demand(t, quantity), dtype=np.float64)
        if out.shape == shape:
            return out
        if out.size == 1:
            return np.full(shape, float(out))
    except (TypeError, ValueError):
        pass
    tt, qq = np.broadcast_arrays(t, quantity)
    flat = [float(predictor.inverse_demand(int(a), int(b))) for a, b in zip(tt.ravel(), qq.ravel(), strict=True)]
    return np.array(flat, dtype=np.float64).reshape(shape)


class _FixedPrice(_Promises):
    """A baseline that sells every unit-slot at one fixed ``unit_price`` (money per unit-slot, > 0)."""

    def __init__(self, capacity: int, horizon: int, unit_price: float, *, promised: NDArray[np.int64] | None = None) -> None:
        super().__init__(capacity, horizon, promised)
        if not (np.isfinite(unit_price) and unit_price > 0):
            raise ValueError("unit_price must be finite and > 0")
        self.unit_price = float(unit_price)


class Greedy(_FixedPrice):
    """Greedy / FirstFit (paper 001, Sec. 4): a fixed unit price, the earliest start with room.

    The price is ``unit_price * W * T`` whatever the demand; a request is
    accepted iff its value covers it and some start in [A, D - T] has W
    unpromised units in every slot of the duration.

    Args:
        capacity, horizon: as :class:`BasicEcon`.
        unit_price: money per unit-slot, > 0 (the Azure experiment used 65 % of
            the on-demand price).
    """

    def prices(self, units: int, duration: int, arrival: int, deadline: int) -> FloatArray:
        """(D - T - A + 1,) the fixed price for starts with room, inf elsewhere."""
        check_request(units, duration, arrival, deadline, self.capacity, self.horizon)
        cost = np.where(self.room(units, arrival, deadline), 0.0, np.inf)
        return window_sums(cost, duration) + self.unit_price * units * duration

    def quote(self, units: int, duration: int, arrival: int, deadline: int) -> Offer | None:
        """The earliest start with room and the fixed price, or None."""
        totals = self.prices(units, duration, arrival, deadline)
        k = _first_min(totals)
        return None if k is None else Offer(arrival + k, float(totals[k]))

    def reserve(self, units: int, duration: int, arrival: int, deadline: int, value: float) -> Decision:
        """Accept iff the value covers the fixed price and a start has room."""
        return self._decide(self.quote(units, duration, arrival, deadline), value, units, duration)


class OnDemand(_FixedPrice):
    """On-demand (paper 001, Sec. 4): start at the arrival if W units are free
    then, ignoring the duration; a fixed price.

    Only slot A's availability is checked, so later slots may be promised
    beyond capacity (the baseline's jobs then run late); ``commit`` here never
    refuses for lack of room in later slots.

    Args:
        capacity, horizon: as :class:`BasicEcon`.
        unit_price: money per unit-slot, > 0.
    """

    def prices(self, units: int, duration: int, arrival: int, deadline: int) -> FloatArray:
        """(D - T - A + 1,) the fixed price at the start A if W units are free at A; inf elsewhere."""
        check_request(units, duration, arrival, deadline, self.capacity, self.horizon)
        out = np.full(deadline - duration - arrival + 1, np.inf)
        if self.promised[arrival] + units <= self.capacity:
            out[0] = self.unit_price * units * duration
        return out

    def quote(self, units: int, duration: int, arrival: int, deadline: int) -> Offer | None:
        """Start at A with the fixed price if W units are free at A, else None."""
        totals = self.prices(units, duration, arrival, deadline)
        return Offer(arrival, float(totals[0])) if np.isfinite(totals[0]) else None

    def commit(self, units: int, start: int, duration: int) -> None:
        """Promise ``units`` from ``start`` for ``duration`` slots (clipped to the horizon), unchecked."""
        if not 0 <= start < self.horizon:
            raise ValueError("a promise must start inside the horizon")
        self.promised[start : min(start + duration, self.horizon)] += units

    def reserve(self, units: int, duration: int, arrival: int, deadline: int, value: float) -> Decision:
        """Accept iff the value covers the fixed price and W units are free at A."""
        return self._decide(self.quote(units, duration, arrival, deadline), value, units, duration)
