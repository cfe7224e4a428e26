"""Entitlements and fairness metrics of long-term fair share (paper 002, Sec. 4).

* :class:`QueueTree` -- the queue hierarchy and each leaf's fair fraction of
  the cluster (Eq. 2, generalised to a tree as in Sec. 5.2 / Fig. 1b);
* :func:`fair_share_units` -- S_i = C * fraction_i (Eq. 2);
* :func:`fairness_degree`, :func:`fairness_series` -- rho_i (Eq. 3);
* :func:`sharing_benefit` (Psi, Eq. 4), :func:`sharing_loss` (Omega, Eq. 5);
* :func:`twait_guidance`, :func:`twait_for_tasks` -- T_wait guidance (Eq. 7).

The allocator that uses the tree is :mod:`scheduler.fairshare.allocator`, which
re-exports everything here. Pure numpy; no Django.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "QueueTree",
    "fair_share_units",
    "fairness_degree",
    "fairness_series",
    "sharing_benefit",
    "sharing_loss",
    "twait_for_tasks",
    "twait_guidance",
]


def _depths(parent: Sequence[int]) -> list[int]:
    """Depth of every node (root 0); raises ValueError on a cycle."""
    depth = [-1] * len(parent)
    for start in range(len(parent)):
        path: list[int] = []
        on_path: set[int] = set()
        node = start
        while depth[node] < 0 and parent[node] != -1:
            if node in on_path:
                raise ValueError(f"queue tree has a cycle through node {node}")
            path.append(node)
            on_path.add(node)
            node = parent[node]
        if depth[node] < 0:
            depth[node] = 0
        d = depth[node]
        for p in reversed(path):
            d += 1
            depth[p] = d
    return depth


@dataclass(frozen=True)
class QueueTree:
    """A queue hierarchy with one root (paper 002, Sec. 5.2, Fig. 1b; Sec. 6.2.3).

    Attributes:
        names: (N,) unique node names.
        parent: (N,) parent index per node, -1 for the single root.
        weight: (N,) weight per node, > 0, relative among siblings.
        min_share, max_share: (N,) per node, the minimum and maximum fraction
            of the cluster (0 <= min <= max <= 1; Sec. 6.2.3), or empty for
            none (0 and 1); see :meth:`with_limits`.

    Leaves (nodes without children) are the queues that receive units; their
    "leaf position" is the index into :attr:`leaves` (ascending node index).
    Construction validates the tree (see :meth:`validate`).
    """

    names: tuple[str, ...]
    parent: tuple[int, ...]
    weight: tuple[float, ...]
    min_share: tuple[float, ...] = ()
    max_share: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        for name in ("names", "parent", "weight", "min_share", "max_share"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        self.validate()
        object.__setattr__(self, "min_share", tuple(float(x) for x in self.min_share))
        object.__setattr__(self, "max_share", tuple(float(x) for x in self.max_share))
        object.__setattr__(self, "parent", tuple(int(p) for p in self.parent))
        object.__setattr__(self, "weight", tuple(float(w) for w in self.weight))

    @classmethod
    def flat(cls, names: Sequence[str], weights: Sequence[float] | None = None) -> QueueTree:
        """Root ``"root"`` with one leaf per name (leaf names kept as given).

        Raises ValueError if ``names`` is empty, lengths differ, or the tree is invalid.
        """
        leaf_names = tuple(names)
        if not leaf_names:
            raise ValueError("a flat tree needs at least one leaf")
        w = (1.0,) * len(leaf_names) if weights is None else tuple(weights)
        if len(w) != len(leaf_names):
            raise ValueError("weights and names differ in length")
        return cls(("root", *leaf_names), (-1,) + (0,) * len(leaf_names), (1.0, *w))

    @classmethod
    def from_paths(cls, paths: Mapping[str, float]) -> QueueTree:
        """Tree from dotted paths and weights, e.g. ``{"root.g1.a": 1, "root.g2": 2}``.

        Node names are the full dotted paths (``"root"``, ``"root.g1"``,
        ``"root.g1.a"``); intermediate nodes weigh 1 unless listed themselves.
        Raises ValueError on empty components, several roots or bad weights.
        """
        names: list[str] = []
        index: dict[str, int] = {}
        parent: list[int] = []
        weight: list[float] = []
        for path, w in paths.items():
            parts = path.split(".")
            if any(not part for part in parts):
                raise ValueError(f"empty component in queue path {path!r}")
            for depth in range(1, len(parts) + 1):
                name = ".".join(parts[:depth])
                if name not in index:
                    index[name] = len(names)
                    names.append(name)
                    parent.append(index[".".join(parts[: depth - 1])] if depth > 1 else -1)
                    weight.append(1.0)
            weight[index[path]] = w
        return cls(tuple(names), tuple(parent), tuple(weight))

    def validate(self) -> None:
        """Raise ValueError unless the tree is well formed.

        Checks: at least one node, equal lengths, unique non-empty string
        names, integer parents in range with exactly one root, finite
        positive weights, no cycle.
        """
        n = len(self.names)
        if n == 0:
            raise ValueError("queue tree is empty")
        if len(self.parent) != n or len(self.weight) != n:
            raise ValueError("names, parent and weight differ in length")
        if any(not isinstance(s, str) or not s for s in self.names):
            raise ValueError("node names must be non-empty strings")
        if len(set(self.names)) != n:
            raise ValueError("duplicate node names")
        for i, p in enumerate(self.parent):
            if isinstance(p, bool) or not isinstance(p, (int, np.integer)):
                raise ValueError(f"parent of node {i} is not an integer")
            if not -1 <= p < n or p == i:
                raise ValueError(f"parent of node {i} is out of range: {p}")
        if sum(1 for p in self.parent if p == -1) != 1:
            raise ValueError("queue tree must have exactly one root")
        if any(not (math.isfinite(float(w)) and float(w) > 0) for w in self.weight):
            raise ValueError("weights must be finite and > 0")
        for field in ("min_share", "max_share"):
            values = getattr(self, field)
            if values and (len(values) != n or any(not 0.0 <= float(x) <= 1.0 for x in values)):
                raise ValueError(f"{field} must be empty or hold one fraction in [0, 1] per node")
        if any(lo > hi for lo, hi in zip(self.min_fraction, self.max_fraction, strict=True)):
            raise ValueError("a queue's minimum share exceeds its maximum share")
        _depths([int(p) for p in self.parent])

    def with_limits(self, min_share: Mapping[str, float] | None = None, max_share: Mapping[str, float] | None = None) -> QueueTree:
        """This tree with per-queue share limits, fractions of the cluster keyed by
        node name (paper 002, Sec. 6.2.3); unnamed nodes get 0 and 1.
        Raises KeyError for an unknown name, ValueError for a bad fraction or min > max."""
        lo, hi = list(self.min_fraction), list(self.max_fraction)
        for values, out in ((min_share or {}, lo), (max_share or {}, hi)):
            for name, x in values.items():
                out[self.index(name)] = float(x)
        return QueueTree(self.names, self.parent, self.weight, tuple(lo), tuple(hi))

    @property
    def min_fraction(self) -> tuple[float, ...]:
        """(N,) minimum share per node as a fraction of the cluster (0 if unset)."""
        return tuple(self.min_share) if self.min_share else (0.0,) * len(self.names)

    @property
    def max_fraction(self) -> tuple[float, ...]:
        """(N,) maximum share per node as a fraction of the cluster (1 if unset)."""
        return tuple(self.max_share) if self.max_share else (1.0,) * len(self.names)

    @cached_property
    def has_limits(self) -> bool:
        """True if some queue has a minimum share > 0 or a maximum share < 1."""
        return any(x > 0 for x in self.min_fraction) or any(x < 1 for x in self.max_fraction)

    @cached_property
    def leaf_paths(self) -> tuple[tuple[int, ...], ...]:
        """(L,) node indices from each leaf up to the root, the leaf first."""
        out = []
        for leaf in self.leaves:
            path, node = [], leaf
            while node >= 0:
                path.append(node)
                node = self.parent[node]
            out.append(tuple(path))
        return tuple(out)

    @cached_property
    def root(self) -> int:
        """Node index of the root."""
        return self.parent.index(-1)

    @cached_property
    def depth(self) -> tuple[int, ...]:
        """(N,) depth of each node, root 0."""
        return tuple(_depths(self.parent))

    @cached_property
    def leaves(self) -> tuple[int, ...]:
        """(L,) node indices of the leaves, ascending; "leaf position" indexes this."""
        has_child = set(self.parent)
        return tuple(i for i in range(len(self.names)) if i not in has_child)

    @property
    def leaf_names(self) -> tuple[str, ...]:
        """(L,) names of the leaves, by leaf position."""
        return tuple(self.names[i] for i in self.leaves)

    @cached_property
    def leaf_position(self) -> NDArray[np.int64]:
        """(N,) leaf position of each node, -1 for internal nodes."""
        pos = np.full(len(self.names), -1, dtype=np.int64)
        pos[list(self.leaves)] = np.arange(len(self.leaves))
        return pos

    @cached_property
    def children(self) -> tuple[tuple[int, ...], ...]:
        """(N,) children of each node, ordered by their lowest leaf position."""
        first_leaf = self.aggregate_min(np.arange(len(self.leaves), dtype=np.float64))
        kids: list[list[int]] = [[] for _ in self.names]
        for i, p in enumerate(self.parent):
            if p >= 0:
                kids[p].append(i)
        return tuple(tuple(sorted(k, key=lambda c: first_leaf[c])) for k in kids)

    @cached_property
    def levels(self) -> tuple[tuple[NDArray[np.int64], NDArray[np.int64]], ...]:
        """(nodes, their parents) per depth, deepest first, root excluded: a node's
        children are all in the level before its own (for bottom-up passes)."""
        depth, parent = np.asarray(self.depth), np.asarray(self.parent)
        levels = (np.flatnonzero(depth == d) for d in range(int(depth.max()), 0, -1))
        return tuple((nodes, parent[nodes]) for nodes in levels)

    @cached_property
    def _leaf_array(self) -> NDArray[np.int64]:
        return np.asarray(self.leaves, dtype=np.int64)

    def index(self, name: str) -> int:
        """Node index of ``name``; raises KeyError if absent."""
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(name) from None

    def aggregate(self, leaf_values: NDArray[np.float64]) -> NDArray[np.float64]:
        """(L,) values per leaf -> (N,) per node, a group being the sum of its children."""
        out = np.zeros(len(self.names))
        out[self._leaf_array] = leaf_values
        for (level, parents), groups in zip(self.levels, self._level_groups, strict=True):
            # a group's children are all in one level and it is 0 until then:
            # their sum, in order, is what np.add.at would leave there
            out[groups] = np.bincount(parents, weights=out[level], minlength=out.size)[groups]
        return out

    @cached_property
    def _level_groups(self) -> tuple[NDArray[np.int64], ...]:
        """The distinct parents of each of :attr:`levels`."""
        return tuple(np.unique(parents) for _, parents in self.levels)

    def aggregate_min(self, leaf_values: NDArray[np.float64]) -> NDArray[np.float64]:
        """(L,) values per leaf -> (N,) minimum over each node's subtree."""
        out = np.full(len(self.names), np.inf)
        out[self._leaf_array] = leaf_values
        for level, parents in self.levels:
            np.minimum.at(out, parents, out[level])
        return out

    @cached_property
    def sibling_fraction(self) -> NDArray[np.float64]:
        """(N,) w_node / sum of its siblings' weights (root: 1)."""
        w = np.asarray(self.weight)
        sums = np.zeros(len(w))
        parent = np.asarray(self.parent)
        nonroot = parent >= 0
        np.add.at(sums, parent[nonroot], w[nonroot])
        frac = np.ones(len(w))
        frac[nonroot] = w[nonroot] / sums[parent[nonroot]]
        return frac

    def node_fraction(self) -> NDArray[np.float64]:
        """(N,) fair fraction of the cluster per node: product of sibling fractions on its path."""
        frac = self.sibling_fraction.copy()
        for node in np.argsort(np.asarray(self.depth), kind="stable"):
            if self.parent[node] >= 0:
                frac[node] *= frac[self.parent[node]]
        return frac

    def leaf_fraction(self) -> NDArray[np.float64]:
        """(L,) each leaf's fair fraction of the cluster (paper 002, Eq. 2 generalised
        to a tree: product over its path of w_node / sum(w_siblings)); sums to 1."""
        return self.node_fraction()[list(self.leaves)]



def fair_share_units(tree: QueueTree, capacity: float) -> NDArray[np.float64]:
    """(L,) fair share S_i = C * leaf fraction_i, in units (paper 002, Eq. 2).

    Raises ValueError if ``capacity`` is negative or not finite.
    """
    if not (math.isfinite(capacity) and capacity >= 0):
        raise ValueError("capacity must be finite and >= 0")
    return float(capacity) * tree.leaf_fraction()


def _nonneg(name: str, x: ArrayLike) -> NDArray[np.float64]:
    arr = np.asarray(x, dtype=np.float64)
    if np.isnan(arr).any() or (arr < 0).any():
        raise ValueError(f"{name} must be >= 0 and not NaN")
    return arr


def fairness_degree(usage: ArrayLike, entitled: ArrayLike) -> NDArray[np.float64]:
    """Fairness degree rho_i = f_i / integral of min(d_i, S_i) (paper 002, Eq. 3).

    Args:
        usage: accumulated usage f_i (resource-seconds), any shape, >= 0.
        entitled: the same-shaped integral of min(demand, fair share), >= 0.

    Returns:
        rho, same shape. 0/0 is defined as 1: a leaf that never demanded
        neither gained nor lost by sharing. Positive usage with zero
        entitlement gives +inf (pure benefit).

    Raises:
        ValueError: shapes differ, or a value is negative or NaN.
    """
    f, e = _nonneg("usage", usage), _nonneg("entitled", entitled)
    if f.shape != e.shape:
        raise ValueError(f"usage {f.shape} and entitled {e.shape} differ in shape")
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = f / e
    return np.where(e > 0, rho, np.where(f > 0, np.inf, 1.0))


def fairness_series(
    allocated: ArrayLike, demand: ArrayLike, share: ArrayLike, dt: float = 1.0
) -> NDArray[np.float64]:
    """(T, L) fairness degree over time, the "fairness curves" (paper 002, Eqs. 1-3).

    Args:
        allocated: (T, L) units held by each leaf during each step.
        demand: (T, L) current demand d_i(t) (pending plus running units).
        share: (L,) fair share S_i in units, e.g. :func:`fair_share_units`.
        dt: step length in seconds (> 0).

    Returns rho[t, i] = sum_{s<=t} allocated / sum_{s<=t} min(demand, share).
    Raises ValueError on shape mismatch, negative values or dt <= 0.
    """
    g, d, s = _nonneg("allocated", allocated), _nonneg("demand", demand), _nonneg("share", share)
    if g.ndim != 2 or g.shape != d.shape or s.shape != g.shape[1:]:
        raise ValueError("expected allocated, demand (T, L) and share (L,)")
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError("dt must be finite and > 0")
    return fairness_degree(np.cumsum(g, axis=0) * dt, np.cumsum(np.minimum(d, s), axis=0) * dt)


def _rho(rho: ArrayLike) -> NDArray[np.float64]:
    arr = np.asarray(rho, dtype=np.float64)
    if np.isnan(arr).any():
        raise ValueError("rho must not contain NaN")
    return arr


def sharing_benefit(rho: ArrayLike) -> float:
    """Sharing benefit degree Psi = sum_i max(rho_i - 1, 0) >= 0 (paper 002, Eq. 4).

    ``rho``: (L,) fairness degrees. Raises ValueError on NaN.
    """
    return float(np.maximum(_rho(rho) - 1.0, 0.0).sum())


def sharing_loss(rho: ArrayLike) -> float:
    """Sharing loss degree Omega = sum_i min(rho_i - 1, 0) <= 0 (paper 002, Eq. 5).

    ``rho``: (L,) fairness degrees. Raises ValueError on NaN.
    """
    return float(np.minimum(_rho(rho) - 1.0, 0.0).sum())


def twait_guidance(t_task: float, t_wait: float) -> float:
    """Running tasks H-LTRF keeps for a starved queue: N_task = T_task / T_wait (paper 002,
    Sec. 7.6, Eq. 7), assuming enough free units. ``inf`` if t_wait == 0 (the queue
    is never starved: plain LTRF), 0 if t_wait is inf. Times in the same unit
    (seconds). Raises ValueError on negative or NaN arguments or infinite t_task.
    """
    if not (math.isfinite(t_task) and t_task >= 0) or math.isnan(t_wait) or t_wait < 0:
        raise ValueError("t_task must be finite and >= 0, t_wait >= 0")
    if t_wait == 0:
        return math.inf
    return t_task / t_wait


def twait_for_tasks(t_avg: float, n_task: float) -> float:
    """T_wait giving about ``n_task`` running tasks to a starved queue whose tasks
    last ``t_avg`` seconds on average: T_wait = T_avg / N_task (paper 002, Eq. 7).
    Raises ValueError unless t_avg >= 0 is finite and n_task > 0.
    """
    if not (math.isfinite(t_avg) and t_avg >= 0) or not n_task > 0:
        raise ValueError("t_avg must be finite and >= 0, n_task > 0")
    return t_avg / n_task
