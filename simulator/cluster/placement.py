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
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from scheduler.dispatch import ShareDispatcher


class Members(NamedTuple):
    """A leaf's jobs for one resource type, in arrival order (cached).

    Attributes:
        ids: (k,) job ids.
        eligible: (k,) the job has a pending task of the type the shared
            stage may start.
        n_eligible: number of eligible jobs.
        head: id of the oldest eligible job, None if none.
    """

    ids: NDArray[np.int64]
    eligible: NDArray[np.bool_]
    n_eligible: int
    head: int | None


class ShareRows:
    """The latest clearing's within-leaf shares: the jobs in the Plan's order and one (n, m) matrix.

    Kept as the Plan gives them (one matrix, no per-job array), so that taking a Plan, saving the
    shares (:meth:`array`) and reading a leaf's column (:meth:`column`) are array operations, not a
    Python object per job. A job that leaves is marked, not removed (its row stays in the matrix).

    Attributes:
        ids: job ids, in the Plan's order.
        matrix: (n, m) float64, row k the shares of ``ids[k]``.
    """

    __slots__ = ("_alive", "_row", "ids", "matrix")

    def __init__(self, ids: list[int], matrix: NDArray[np.float64]) -> None:
        self.ids = ids
        self.matrix = matrix
        self._alive: NDArray[np.bool_] | None = None  # None: every row is a known job's
        self._row: dict[int, int] | None = None  # built on first need

    def _rows(self) -> dict[int, int]:
        if self._row is None:
            self._row = {job: k for k, job in enumerate(self.ids)}
        return self._row

    def drop(self, job_id: int) -> None:
        """``job_id`` left: it has no share any more."""
        k = self._rows().pop(job_id, None)
        if k is not None:
            if self._alive is None:
                self._alive = np.ones(len(self.ids), dtype=np.bool_)
            self._alive[k] = False

    def get(self, job_id: int) -> NDArray[np.float64] | None:
        """(m,) the job's shares (a view), or None."""
        k = self._rows().get(job_id)
        return None if k is None else self.matrix[k]

    def column(self, ids: list[int], j: int) -> NDArray[np.float64]:
        """(len(ids),) the shares of type j of ``ids`` (0 for a job without), a new array."""
        row = self._rows()
        rows = [row.get(i, -1) for i in ids]
        if -1 not in rows:
            return self.matrix[rows, j] if rows else np.zeros(0)
        taken = np.array(rows, dtype=np.intp)
        out = np.zeros(len(rows), dtype=np.float64)
        have = taken >= 0
        out[have] = self.matrix[taken[have], j]
        return out

    def array(self) -> NDArray[np.float64]:
        """(n, 1 + m) rows [job id, shares...] of the jobs that have shares, in order."""
        ids, matrix = np.array(self.ids, dtype=np.float64), self.matrix
        if self._alive is not None:
            ids, matrix = ids[self._alive], matrix[self._alive]
        out = np.empty((ids.shape[0], 1 + matrix.shape[1]), dtype=np.float64)
        out[:, 0] = ids
        out[:, 1:] = matrix
        return out

    def items(self) -> list[tuple[int, NDArray[np.float64]]]:
        """(job id, (m,) shares) of the jobs that have shares, in order."""
        alive = self._alive
        return [(job, self.matrix[k]) for k, job in enumerate(self.ids) if alive is None or alive[k]]

    def __len__(self) -> int:
        return len(self.ids) if self._alive is None else int(self._alive.sum())

    @classmethod
    def of(cls, shares: dict[int, NDArray[np.float64]], m: int) -> ShareRows:
        """From job id -> (m,) shares, in the mapping's order."""
        return cls(list(shares), np.array(list(shares.values()), dtype=np.float64).reshape(-1, m))


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
        self.shares = ShareRows([], np.zeros((0, m)))
        self.dispatcher = ShareDispatcher(mode=dispatch, seed=seed)  # type: ignore[arg-type]
        self._eligible = eligible
        self._cache: dict[tuple[int, int], Members] = {}
        self._share_cache: dict[tuple[int, int], NDArray[np.float64]] = {}  # aligned with Members.ids

    def add(self, job_id: int, leaf: int) -> None:
        """A job arrived in ``leaf`` (appended: arrival order is kept)."""
        self.leaves[leaf][job_id] = None
        self.invalidate(leaf)

    def remove(self, job_id: int, leaf: int) -> None:
        """A job departed or was cancelled: drop it and its counters."""
        self.leaves[leaf].pop(job_id, None)
        self.shares.drop(job_id)
        self.dispatcher.forget(job_id)
        self.invalidate(leaf)

    def invalidate(self, leaf: int, j: int | None = None) -> None:
        """Forget cached arrays of ``leaf`` (one type or all) after its jobs'
        eligibility changed."""
        for k in range(self.m) if j is None else (j,):
            self._cache.pop((leaf, k), None)
            self._share_cache.pop((leaf, k), None)

    def invalidate_all(self) -> None:
        """Forget every cached array."""
        self._cache.clear()
        self._share_cache.clear()

    def set_shares(self, shares: dict[int, NDArray[np.float64]] | ShareRows) -> None:
        """Replace all shares: job_id -> (m,), or a Plan's rows, validated by the caller (the
        leaves' members stay cached: shares do not change who is eligible)."""
        self.shares = shares if isinstance(shares, ShareRows) else ShareRows.of(shares, self.m)
        self._share_cache.clear()

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
        members = self.members(leaf, j)
        job = members.head
        if job is None:
            raise RuntimeError(f"leaf {leaf} has no eligible job for resource {j}")
        if members.n_eligible == 1 or self.dispatcher.mode == "fifo":
            units = max(1, min(max_units, self._eligible(job, j)))
            self.dispatcher.record(job, j, units)
            return job, units
        pos = int(self.dispatcher.choose(members.ids, self._shares(leaf, j, members.ids), members.eligible, j))
        if not (0 <= pos < members.ids.size and members.eligible[pos]):
            raise RuntimeError(f"dispatcher chose position {pos} in leaf {leaf} without demand")
        return int(members.ids[pos]), 1

    def head(self, leaf: int, j: int) -> int | None:
        """Id of the oldest job of ``leaf`` with an eligible task of type j, or None."""
        return self.members(leaf, j).head

    def members(self, leaf: int, j: int) -> Members:
        """The leaf's jobs and their eligibility for type j (cached until invalidated)."""
        cached = self._cache.get((leaf, j))
        if cached is None:
            ids = list(self.leaves[leaf])
            flags = [self._eligible(i, j) > 0 for i in ids]
            head = ids[flags.index(True)] if True in flags else None
            cached = Members(_read_only(np.array(ids, dtype=np.int64)), _read_only(np.array(flags, dtype=np.bool_)),
                             flags.count(True), head)
            self._cache[(leaf, j)] = cached
        return cached

    def _shares(self, leaf: int, j: int, ids: NDArray[np.int64]) -> NDArray[np.float64]:
        """(k,) shares of type j of the leaf's jobs ``ids`` (cached until new shares)."""
        cached = self._share_cache.get((leaf, j))
        if cached is None:
            cached = _read_only(self.shares.column(ids.tolist(), j))
            self._share_cache[(leaf, j)] = cached
        return cached

    def share_array(self) -> NDArray[np.float64]:
        """(n, 1 + m) float64: ``to_state()["shares"]`` as one array, rows [job id, shares...]."""
        return self.shares.array()

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
        self.shares = ShareRows.of({int(jid): np.array(v, dtype=np.float64) for jid, v in state["shares"]}, self.m)
        self.dispatcher = ShareDispatcher.from_state(state["dispatcher"])
        self.invalidate_all()


def _read_only(array: NDArray[Any]) -> NDArray[Any]:
    """``array``, made read-only: the cached arrays are shared with the dispatcher, which checks and
    renormalises read-only ones once (``scheduler.dispatch.ShareDispatcher.choose``)."""
    array.flags.writeable = False
    return array
