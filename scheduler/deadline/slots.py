"""Whole slots: the cheapest integer resource vector that meets a deadline (paper 003, Eqs. 1-2; docs/mechanisms.md, "Whole slots").

The market hands out whole units (slots), so the continuous optimum of
``scheduler.deadline.payment.min_payment`` (paper 003, Alg. 1) must become an integer
vector. Rounding every dimension up always meets the deadline (more units never
take longer) but may pay more than needed; this module finds the cheapest
integer vector exactly and reports what the rounding costs against the
continuous optimum.

The search is a depth-first branch and bound over the dimensions, started with
the rounded-up continuous optimum as the incumbent (so the answer is never worse
than rounding up); of equal payments it keeps the one with fewer units. A
partial vector is pruned by the Cauchy-Schwarz bound

    (B + sum_rest b_k r_k)(L + sum_rest l_k / r_k) >= (sqrt(B L) + sum_rest sqrt(b_k l_k))^2

(``B``, ``L`` the fixed part's price and time sums), which is the continuous
optimum of the rest given the fixed part; along one dimension the bound is
unimodal, so the scan stops once it has passed the bound's minimum and exceeds
the incumbent. Close to the continuous optimum the bound is tight, which keeps
the search near it.

Optionally the dimension's work comes in ``n_k`` equal tasks (a MapReduce
phase): with ``r_k`` slots the phase runs in ``ceil(n_k / r_k)`` waves, so its
time is ``ceil(n_k / r_k) * l_k / n_k`` (at least Eq. 1's ``l_k / r_k``) and
only the slot counts ``ceil(n_k / q)`` (the fewest slots for q waves) are worth
buying. This is the time the market's staged cluster really takes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scheduler.deadline.payment import DeadlineAllocation, min_payment

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]

MAX_NODES_VISITED = 2_000_000  # a guard: the search is exact below it (RuntimeError above)


@dataclass(frozen=True)
class SlotAllocation:
    """The cheapest whole-slot vector meeting the deadline, beside the continuous one.

    Attributes:
        slots: (R,) int64 units of each dimension (0 where there is no work).
        exec_time: seconds the work takes on ``slots`` (waves of whole tasks
            when task counts were given), ``<= deadline`` when feasible.
        payment: money, ``(1/R) b . slots * exec_time`` (paper 003, Eq. 2).
        feasible: False when even every available whole slot misses the
            deadline (then ``slots`` is the whole availability).
        continuous: the continuous optimum (``scheduler.deadline.payment.min_payment``)
            on the same node.
        rounded_up: (R,) the continuous optimum rounded up in every dimension
            (clipped to the availability).
        rounded_up_payment: its payment (inf if it misses the deadline).
        rounding_cost: ``payment - continuous.payment`` (money, >= 0): what
            whole slots cost over the paper's divisible resources.
        node: index of the chosen candidate node.
    """

    slots: IntArray
    exec_time: float
    payment: float
    feasible: bool
    continuous: DeadlineAllocation
    rounded_up: IntArray
    rounded_up_payment: float
    rounding_cost: float
    node: int = 0


class _Dim:
    """One dimension with work: its candidate slot counts and their times (ascending counts)."""

    __slots__ = ("b", "index", "l", "slots", "times")

    def __init__(self, index: int, l_: float, b: float, limit: int, tasks: int | None) -> None:
        self.index, self.l, self.b = index, l_, b
        if tasks is None:
            counts = list(range(1, limit + 1))
            self.times = [l_ / r for r in counts]
        else:  # the fewest slots for q waves, q = ceil(n / r); at most n slots help
            counts = sorted({math.ceil(tasks / q) for q in range(1, tasks + 1)} & set(range(1, limit + 1)))
            self.times = [math.ceil(tasks / r) * l_ / tasks for r in counts]
        self.slots = counts

    def time_of(self, r: int, tasks: int | None) -> float:
        return self.l / r if tasks is None else math.ceil(tasks / r) * self.l / tasks


def _whole_time(l_: FloatArray, slots: IntArray, theta: float, tasks: Sequence[int] | None) -> float:
    t = 0.0
    for k in np.flatnonzero(l_ > 0).tolist():
        if slots[k] <= 0:
            return math.inf
        t += float(l_[k] / slots[k]) if tasks is None else math.ceil(tasks[k] / slots[k]) * float(l_[k]) / tasks[k]
    return theta * t


def _pay(l_: FloatArray, slots: IntArray, b: FloatArray, t: float) -> float:
    reserve = float(np.dot(b, slots))
    return 0.0 if reserve == 0.0 else reserve * t / int(l_.shape[0])


class _Search:
    """Depth-first branch and bound over the dimensions (module docstring)."""

    def __init__(self, dims: list[_Dim], budget: float, best: float, best_slots: list[int]) -> None:
        self.dims = dims
        self.budget = budget  # D / theta: the time sum allowed
        self.best = best  # least (b . r)(sum of times) found
        self.best_slots = best_slots
        self.visited = 0
        # rest[i]: sum of sqrt(b l) over dims i.. ; fastest[i]: least time sum of dims i..
        self.rest = [sum(math.sqrt(d.b * d.l) for d in dims[i:]) for i in range(len(dims) + 1)]
        self.fastest = [sum(d.times[-1] for d in dims[i:]) for i in range(len(dims) + 1)]

    def run(self, i: int, B: float, L: float, chosen: list[int]) -> None:
        d = self.dims[i]
        last = i == len(self.dims) - 1
        room = self.budget - L - self.fastest[i + 1]  # time dimension i may take
        start = _first_fitting(d.times, room)
        if start is None:
            return
        r_turn = math.sqrt(B * d.l / (d.b * L)) if B > 0 and L > 0 and d.b > 0 else math.inf
        for pos in range(start, len(d.slots)):
            self.visited += 1
            if self.visited > MAX_NODES_VISITED:
                raise RuntimeError("slot search exceeded its node budget; use fewer dimensions or units")
            r, t = d.slots[pos], d.times[pos]
            b2, l2 = B + d.b * r, L + t
            bound = (math.sqrt(b2 * (L + d.l / r)) + self.rest[i + 1]) ** 2
            if bound > self.best * (1 + 1e-12):
                if r >= r_turn:
                    break  # past the bound's minimum: it only grows from here
                continue
            if last:
                value = b2 * l2
                better = value < self.best * (1 - 1e-12)
                tie = not better and value <= self.best * (1 + 1e-12) and sum(chosen) + r < sum(self.best_slots)
                if better or tie:  # a tie goes to fewer units (paper 003, Thm. 1: save resources)
                    self.best, self.best_slots = value, [*chosen, r]
            else:
                self.run(i + 1, b2, l2, [*chosen, r])


def _first_fitting(times: list[float], room: float) -> int | None:
    """First position whose time fits in ``room`` (times never grow with more slots)."""
    slack = room * 1e-12
    for pos, t in enumerate(times):
        if t <= room + slack:
            return pos
    return None


def _on_node(
    l_: FloatArray, D: float, b: FloatArray, a: FloatArray, theta: float, tasks: Sequence[int] | None,
) -> SlotAllocation:
    R = l_.shape[0]
    cont = min_payment(l_, D, b, a, theta=theta)
    work = l_ > 0
    limit = np.where(np.isfinite(a), np.floor(a + 1e-9), 0).astype(np.int64)
    if np.any(~np.isfinite(a[work])):
        # no limit: no useful vector exceeds the rounded-up continuous optimum by much; bound the scan there
        limit[work & ~np.isfinite(a)] = np.ceil(cont.resources[work & ~np.isfinite(a)] * 4 + 1).astype(np.int64)
    if tasks is not None:
        limit = np.minimum(limit, np.asarray(tasks, dtype=np.int64))
    up = np.where(work, np.minimum(np.ceil(cont.resources - 1e-9), limit), 0).astype(np.int64)
    t_up = _whole_time(l_, up, theta, tasks)
    pay_up = _pay(l_, up, b, t_up) if t_up <= D * (1 + 1e-12) else math.inf
    full = np.where(work, limit, 0).astype(np.int64)
    t_full = _whole_time(l_, full, theta, tasks)
    if t_full > D * (1 + 1e-12):  # even every whole slot misses the deadline
        pay = _pay(l_, full, b, t_full)
        return SlotAllocation(full, t_full, pay, False, cont, up, pay_up, pay - cont.payment)
    dims = [
        _Dim(k, float(l_[k]), float(b[k]), int(limit[k]), None if tasks is None else int(tasks[k]))
        for k in np.flatnonzero(work).tolist()
    ]
    seed = up if math.isfinite(pay_up) else full
    search = _Search(dims, D / theta, float(np.dot(b, seed)) * _whole_time(l_, seed, 1.0, tasks), [int(seed[d.index]) for d in dims])
    search.run(0, 0.0, 0.0, [])
    slots = np.zeros(R, dtype=np.int64)
    for d, r in zip(dims, search.best_slots, strict=True):
        slots[d.index] = r
    t = _whole_time(l_, slots, theta, tasks)
    pay = _pay(l_, slots, b, t)
    return SlotAllocation(slots, t, pay, True, cont, up, pay_up, pay - cont.payment)


def min_payment_slots(
    workload: ArrayLike, deadline: float, prices: ArrayLike, available: ArrayLike, *,
    theta: float = 1.0, tasks: Sequence[int] | None = None,
) -> SlotAllocation:
    """The cheapest whole-slot vector that finishes ``workload`` by ``deadline``
    (paper 003's Eqs. 1-2 in whole slots, docs/mechanisms.md; exact branch and bound, module docstring).

    Args:
        workload, deadline, prices, available, theta: as
            ``scheduler.deadline.payment.min_payment``; availability is floored to
            whole units (an unlimited dimension is searched up to four times
            its continuous optimum).
        tasks: optional (R,) task counts (>= 1 where there is work): the time
            of dimension k is then ``ceil(n_k / r_k) * l_k / n_k`` (waves).

    Returns:
        The :class:`SlotAllocation` of the cheapest feasible node (by whole-slot
        payment), or, when none is feasible, of the node closest to the deadline.

    Raises:
        ValueError: as ``min_payment``, or task counts of the wrong shape or
            below 1 where there is work.
        RuntimeError: the search would visit more than ``MAX_NODES_VISITED`` vectors.
    """
    l_ = np.asarray(workload, dtype=np.float64)
    b = np.asarray(prices, dtype=np.float64)
    a = np.asarray(available, dtype=np.float64)
    min_payment(l_, deadline, b, a, theta=theta)  # the input checks
    if tasks is not None:
        tasks = [int(x) for x in tasks]
        if len(tasks) != l_.shape[0] or any(n < 1 for n, w in zip(tasks, l_.tolist(), strict=True) if w > 0):
            raise ValueError("tasks must give (R,) counts, >= 1 wherever there is work")
    R = l_.shape[0]
    b2, a2 = b.reshape(-1, R), a.reshape(-1, R)
    nodes = [_on_node(l_, float(deadline), b2[p], a2[p], float(theta), tasks) for p in range(b2.shape[0])]
    feasible = [p for p, x in enumerate(nodes) if x.feasible]
    if feasible:
        best = min(feasible, key=lambda p: nodes[p].payment)
    else:
        best = min(range(len(nodes)), key=lambda p: (nodes[p].exec_time, nodes[p].payment))
    x = nodes[best]
    return SlotAllocation(
        x.slots, x.exec_time, x.payment, x.feasible, x.continuous, x.rounded_up, x.rounded_up_payment, x.rounding_cost, best,
    )
