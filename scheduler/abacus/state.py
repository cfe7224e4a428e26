"""The auction's shared state: its validated inputs and its result (paper 000, Sec. 3).

Every module of the auction (``auction``, ``steps``, ``kkt``, ``newton``, ``prices``) reads
these types; keeping them here lets those modules import each other one way only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class AuctionResult:
    """Outcome of :func:`auction`.

    Attributes:
        shares: (n, m) allocation probabilities; each (group, j) block sums to 1
            where some job of the group demands j, else 0.
        sub_budgets: (n, m) money per job and resource type; each row sums to
            the job's budget unless the job demands nothing (zero row).
        rounds: best-response rounds evaluated over the whole market (a warm
            start's newcomer warm-up, over the new rows only, is not counted).
        converged: whether the relative change fell below ``tol``.
    """

    shares: FloatArray
    sub_budgets: FloatArray
    rounds: int
    converged: bool


@dataclass(frozen=True)
class _Market:
    """Validated auction inputs with the masks every round reuses."""

    budgets: FloatArray  # (n,)
    weights: FloatArray  # (n, m), zero where not demanded
    is_log: BoolArray  # (n,)
    demand: BoolArray  # (n, m)
    active: BoolArray  # (n, m) competing: demanded, weight > 0, budget > 0
    contested: BoolArray  # (n, m) active and another group member is active
    group_index: NDArray[np.intp]  # (n,) dense group index in [0, n_groups)
    n_groups: int
    alpha: float
    n_active: FloatArray  # (n, m) competitors in the job's (group, j)
    n_demand: FloatArray  # (n, m) demanders in the job's (group, j)
    fallback: FloatArray  # (n, m) equal split used when a job has no x > 0
    rival_power: FloatArray | None = None  # (n, m) sum of b^alpha of frozen rivals outside
    any_log: bool = field(init=False)  # is_log.any(), read every round
    all_log: bool = field(init=False)  # is_log.all()

    def __post_init__(self) -> None:
        object.__setattr__(self, "any_log", bool(self.is_log.any()))
        object.__setattr__(self, "all_log", bool(self.is_log.all()))
