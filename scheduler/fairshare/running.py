"""Running tasks of one resource type, and strict-JSON floats for allocator state
(paper 002, Sec. 6.2.1: a running task's usage is estimated from its start and its
expected duration)."""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import operator

import numpy as np
from numpy.typing import NDArray


class RunningTasks:
    """Running batches in parallel lists (swap-remove).

    A batch is ``units`` tasks of one leaf started at the same instant with the
    same expected duration (the cluster starts a job's tasks that way); it
    counts ``units`` times everywhere a task would count once. :meth:`arrays`
    gives the columns as numpy arrays for a vectorised pass; :meth:`held` sums
    the known-duration case in plain Python, leaf by leaf.

    While no batch of a leaf may have overrun its expected duration, each of the
    leaf's terms is ``expected * units`` whatever the clock: the leaf keeps the
    running (prefix) sums of those terms in batch order, so a change redoes the
    sum only from the first batch it moved, and a min-heap of the batches'
    safe clocks (:func:`_safe_until`) tells when that holds.
    """

    def __init__(self) -> None:
        self.slot: dict[int, int] = {}
        self.keys: list[int] = []
        self.leaf: list[int] = []
        self.start: list[float] = []
        self.expected: list[float] = []  # NaN = unknown, use the leaf's quantum Q
        self.units: list[float] = []
        self.app: list[int] = []  # application key (scheduler.fairshare.quantum)
        self.unknown = 0  # batches whose expected duration is unknown (NaN)
        self._serial: list[int] = []  # per batch, a number no other batch had (the heaps' entries)
        self._next_serial = 0
        # per leaf: its batches' positions in increasing order; the prefix sums of their terms
        # expected * units (prefix[k]: the first k, from 0.0), valid up to index _valid; a min-heap of
        # (safe clock, serial) over its batches, entries of ended batches dropped when they surface;
        # the sum held() last gave with some batch overrun and the clock it was for (NaN: changed since)
        self._members: list[list[int]] = []
        self._terms: list[list[float]] = []  # per leaf, expected * units of its members, in their order
        self._prefix: list[list[float]] = []
        self._valid: list[int] = []
        self._safe: list[list[tuple[float, int]]] = []
        self._live: set[int] = set()
        self._late_sum: list[float] = []
        self._stamp: list[float] = []
        # per leaf, the total held() gave from the prefix sums and the clock up to which it stands
        # (the leaf's least safe clock; -inf: the leaf changed since)
        self._total: list[float] = []
        self._until: list[float] = []

    def __len__(self) -> int:
        return len(self.keys)

    def _leaf_slots(self, leaf: int) -> None:
        while len(self._members) <= leaf:
            self._members.append([])
            self._terms.append([])
            self._prefix.append([0.0])
            self._valid.append(0)
            self._safe.append([])
            self._late_sum.append(0.0)
            self._stamp.append(math.nan)
            self._total.append(0.0)
            self._until.append(-math.inf)

    def _changed(self, leaf: int, index: int) -> None:
        """The terms of ``leaf`` from member ``index`` on are no longer those summed."""
        if index < self._valid[leaf]:
            self._valid[leaf] = index
        self._stamp[leaf] = self._until[leaf] = math.nan  # NaN: no clock is below it

    def add(self, key: int, leaf: int, start: float, expected: float, units: int, app: int = -1) -> None:
        n = len(self.keys)
        self.slot[key] = n
        self.keys.append(key)
        self.leaf.append(leaf)
        self.start.append(start)
        self.expected.append(expected)
        self.units.append(float(units))
        self.app.append(app)
        self.unknown += math.isnan(expected)
        serial, self._next_serial = self._next_serial, self._next_serial + 1
        self._serial.append(serial)
        self._live.add(serial)
        if leaf >= len(self._members):
            self._leaf_slots(leaf)
        self._members[leaf].append(n)  # the largest position: its leaf's last term, the prefix sums stand
        self._until[leaf] = math.nan  # but not the total
        self._terms[leaf].append(expected * float(units))
        heapq.heappush(self._safe[leaf], (_safe_until(start, expected), serial))
        if self._stamp[leaf] == start and not math.isnan(expected):  # held()'s overrun sum, at elapsed 0
            self._late_sum[leaf] += (expected if expected >= 0.0 else 0.0) * float(units)
        else:
            self._stamp[leaf] = math.nan

    def grow(self, key: int, units: int) -> None:
        """Batch ``key`` holds ``units`` more units. Raises KeyError if not running."""
        i = self.slot[key]
        self.units[i] += units
        leaf = self.leaf[i]
        at = bisect.bisect_left(self._members[leaf], i)
        self._terms[leaf][at] = self.expected[i] * self.units[i]
        self._changed(leaf, at)

    def pop(self, key: int) -> tuple[int, float, float, int]:
        """Remove ``key``; returns (leaf, start, units, app). Raises KeyError if not running."""
        i = self.slot.pop(key)
        leaf, start, units, app = self.leaf[i], self.start[i], self.units[i], self.app[i]
        self.unknown -= math.isnan(self.expected[i])
        self._live.discard(self._serial[i])
        members = self._members[leaf]
        at = bisect.bisect_left(members, i)
        del members[at]
        del self._terms[leaf][at]
        self._changed(leaf, at)
        # the last batch takes the hole, as before (the order the sums run in)
        moved, moved_leaf, moved_start = self.keys.pop(), self.leaf.pop(), self.start.pop()
        moved_expected, moved_units, moved_app, moved_serial = self.expected.pop(), self.units.pop(), self.app.pop(), self._serial.pop()
        if i != len(self.keys):
            self.keys[i] = moved
            self.slot[moved] = i
            self.leaf[i], self.start[i], self.expected[i] = moved_leaf, moved_start, moved_expected
            self.units[i], self.app[i], self._serial[i] = moved_units, moved_app, moved_serial
            other, terms = self._members[moved_leaf], self._terms[moved_leaf]
            other.pop()  # the last position is its leaf's last
            at = bisect.bisect_left(other, i)
            other.insert(at, i)
            terms.insert(at, terms.pop())
            self._changed(moved_leaf, at)
        heap = self._safe[leaf]
        if len(heap) > 2 * len(members) + 16:  # entries of ended batches that never surfaced: drop them
            self._safe[leaf] = [entry for entry in heap if entry[1] in self._live]
            heapq.heapify(self._safe[leaf])
        return leaf, start, units, app

    def arrays(self) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
        """``(leaf, start, expected, units, app)`` as (n,) numpy arrays, in batch order."""
        return (np.array(self.leaf, dtype=np.int64), np.array(self.start, dtype=np.float64),
                np.array(self.expected, dtype=np.float64), np.array(self.units, dtype=np.float64),
                np.array(self.app, dtype=np.int64))  # fmt: skip

    def held(self, now: float, n_leaves: int, base: list[float] | None = None) -> list[float]:
        """(L,) per leaf, the sum of ``max(expected, now - start) * units`` over its batches, in
        batch order from 0.0: ``np.bincount(leaf, weights=np.maximum(expected, now - start) * units)``
        bit for bit; with ``base`` (L,), ``base[leaf]`` plus that sum. Every expected duration must
        be known (``unknown == 0``).

        A leaf whose batches all have ``now`` below their start + expected duration by a margin
        far above rounding (:func:`_safe_until`) has every term ``expected * units``: its kept
        prefix sums give the total, extended over the batches after the first one changed.
        """
        if len(self._members) < n_leaves:
            self._leaf_slots(n_leaves - 1)
        out: list[float] = []
        until, kept = self._until, self._total
        for leaf in range(n_leaves):
            total = kept[leaf] if now <= until[leaf] else self._leaf_total(leaf, now)
            out.append(total if base is None else base[leaf] + total)
        return out

    def _leaf_total(self, leaf: int, now: float) -> float:
        """:meth:`held`'s sum for one leaf whose kept total does not stand at ``now``."""
        heap, live = self._safe[leaf], self._live
        while heap and heap[0][1] not in live:
            heapq.heappop(heap)
        safe = heap[0][0] if heap else math.inf
        if now <= safe:  # no batch overrun: the terms are expected * units
            terms, prefix, valid = self._terms[leaf], self._prefix[leaf], self._valid[leaf]
            n = len(terms)
            if valid < n:  # left to right from the first changed term: the loop's additions
                prefix[valid:] = itertools.accumulate(terms[valid:], operator.add, initial=prefix[valid])
                self._valid[leaf] = n
            total = prefix[n]  # entries past it belong to batches gone since
            self._total[leaf], self._until[leaf] = total, safe
            return total
        if now != self._stamp[leaf]:
            start, expected, units = self.start, self.expected, self.units
            total = 0.0
            for i in self._members[leaf]:
                duration, elapsed = expected[i], now - start[i]
                total += (duration if duration >= elapsed else elapsed) * units[i]
            self._late_sum[leaf], self._stamp[leaf] = total, now
        return self._late_sum[leaf]


def _safe_until(start: float, expected: float) -> float:
    """A clock up to which ``now - start`` rounds to at most ``expected`` (below start + expected
    by a relative 1e-9, far above rounding); -inf for an unknown duration."""
    if math.isnan(expected):
        return -math.inf
    end = start + expected
    return end - 1e-9 * max(1.0, abs(end))


def json_float(x: float) -> float | str | None:
    """inf -> "inf", -inf / NaN -> None, else the float (strict JSON has no infinities)."""
    if math.isnan(x) or x == -math.inf:
        return None
    return "inf" if x == math.inf else float(x)


def from_json_float(x: float | str | None, missing: float) -> float:
    if x is None:
        return missing
    return math.inf if x == "inf" else float(x)
