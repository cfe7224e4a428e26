"""Deterministic choices among leaves (paper 002, Sec. 5: the leaf with the smallest
(normalised) usage; ties go to the lowest leaf position, not to a coin, so runs
are reproducible). Plain Python below ``SMALL`` leaves, where numpy's call
overhead costs more than the work."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

# Relative tolerance under which two normalised usages count as tied: float
# rounding must not override the deterministic "lowest leaf position" rule.
TIE_RTOL = 1e-12
SMALL = 64  # up to this many leaves, argmin_first runs in plain Python


def argmin_first(values: NDArray[np.float64], mask: NDArray[np.bool_]) -> int:
    """Index of the smallest masked value, the lowest index among ties; -1 if none."""
    if values.size <= SMALL:
        found = argmin_first_small(values.tolist(), mask.tolist())
        if found is not None:
            return found
    vals = np.where(mask, values, np.inf)
    best = float(vals.min(initial=np.inf))
    if best == np.inf:
        return -1 if not np.any(mask & np.isposinf(values)) else int(np.argmax(mask))
    return int(np.argmax(vals <= best + TIE_RTOL * max(1.0, abs(best))))


def argmin_first_small(values: list[float], mask: list[bool]) -> int | None:
    """:func:`argmin_first` in plain Python (faster on a few leaves), or None
    when a masked value is not finite or none is masked (numpy's edge cases)."""
    best = math.inf
    for v, m in zip(values, mask, strict=True):
        if m:
            if not math.isfinite(v):
                return None
            if v < best:
                best = v
    if best == math.inf:
        return None
    limit = best + TIE_RTOL * max(1.0, abs(best))
    for i, (v, m) in enumerate(zip(values, mask, strict=True)):
        if m and v <= limit:
            return i
    return None


def mean_of(values: list[float]) -> float:
    """``np.mean(values)``, bit for bit: numpy sums fewer than 8 values one by one,
    as ``sum`` does, so short lists skip numpy's overhead."""
    if 0 < len(values) < 8:
        return sum(values) / len(values)
    return float(np.mean(values))
