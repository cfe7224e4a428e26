"""Dominant Resource Fairness (Ghodsi, Zaharia, Hindman, Konwinski, Shenker, Stoica; NSDI'11).

A user's *dominant share* is the largest of its shares of the cluster's
resources, ``s_i = max_r u_ir / C_r`` (Sec. 4); DRF equalises dominant shares
by *progressive filling*: the user with the lowest dominant share launches its
next task (Sec. 4.1, Algorithm 1). With weights, ``s_i / w_i`` is equalised
(Sec. 4.3, weighted DRF).

* :func:`drf_tasks` -- Algorithm 1 on users with one task shape each (the
  paper's two-user example: ``<1 CPU, 4 GB>`` and ``<3 CPU, 1 GB>`` on
  ``<9 CPU, 18 GB>`` give A three tasks and B two, both at dominant share 2/3).
* :class:`DrfAllocator` -- DRF in the cluster, as YARN's Fair Scheduler applies
  it (``DominantResourceFairnessPolicy``): instantaneous (no history), one
  allocation at a time, walking the queue tree from the root and taking at
  each level the child with demand and the lowest dominant share of its
  aggregate usage divided by its weight. The cluster's resource types are the
  resources; a task of type j holds one unit of j, so a leaf's usage vector is
  its running units per type. The allocators of one cluster's types are
  linked (:meth:`DrfAllocator.link`) so each sees every type's usage; alone
  (one type) DRF is weighted max-min fairness on that type.

Deviations: ties go to the lowest leaf position (YARN: start time, then name);
the queues' min / max shares (paper 002, Sec. 6.2.3) are not applied.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.selection import argmin_first
from scheduler.published.base import BatchBook


def dominant_shares(usage: ArrayLike, capacity: ArrayLike, weights: ArrayLike | None = None) -> NDArray[np.float64]:
    """(n,) ``max_r usage[i, r] / capacity[r]`` divided by ``weights[i]`` (DRF Sec. 4 and 4.3).

    ``usage`` (n, R) >= 0, ``capacity`` (R,) > 0 (an infinite capacity counts 0).
    Raises ValueError on shapes or non-positive capacity.
    """
    u = np.asarray(usage, dtype=np.float64)
    c = np.asarray(capacity, dtype=np.float64)
    if u.ndim != 2 or c.shape != (u.shape[1],) or (c <= 0).any():
        raise ValueError("usage must be (n, R) and capacity (R,) > 0")
    shares = (u / c).max(axis=1) if u.shape[1] else np.zeros(u.shape[0])
    if weights is None:
        return shares
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != shares.shape or (w <= 0).any():
        raise ValueError("weights must be (n,) and > 0")
    out: NDArray[np.float64] = shares / w
    return out


def drf_tasks(
    demands: ArrayLike, capacity: ArrayLike, weights: ArrayLike | None = None, max_tasks: Sequence[int] | None = None
) -> NDArray[np.int64]:
    """Tasks per user under DRF's progressive filling (DRF paper, Sec. 4.1, Algorithm 1).

    Args:
        demands: (n, R) resources of one task of each user, >= 0, not all 0 per user.
        capacity: (R,) cluster resources, > 0.
        weights: optional (n,) user weights > 0 (weighted DRF, Sec. 4.3).
        max_tasks: optional (n,) tasks each user has (default: unbounded).

    Returns:
        (n,) tasks launched. As Algorithm 1: repeatedly the user with the lowest
        (weighted) dominant share launches a task; filling stops at the first
        chosen task that does not fit ("the cluster is full"). Ties go to the
        lower index.

    Raises:
        ValueError: bad shapes, negative demands, a user demanding nothing.
    """
    d = np.asarray(demands, dtype=np.float64)
    cap = np.asarray(capacity, dtype=np.float64)
    if d.ndim != 2 or cap.shape != (d.shape[1],) or (cap <= 0).any() or (d < 0).any() or not (d.sum(axis=1) > 0).all():
        raise ValueError("demands must be (n, R) >= 0 with a positive row each, capacity (R,) > 0")
    n = d.shape[0]
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    limit = np.full(n, np.iinfo(np.int64).max) if max_tasks is None else np.asarray(max_tasks, dtype=np.int64)
    tasks = np.zeros(n, dtype=np.int64)
    consumed = np.zeros_like(cap)
    while True:
        active = tasks < limit
        if not active.any():
            return tasks
        share = dominant_shares(tasks[:, None] * d, cap, w)
        i = argmin_first(share, active)
        if (consumed + d[i] > cap + 1e-12).any():
            return tasks  # Alg. 1: "the cluster is full"
        consumed += d[i]
        tasks[i] += 1


class _Ledger:
    """Running units per (leaf, type) shared by one cluster's linked DRF allocators."""

    def __init__(self, running: NDArray[np.int64], peers: list[DrfAllocator]) -> None:
        self.running = running  # (L, m)
        self.peers = peers

    def capacity(self) -> NDArray[np.float64]:
        """(m,) capacities; 1 where unknown (infinite): one type alone ranks by its units."""
        caps = np.array([p.capacity for p in self.peers], dtype=np.float64)
        return np.where(np.isfinite(caps) & (caps > 0), caps, 1.0)


class DrfAllocator(BatchBook):
    """DRF across leaf queues for ONE resource type, linked to the other types' allocators.

    Same interface as :class:`~scheduler.fairshare.allocator.FairShareAllocator`.
    ``t_wait`` and the history settings are kept but unused (DRF is instantaneous).
    """

    policy = "drf"

    def __init__(self, tree: QueueTree, *, t_wait: float = 0.0, history: str = "forever", history_length: float = math.inf) -> None:
        super().__init__(tree, t_wait=t_wait, history=history, history_length=history_length)
        self._resource = 0
        self._ledger = _Ledger(np.zeros((len(tree.leaves), 1), dtype=np.int64), [self])

    @staticmethod
    def link(allocators: Sequence[Any]) -> None:
        """Make ``allocators`` (one per resource type, in type order) share their usage,
        so each ranks leaves by the dominant share over every type (DRF Sec. 4)."""
        peers = list(allocators)
        running = np.stack([a._running for a in peers], axis=1) if peers else np.zeros((0, 0), dtype=np.int64)
        ledger = _Ledger(running, peers)
        for j, a in enumerate(peers):
            a._resource, a._ledger = j, ledger

    def _load_extra(self, extra: dict[str, Any]) -> None:
        self._ledger.running[:, 0] = self._running  # alone until the owner links it again

    def _on_start(self, leaf: int, app: int, units: int, now: float) -> None:
        self._ledger.running[leaf, self._resource] += units

    def _on_finish(self, leaf: int, app: int, units: int, start: float, now: float) -> None:
        self._ledger.running[leaf, self._resource] -= units

    def node_dominant_shares(self) -> NDArray[np.float64]:
        """(N,) dominant share of each tree node's aggregate usage, divided by its weight among siblings."""
        caps = self._ledger.capacity()
        usage = self._ledger.running.astype(np.float64)
        per_node = np.stack([self.tree.aggregate(usage[:, t]) for t in range(usage.shape[1])], axis=1)
        shares: NDArray[np.float64] = (per_node / caps).max(axis=1) / self.tree.sibling_fraction
        return shares

    def pick_leaf(self, demanding: NDArray[np.bool_], now: float, head: NDArray[np.float64] | None = None) -> int:
        """The demanding leaf reached by descending from the root to the child with the lowest
        weighted dominant share (YARN's DRF policy, DRF Sec. 4-4.3); -1 if none demands."""
        mask = self._mask(demanding)
        self._advance(now)
        if not mask.any():
            return -1
        tree = self.tree
        shares = self.node_dominant_shares()
        has_demand = tree.aggregate(mask.astype(np.float64)) > 0
        node = tree.root
        while tree.children[node]:
            kids = np.asarray(tree.children[node], dtype=np.int64)
            node = int(kids[argmin_first(shares[kids], has_demand[kids])])
        return int(tree.leaf_position[node])
