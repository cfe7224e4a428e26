"""History and share limits of long-term fair share (paper 002, Sec. 6.2.2-6.2.3).

* History modes, by name (:data:`HISTORY_MODES`), how much of the past the
  accumulated usage remembers:

  - ``"forever"`` -- all of it (LTRF as in Alg. 1);
  - ``"rounds"``  -- time windows of length L; each new window starts from zero
    (paper 002, Sec. 6.2.2 "Time Window-Based Support");
  - ``"decay"``   -- exponential decay with a half-life: usage from ``h`` seconds
    ago counts half (Slurm's ``PriorityDecayHalfLife``, Kueue's fair-sharing
    usage half-life).

* Share limits per queue (Sec. 6.2.3: "minimum (maximum) resource share for
  queues"): a queue below its minimum share is served before the others; a
  queue at its maximum share gets no more units (not work-conserving). Both are
  fractions of the resource type's capacity and apply to every node of the
  tree (a group's units are the sum of its leaves').

* :func:`static_quota` -- static partitioning: each leaf owns a fixed whole
  number of units and lends none (the paper's non-shared baseline, Fig. 7).

Pure numpy; no Django.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.fairness import QueueTree

__all__ = ["HISTORY_MODES", "apportion", "check_history", "decayed_integral", "limit_masks", "room", "static_quota"]

HISTORY_MODES: tuple[str, ...] = ("forever", "rounds", "decay")
LN2 = math.log(2.0)


def check_history(mode: str, length: float) -> None:
    """Raise ValueError unless ``mode`` is a history mode and ``length`` (the round
    length L or the half-life, seconds) is finite and > 0 where the mode uses it."""
    if mode not in HISTORY_MODES:
        raise ValueError(f"unknown history mode {mode!r}; choose one of {HISTORY_MODES}")
    if mode != "forever" and not (math.isfinite(length) and length > 0):
        raise ValueError(f"the {mode} history needs a finite length > 0 (seconds), got {length!r}")


def decayed_integral(elapsed: NDArray[np.float64] | float, half_life: float) -> NDArray[np.float64]:
    """Integral over the last ``elapsed`` seconds of 2^(-age / half_life):
    ``h / ln 2 * (1 - 2^(-elapsed / h))`` (one unit held for ``elapsed`` s, seen now)."""
    e = np.maximum(np.asarray(elapsed, dtype=np.float64), 0.0)
    out: NDArray[np.float64] = half_life / LN2 * -np.expm1(-e * LN2 / half_life)
    return out


def static_quota(tree: QueueTree, capacity: float) -> NDArray[np.int64]:
    """(L,) whole units each leaf owns under static partitioning: C * fraction
    (paper 002, Eq. 2) rounded by largest remainders (ties: lower position); all
    zero-capacity leaves get 0. ``capacity`` inf: no quota (every leaf unbounded)."""
    if not math.isfinite(capacity):
        return np.full(len(tree.leaves), np.iinfo(np.int64).max // 4, dtype=np.int64)
    return apportion(int(capacity), tree.leaf_fraction())


def _node_units(tree: QueueTree, running: NDArray[np.int64]) -> NDArray[np.float64]:
    return tree.aggregate(np.asarray(running, dtype=np.float64))


def limit_masks(tree: QueueTree, running: NDArray[np.int64], capacity: float) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """``(allowed, needy)``, (L,) bool each, from the tree's share limits.

    ``allowed``: no node on the leaf's path (itself included) holds
    ``>= floor(max_share * capacity)`` units. ``needy``: some node on the
    path holds fewer than ``min_share * capacity`` units. ``running`` (L,)
    units each leaf holds now. With an infinite capacity nothing is limited.
    """
    n_leaves = len(tree.leaves)
    allowed = np.ones(n_leaves, dtype=bool)
    needy = np.zeros(n_leaves, dtype=bool)
    if not math.isfinite(capacity) or not tree.has_limits:
        return allowed, needy
    units = _node_units(tree, running)
    over = units >= np.floor(np.asarray(tree.max_fraction) * capacity + 1e-9)
    under = units < np.asarray(tree.min_fraction) * capacity - 1e-9
    for k, path in enumerate(tree.leaf_paths):
        allowed[k] = not over[list(path)].any()
        needy[k] = bool(under[list(path)].any())
    return allowed, needy


def room(tree: QueueTree, running: NDArray[np.int64], capacity: float, leaf: int) -> int:
    """More units leaf position ``leaf`` may take now under the max shares on its path
    (a large number when nothing limits it)."""
    big = np.iinfo(np.int64).max // 4
    if not math.isfinite(capacity) or not tree.has_limits:
        return int(big)
    units = _node_units(tree, running)
    path = list(tree.leaf_paths[leaf])
    caps = np.floor(np.asarray(tree.max_fraction)[path] * capacity + 1e-9) - units[path]
    return int(max(min(caps.min(), big), 0))


def apportion(capacity: int, fractions: NDArray[np.float64]) -> NDArray[np.int64]:
    """Whole units per leaf summing to ``capacity``, proportional to ``fractions``
    (largest remainders, ties to the lower position): static partitioning's
    fixed share S_i = C * w_i / sum w (paper 002, Eq. 2) in whole units."""
    exact = capacity * np.asarray(fractions, dtype=np.float64)
    units = np.floor(exact + 1e-9).astype(np.int64)
    left = int(capacity - units.sum())
    # remainders equal up to float rounding count as tied (then the lower position wins)
    order = sorted(range(units.size), key=lambda k: (-round(float(exact[k] - units[k]), 9), k))
    for k in order[: max(left, 0)]:
        units[k] += 1
    return units
