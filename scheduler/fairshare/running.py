"""Running tasks of one resource type, and strict-JSON floats for allocator state
(paper 002, Sec. 6.2.1: a running task's usage is estimated from its start and its
expected duration)."""

from __future__ import annotations

import bisect
import math

import numpy as np
from numpy.typing import NDArray


class RunningTasks:
    """Running batches in parallel lists (swap-remove).

    A batch is ``units`` tasks of one leaf started at the same instant with the
    same expected duration (the cluster starts a job's tasks that way); it
    counts ``units`` times everywhere a task would count once. :meth:`arrays`
    gives the columns as numpy arrays for a vectorised pass; :meth:`held` sums
    the known-duration case in plain Python, leaf by leaf, keeping each leaf's
    sum until its batches change or one of them may have overrun.
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
        # per leaf: its batches' positions in increasing order, the kept sum of held() and the clock up to
        # which it holds (no batch of the leaf has overrun its expected duration by then); -inf: recompute
        self._members: list[list[int]] = []
        self._sums: list[float] = []
        self._safe: list[float] = []
        self._stamp: list[float] = []  # the clock the sum was last summed at (NaN: changed since)

    def __len__(self) -> int:
        return len(self.keys)

    def _leaf_slots(self, leaf: int) -> None:
        while len(self._members) <= leaf:
            self._members.append([])
            self._sums.append(0.0)
            self._safe.append(math.inf)
            self._stamp.append(math.nan)

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
        self._leaf_slots(leaf)
        self._members[leaf].append(n)  # the largest position: its leaf's last term
        safe = _safe_until(start, expected)
        kept = self._safe[leaf] >= start  # the sum holds at any clock up to _safe
        if (kept or self._stamp[leaf] == start) and not math.isnan(expected):  # it holds now: add the last term
            self._sums[leaf] += (expected if expected >= 0.0 else 0.0) * float(units)  # held()'s, at elapsed 0
            if kept and safe >= start:
                self._safe[leaf] = min(self._safe[leaf], safe)
            else:
                self._safe[leaf], self._stamp[leaf] = -math.inf, start
        else:
            self._safe[leaf], self._stamp[leaf] = -math.inf, math.nan

    def grow(self, key: int, units: int) -> None:
        """Batch ``key`` holds ``units`` more units. Raises KeyError if not running."""
        i = self.slot[key]
        self.units[i] += units
        self._safe[self.leaf[i]], self._stamp[self.leaf[i]] = -math.inf, math.nan

    def pop(self, key: int) -> tuple[int, float, float, int]:
        """Remove ``key``; returns (leaf, start, units, app). Raises KeyError if not running."""
        i = self.slot.pop(key)
        leaf, start, units, app = self.leaf[i], self.start[i], self.units[i], self.app[i]
        expected = self.expected[i]
        self.unknown -= math.isnan(expected)
        members = self._members[leaf]
        del members[bisect.bisect_left(members, i)]
        self._safe[leaf], self._stamp[leaf] = -math.inf, math.nan
        last = len(self.keys) - 1
        if i != last:  # the last batch takes the hole, as before (the order the sums run in)
            moved = self.keys[last]
            self.keys[i] = moved
            self.slot[moved] = i
            self.leaf[i], self.start[i], self.expected[i] = self.leaf[last], self.start[last], self.expected[last]
            self.units[i], self.app[i] = self.units[last], self.app[last]
            other = self._members[self.leaf[i]]
            other.pop()  # the last position is its leaf's last
            bisect.insort(other, i)
            self._safe[self.leaf[i]], self._stamp[self.leaf[i]] = -math.inf, math.nan
        for column in (self.keys, self.leaf, self.start, self.expected, self.units, self.app):
            column.pop()
        return leaf, start, units, app

    def arrays(self) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
        """``(leaf, start, expected, units, app)`` as (n,) numpy arrays, in batch order."""
        return (np.array(self.leaf, dtype=np.int64), np.array(self.start, dtype=np.float64),
                np.array(self.expected, dtype=np.float64), np.array(self.units, dtype=np.float64),
                np.array(self.app, dtype=np.int64))  # fmt: skip

    def held(self, now: float, n_leaves: int) -> list[float]:
        """(L,) per leaf, the sum of ``max(expected, now - start) * units`` over its batches, in
        batch order from 0.0: ``np.bincount(leaf, weights=np.maximum(expected, now - start) * units)``
        bit for bit. Every expected duration must be known (``unknown == 0``).

        A leaf's sum is kept while ``now`` stays below each of its batches' start + expected
        duration by a margin far above rounding: there ``now - start`` rounds to at most
        ``expected``, so every term is ``expected * units`` whatever the clock.
        """
        self._leaf_slots(n_leaves - 1)
        out = self._sums[:n_leaves]
        safe_until, stamp = self._safe, self._stamp
        for leaf in range(n_leaves):
            if now <= safe_until[leaf] or now == stamp[leaf]:
                continue
            total, low, high = 0.0, math.inf, 0.0
            start, expected, units = self.start, self.expected, self.units
            for i in self._members[leaf]:
                begun, duration = start[i], expected[i]
                elapsed = now - begun
                total += (duration if duration >= elapsed else elapsed) * units[i]
                end = begun + duration
                if end < low:
                    low = end
                if abs(end) > high:
                    high = abs(end)
            # below every end by a relative 1e-9 of the largest: far above the rounding of any end
            safe = low - 1e-9 * max(1.0, abs(low), high) if low < math.inf else math.inf
            out[leaf] = self._sums[leaf] = total
            safe_until[leaf], stamp[leaf] = (safe if now <= safe else -math.inf), now
        return out


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
