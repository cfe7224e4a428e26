"""Demand predictors for ERA's Basic-Econ pricing (paper 001, Sec. 3.2).

A predictor is any object with ``inverse_demand(t, quantity) -> price``: the
highest unit price (money per unit-slot) at which the predicted demand in slot
``t`` still reaches ``quantity`` units. Basic-Econ (``scheduler.era.mechanisms``) asks for
the price of the i-th additional unit of slot t as the inverse demand at
``C - promised[t] - i`` (paper 001, Alg. 1 line 7). Every predictor here takes
numpy arrays of slots and quantities (broadcast together) as well as scalars.

Three predictors (docs/mechanisms.md, "ERA"):

* :class:`ConstantPrice` -- a fixed reserve price whatever the quantity;
* :class:`SpreadingPredictor` -- past requests spread evenly over their windows
  (the paper's "naive approach": W*T/(D-A) units in each slot of [A, D), at
  the request's value per unit-slot V/(W*T));
* :class:`LPPredictor` -- the value-maximising fractional allocation of past
  requests (the paper's LP-based predictor). The LP is a transportation
  problem, solved exactly by a greedy flow algorithm
  (``scheduler.era.flow``, :func:`solve_allocation_flow`); scipy's HiGHS on a
  windowed sparse model (:func:`solve_allocation_lp`, variables only inside
  each request's window) stays as the oracle the tests compare it with.

Both data-based predictors reduce to :class:`DemandCurves`: per slot, a
step demand curve "q units are wanted at value v or more". The paper's
interface also takes the current time: the demand that counts is the demand
that *arrives* between now and t (Sec. 3.2). A predictor that knows its
entries' arrivals offers ``at(now)`` (:meth:`DemandCurves.at`), which
Basic-Econ calls with the request's current time; ``rule="covering"`` keeps
the earlier rule (every past request whose window covers t), and a predictor
without ``at`` (a constant price, a wrapper) is used as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linprog

from scheduler.era.flow import greedy_allocation

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class PastRequest:
    """A past reservation request (paper 001, Sec. 2.3.1), in integer slots.

    Attributes:
        units: W, units wanted at once, >= 1.
        duration: T, slots, >= 1.
        arrival, deadline: the window [A, D) in slots, ``A + T <= D``.
        value: V, money units, > 0 (at most what the tenant would pay for all of it).

    Raises:
        ValueError: a window that cannot hold the duration, or non-positive sizes or value.
    """

    units: int
    duration: int
    arrival: int
    deadline: int
    value: float

    def __post_init__(self) -> None:
        if self.units < 1 or self.duration < 1:
            raise ValueError("a request needs units >= 1 and duration >= 1")
        if self.arrival < 0 or self.arrival + self.duration > self.deadline:
            raise ValueError("a request's window [arrival, deadline) must hold its duration")
        if not (np.isfinite(self.value) and self.value > 0):
            raise ValueError("a request's value must be finite and > 0")

    @property
    def unit_value(self) -> float:
        """V / (W * T): money per unit-slot."""
        return self.value / (self.units * self.duration)


class ConstantPrice:
    """A constant reserve price: every unit of every slot costs ``price``.

    With it Basic-Econ charges ``price * W * T`` and picks the earliest start
    with room (ties go to the earliest start).
    """

    def __init__(self, price: float) -> None:
        if not (np.isfinite(price) and price >= 0):
            raise ValueError("a reserve price must be finite and >= 0")
        self.price = float(price)

    def inverse_demand(self, t: ArrayLike, quantity: ArrayLike) -> FloatArray:
        """``price`` for every (slot, quantity) pair, broadcast."""
        shape = np.broadcast_shapes(np.shape(t), np.shape(quantity))
        return np.full(shape, self.price)


DEMAND_RULES = ("arriving", "covering")


class DemandCurves:
    """Per-slot step demand curves with a price floor and an optional period.

    Slot t's curve: ``quantity[t, k]`` units are wanted at unit value
    ``value[t, k]`` (money per unit-slot), entries sorted by value descending.
    The inverse demand at q is the value of the entry at which the cumulative
    quantity first reaches q (q <= 0 gives the highest value), or ``floor``
    when the whole curve wants less than q.

    Which demand counts at a given current time (paper 001, Sec. 3.2): the
    predictor answers "the highest price such that the demand that arrives
    from the current time till t, at this price, is equal to q". With
    ``arrivals`` (each entry's request arrival slot) and ``rule="arriving"``
    (the default), :meth:`at` gives the curves of the entries whose request
    arrives in [now, t] only: demand that arrived before now is already in
    the promised capacity (Alg. 1 line 7) or was refused, and counting it
    again would price slots too high. ``rule="covering"`` (the earlier rule,
    kept as an option) counts every entry whatever ``now``.

    Args:
        horizon: slots with a curve; a slot t >= horizon uses ``t % period``
            when ``period`` is given (day/night cycles, paper 001 Sec. 5.3),
            else the floor.
        entries: (slot, unit value, quantity) triples, any order; zero
            quantities are ignored.
        floor: the price where no demand is predicted (money per unit-slot, >= 0).
        period: slots per cycle, or None.
        arrivals: each entry's request arrival slot (folded like the slots
            when ``period`` is given), or None (then every entry counts).
        rule: "arriving" (paper 001, Sec. 3.2) or "covering" (module docstring).

    Raises:
        ValueError: a slot outside [0, horizon), a negative quantity or value,
            arrivals of another length than the slots, an unknown rule.
    """

    def __init__(
        self, horizon: int, slots: ArrayLike, values: ArrayLike, quantities: ArrayLike, *,
        floor: float = 0.0, period: int | None = None, arrivals: ArrayLike | None = None, rule: str = "arriving",
    ) -> None:
        t = np.asarray(slots, dtype=np.int64).reshape(-1)
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        q = np.asarray(quantities, dtype=np.float64).reshape(-1)
        a = None if arrivals is None else np.asarray(arrivals, dtype=np.int64).reshape(-1)
        if not (t.shape == v.shape == q.shape) or (a is not None and a.shape != t.shape):
            raise ValueError("slots, values, quantities (and arrivals) must have one entry each")
        if t.size and (t.min() < 0 or t.max() >= horizon):
            raise ValueError("demand entries must lie in [0, horizon)")
        if np.any(q < 0) or np.any(v < 0) or not np.all(np.isfinite(v)):
            raise ValueError("demand quantities and values must be >= 0 and finite")
        if not (np.isfinite(floor) and floor >= 0):
            raise ValueError("the floor price must be finite and >= 0")
        if rule not in DEMAND_RULES:
            raise ValueError(f"unknown demand rule {rule!r}; expected one of {DEMAND_RULES}")
        keep = q > 1e-12
        order = np.lexsort((-v[keep], t[keep]))  # by slot, then value descending
        self.horizon, self.floor, self.period, self.rule = int(horizon), float(floor), period, rule
        self._arrivals = None if a is None else a[keep][order]
        self._cached: tuple[int, DemandCurves] | None = None
        self._build(t[keep][order], v[keep][order], q[keep][order])

    def _build(self, t: NDArray[np.int64], v: FloatArray, q: FloatArray) -> None:
        """Index entries already sorted by slot, then value descending."""
        self._slots, self._quantities = t, q
        counts = np.bincount(t, minlength=self.horizon)
        self._start = np.cumsum(counts) - counts  # first entry of each slot
        self._counts = counts
        running = np.concatenate([[0.0], np.cumsum(q)])
        within = running[1:] - running[self._start[t]]  # cumulative quantity inside the slot
        self.totals: FloatArray = np.bincount(t, weights=q, minlength=self.horizon).astype(np.float64)
        # one sorted key per entry: slot * big + cumulative quantity (slots never overlap)
        self._big = float(self.totals.max() if self.totals.size else 0.0) + 1.0
        self._keys = t * self._big + within
        self._values = v

    def at(self, now: int) -> DemandCurves | ArrivingDemand:
        """The predictor as seen at the current slot ``now`` (paper 001, Sec. 3.2).

        With ``rule="arriving"`` and arrivals known: the curves of the demand
        whose request arrives in [now, t] (with a period, within the cycle that
        starts at ``now``; slots a whole period or more ahead count every
        entry). Otherwise ``self``. The last answer is cached: a stream asks
        at non-decreasing times.
        """
        if self.rule == "covering" or self._arrivals is None:
            return self
        key = int(now) % self.period if self.period else int(now)
        if self._cached is None or self._cached[0] != key:
            if self.period:
                p = int(self.period)
                keep = (self._slots - self._arrivals) % p <= (self._slots - key) % p
            else:
                keep = self._arrivals >= key
            sub = object.__new__(DemandCurves)
            sub.horizon, sub.floor, sub.period, sub.rule = self.horizon, self.floor, self.period, "covering"
            sub._arrivals, sub._cached = None, None
            sub._build(self._slots[keep], self._values[keep], self._quantities[keep])
            self._cached = (key, sub)
        return ArrivingDemand(self, self._cached[1], int(now))

    def inverse_demand(self, t: ArrayLike, quantity: ArrayLike) -> FloatArray:
        """Highest unit price p at which slot t's predicted demand exceeds ``quantity``.

        demand_t(p) is the quantity of entries with value >= p; the answer is
        the value of the first entry (by value, descending) at which the
        cumulative quantity passes ``quantity`` (paper 001, Alg. 1 line 7),
        or the floor when the whole curve wants no more than ``quantity``.
        Every entry counts here; :meth:`at` gives the curves at a current time.

        Args:
            t: slot index or array of them (integers >= 0).
            quantity: units, broadcast against ``t``.

        Returns:
            Prices (money per unit-slot), the broadcast shape of ``t`` and ``quantity``.
        """
        slots, qty = np.broadcast_arrays(np.asarray(t, dtype=np.int64), np.asarray(quantity, dtype=np.float64))
        rows = slots % self.period if self.period else slots
        inside = (rows >= 0) & (rows < self.horizon)
        rows = np.where(inside, rows, 0)
        total = self.totals[rows] if self.horizon else np.zeros(rows.shape)
        capped = np.clip(qty, -0.5, total + 0.5)
        index = np.searchsorted(self._keys, rows * self._big + capped + 1e-9, side="right")
        end = self._start[rows] + self._counts[rows] if self.horizon else np.zeros(rows.shape, dtype=np.int64)
        found = inside & (qty < total - 1e-9) & (index < end)
        picked = self._values[np.where(found, index, 0)] if self._values.size else np.zeros(rows.shape)
        return np.where(found, np.maximum(picked, self.floor), self.floor)


class ArrivingDemand:
    """Demand curves at a current time ``now`` (:meth:`DemandCurves.at`): slots less than
    a period ahead read the curves of demand arriving from ``now`` on, the others every entry."""

    def __init__(self, full: DemandCurves, arriving: DemandCurves, now: int) -> None:
        self.full, self.arriving, self.now = full, arriving, now

    def inverse_demand(self, t: ArrayLike, quantity: ArrayLike) -> FloatArray:
        """As :meth:`DemandCurves.inverse_demand`, counting the demand that arrives in [now, t]."""
        near = self.arriving.inverse_demand(t, quantity)
        if not self.full.period:
            return near
        far = np.asarray(t, dtype=np.int64) - self.now >= int(self.full.period)
        if not np.any(far):
            return near
        out: FloatArray = np.where(far, self.full.inverse_demand(t, quantity), near)
        return out


def _as_arrays(requests: Sequence[PastRequest]) -> tuple[NDArray[np.int64], ...]:
    w = np.array([r.units for r in requests], dtype=np.int64)
    d = np.array([r.duration for r in requests], dtype=np.int64)
    a = np.array([r.arrival for r in requests], dtype=np.int64)
    dl = np.array([r.deadline for r in requests], dtype=np.int64)
    return w, d, a, dl


def _fold(horizon: int, slots: NDArray[np.int64], period: int | None) -> tuple[int, NDArray[np.int64], float]:
    """With a period, slots of past requests fold onto one cycle (slot mod period):
    demand seen at 09:00 on any past day predicts 09:00 of every coming day.
    Returns (curve horizon, folded slots, quantity scale = 1 / cycles covered)."""
    if not period:
        return horizon, slots, 1.0
    return int(period), slots % int(period), 1.0 / max(1, -(-horizon // int(period)))


def _window_index(a: NDArray[np.int64], dl: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(job index, slot) of every slot of every window [A_j, D_j), flattened job by job."""
    lengths = dl - a
    job = np.repeat(np.arange(a.size), lengths)
    offset = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return job, a[job] + offset


class SpreadingPredictor(DemandCurves):
    """Past requests spread evenly over their windows (paper 001, Sec. 3.2, the naive approach).

    A request of W units for T slots in [A, D) worth V adds ``W * T / (D - A)``
    units of demand at unit value ``V / (W * T)`` to every slot of [A, D).

    Args:
        requests: past requests (slots in [0, horizon)).
        horizon: slots covered (default: the latest deadline).
        floor, rule: as :class:`DemandCurves` (``rule``: which demand counts at
            the current time; each entry's arrival is its request's).
        period: slots per cycle: the requests' slots fold onto one cycle
            (slot mod period), quantities divided by the cycles the horizon
            covers (an average cycle), and the curves repeat. None: no folding.
    """

    def __init__(self, requests: Sequence[PastRequest], horizon: int | None = None, *,
                 floor: float = 0.0, period: int | None = None, rule: str = "arriving") -> None:
        w, d, a, dl = _as_arrays(requests)
        h = int(horizon if horizon is not None else (dl.max() if dl.size else 1))
        job, slot = _window_index(a, dl)
        spread = (w * d / (dl - a)).astype(np.float64)
        unit = np.array([r.unit_value for r in requests], dtype=np.float64)
        h, slot, scale = _fold(h, slot, period)
        arrival = a[job] % int(period) if period else a[job]
        super().__init__(h, slot, unit[job], spread[job] * scale, floor=floor, period=period, arrivals=arrival, rule=rule)


@dataclass(frozen=True)
class LPSolution:
    """The fractional allocation of past requests (paper 001, Sec. 3.2).

    Attributes:
        accepted: (n,) y_j in [0, 1], the fraction of request j served.
        job, slot, units: the nonzero x_jt (units of request j in slot t).
        welfare: sum_j V_j y_j, money units.
    """

    accepted: FloatArray
    job: NDArray[np.int64]
    slot: NDArray[np.int64]
    units: FloatArray
    welfare: float


def solve_allocation_lp(requests: Sequence[PastRequest], capacity: float, horizon: int) -> LPSolution:
    """Value-maximising fractional allocation of ``requests`` on ``capacity`` units (paper 001, Sec. 3.2).

    maximise sum_j V_j y_j subject to sum_t x_jt = y_j W_j T_j (each request's
    unit-slots), sum_j x_jt <= C (each slot), 0 <= x_jt <= W_j, 0 <= y_j <= 1,
    with variables x_jt only for t in the request's window [A_j, D_j) (a
    windowed sparse model: sum_j (D_j - A_j) + n variables, never n * horizon).
    Solved with scipy's HiGHS.

    Raises:
        ValueError: capacity <= 0, or a window beyond ``horizon``.
        RuntimeError: HiGHS did not find the optimum.
    """
    if not capacity > 0:
        raise ValueError("capacity must be > 0")
    n = len(requests)
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return LPSolution(np.zeros(0), empty, empty, np.zeros(0), 0.0)
    w, d, a, dl = _as_arrays(requests)
    if dl.max() > horizon:
        raise ValueError("a request's window ends after the horizon")
    job, slot = _window_index(a, dl)
    nx = job.size
    values = np.array([r.value for r in requests], dtype=np.float64)
    cost = np.concatenate([np.zeros(nx), -values])
    # equality rows: sum_t x_jt - W_j T_j y_j = 0
    eq = sp.csr_matrix(
        (np.concatenate([np.ones(nx), -(w * d).astype(np.float64)]),
         (np.concatenate([job, np.arange(n)]), np.concatenate([np.arange(nx), nx + np.arange(n)]))),
        shape=(n, nx + n),
    )
    # capacity rows: sum_j x_jt <= C, only for slots some window covers
    used, row = np.unique(slot, return_inverse=True)
    ub = sp.csr_matrix((np.ones(nx), (row, np.arange(nx))), shape=(used.size, nx + n))
    bounds = np.column_stack([np.zeros(nx + n), np.concatenate([w[job].astype(np.float64), np.ones(n)])])
    res = linprog(cost, A_ub=ub, b_ub=np.full(used.size, float(capacity)), A_eq=eq, b_eq=np.zeros(n),
                  bounds=bounds, method="highs")
    if res.status != 0:
        raise RuntimeError(f"the allocation LP failed: {res.message}")
    x = np.asarray(res.x, dtype=np.float64)
    nz = x[:nx] > 1e-9
    return LPSolution(np.clip(x[nx:], 0.0, 1.0), job[nz], slot[nz], x[:nx][nz], float(values @ x[nx:]))


def solve_allocation_flow(requests: Sequence[PastRequest], capacity: float, horizon: int) -> LPSolution:
    """The allocation LP of :func:`solve_allocation_lp`, solved exactly as a flow (paper 001, Sec. 3.2).

    The LP is a transportation problem (requests supply W_j T_j unit-slots, at most
    W_j into each slot of their window, slots take C); greedy by value per unit-slot
    with augmenting paths reaches its optimum (``scheduler.era.flow``, where the
    proof is). Same answer as HiGHS up to ties between optima (equal welfare; the
    x_jt may differ where several allocations are optimal), in far less time.

    Raises:
        ValueError: capacity <= 0, or a window beyond ``horizon``.
    """
    if not capacity > 0:
        raise ValueError("capacity must be > 0")
    if not requests:
        empty = np.zeros(0, dtype=np.int64)
        return LPSolution(np.zeros(0), empty, empty, np.zeros(0), 0.0)
    w, d, a, dl = _as_arrays(requests)
    if dl.max() > horizon:
        raise ValueError("a request's window ends after the horizon")
    values = np.array([r.value for r in requests], dtype=np.float64)
    flow = greedy_allocation(w, d, a, dl, values / (w * d), float(capacity), int(horizon))
    accepted = np.clip(flow.sent / (w * d), 0.0, 1.0)
    return LPSolution(accepted, flow.job, flow.slot, flow.units, float(values @ accepted))


SOLVERS = {"flow": solve_allocation_flow, "highs": solve_allocation_lp}


class LPPredictor(DemandCurves):
    """The LP-based predictor (paper 001, Sec. 3.2): demand at t is the optimal
    fractional allocation of past requests at t, by value per unit.

    Where spreading counts every flexible request in every slot of its window,
    the LP puts each request where the value-maximising schedule would run it:
    with high-value jobs that can run only by day and medium- and low-value
    jobs that can run day or night, each asking for the whole capacity, the LP
    fills the night with medium-value jobs, so the night price is the medium
    value and low-value jobs are refused; spreading shows half low, half
    medium at night and prices the night too low (paper 001, Sec. 3.2).

    Args:
        requests: past requests; capacity: C units; horizon, floor, period, rule as
            :class:`DemandCurves` (each entry's arrival is its request's).
        solver: "flow" (:func:`solve_allocation_flow`, exact and fast; the
            default) or "highs" (:func:`solve_allocation_lp`, the LP oracle).
    """

    def __init__(self, requests: Sequence[PastRequest], capacity: float, horizon: int | None = None, *,
                 floor: float = 0.0, period: int | None = None, solver: str = "flow", rule: str = "arriving") -> None:
        h = int(horizon if horizon is not None else max((r.deadline for r in requests), default=1))
        if solver not in SOLVERS:
            raise ValueError(f"unknown allocation solver {solver!r}; expected one of {sorted(SOLVERS)}")
        self.solution = SOLVERS[solver](requests, capacity, h)
        unit = np.array([r.unit_value for r in requests], dtype=np.float64)
        s = self.solution
        folded, slots, scale = _fold(h, s.slot, period)
        arrival = np.array([r.arrival for r in requests], dtype=np.int64)[s.job] if s.job.size else np.zeros(0, dtype=np.int64)
        if period:
            arrival = arrival % int(period)
        super().__init__(folded, slots, unit[s.job] if s.job.size else np.zeros(0), s.units * scale, floor=floor, period=period,
                         arrivals=arrival, rule=rule)
