"""Per-leaf counters and exact fairness integrals (paper 002, Sec. 4.2).

Between two events the running and demand counts are constant, so the
integrals of Eq. 1 (accumulated usage) and of Eq. 3's denominator
(``integral of min(d_i, S_i) dt``) are exact sums of rectangles. The
rectangles are cut only where something changes (events, sample times,
submissions): reading the integrals at another time, or stopping a run
there and resuming it, does not add a cut, so the floating-point sums are
the same however a run is sliced.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.fairness import fairness_degree, sharing_benefit, sharing_loss
from simulator.records import FairnessSample


class LeafLedger:
    """Counters per (leaf, type) and the integrals built from them, as nested lists
    (``[leaf][type]``: an event changes one or two cells, and a cell of a list costs
    less to read and write than one of a small numpy array).

    Attributes:
        running: (L, m) tasks running.
        eligible: (L, m) pending tasks that may start now.
        usage: (L, m) resource-seconds used so far (Eq. 1).
        entitled: (L, m) integral of min(d, S) (Eq. 3 denominator).
        mark: time (s) up to which ``usage`` and ``entitled`` are summed.
    """

    def __init__(self, n_leaves: int, m: int, now: float) -> None:
        self.mark = now
        self.running = [[0] * m for _ in range(n_leaves)]
        self.eligible = [[0] * m for _ in range(n_leaves)]
        self.usage = [[0.0] * m for _ in range(n_leaves)]
        self.entitled = [[0.0] * m for _ in range(n_leaves)]
        self._share_of: NDArray[np.float64] | None = None  # the share matrix _share_rows lists
        self._share_rows: list[list[float]] = []

    def demand(self) -> NDArray[np.int64]:
        """(L, m) current demand d_i = eligible pending + running tasks."""
        return np.array(self.running, dtype=np.int64) + np.array(self.eligible, dtype=np.int64)

    def integrate_to(self, t: float, share: NDArray[np.float64]) -> None:
        """Sum the current counts up to time ``t``; ``share`` is (L, m) S_i.
        Call it before the counts or the shares change."""
        self.usage, self.entitled = self._at(t, share)
        self.mark = max(self.mark, t)

    def _at(self, t: float, share: NDArray[np.float64]) -> tuple[list[list[float]], list[list[float]]]:
        """(usage, entitled) at ``t`` without storing them: ``usage + running * dt`` and
        ``entitled + minimum(running + eligible, share) * dt`` cell by cell, the same floats
        as numpy's element-wise operations."""
        dt = t - self.mark
        if dt <= 0:
            return self.usage, self.entitled
        if share is not self._share_of:
            self._share_of, self._share_rows = share, share.tolist()
        usage = [[u + r * dt for u, r in zip(u_row, r_row, strict=True)] for u_row, r_row in zip(self.usage, self.running, strict=True)]
        entitled = [
            [e + min(r + g, s) * dt for e, r, g, s in zip(e_row, r_row, g_row, s_row, strict=True)]
            for e_row, r_row, g_row, s_row in zip(self.entitled, self.running, self.eligible, self._share_rows, strict=True)
        ]
        return usage, entitled

    def sample(self, now: float, share: NDArray[np.float64], capacity: NDArray[np.int64]) -> FairnessSample:
        """A :class:`FairnessSample` at ``now`` (>= mark; fresh arrays)."""
        m = share.shape[1]
        usage_rows, entitled_rows = self._at(now, share)
        usage = np.array(usage_rows, dtype=np.float64).reshape(share.shape)
        entitled = np.array(entitled_rows, dtype=np.float64).reshape(share.shape)
        rho = np.column_stack([fairness_degree(usage[:, j], entitled[:, j]) for j in range(m)]).reshape(share.shape)
        running = np.array(self.running, dtype=np.int64).reshape(share.shape)
        busy = running.sum(axis=0)
        util = np.divide(busy, capacity, out=np.zeros(m), where=capacity > 0)
        return FairnessSample(
            time=now,
            usage=usage,
            demand=self.demand().reshape(share.shape),
            share=share.copy(),
            entitled=entitled,
            rho=rho.astype(np.float64),
            benefit=np.array([sharing_benefit(rho[:, j]) for j in range(m)]),
            loss=np.array([sharing_loss(rho[:, j]) for j in range(m)]),
            running=running,
            utilisation=util,
        )

    def to_state(self) -> dict[str, Any]:
        """The integrals and their mark (the counts are rebuilt from the jobs)."""
        return {
            "usage": [list(row) for row in self.usage],
            "entitled": [list(row) for row in self.entitled],
            "mark": self.mark,
        }

    def load_integrals(self, state: dict[str, Any]) -> None:
        rows, m = len(self.usage), len(self.usage[0]) if self.usage else 0
        self.usage = np.array(state["usage"], dtype=np.float64).reshape(rows, m).tolist()
        self.entitled = np.array(state["entitled"], dtype=np.float64).reshape(rows, m).tolist()
        self.mark = float(state["mark"])
