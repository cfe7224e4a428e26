"""The ``abacus`` allocation policy: a market snapshot cleared by the budget auction into a Plan
(paper 000, Sec. 4: :func:`scheduler.abacus.auction.auction` over every leaf queue's jobs at once,
each job's budget paid at completion, Sec. 3). ``scheduler.abacus.slo`` builds the SLO policies
(Sec. 6) on it."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np
from numpy.typing import ArrayLike

from scheduler.abacus.auction import auction
from scheduler.abacus.kkt import implied_prices, kkt_residual
from scheduler.abacus.plain import small_kkt_max
from scheduler.abacus.state import AuctionResult
from scheduler.abacus.utility import check_alpha
from scheduler.deferred import Deferred
from scheduler.payments import budget_payments
from scheduler.plan import Diagnostics, Plan
from scheduler.types import MarketSnapshot

__all__ = ["AbacusPolicy", "kkt_max"]


def kkt_max(result: AuctionResult, weights: ArrayLike, utility: str | Sequence[str],
            demand: ArrayLike | None, groups: ArrayLike | None) -> float:
    """The largest :func:`kkt_residual` of ``result`` (0.0 for no jobs), a float in [0, 1]:
    ``plain.small_kkt_max`` where it applies (the same value, bit for bit), else numpy's.

    Arguments as :func:`kkt_residual` (paper 000, Lemma 2); raises what it raises.
    """
    worst = small_kkt_max(result, weights, utility, demand, groups)
    if worst is None:
        worst = float(np.max(kkt_residual(result, weights, utility, demand, groups), initial=0.0))
    return worst


class AbacusPolicy:
    """Allocation policy running :func:`auction` per leaf queue (paper 000, Sec. 4).

    ``alpha``, ``tol`` and ``max_rounds`` override the snapshot's values when
    given. ``Plan.diagnostics.max_kkt_residual`` reports the largest
    :func:`kkt_residual` of the clearing (:func:`kkt_max`, computed when first read:
    the clearing's result and snapshot are plain data nobody mutates afterwards, and
    the offline simulator never reads it); every job pays its budget at
    completion (paper 000, Sec. 3), or only if its SLO was met when the
    snapshot carries one (Sec. 6).
    """

    name = "abacus"

    def __init__(self, *, alpha: float | None = None, tol: float | None = None,
                 max_rounds: int | None = None) -> None:
        if alpha is not None:
            check_alpha(alpha)
        self.alpha, self.tol, self.max_rounds = alpha, tol, max_rounds

    def clear(self, snapshot: MarketSnapshot) -> Plan:
        """Clear the snapshot into a Plan; raises ValueError on invalid snapshot data."""
        result = auction(
            snapshot.budgets, snapshot.weights, utility=snapshot.utility,
            alpha=snapshot.alpha if self.alpha is None else self.alpha,
            tol=snapshot.tol if self.tol is None else self.tol,
            max_rounds=snapshot.max_rounds if self.max_rounds is None else self.max_rounds,
            groups=snapshot.group, demand=snapshot.demand, warm_start=snapshot.warm_start,
        )
        worst = Deferred(partial(kkt_max, result, snapshot.weights, snapshot.utility, snapshot.demand, snapshot.group))
        return Plan(
            job_ids=np.array(snapshot.job_ids, dtype=np.int64, copy=True),
            shares=result.shares,
            sub_budgets=result.sub_budgets,
            payments=budget_payments(snapshot),
            diagnostics=Diagnostics(
                mechanism=self.name, rounds=result.rounds, converged=result.converged,
                prices=implied_prices(result.sub_budgets, snapshot.capacity),
                max_kkt_residual=worst,
            ),
        )
