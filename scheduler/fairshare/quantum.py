"""Adaptive time quantum per application (paper 002, Sec. 6.2.1, Fig. 4, arrows 3-5).

An application's quantum Q is the mean duration of its finished tasks; a leaf
queue's Q is the mean of its applications' quanta (each application once,
however many tasks it ran) (:class:`AppQuanta`); a group's Q is the mean of its
children's, and a node without finished tasks below it inherits its parent's
(:class:`TreeQuanta`). A new application's running tasks are estimated with
its leaf's Q (top-down, arrow 3) until one of its own tasks finishes.

Tasks recorded without an application form one pseudo-application per leaf
(key ``-(leaf + 1)``), so a caller that never names applications gets the
leaf's mean task duration, as before. A named application's statistics are
kept while it has running tasks; when its last one finishes its Q stays in its
leaf's mean and the entry is dropped (a later task of the same application
starts a new entry), so the state does not grow with every job ever run.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.selection import mean_of

if TYPE_CHECKING:
    from scheduler.fairshare.fairness import QueueTree


class AppQuanta:
    """Application and leaf quanta of one resource type.

    Args:
        n_leaves: number of leaf queues.
    """

    def __init__(self, n_leaves: int) -> None:
        self.apps: dict[int, list[float]] = {}  # app -> [leaf, duration sum, task count, running batches]
        # per leaf, plain numbers (every finished batch updates one entry): the sum over the leaf's
        # applications of their Q, and how many of them have a finished task
        self.leaf_sum: list[float] = [0.0] * n_leaves
        self.leaf_n: list[int] = [0] * n_leaves
        self._named = 0  # entries with key >= 0

    @staticmethod
    def key(app: int | None, leaf: int) -> int:
        """The application key: ``app``, or the leaf's pseudo-application."""
        return -(leaf + 1) if app is None else int(app)

    def start(self, app: int, leaf: int) -> None:
        """A batch of ``app`` (in ``leaf``) started. Raises ValueError if the
        application is already known in another leaf."""
        entry = self.apps.get(app)
        if entry is None:
            entry = self.apps[app] = [float(leaf), 0.0, 0.0, 0.0]
            self._named += app >= 0
        if int(entry[0]) != leaf:
            raise ValueError(f"application {app} runs in leaf {int(entry[0])}, not {leaf}")
        entry[3] += 1

    def finish(self, app: int, duration: float, units: int) -> int:
        """A batch of ``units`` tasks of ``app`` ended after ``duration`` seconds: its Q and
        its leaf's mean are updated; returns the leaf. Raises KeyError for an unknown app."""
        entry = self.apps[app]
        leaf = int(entry[0])
        old = entry[1] / entry[2] if entry[2] else None
        entry[1] += units * duration
        entry[2] += units
        new = entry[1] / entry[2]
        self.leaf_sum[leaf] += new - (old or 0.0)
        if old is None:
            self.leaf_n[leaf] += 1
        entry[3] -= 1
        if entry[3] <= 0 and app >= 0:
            del self.apps[app]  # its Q stays in the leaf's mean
            self._named -= 1
        return leaf

    @property
    def named(self) -> bool:
        """True while some named application (key >= 0) is known."""
        return self._named > 0

    def app_q(self, app: int) -> float:
        """Q of ``app`` from its finished tasks, NaN if none finished yet."""
        entry = self.apps.get(app)
        return entry[1] / entry[2] if entry is not None and entry[2] else math.nan

    def leaf_q(self, leaf: int) -> float:
        """Mean of the leaf's applications' quanta, NaN if none has a finished task."""
        return self.leaf_sum[leaf] / self.leaf_n[leaf] if self.leaf_n[leaf] else math.nan

    def estimates(self, apps: NDArray[np.int64], fallback: NDArray[np.float64]) -> NDArray[np.float64]:
        """(n,) Q of each running batch's application, ``fallback`` (its leaf's Q) where unknown."""
        own = np.array([self.app_q(int(a)) for a in apps], dtype=np.float64)
        out: NDArray[np.float64] = np.where(np.isnan(own), fallback, own)
        return out

    def to_state(self) -> dict[str, Any]:
        return {
            "apps": [[k, int(v[0]), v[1], int(v[2]), int(v[3])] for k, v in self.apps.items()],
            "leaf_sum": list(self.leaf_sum),
            "leaf_n": list(self.leaf_n),
        }

    @classmethod
    def from_state(cls, n_leaves: int, state: dict[str, Any]) -> AppQuanta:
        """Inverse of :meth:`to_state`. Older states (``q_sum`` / ``q_count`` per leaf)
        become one pseudo-application per leaf. Raises ValueError on a length mismatch."""
        out = cls(n_leaves)
        if "quanta" in state:
            q = state["quanta"]
            out.apps = {int(k): [float(leaf), float(s), float(c), float(r)] for k, leaf, s, c, r in q["apps"]}
            out._named = sum(1 for k in out.apps if k >= 0)
            out.leaf_sum = [float(x) for x in q["leaf_sum"]]
            out.leaf_n = [int(x) for x in q["leaf_n"]]
        else:
            for leaf, (s, c) in enumerate(zip(state["q_sum"], state["q_count"], strict=True)):
                if c:
                    out.apps[-(leaf + 1)] = [float(leaf), float(s), float(c), 0.0]
                    out.leaf_sum[leaf], out.leaf_n[leaf] = s / c, 1
        if len(out.leaf_sum) != n_leaves or len(out.leaf_n) != n_leaves:
            raise ValueError("quantum state does not match the number of leaves")
        return out


class TreeQuanta:
    """Q of every node of a queue tree for one resource type (paper 002, Sec. 6.2.1, Fig. 4).

    Bottom-up (arrows 4-7): a leaf's Q is its applications' mean (:meth:`AppQuanta.leaf_q`), a
    group's the mean Q of its children that have finished tasks below them. Top-down (arrow 3): a
    node with no finished task below it inherits its parent's Q, the root falling back to
    ``initial_q``. A leaf whose tasks finished is marked (:meth:`mark`) and its path brought up to
    date when Q is next read: the same values as refreshing the path at each finish, since a
    leaf's Q depends only on its finished tasks and a group's on its children's Q.

    Args:
        tree: the queue tree; ``initial_q``: root quantum Q_0 > 0 (seconds).
    """

    def __init__(self, tree: QueueTree, initial_q: float) -> None:
        self.tree = tree
        self.initial_q = initial_q
        self._leaf_nodes = np.asarray(tree.leaves, dtype=np.int64)
        self._children = tuple(np.asarray(k, dtype=np.int64) for k in tree.children)
        self._own = np.full(len(tree.names), np.nan)  # Q from finished tasks below a node
        self._source: NDArray[np.int64] | None = None  # nearest node with history on the path to the root
        self._stale: set[int] = set()  # leaves with tasks finished since Q was last brought up to date

    def mark(self, leaf: int) -> None:
        """A task of ``leaf`` finished: its path's Q is brought up to date when next read."""
        self._stale.add(leaf)

    def values(self, apps: AppQuanta) -> NDArray[np.float64]:
        """(N,) assumed task duration Q per node (seconds), from ``apps``' leaf quanta."""
        if self._stale:
            for leaf in sorted(self._stale):
                self.refresh(leaf, apps)
            self._stale.clear()
        if self._source is None:
            tree, has = self.tree, ~np.isnan(self._own)
            src = np.full(len(tree.names), -1, dtype=np.int64)
            src[tree.root] = tree.root if has[tree.root] else -1
            for nodes, parents in reversed(tree.levels):
                src[nodes] = np.where(has[nodes], nodes, src[parents])
            self._source = src
        src = self._source
        return np.where(src >= 0, self._own[np.maximum(src, 0)], self.initial_q)

    def refresh(self, leaf: int, apps: AppQuanta) -> None:
        """Bottom-up refresh (Fig. 4, arrows 4-7) of Q on the path from ``leaf`` to the root."""
        node = int(self._leaf_nodes[leaf])
        if math.isnan(self._own[node]):
            self._source = None  # a subtree gained its first finished task
        self._own[node] = apps.leaf_q(leaf)
        parent = self.tree.parent[node]
        while parent >= 0:
            vals = [q for q in self._own[self._children[parent]].tolist() if not math.isnan(q)]
            self._own[parent] = mean_of(vals)
            parent = self.tree.parent[parent]
