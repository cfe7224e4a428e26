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
    """Counters per (leaf, type) and the integrals built from them.

    Attributes:
        running: (L, m) int64 tasks running.
        eligible: (L, m) int64 pending tasks that may start now.
        usage: (L, m) float64 resource-seconds used so far (Eq. 1).
        entitled: (L, m) float64 integral of min(d, S) (Eq. 3 denominator).
        mark: time (s) up to which ``usage`` and ``entitled`` are summed.
    """

    def __init__(self, n_leaves: int, m: int, now: float) -> None:
        self.mark = now
        self.running = np.zeros((n_leaves, m), dtype=np.int64)
        self.eligible = np.zeros((n_leaves, m), dtype=np.int64)
        self.usage = np.zeros((n_leaves, m), dtype=np.float64)
        self.entitled = np.zeros((n_leaves, m), dtype=np.float64)

    def demand(self) -> NDArray[np.int64]:
        """(L, m) current demand d_i = eligible pending + running tasks."""
        return self.running + self.eligible

    def integrate_to(self, t: float, share: NDArray[np.float64]) -> None:
        """Sum the current counts up to time ``t``; ``share`` is (L, m) S_i.
        Call it before the counts or the shares change."""
        usage, entitled = self._at(t, share)
        self.usage, self.entitled, self.mark = usage, entitled, max(self.mark, t)

    def _at(self, t: float, share: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(usage, entitled) at ``t`` without storing them."""
        dt = t - self.mark
        if dt <= 0:
            return self.usage, self.entitled
        return (
            self.usage + self.running * dt,
            self.entitled + np.minimum(self.demand(), share) * dt,
        )

    def sample(self, now: float, share: NDArray[np.float64], capacity: NDArray[np.int64]) -> FairnessSample:
        """A :class:`FairnessSample` at ``now`` (>= mark; copies, not views)."""
        m = share.shape[1]
        usage, entitled = self._at(now, share)
        rho = np.column_stack([fairness_degree(usage[:, j], entitled[:, j]) for j in range(m)]).reshape(share.shape)
        busy = self.running.sum(axis=0)
        util = np.divide(busy, capacity, out=np.zeros(m), where=capacity > 0)
        return FairnessSample(
            time=now,
            usage=usage.copy(),
            demand=self.demand(),
            share=share.copy(),
            entitled=entitled.copy(),
            rho=rho.astype(np.float64),
            benefit=np.array([sharing_benefit(rho[:, j]) for j in range(m)]),
            loss=np.array([sharing_loss(rho[:, j]) for j in range(m)]),
            running=self.running.copy(),
            utilisation=util,
        )

    def to_state(self) -> dict[str, Any]:
        """The integrals and their mark (the counts are rebuilt from the jobs)."""
        return {
            "usage": self.usage.tolist(),
            "entitled": self.entitled.tolist(),
            "mark": self.mark,
        }

    def load_integrals(self, state: dict[str, Any]) -> None:
        shape = self.usage.shape
        self.usage = np.array(state["usage"], dtype=np.float64).reshape(shape)
        self.entitled = np.array(state["entitled"], dtype=np.float64).reshape(shape)
        self.mark = float(state["mark"])
