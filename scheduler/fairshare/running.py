"""Running tasks of one resource type, and strict-JSON floats for allocator state
(paper 002, Sec. 6.2.1: a running task's usage is estimated from its start and its
expected duration)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray


class RunningTasks:
    """Running batches in parallel lists (swap-remove).

    A batch is ``units`` tasks of one leaf started at the same instant with the
    same expected duration (the cluster starts a job's tasks that way); it
    counts ``units`` times everywhere a task would count once. :meth:`arrays`
    gives the columns as numpy arrays for a vectorised pass; :meth:`held` sums
    the known-duration case in plain Python (a few hundred batches at most, where
    numpy's per-call overhead is the larger cost).
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
        self._held: list[float] | None = None  # held() at _held_at, kept while only batches starting then are added
        self._held_at = math.nan

    def __len__(self) -> int:
        return len(self.keys)

    def add(self, key: int, leaf: int, start: float, expected: float, units: int, app: int = -1) -> None:
        self.slot[key] = len(self.keys)
        self.keys.append(key)
        self.leaf.append(leaf)
        self.start.append(start)
        self.expected.append(expected)
        self.units.append(float(units))
        self.app.append(app)
        self.unknown += math.isnan(expected)
        held = self._held
        if held is not None:
            if start == self._held_at and not math.isnan(expected):  # the last term of its leaf's sum, as held() adds it
                elapsed = self._held_at - start
                held[leaf] += (expected if expected >= elapsed else elapsed) * float(units)
            else:
                self._held = None

    def grow(self, key: int, units: int) -> None:
        """Batch ``key`` holds ``units`` more units. Raises KeyError if not running."""
        self.units[self.slot[key]] += units
        self._held = None

    def pop(self, key: int) -> tuple[int, float, float, int]:
        """Remove ``key``; returns (leaf, start, units, app). Raises KeyError if not running."""
        i = self.slot.pop(key)
        self._held = None
        leaf, start, units, app = self.leaf[i], self.start[i], self.units[i], self.app[i]
        expected = self.expected[i]
        self.unknown -= math.isnan(expected)
        last = len(self.keys) - 1
        if i != last:  # the last batch takes the hole, as before (the order the sums run in)
            moved = self.keys[last]
            self.keys[i] = moved
            self.slot[moved] = i
            self.leaf[i], self.start[i], self.expected[i] = self.leaf[last], self.start[last], self.expected[last]
            self.units[i], self.app[i] = self.units[last], self.app[last]
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
        bit for bit. Every expected duration must be known (``unknown == 0``). The list is kept
        (do not change it) and brought up to date by :meth:`add` while the clock stands still."""
        if self._held is not None and self._held_at == now and len(self._held) == n_leaves:
            return self._held
        out = [0.0] * n_leaves
        for leaf, start, expected, units in zip(self.leaf, self.start, self.expected, self.units, strict=True):
            elapsed = now - start
            out[leaf] += (expected if expected >= elapsed else elapsed) * units
        self._held, self._held_at = out, now
        return out


def json_float(x: float) -> float | str | None:
    """inf -> "inf", -inf / NaN -> None, else the float (strict JSON has no infinities)."""
    if math.isnan(x) or x == -math.inf:
        return None
    return "inf" if x == math.inf else float(x)


def from_json_float(x: float | str | None, missing: float) -> float:
    if x is None:
        return missing
    return math.inf if x == "inf" else float(x)
