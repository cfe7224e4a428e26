"""The shares in force per job and their time integrals, one matrix row per job.

A job's "average job resource" is the time average of the shares it held
from its arrival on (paper 000, Sec. 5); the market engine scores SLO
payments by it (``MarketEngine.achieved_utility``). Shares change at every
clearing, so every clearing closes every job's integral:
``area += share * (now - mark)``. Kept as rows of one matrix, a clearing does
that for all jobs in one vectorised step instead of one small-array operation
per job; element by element the arithmetic is the same, so the integrals are
bit-identical to per-job updates.

The same rows keep each job's sub-budgets of the Plan in force (paper 000,
Sec. 3: the auction's warm start), so that taking a Plan, gathering a
snapshot and storing the engine move them as matrices, not an array a job.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray


class ShareIntegrals:
    """Rows of (share in force or none, integral of past shares, time of the last cut).

    Args:
        m: resource types.
    """

    def __init__(self, m: int) -> None:
        self.m = m
        self._share = np.zeros((0, m))
        self._area = np.zeros((0, m))
        self._mark = np.zeros(0)
        self._has = np.zeros(0, dtype=np.bool_)
        self._sub = np.zeros((0, m))  # sub-budgets, NaN where a row has none
        self._has_sub = np.zeros(0, dtype=np.bool_)
        self._free: list[int] = []

    def add(self, now: float) -> int:
        """A row for a new job: no share, zero integral, cut at ``now``."""
        if not self._free:
            self._grow()
        row = self._free.pop()
        self._share[row] = 0.0
        self._area[row] = 0.0
        self._mark[row] = now
        self._has[row] = False
        self._sub[row] = np.nan
        self._has_sub[row] = False
        return row

    def remove(self, row: int) -> None:
        """Free a departed job's row."""
        self._has[row] = False
        self._sub[row] = np.nan
        self._has_sub[row] = False
        self._free.append(row)

    def close(self, now: float) -> None:
        """Integrate every share in force up to ``now``, then drop the shares
        (the next Plan assigns new ones); every row is cut at ``now``."""
        has = self._has
        if has.any():
            self._area[has] += self._share[has] * (now - self._mark[has])[:, None]
        self._mark[:] = now
        has[:] = False

    def assign(self, rows: Sequence[int], shares: NDArray[np.float64]) -> None:
        """``shares[k]`` (m,) becomes the share in force of row ``rows[k]``."""
        index = np.asarray(rows, dtype=np.intp)
        self._share[index] = shares
        self._has[index] = True

    def assign_subs(self, rows: Sequence[int], subs: NDArray[np.float64]) -> None:
        """``subs[k]`` (m,) becomes the sub-budgets of row ``rows[k]``."""
        index = np.asarray(rows, dtype=np.intp)
        self._sub[index] = subs
        self._has_sub[index] = True

    def sub(self, row: int) -> NDArray[np.float64] | None:
        """(m,) copy of the row's sub-budgets, None if it has none."""
        return self._sub[row].copy() if self._has_sub[row] else None

    def subs(self, rows: NDArray[np.intp]) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """(sub-budgets (k, m), NaN for a row without; (k,) the row has them) of ``rows``."""
        return self._sub[rows], self._has_sub[rows]

    def share(self, row: int) -> NDArray[np.float64] | None:
        """(m,) copy of the row's share in force, None if it has none."""
        return self._share[row].copy() if self._has[row] else None

    def area(self, row: int) -> NDArray[np.float64]:
        """(m,) copy of the row's share integral up to :meth:`mark`."""
        area: NDArray[np.float64] = self._area[row].copy()
        return area

    def mark(self, row: int) -> float:
        """Time (s) up to which the row's integral is summed."""
        return float(self._mark[row])

    def load(self, row: int, share: Sequence[float] | None, area: Sequence[float], mark: float,
             sub: Sequence[float] | None = None) -> None:
        """Restore a row saved as (share, area, mark, sub-budgets)."""
        self._has_sub[row] = sub is not None
        self._sub[row] = np.nan if sub is None else sub
        self._area[row] = area
        self._mark[row] = mark
        self._has[row] = share is not None
        self._share[row] = 0.0 if share is None else share

    def _grow(self) -> None:
        n = self._mark.size
        size = max(16, 2 * n)
        self._share = np.concatenate([self._share, np.zeros((size - n, self.m))])
        self._area = np.concatenate([self._area, np.zeros((size - n, self.m))])
        self._mark = np.concatenate([self._mark, np.zeros(size - n)])
        self._has = np.concatenate([self._has, np.zeros(size - n, dtype=np.bool_)])
        self._sub = np.concatenate([self._sub, np.full((size - n, self.m), np.nan)])
        self._has_sub = np.concatenate([self._has_sub, np.zeros(size - n, dtype=np.bool_)])
        self._free.extend(range(size - 1, n - 1, -1))  # pop() hands out the lowest row first
