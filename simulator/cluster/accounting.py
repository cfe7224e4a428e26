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
        running: (L, m) int64 tasks running (a copy; change it with :meth:`add_running`).
        eligible: (L, m) int64 pending tasks that may start now (a copy; :meth:`add_eligible`).
        usage: (L, m) float64 resource-seconds used so far (Eq. 1).
        entitled: (L, m) float64 integral of min(d, S) (Eq. 3 denominator).
        mark: time (s) up to which ``usage`` and ``entitled`` are summed.

    The counts are kept as plain ints, and beside them the rates the integrals grow at,
    ``running`` and ``min(d, S)`` as one (2, L, m) float64 array updated entry by entry, so
    a cut costs one multiplication and one addition of arrays: the same IEEE operations,
    element by element, as ``usage + running * dt`` and ``entitled + min(d, S) * dt``.
    """

    def __init__(self, n_leaves: int, m: int, now: float) -> None:
        self.mark = now
        self.m = m
        self._running = [[0] * m for _ in range(n_leaves)]
        self._eligible = [[0] * m for _ in range(n_leaves)]
        self._sums = np.zeros((2, n_leaves, m), dtype=np.float64)  # (usage, entitled)
        self._rate = np.zeros((2, n_leaves, m), dtype=np.float64)  # (running, min(d, S)) as floats
        self._flat_rate = self._rate.reshape(-1)
        self._half = n_leaves * m
        self._rate_share: NDArray[np.float64] | None = None  # the S the rates were built with (None: rebuild)
        self._share_rows: list[list[float]] = []

    @property
    def usage(self) -> NDArray[np.float64]:
        usage: NDArray[np.float64] = self._sums[0]
        return usage

    @property
    def entitled(self) -> NDArray[np.float64]:
        entitled: NDArray[np.float64] = self._sums[1]
        return entitled

    @property
    def running(self) -> NDArray[np.int64]:
        return np.array(self._running, dtype=np.int64).reshape(len(self._running), self.m)

    @property
    def eligible(self) -> NDArray[np.int64]:
        return np.array(self._eligible, dtype=np.int64).reshape(len(self._eligible), self.m)

    def add_running(self, leaf: int, j: int, delta: int) -> None:
        """Tasks running at (leaf, j) changed by ``delta``."""
        row = self._running[leaf]
        row[j] += delta
        if self._rate_share is not None:
            self._set_rates(leaf, j, row[j])

    def add_eligible(self, leaf: int, j: int, delta: int) -> None:
        """Eligible pending tasks at (leaf, j) changed by ``delta``."""
        self._eligible[leaf][j] += delta
        if self._rate_share is not None:
            self._set_rates(leaf, j, self._running[leaf][j])

    def start_units(self, leaf: int, j: int, units: int) -> None:
        """``units`` eligible pending tasks at (leaf, j) started: :meth:`add_eligible` of ``-units``
        and :meth:`add_running` of ``units`` in one step (the rates are those of the final counts)."""
        row = self._running[leaf]
        row[j] += units
        self._eligible[leaf][j] -= units
        if self._rate_share is not None:
            self._set_rates(leaf, j, row[j])

    def _set_rates(self, leaf: int, j: int, running: int) -> None:
        demand = float(running + self._eligible[leaf][j])
        share = self._share_rows[leaf][j]
        at = leaf * self.m + j  # entry (0, leaf, j) of the rates, through their flat view
        flat = self._flat_rate
        flat[at] = running
        flat[at + self._half] = demand if demand < share else share  # np.minimum(d, S)'s pick, ties to S

    def _rates(self, share: NDArray[np.float64]) -> NDArray[np.float64]:
        if share is not self._rate_share:
            running = self.running
            self._rate = np.stack([running.astype(np.float64), np.minimum(running + self.eligible, share)])
            self._flat_rate = self._rate.reshape(-1)  # a view: entry updates write the array multiplied
            self._half = self._flat_rate.shape[0] // 2
            # a NaN share (np.minimum's NaN is not the entry update's answer): rebuilt at every cut
            self._rate_share = None if np.isnan(share).any() else share
            self._share_rows = share.tolist()
        return self._rate

    def demand(self) -> NDArray[np.int64]:
        """(L, m) current demand d_i = eligible pending + running tasks."""
        return self.running + self.eligible

    def integrate_to(self, t: float, share: NDArray[np.float64]) -> None:
        """Sum the current counts up to time ``t``; ``share`` is (L, m) S_i.
        Call it before the counts or the shares change."""
        dt = t - self.mark
        if dt > 0:
            self._sums = self._sums + (self._rate if share is self._rate_share else self._rates(share)) * dt
        self.mark = max(self.mark, t)

    def _at(self, t: float, share: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(usage, entitled) at ``t`` without storing them."""
        dt = t - self.mark
        if dt <= 0:
            return self.usage, self.entitled
        sums = self._sums + self._rates(share) * dt
        return sums[0], sums[1]

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
        self._sums = np.stack([np.array(state["usage"], dtype=np.float64).reshape(shape),
                               np.array(state["entitled"], dtype=np.float64).reshape(shape)])
        self.mark = float(state["mark"])
