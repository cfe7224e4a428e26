"""Deterministic choices among leaves (paper 002, Sec. 5: the leaf with the smallest
(normalised) usage; ties go to the lowest leaf position, not to a coin, so runs
are reproducible). Plain Python below ``SMALL`` leaves, where numpy's call
overhead costs more than the work."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from scheduler.fairshare.fairness import QueueTree

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


def argmin_ratio_small(numerators: list[float], denominators: list[float], mask: list[bool]) -> int | None:
    """``argmin_first_small([n / d for n, d in zip(numerators, denominators)], mask)``: the same
    quotients (only the masked ones are divided), the same answer (None for numpy's edge cases:
    no masked value, or one that is not finite; a sum that overflows is taken for one)."""
    ratios = [n / d for n, d, m in zip(numerators, denominators, mask, strict=True) if m]
    if not ratios or not math.isfinite(sum(ratios)):  # a NaN or an infinity makes the sum one too
        return None
    best = min(ratios)
    limit = best + TIE_RTOL * max(1.0, abs(best))
    k = 0
    for i, m in enumerate(mask):
        if m:
            if ratios[k] <= limit:
                return i
            k += 1
    return None


def mean_of(values: list[float]) -> float:
    """``np.mean(values)``, bit for bit: numpy sums fewer than 8 values one by one,
    as ``sum`` does, so short lists skip numpy's overhead."""
    if 0 < len(values) < 8:
        return sum(values) / len(values)
    return float(np.mean(values))


@dataclass(frozen=True)
class SmallTree:
    """A queue tree as plain lists, for :func:`descend_small`.

    Attributes:
        leaf_nodes: node of each leaf position.
        bottom_up: (node, its children in ascending node order) for every group, deepest first.
        kids: per node, its children ordered by their lowest leaf position (``QueueTree.children``).
        sibling_fraction: per node, its weight / its siblings' (``QueueTree.sibling_fraction``).
        leaf_position: per node, its leaf position (-1 for a group).
        root: the root node.
    """

    leaf_nodes: tuple[int, ...]
    bottom_up: tuple[tuple[int, tuple[int, ...]], ...]
    kids: tuple[tuple[int, ...], ...]
    sibling_fraction: tuple[float, ...]
    leaf_position: tuple[int, ...]
    root: int

    @classmethod
    def of(cls, tree: QueueTree) -> SmallTree:
        by_index: list[list[int]] = [[] for _ in tree.names]
        for node, parent in enumerate(tree.parent):
            if parent >= 0:
                by_index[parent].append(node)  # ascending node order, as tree.aggregate's bincount adds them
        depth = tree.depth
        groups = sorted((p for p in range(len(tree.names)) if by_index[p]), key=lambda p: -depth[p])
        return cls(
            leaf_nodes=tuple(int(n) for n in tree.leaves), bottom_up=tuple((p, tuple(by_index[p])) for p in groups),
            kids=tuple(tuple(int(c) for c in k) for k in tree.children), sibling_fraction=tuple(tree.sibling_fraction.tolist()),
            leaf_position=tuple(int(x) for x in tree.leaf_position), root=int(tree.root),
        )


def group_totals(tree: SmallTree, usage: list[float], demanding: list[bool]) -> tuple[list[float], list[bool]]:
    """Per node: its leaves' usage summed as ``QueueTree.aggregate`` sums it (each group's
    children in ascending node order, from 0.0: bit for bit), and whether a leaf below demands."""
    n = len(tree.kids)
    value, demand = [0.0] * n, [False] * n
    for pos, node in enumerate(tree.leaf_nodes):
        value[node], demand[node] = usage[pos], demanding[pos]
    for group, children in tree.bottom_up:
        total, any_demand = 0.0, False
        for child in children:
            total += value[child]
            any_demand = any_demand or demand[child]
        value[group], demand[group] = total, any_demand
    return value, demand


def descend_small(tree: SmallTree, usage: list[float], demanding: list[bool]) -> int:
    """The naive hierarchical LTRF walk (paper 002, Sec. 5.2.1) in plain Python: from the root,
    the demanding child with the smallest usage / sibling-normalised weight, down to a leaf;
    returns its leaf position. The same leaf as ``FairShareAllocator._descend``'s numpy path,
    bit for bit: a group's usage is the sum of its children's in ascending node order starting
    from 0.0 (what ``QueueTree.aggregate``'s bincount adds), divided by the same fraction, and
    the choice is :func:`argmin_first`'s."""
    value, demand = group_totals(tree, usage, demanding)
    node, fraction = tree.root, tree.sibling_fraction
    while kids := tree.kids[node]:
        best = math.inf  # argmin_first_small inline: the smallest finite demanding value, then the first tie
        for k in kids:
            if demand[k]:
                v = value[k] / fraction[k]
                if v < best:
                    best = v
        chosen = -1
        if math.isfinite(best):
            limit = best + TIE_RTOL * max(1.0, abs(best))
            for k in kids:
                if demand[k]:
                    v = value[k] / fraction[k]
                    if not math.isfinite(v):
                        chosen = -1  # numpy's edge cases, below
                        break
                    if chosen < 0 and v <= limit:
                        chosen = k
        if chosen < 0:  # a value that is not finite, or no demand: numpy's edge cases
            values, mask = [value[k] / fraction[k] for k in kids], [demand[k] for k in kids]
            found = argmin_first_small(values, mask)
            if found is None:
                found = argmin_first(np.array(values), np.array(mask, dtype=np.bool_))
            chosen = kids[found]
        node = chosen
    return tree.leaf_position[node]


def descend(tree: QueueTree, children: Sequence[NDArray[np.int64]], usage: NDArray[np.float64], mask: NDArray[np.bool_], *,
            small: SmallTree | None = None) -> int:
    """The naive hierarchical LTRF walk (paper 002, Sec. 5.2.1): from the root, the demanding child
    with the smallest node usage / sibling-normalised weight, down to a leaf; returns its leaf position.
    ``children``: per node, its children as an array (``tree.children``); ``usage`` (L,) per leaf,
    ``mask`` (L,) the demanding leaves. With ``small`` (the tree as
    :class:`SmallTree`) it takes :func:`descend_small`: the same sums in the same order, the same leaf."""
    if small is not None:
        return descend_small(small, usage.tolist(), mask.tolist())
    node_usage = tree.aggregate(usage) / tree.sibling_fraction
    has_demand = tree.aggregate(mask.astype(np.float64)) > 0
    node = tree.root
    while tree.children[node]:
        kids = children[node]
        node = int(kids[argmin_first(node_usage[kids], has_demand[kids])])
    return int(tree.leaf_position[node])
