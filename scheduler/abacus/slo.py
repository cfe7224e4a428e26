"""SLO-based Abacus: the prolific pool (paper 000, Sec. 6).

A job may add a minimum utility ``m_i`` (its SLO) to its bid ``(b_i, u_i)``; it
pays its budget only if its SLO was met (``PaymentRule.if_slo_met``, settled by
``scheduler.payments.settle`` on the utility of the job's time-averaged shares).

1. A *job-utility estimator* predicts the utility each job reaches under a
   candidate allocation (:data:`UtilityEstimator`).
2. Greedy *prolific pool*: consider the jobs by budget, descending; keep a job
   if the auction over the pool plus it still meets every member's SLO
   (a job without an SLO has none to meet, but may still break the others').
3. The auction runs over the pool only; the others bid nothing (share 0) and
   get idle units: a resource type of a leaf queue that no pool job demands
   is split equally among the non-prolific jobs demanding it, and the dispatch
   hands a unit no pool job can use to an eligible job uniformly (lottery: at
   random; stride: in turn) -- ``scheduler.dispatch._renormalise``.

Choices where the paper is silent: jobs compete only inside their leaf queue,
so the pool is built per leaf queue; the greedy first tries the whole queue
(one auction: if every SLO is met, everyone is prolific, the common case)
before adding jobs one by one, each auction warm-started from the last.

The default estimator, :func:`share_utility_estimate`, is the cluster model's
own measure: the engine settles an SLO on the utility of the job's average
shares (``simulator.market.engine.MarketEngine.achieved_utility``), and the shares of
the allocation are what the job holds while the allocation is in force.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scheduler.abacus.auction import auction
from scheduler.abacus.kkt import implied_prices, kkt_residual
from scheduler.abacus.policy import AbacusPolicy
from scheduler.abacus.state import AuctionResult
from scheduler.abacus.utility import check_nonnegative, demand_mask, utility_of
from scheduler.deferred import Deferred
from scheduler.payments import budget_payments
from scheduler.plan import Diagnostics, Plan
from scheduler.types import MarketSnapshot

__all__ = ["AbacusNoPoolPolicy", "AbacusSloPolicy", "PoolResult", "UtilityEstimator", "prolific_pool", "share_utility_estimate"]

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

# (shares (k, m), weights (k, m), utility kinds (k,), demand (k, m)) -> (k,) predicted utilities
UtilityEstimator = Callable[[FloatArray, FloatArray, Sequence[str], BoolArray], FloatArray]

_SLACK = 1e-9  # relative tolerance of "meets its SLO" (the auction's own tolerance is 1e-6)


def share_utility_estimate(shares: FloatArray, weights: FloatArray, utility: Sequence[str],
                           demand: BoolArray) -> FloatArray:
    """(k,) predicted utility u_i(s_i) of each job under the shares ``s`` (paper 000, Sec. 6).

    The utility of the shares the job would hold, i.e. of its average job
    resource (Sec. 5, Def. 1) if this allocation held for the job's life: the
    quantity its SLO payment is settled on. Terms off ``demand`` count 0.
    """
    return utility_of(shares, weights, list(utility), demand=demand)


def _meets(predicted: FloatArray, slo: FloatArray) -> bool:
    need = np.isfinite(slo)
    slack = _SLACK * np.maximum(1.0, np.abs(np.where(need, slo, 0.0)))
    return bool(np.all(~need | (predicted >= np.where(need, slo, 0.0) - slack)))


@dataclass(frozen=True)
class PoolResult:
    """Outcome of :func:`prolific_pool`.

    Attributes:
        in_pool: (n,) bool, the job is in the prolific pool.
        shares: (n, m) allocation probabilities: the pool's auction, idle
            splits for the others (module doc); each (group, j) block sums to
            1 where some job of the group demands j.
        sub_budgets: (n, m) money; rows of jobs outside the pool are 0.
        predicted: (n,) predicted utility under ``shares`` (the estimator's).
        rounds: auction rounds summed over every auction the greedy ran.
        auctions: how many auctions it ran.
        converged: every final pool auction converged.
    """

    in_pool: BoolArray
    shares: FloatArray
    sub_budgets: FloatArray
    predicted: FloatArray
    rounds: int
    auctions: int
    converged: bool


def _group_pool(rows: NDArray[np.intp], budgets: FloatArray, weights: FloatArray, kinds: list[str],
                demand: BoolArray, slo: FloatArray, warm: FloatArray, estimate: UtilityEstimator,
                auction_args: dict[str, object]) -> tuple[list[int], AuctionResult | None, int, int]:
    """Greedy pool of one leaf queue: (pool rows, its auction, rounds, auctions)."""

    def run(cand: list[int], start: FloatArray) -> tuple[AuctionResult, bool]:
        idx = np.array(cand, dtype=np.intp)
        result = auction(budgets[idx], weights[idx], utility=[kinds[k] for k in cand], demand=demand[idx],
                         warm_start=start, **auction_args)  # type: ignore[arg-type]
        predicted = estimate(result.shares, weights[idx], [kinds[k] for k in cand], demand[idx])
        return result, _meets(predicted, slo[idx])

    everyone, ok = run(rows.tolist(), warm[rows])
    if ok:
        return rows.tolist(), everyone, everyone.rounds, 1
    rounds, auctions = everyone.rounds, 1
    order = rows[np.argsort(-budgets[rows], kind="stable")].tolist()
    pool: list[int] = []
    kept: AuctionResult | None = None
    for i in order:
        start = np.vstack([kept.sub_budgets if kept is not None else np.zeros((0, weights.shape[1])), warm[[i]]])
        result, ok = run([*pool, i], start)
        rounds, auctions = rounds + result.rounds, auctions + 1
        if ok:
            pool, kept = [*pool, i], result
    return pool, kept, rounds, auctions


def _idle_split(shares: FloatArray, in_pool: BoolArray, demand: BoolArray, groups: NDArray[np.intp]) -> FloatArray:
    """Blocks (group, j) no pool job demands: their demanders split j equally."""
    out = shares.copy()
    for g in np.unique(groups).tolist():
        rows = groups == g
        pool_wants = (demand & (rows & in_pool)[:, None]).any(axis=0)
        others = demand & (rows & ~in_pool)[:, None]
        count = others.sum(axis=0)
        idle = ~pool_wants & (count > 0)
        out = np.where(others & idle[None, :], 1.0 / np.maximum(count, 1)[None, :], out)
    return out


def prolific_pool(budgets: ArrayLike, weights: ArrayLike, *, utility: str | Sequence[str], alpha: float,
                  min_utility: ArrayLike, tol: float = 1e-6, max_rounds: int = 1000,
                  groups: ArrayLike | None = None, demand: ArrayLike | None = None,
                  warm_start: ArrayLike | None = None,
                  estimator: UtilityEstimator = share_utility_estimate) -> PoolResult:
    """SLO-based Abacus (paper 000, Sec. 6): greedy prolific pool, auction over it, idle splits.

    Args:
        budgets, weights, utility, alpha, tol, max_rounds, groups, demand,
            warm_start: as :func:`scheduler.abacus.auction.auction` (n jobs, m types).
        min_utility: (n,) SLO of each job in its utility's units; NaN for none.
        estimator: the job-utility estimator (module doc).

    Returns:
        :class:`PoolResult`.

    Raises:
        ValueError: as ``auction``; ``min_utility`` not (n,) or +inf.
    """
    b = check_nonnegative("budgets", budgets, 1)
    n = b.shape[0]
    w = check_nonnegative("weights", weights, 2)
    m = w.shape[1] if w.ndim == 2 else 0
    slo = np.asarray(min_utility, dtype=np.float64).reshape(-1)
    if slo.shape != (n,) or np.any(slo == np.inf):
        raise ValueError(f"min_utility must be (n,) = ({n},) with NaN for none, and not +inf")
    dem = demand_mask(demand, (n, m))
    kinds = [utility] * n if isinstance(utility, str) else [str(k) for k in utility]
    labels = np.zeros(n, dtype=np.intp) if groups is None else np.unique(np.asarray(groups), return_inverse=True)[1]
    warm = np.full((n, m), np.nan) if warm_start is None else np.asarray(warm_start, dtype=np.float64)
    args: dict[str, object] = {"alpha": alpha, "tol": tol, "max_rounds": max_rounds}
    in_pool = np.zeros(n, dtype=np.bool_)
    shares, subs = np.zeros((n, m)), np.zeros((n, m))
    rounds = auctions = 0
    converged = True
    for g in np.unique(labels).tolist():
        rows = np.flatnonzero(labels == g)
        pool, result, r, a = _group_pool(rows, b, w, kinds, dem, slo, warm, estimator, args)
        rounds, auctions = rounds + r, auctions + a
        if result is not None:
            idx = np.array(pool, dtype=np.intp)
            in_pool[idx] = True
            shares[idx], subs[idx] = result.shares, result.sub_budgets
            converged = converged and result.converged
    shares = _idle_split(shares, in_pool, dem, labels)
    predicted = estimator(shares, w, kinds, dem)
    return PoolResult(in_pool, shares, subs, predicted, rounds, auctions, converged)


class AbacusSloPolicy(AbacusPolicy):
    """The ``abacus`` mechanism: :class:`~scheduler.abacus.policy.AbacusPolicy`, with the
    prolific pool (:func:`prolific_pool`) whenever some job of the snapshot has an
    SLO (paper 000, Sec. 6). Jobs outside the pool are listed in
    ``Plan.diagnostics.outside_pool``; every SLO job pays only if its SLO was met
    (``PaymentRule.if_slo_met``), in the pool or not.
    """

    name = "abacus"

    def clear(self, snapshot: MarketSnapshot) -> Plan:
        """Clear the snapshot into a Plan; raises ValueError on invalid snapshot data."""
        slo = snapshot.min_utility
        if slo is None or not np.isfinite(slo).any():
            return super().clear(snapshot)
        pool = prolific_pool(
            snapshot.budgets, snapshot.weights, utility=snapshot.utility,
            alpha=snapshot.alpha if self.alpha is None else self.alpha,
            tol=snapshot.tol if self.tol is None else self.tol,
            max_rounds=snapshot.max_rounds if self.max_rounds is None else self.max_rounds,
            min_utility=slo, groups=snapshot.group, demand=snapshot.demand, warm_start=snapshot.warm_start,
        )
        result = AuctionResult(pool.shares, pool.sub_budgets, pool.rounds, pool.converged)
        kkt = Deferred(partial(_pool_kkt_max, result, snapshot.weights, snapshot.utility, snapshot.demand, pool.in_pool,
                               snapshot.group))
        ids = np.array(snapshot.job_ids, dtype=np.int64, copy=True)
        return Plan(
            job_ids=ids, shares=pool.shares, sub_budgets=pool.sub_budgets, payments=budget_payments(snapshot),
            diagnostics=Diagnostics(
                mechanism=self.name, rounds=pool.rounds, converged=pool.converged,
                prices=implied_prices(pool.sub_budgets, snapshot.capacity),
                max_kkt_residual=kkt,
                outside_pool=tuple(int(j) for j in ids[~pool.in_pool].tolist()),
            ),
        )


def _pool_kkt_max(result: AuctionResult, weights: ArrayLike, utility: str | Sequence[str], demand: BoolArray,
                  in_pool: BoolArray, groups: ArrayLike | None) -> float:
    """The largest :func:`kkt_residual` of the pool's auction ``result`` (0.0 for no jobs), the
    jobs outside the pool (``in_pool`` False) counted as demanding nothing."""
    return float(np.max(kkt_residual(result, weights, utility, demand & in_pool[:, None], groups), initial=0.0))


class AbacusNoPoolPolicy(AbacusPolicy):
    """Abacus with SLO payments but no prolific pool: every job bids, SLO jobs pay
    only if met (the comparison of paper 000, Sec. 6)."""

    name = "abacus_no_pool"
