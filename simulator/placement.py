"""Which job of a leaf queue gets a free unit: the market's half of dispatch.

The fair-share allocator picks the leaf; this module picks the job inside
it from the latest clearing's shares (paper 000, Sec. 3: a free unit of j
goes to an eligible job with probability ``s_ij`` renormalised over the
eligible jobs, or by the deterministic stride rule), through
``scheduler.dispatch.ShareDispatcher``. It keeps each leaf's jobs in arrival
order and caches the arrays handed to the dispatcher, so a job with
thousands of tasks does not rebuild them for every unit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.dispatch import ShareDispatcher

Arrays = tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.bool_]]


class LeafPlacement:
    """Per-leaf job lists, within-leaf shares and the share dispatcher.

    Args:
        n_leaves, m: leaf queues and resource types.
        dispatch: "stride" | "lottery" (see ``ShareDispatcher``).
        seed: the dispatcher's seed.
        eligible: ``(job_id, j) -> int``, the job's pending tasks of type j
            that may start now through the shared stage (0 for a job that
            holds a reservation).
    """

    def __init__(
        self,
        n_leaves: int,
        m: int,
        dispatch: str,
        seed: int,
        eligible: Callable[[int, int], int],
    ) -> None:
        self.m = m
        self.leaves: list[dict[int, None]] = [{} for _ in range(n_leaves)]
        self.shares: dict[int, NDArray[np.float64]] = {}
        self.dispatcher = ShareDispatcher(mode=dispatch, seed=seed)  # type: ignore[arg-type]
        self._eligible = eligible
        self._cache: dict[tuple[int, int], Arrays] = {}

    def add(self, job_id: int, leaf: int) -> None:
        """A job arrived in ``leaf`` (appended: arrival order is kept)."""
        self.leaves[leaf][job_id] = None
        self.invalidate(leaf)

    def remove(self, job_id: int, leaf: int) -> None:
        """A job departed or was cancelled: drop it and its counters."""
        self.leaves[leaf].pop(job_id, None)
        self.shares.pop(job_id, None)
        self.dispatcher.forget(job_id)
        self.invalidate(leaf)

    def invalidate(self, leaf: int, j: int | None = None) -> None:
        """Forget cached arrays of ``leaf`` (one type or all) after its jobs'
        eligibility changed."""
        for k in range(self.m) if j is None else (j,):
            self._cache.pop((leaf, k), None)

    def invalidate_all(self) -> None:
        """Forget every cached array."""
        self._cache.clear()

    def set_shares(self, shares: dict[int, NDArray[np.float64]]) -> None:
        """Replace all shares: job_id -> (m,) validated by the caller."""
        self.shares = shares
        self._cache.clear()

    def choose(self, leaf: int, j: int) -> int:
        """Id of the eligible job of ``leaf`` getting a unit of type j.

        Raises:
            RuntimeError: no eligible job (the caller's counts are wrong).
        """
        return self.grant(leaf, j, 1)[0]

    def grant(self, leaf: int, j: int, max_units: int) -> tuple[int, int]:
        """``(job id, units)``: the job of ``leaf`` getting units of type j, and how many.

        One unit, unless the choice cannot change before the job runs out of
        eligible tasks: a lone eligible job, or the FIFO dispatcher's oldest
        job, takes up to ``max_units`` at once (the same units, in one batch,
        that unit-by-unit choices would give it).

        Raises:
            RuntimeError: no eligible job (the caller's counts are wrong).
        """
        job_ids, shares, eligible = self._arrays(leaf, j)
        lone = int(np.count_nonzero(eligible)) == 1
        if lone or self.dispatcher.mode == "fifo":
            pos = int(np.argmax(eligible))
            if not eligible[pos]:
                raise RuntimeError(f"leaf {leaf} has no eligible job for resource {j}")
            job = int(job_ids[pos])
            units = max(1, min(max_units, self._eligible(job, j)))
            self.dispatcher.record(job, j, units)
            return job, units
        pos = int(self.dispatcher.choose(job_ids, shares, eligible, j))
        if not (0 <= pos < job_ids.size and eligible[pos]):
            raise RuntimeError(f"dispatcher chose position {pos} in leaf {leaf} without demand")
        return int(job_ids[pos]), 1

    def head(self, leaf: int, j: int) -> int | None:
        """Id of the oldest job of ``leaf`` with an eligible task of type j, or None."""
        job_ids, _, eligible = self._arrays(leaf, j)
        if not eligible.any():
            return None
        return int(job_ids[int(np.argmax(eligible))])

    def _arrays(self, leaf: int, j: int) -> Arrays:
        """(job ids, shares of type j, eligible) of the leaf's jobs, cached."""
        cached = self._cache.get((leaf, j))
        if cached is None:
            ids = list(self.leaves[leaf])
            zero = np.zeros(self.m)
            cached = (
                np.array(ids, dtype=np.int64),
                np.array([self.shares.get(i, zero)[j] for i in ids], dtype=np.float64),
                np.array([self._eligible(i, j) > 0 for i in ids], dtype=np.bool_),
            )
            self._cache[(leaf, j)] = cached
        return cached

    def to_state(self) -> dict[str, Any]:
        """JSON-serialisable: leaf lists in order, shares, dispatcher."""
        return {
            "leaf_jobs": [list(leaf) for leaf in self.leaves],
            "shares": [[jid, vec.tolist()] for jid, vec in self.shares.items()],
            "dispatcher": self.dispatcher.to_state(),
        }

    def load(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`to_state` saved."""
        self.leaves = [{int(jid): None for jid in leaf} for leaf in state["leaf_jobs"]]
        self.shares = {int(jid): np.array(v, dtype=np.float64) for jid, v in state["shares"]}
        self.dispatcher = ShareDispatcher.from_state(state["dispatcher"])
        self._cache.clear()
