"""FIFO across queues (the YARN / Hadoop ``fifo`` baseline of papers 000 and 002)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.selection import argmin_first


class FifoAllocator:
    """FIFO across queues: the leaf whose oldest eligible job arrived first gets the unit.

    The YARN / Hadoop ``fifo`` baseline the papers compare against: no
    history, no weights. The cluster passes ``head``, the (L,) arrival rank of
    each leaf's oldest job with an eligible task of this resource type. Same
    interface as :class:`FairShareAllocator` (the bookkeeping calls are no-ops).
    """

    uses_arrival_order = True
    tracks_demand = False  # update_demand is a no-op: callers may skip it
    job_level = False  # takes the stage's short path by the leaf heads' arrival ranks
    policy = "fifo"

    work_conserving = True

    def __init__(self, tree: QueueTree, *, t_wait: float = 0.0, history: str = "forever", history_length: float = math.inf) -> None:
        if math.isnan(t_wait) or t_wait < 0:
            raise ValueError("t_wait must be >= 0")
        self.tree = tree
        # unused (FIFO keeps no history): kept so a market can switch policies freely
        self.t_wait, self.history, self.history_length = t_wait, history, history_length
        self.capacity = math.inf

    def update_demand(self, demanding: NDArray[np.bool_], now: float) -> None:
        """No starvation clocks under FIFO."""

    def room(self, leaf: int) -> int:
        """Unlimited: FIFO applies no share limits (``work_conserving``; never asked by the cluster)."""
        return 2**62

    def pick_leaf(self, demanding: NDArray[np.bool_], now: float, head: NDArray[np.float64] | None = None) -> int:
        """The demanding leaf with the smallest ``head`` (ties: lowest position); -1 if none.

        Raises ValueError without ``head``.
        """
        if head is None:
            raise ValueError("FIFO needs the arrival rank of each leaf's oldest eligible job")
        return argmin_first(np.asarray(head, dtype=np.float64), np.asarray(demanding, dtype=bool))

    def pick_oldest(self, head: Sequence[float]) -> int:
        """:meth:`pick_leaf` with demand read off ``head`` (a leaf demands iff its
        rank is finite), in plain Python for the few leaves of a tree: the leaf
        with the smallest rank, the lowest position among ties; -1 if none."""
        best, rank = -1, math.inf
        for leaf, h in enumerate(head):
            if h < rank:
                best, rank = leaf, h
        return best

    def record_start(
        self, task_key: int, leaf: int, now: float, expected_duration: float | None = None, units: int = 1, app: int | None = None
    ) -> None:
        """Nothing to record."""

    def record_more(self, task_key: int, units: int = 1) -> None:
        """Nothing to record."""

    def record_finish(self, task_key: int, now: float) -> None:
        """Nothing to record."""

    def to_state(self) -> dict[str, Any]:
        return {"version": 1, "policy": "fifo", "leaf_names": list(self.tree.leaf_names)}

    @classmethod
    def from_state(cls, tree: QueueTree, state: dict[str, Any]) -> FifoAllocator:
        if list(state["leaf_names"]) != list(tree.leaf_names):
            raise ValueError("state does not belong to this queue tree")
        return cls(tree)
