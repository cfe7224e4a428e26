"""The snapshot a clearing is computed on (the Plan it returns is in ``scheduler.plan``).

Everything here is plain data: numpy arrays and frozen dataclasses. Shapes use
``n`` for jobs and ``m`` for resource types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

UtilityKind = Literal["linear", "log"]
UTILITY_KINDS: tuple[str, ...] = ("linear", "log")


@dataclass(frozen=True)
class MarketSnapshot:
    """The state a clearing is computed on (a copy: policies never mutate it).

    Attributes:
        job_ids: (n,) int64, the market's job identifiers.
        group: (n,) int64, leaf-queue index of each job; jobs compete in the
            auction only with jobs of the same leaf queue (H-LTRF decides how
            much each queue gets, the auction splits it among the queue's jobs).
        budgets: (n,) float64 > 0, money units.
        weights: (n, m) float64 >= 0, utility weight per resource type.
        utility: (n,) tuple of "linear" / "log".
        demand: (n, m) bool, the job still has work (pending or running tasks)
            on that resource type; a job bids nothing where it has no demand.
        capacity: (m,) float64 > 0, units (slots) of each resource type.
        alpha: auction exponent in [0, 1] (paper 000, Sec. 3, Eq. 1).
        tol: relative convergence tolerance of the auction.
        max_rounds: cap on auction rounds.
        warm_start: optional (n, m) sub-budgets from the previous clearing
            (rows of jobs that are new may be NaN: they start from b_i / m).
        min_utility: optional (n,) SLO of each job, its minimum utility
            (paper 000, Sec. 6); NaN for a job without one.
    """

    job_ids: NDArray[np.int64]
    group: NDArray[np.int64]
    budgets: NDArray[np.float64]
    weights: NDArray[np.float64]
    utility: tuple[str, ...]
    demand: NDArray[np.bool_]
    capacity: NDArray[np.float64]
    alpha: float = 0.5
    tol: float = 1e-6
    max_rounds: int = 1000
    warm_start: NDArray[np.float64] | None = None
    min_utility: NDArray[np.float64] | None = None

    @property
    def n(self) -> int:
        return int(self.budgets.shape[0])

    @property
    def m(self) -> int:
        return int(self.capacity.shape[0])
