"""The LP-based predictor's allocation LP solved exactly as a flow (paper 001, Sec. 3.2).

The LP (``scheduler.era.predictors.solve_allocation_lp``) reads

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
first new arc; that arc starts on P). Adding request k adds arcs out of k
only, and nothing reaches k before flow passes through it (an augmentation,
above). So once a search from request k fails, every node it visited is dead
for the rest of the run and later searches skip it: each slot is visited by
at most one failed search, and in an oversubscribed history most requests are
refused after looking at a window of dead slots.

Paths are shortest paths (breadth-first levels, Edmonds and Karp 1972: a
path traced through a search's levels later is still shortest, as residual
distances never shrink), so each increment terminates also with real-valued
capacities. Amounts below ``EPS`` (relative to the largest capacity) count as
zero.
"""

from __future__ import annotations

from collections.abc import Iterator
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


def _bits(mask: int) -> Iterator[int]:
    """The set bits of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class _Network:
    """The residual network of the module docstring, at the level of slots.

    A path moves request j into a slot, then a unit of another request out of that
    (full) slot into another slot of its window, and so on until a slot with room.
    Sets of slots are Python integers used as bit sets: ``room[k]`` holds the slots
    where request k may take more (x_kt < W_k), ``reach(t)`` the slots a unit held in
    slot t can move to (the union of its holders' ``room``, cached), ``free_mask`` the
    slots with room and ``dead`` the slots that cannot reach one (module docstring).
    A breadth-first search then costs one union per slot visited, not a walk over
    every holder's window.
    """

    def __init__(self, units: list[float], arrival: list[int], deadline: list[int], capacity: float, horizon: int) -> None:
        self.w, self.a = units, arrival
        self.x: list[list[float]] = [[0.0] * (d - a) for a, d in zip(arrival, deadline, strict=True)]
        self.room = [((1 << (d - a)) - 1) << a for a, d in zip(arrival, deadline, strict=True)]
        self.held: list[set[int]] = [set() for _ in units]  # slots where x_kt > 0
        self.holders: list[set[int]] = [set() for _ in range(horizon)]  # requests with x_kt > 0
        self.free = [float(capacity)] * horizon
        self.free_mask = (1 << horizon) - 1
        self.dead = 0
        self._reach = [0] * horizon
        self._reach_ok = bytearray(horizon)
        self.eps = EPS * max([float(capacity), *units, 1.0])
        self.span = max((d - a for a, d in zip(arrival, deadline, strict=True)), default=1)  # longest window

    def reach(self, t: int) -> int:
        """Slots a unit held in slot t can move to (cached until a holder's room changes)."""
        if not self._reach_ok[t]:
            mask = 0
            room = self.room
            for k in self.holders[t]:
                mask |= room[k]
            self._reach[t] = mask
            self._reach_ok[t] = 1
        return self._reach[t]

    def _set(self, k: int, t: int, value: float) -> None:
        """x_kt = value, keeping ``room``, ``held``, ``holders`` and the ``reach`` caches in step."""
        bit = 1 << t
        if value <= self.eps:
            value = 0.0
        self.x[k][t - self.a[k]] = value
        has_room = value < self.w[k] - self.eps
        if has_room != bool(self.room[k] & bit):
            self.room[k] ^= bit
            for s in self.held[k]:
                self._reach_ok[s] = 0
        if value > 0.0 and t not in self.held[k]:
            self.held[k].add(t)
            self.holders[t].add(k)
            if self._reach_ok[t]:
                self._reach[t] |= self.room[k]
        elif value == 0.0 and t in self.held[k]:
            self.held[k].discard(t)
            self.holders[t].discard(k)
            self._reach_ok[t] = 0

    def _take(self, t: int, amount: float) -> None:
        """Slot t's load grows by ``amount`` (loads never shrink: paths only move units)."""
        self.free[t] -= amount
        if self.free[t] <= self.eps:
            self.free[t] = 0.0
            self.free_mask &= ~(1 << t)

    def fill_directly(self, j: int, want: float) -> float:
        """Paths of one arc (request j -> a slot with room): returns the amount pushed."""
        pushed, ak, xj = 0.0, self.a[j], self.x[j]
        for t in _bits(self.room[j] & self.free_mask):
            if want - pushed <= self.eps:
                break
            amount = min(self.free[t], self.w[j] - xj[t - ak], want - pushed)
            self._set(j, t, xj[t - ak] + amount)
            self._take(t, amount)
            pushed += amount
        return pushed

    def augment(self, j: int, want: float) -> float:
        """Push flow from request j along shortest augmenting paths: 0 when there is none, and
        then every slot the search visited is dead for good (module docstring).

        One breadth-first search, level by level over bit sets, then as many paths through
        its levels as can still be traced back from a slot with room (a path is checked
        against the current flow arc by arc, so a stale level only ends the reuse)."""
        levels = self._levels(j)
        if levels is None:
            return 0.0
        pushed = 0.0
        while want - pushed > self.eps:
            hits = levels[-1] & self.free_mask
            path = self._path(j, levels, (hits & -hits).bit_length() - 1) if hits else None
            step = self._push(path, want - pushed) if path is not None else 0.0
            if step <= self.eps:
                break
            pushed += step
        return pushed

    def _levels(self, j: int) -> list[int] | None:
        """Breadth-first levels of slots from request j, the last one holding a slot with
        room; None, after marking every slot visited dead, when no slot with room is reached."""
        frontier = self.room[j] & ~self.dead
        levels, seen = [frontier], frontier
        reach, reach_ok, holders, room = self._reach, self._reach_ok, self.holders, self.room
        while frontier:
            if frontier & self.free_mask:
                return levels
            nxt, rest = 0, frontier
            while rest:  # the union of reach(s) over the frontier, reach inlined (the hot loop)
                low = rest & -rest
                rest ^= low
                s = low.bit_length() - 1
                if not reach_ok[s]:
                    mask = 0
                    for k in holders[s]:
                        mask |= room[k]
                    reach[s], reach_ok[s] = mask, 1
                nxt |= reach[s]
            frontier = nxt & ~(seen | self.dead)
            seen |= frontier
            levels.append(frontier)
        self.dead |= seen
        return None

    def _path(self, j: int, levels: list[int], end: int) -> list[tuple[int, int, int]] | None:
        """A path from request j to slot ``end`` through ``levels`` (end in the last one), as
        (request, slot it moves into, slot it leaves or -1) from the end back: walks back
        level by level to a slot one of whose holders may move into the current one. None
        when a level has no such slot any more."""
        path: list[tuple[int, int, int]] = []
        t = end
        for level in reversed(levels[:-1]):
            bit = 1 << t
            # a holder that moves into t holds a slot of its window, within self.span of t
            near = level & (((1 << (2 * self.span + 1)) - 1) << max(0, t - self.span))
            s = k = -1
            for s in _bits(near):
                if self._reach_ok[s] and not self._reach[s] & bit:
                    continue  # a valid cache says no; otherwise ask the holders (cheaper than a rebuild)
                k = next((k for k in self.holders[s] if self.room[k] & bit), -1)
                if k >= 0:
                    break
            if k < 0:
                return None
            path.append((k, t, s))
            t = s
        if not self.room[j] & (1 << t):
            return None
        path.append((j, t, -1))
        return path

    def _push(self, path: list[tuple[int, int, int]], want: float) -> float:
        """Push the bottleneck (at most ``want``) along ``path`` (:meth:`_path`)."""
        x, a = self.x, self.a
        end = path[0][1]
        delta = min(want, self.free[end])
        for k, into, out in path:
            delta = min(delta, self.w[k] - x[k][into - a[k]])
            if out >= 0:
                delta = min(delta, x[k][out - a[k]])
        for k, into, out in path:
            self._set(k, into, x[k][into - a[k]] + delta)
            if out >= 0:
                self._set(k, out, x[k][out - a[k]] - delta)
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
