"""The LP-based predictor's allocation LP solved exactly as a flow (paper 001, Sec. 3.2; SPEC 3.2).

The LP (``scheduler.era_predictors.solve_allocation_lp``) reads

    maximise  sum_j V_j y_j
    s.t.      sum_t x_jt = y_j W_j T_j        (request j's unit-slots)
              sum_j x_jt <= C                 (slot t's capacity)
              0 <= x_jt <= W_j, t in [A_j, D_j);   0 <= y_j <= 1.

Write ``S_j = W_j T_j`` (unit-slots), ``u_j = V_j / S_j`` (value per unit-slot)
and ``f_j = sum_t x_jt = y_j S_j``. The LP is then a transportation problem on
the bipartite network

    source --(S_j)--> request j --(W_j)--> slot t in [A_j, D_j) --(C)--> sink

maximising ``sum_j u_j f_j``, where ``f_j`` is the flow through request j.

Why greedy by value is exact. Let rho(J) be the maximum flow when only the
requests in J may send. The vectors (f_j) that some feasible flow realises
form a polymatroid with rank function rho (the flow polymatroid of a network
with several sources: Megiddo, "Optimal flows in networks with multiple sources
and sinks", Math. Programming 7, 1974; Fujishige, "Submodular Functions and
Optimization", Sec. 2.2). A linear objective with nonnegative weights u_j is
maximised over a polymatroid by Edmonds' greedy algorithm: sort the requests by
u_j, highest first, and give request number k the amount
``rho(J_k) - rho(J_{k-1})`` where J_k is the first k requests (Edmonds,
"Submodular functions, matroids, and certain polyhedra", 1970, Thm. 17).
Ties in u_j may be broken either way: every order of equal weights reaches the
same objective.

How the increments are computed. Start from a maximum flow for J_{k-1} and
push flow from request k along augmenting paths of the residual network until
none is left. A path starts at k and ends at the sink; it enters other requests
only from a slot (moving one of their units to another slot of their window),
so it never changes how much they send. When no path is left the flow is
maximum for J_k (Ford and Fulkerson), so request k got exactly
``rho(J_k) - rho(J_{k-1})``.

Why nodes may be pruned for good. Call a node dead when it cannot reach the
sink in the residual network. Augmenting along a path P only adds arcs that
reverse arcs of P, and every node of P could reach the sink; so a node that
reaches the sink afterwards reached it before (follow its new path to the
first new arc; that arc starts on P). Adding request k adds no arc into an old
node. So once a search from request k fails, every node it visited is dead
for the rest of the run and later searches skip it: the failed searches cost
O(arcs) in total, and in an oversubscribed history most requests are refused
after looking at a window of dead slots.

Searches are breadth-first (Edmonds-Karp), so each increment terminates also
with real-valued capacities. Amounts below ``EPS`` (relative to the largest
capacity) count as zero.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
EPS = 1e-9


@dataclass(frozen=True)
class FlowAllocation:
    """Result of :func:`greedy_allocation`.

    Attributes:
        sent: (n,) f_j, unit-slots of request j served (``y_j = f_j / S_j``).
        job, slot, units: the nonzero x_jt, sorted by job then slot.
    """

    sent: FloatArray
    job: IntArray
    slot: IntArray
    units: FloatArray


class _Network:
    """The residual network of the module docstring, as plain Python lists (fast per element)."""

    def __init__(self, units: list[float], arrival: list[int], deadline: list[int], capacity: float, horizon: int) -> None:
        self.w, self.a, self.d = units, arrival, deadline
        self.x: list[list[float]] = [[0.0] * (d - a) for a, d in zip(arrival, deadline, strict=True)]
        self.free = [float(capacity)] * horizon
        self.holders: list[set[int]] = [set() for _ in range(horizon)]
        self.dead_slot = bytearray(horizon)
        self.dead_job = bytearray(len(units))
        self.eps = EPS * max([float(capacity), *units, 1.0])
        self.horizon = horizon
        self.free_slots = list(range(horizon))  # sorted; a slot's load only grows, so it never returns

    def _take(self, t: int, amount: float) -> None:
        """Slot t's load grows by ``amount``; a slot left without room leaves ``free_slots``."""
        self.free[t] -= amount
        if self.free[t] <= self.eps:
            self.free[t] = 0.0
            del self.free_slots[bisect_left(self.free_slots, t)]

    def fill_directly(self, j: int, want: float) -> float:
        """Paths of one arc (request j -> a slot with room): returns the amount pushed."""
        eps, w, a, x, free = self.eps, self.w[j], self.a[j], self.x[j], self.free
        pushed = 0.0
        for off in range(len(x)):
            if want - pushed <= eps:
                break
            t = a + off
            room = min(free[t], w - x[off], want - pushed)
            if room > eps:
                x[off] += room
                self._take(t, room)
                self.holders[t].add(j)
                pushed += room
        return pushed

    def augment(self, j: int, want: float) -> float:
        """One augmenting path from request j: the amount pushed, or 0 when none is left.

        A cheap directed walk towards the nearest free slot first (:meth:`_walk`); when it
        gets stuck, the complete breadth-first search (:meth:`_search`), which marks every
        node it visited dead when it fails (module docstring)."""
        target = self._target(j)
        if target < 0:
            self.dead_job[j] = 1
            return 0.0
        found = self._walk(j, target)
        if found is None:
            found = self._search(j)
        if found is None:
            return 0.0
        return self._push(j, want, *found)

    def _walk(self, j: int, target: int) -> tuple[int, dict[int, int], dict[int, int]] | None:
        """A path j -> t1 -> k1 -> t2 -> ... -> free slot, each step moving to the slot nearest
        ``target`` that any request holding the current slot may move a unit to. None when a
        step brings the path no nearer (the caller then searches in full)."""
        eps, free, dead_job = self.eps, self.free, self.dead_job
        slot_from: dict[int, int] = {}
        job_from: dict[int, int] = {j: -1}
        movers = [j]
        gap_here = self.horizon + 1
        while True:
            best, best_k, best_gap = -1, -1, gap_here
            for k in movers:
                t = self._nearest(k, target, slot_from)
                if t >= 0 and abs(t - target) < best_gap:
                    best, best_k, best_gap = t, k, abs(t - target)
            if best < 0:
                return None
            slot_from[best] = best_k
            if free[best] > eps:
                return best, slot_from, job_from
            gap_here = best_gap
            movers = []
            for k2 in self.holders[best]:
                if k2 not in job_from and not dead_job[k2]:
                    job_from[k2] = best
                    movers.append(k2)

    def _nearest(self, k: int, target: int, taken: dict[int, int]) -> int:
        """The slot of request k's window nearest ``target`` where k may take one more unit
        (not dead, not on the path yet, x_kt < W_k); -1 when there is none."""
        eps, dead_slot, ak, wk, xk = self.eps, self.dead_slot, self.a[k], self.w[k], self.x[k]
        hi = ak + len(xk) - 1
        if target <= ak:
            order: range | list[int] = range(ak, hi + 1)
        elif target >= hi:
            order = range(hi, ak - 1, -1)
        else:
            order = sorted(range(ak, hi + 1), key=lambda t: abs(t - target))
        for t in order:
            if not (dead_slot[t] or t in taken or xk[t - ak] >= wk - eps):
                return t
        return -1

    def _search(self, j: int) -> tuple[int, dict[int, int], dict[int, int]] | None:
        """Breadth-first search for a shortest augmenting path from request j; when there is
        none, every node visited is marked dead (module docstring)."""
        eps, free, dead_slot, dead_job, x, w = self.eps, self.free, self.dead_slot, self.dead_job, self.x, self.w
        slot_from: dict[int, int] = {}  # slot -> request whose forward arc reached it
        job_from: dict[int, int] = {j: -1}  # request -> slot whose reverse arc reached it
        queue = deque([j])
        while queue:
            k = queue.popleft()
            wk, ak, xk = w[k], self.a[k], x[k]
            for off in range(len(xk)):
                t = ak + off
                if dead_slot[t] or t in slot_from or xk[off] >= wk - eps:
                    continue
                slot_from[t] = k
                if free[t] > eps:
                    return t, slot_from, job_from
                for k2 in self.holders[t]:
                    if k2 not in job_from and not dead_job[k2]:
                        job_from[k2] = t
                        queue.append(k2)
        for t in slot_from:
            dead_slot[t] = 1
        for k in job_from:
            dead_job[k] = 1
        return None

    def _target(self, j: int) -> int:
        """The free slot nearest request j's window (-1 when no slot has room)."""
        free_slots = self.free_slots
        if not free_slots:
            return -1
        centre = (self.a[j] + self.d[j] - 1) / 2
        i = bisect_left(free_slots, centre)
        near = [free_slots[p] for p in (i - 1, i) if 0 <= p < len(free_slots)]
        return min(near, key=lambda t: abs(t - centre))

    def _push(self, j: int, want: float, end: int, slot_from: dict[int, int], job_from: dict[int, int]) -> float:
        """Push the bottleneck along the path that ends at slot ``end``."""
        path: list[tuple[int, int, int]] = []  # (request, slot it moves into, slot it leaves or -1)
        t = end
        delta = min(want, self.free[end])
        while True:
            k = slot_from[t]
            delta = min(delta, self.w[k] - self.x[k][t - self.a[k]])
            back = job_from[k]
            if back >= 0:
                delta = min(delta, self.x[k][back - self.a[k]])
            path.append((k, t, back))
            if back < 0:
                break
            t = back
        for k, into, out in path:
            xk, ak = self.x[k], self.a[k]
            xk[into - ak] += delta
            self.holders[into].add(k)
            if out >= 0:
                xk[out - ak] -= delta
                if xk[out - ak] <= self.eps:
                    xk[out - ak] = 0.0
                    self.holders[out].discard(k)
        self._take(end, delta)
        return delta


def greedy_allocation(
    units: IntArray, duration: IntArray, arrival: IntArray, deadline: IntArray, unit_value: FloatArray,
    capacity: float, horizon: int,
) -> FlowAllocation:
    """Solve the allocation LP of the module docstring exactly, by Edmonds' greedy on the flow polymatroid.

    Args:
        units, duration, arrival, deadline: (n,) W_j, T_j, A_j, D_j in slots (``A_j + T_j <= D_j <= horizon``).
        unit_value: (n,) u_j = V_j / (W_j T_j), money per unit-slot, >= 0.
        capacity: C units per slot, > 0.
        horizon: slots.

    Returns:
        The served unit-slots per request and the nonzero x_jt.
    """
    n = int(units.size)
    w = [float(v) for v in units.tolist()]
    supply = [float(v) for v in (units * duration).tolist()]
    net = _Network(w, arrival.tolist(), deadline.tolist(), capacity, horizon)
    sent = np.zeros(n)
    for j in np.argsort(-unit_value, kind="stable").tolist():
        got = net.fill_directly(j, supply[j])
        while supply[j] - got > net.eps:
            step = net.augment(j, supply[j] - got)
            if step <= 0.0:
                break
            got += step
        sent[j] = got
    jobs, slots, amounts = [], [], []
    for j, xj in enumerate(net.x):
        for off, v in enumerate(xj):
            if v > net.eps:
                jobs.append(j)
                slots.append(net.a[j] + off)
                amounts.append(v)
    return FlowAllocation(sent, np.array(jobs, dtype=np.int64), np.array(slots, dtype=np.int64), np.array(amounts, dtype=np.float64))
