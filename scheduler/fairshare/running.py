"""Running tasks of one resource type, and strict-JSON floats for allocator state
(paper 002, Sec. 6.2.1: a running task's usage is estimated from its start and its
expected duration)."""

from __future__ import annotations

import math

import numpy as np


class RunningTasks:
    """Running batches in parallel arrays (swap-remove), so usage is one vectorised pass.

    A batch is ``units`` tasks of one leaf started at the same instant with the
    same expected duration (the cluster starts a job's tasks that way); it
    counts ``units`` times everywhere a task would count once.
    """

    def __init__(self) -> None:
        self.slot: dict[int, int] = {}
        self.keys: list[int] = []
        self.leaf = np.zeros(16, dtype=np.int64)
        self.start = np.zeros(16)
        self.expected = np.zeros(16)  # NaN = unknown, use the leaf's quantum Q
        self.units = np.zeros(16)
        self.app = np.zeros(16, dtype=np.int64)  # application key (scheduler.fairshare.quantum)
        self.unknown = 0  # batches whose expected duration is unknown (NaN)

    def __len__(self) -> int:
        return len(self.keys)

    def add(self, key: int, leaf: int, start: float, expected: float, units: int, app: int = -1) -> None:
        n = len(self.keys)
        if n == self.leaf.size:
            self.leaf, self.app = np.resize(self.leaf, 2 * n), np.resize(self.app, 2 * n)
            self.start, self.expected, self.units = (np.resize(a, 2 * n) for a in (self.start, self.expected, self.units))
        self.slot[key] = n
        self.keys.append(key)
        self.leaf[n], self.start[n], self.expected[n], self.units[n], self.app[n] = leaf, start, expected, units, app
        self.unknown += math.isnan(expected)

    def pop(self, key: int) -> tuple[int, float, float, int]:
        """Remove ``key``; returns (leaf, start, units, app). Raises KeyError if not running."""
        i = self.slot.pop(key)
        leaf, start, units, app = int(self.leaf[i]), float(self.start[i]), float(self.units[i]), int(self.app[i])
        self.unknown -= math.isnan(self.expected[i])
        last = len(self.keys) - 1
        if i != last:
            moved = self.keys[last]
            self.keys[i] = moved
            self.slot[moved] = i
            self.leaf[i] = self.leaf[last]
            self.app[i] = self.app[last]
            for a in (self.start, self.expected, self.units):
                a[i] = a[last]
        self.keys.pop()
        return leaf, start, units, app


def json_float(x: float) -> float | str | None:
    """inf -> "inf", -inf / NaN -> None, else the float (strict JSON has no infinities)."""
    if math.isnan(x) or x == -math.inf:
        return None
    return "inf" if x == math.inf else float(x)


def from_json_float(x: float | str | None, missing: float) -> float:
    if x is None:
        return missing
    return math.inf if x == "inf" else float(x)
