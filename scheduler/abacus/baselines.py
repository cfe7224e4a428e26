"""The one-shot baselines of paper 000, Sec. 7: shares proportional to money (alpha = 1) and equal
shares (alpha = 0), both without the auction's best-response rounds (Eq. 1 at the extremes of alpha).
``scheduler.registry.MECHANISMS`` names them ``proportional`` and ``equal``."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from scheduler.abacus.kkt import implied_prices
from scheduler.payments import budget_payments
from scheduler.plan import Diagnostics, Plan
from scheduler.types import MarketSnapshot

__all__ = ["EqualSharePolicy", "ProportionalPolicy"]


def _demand_split(snapshot: MarketSnapshot) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """(demand (n, m), sub-budgets (n, m)): each budget split equally over demanded types."""
    demand = np.asarray(snapshot.demand, dtype=np.bool_)
    budgets = np.asarray(snapshot.budgets, dtype=np.float64)
    group = np.asarray(snapshot.group)
    if demand.shape != (snapshot.n, snapshot.m) or group.shape != (snapshot.n,):
        raise ValueError("snapshot demand must be (n, m) and group (n,)")
    count = np.maximum(demand.sum(axis=1, keepdims=True), 1)
    return demand, np.where(demand, budgets[:, None] / count, 0.0)


def _within_group(values: NDArray[np.float64], snapshot: MarketSnapshot) -> NDArray[np.float64]:
    """Normalise (n, m) non-negative values to sum to 1 per (group, resource) block.

    Blocks whose values are all zero fall back to an equal split among the
    demanding jobs, so shares sum to 1 wherever the group has demand.
    """
    index, n_groups = _group_index(snapshot.group)
    demand = np.asarray(snapshot.demand, dtype=np.float64)
    total, count = _group_totals(values, index, n_groups), _group_totals(demand, index, n_groups)
    by_value = values / np.where(total > 0, total, 1.0)
    shares: NDArray[np.float64] = np.where(total > 0, by_value, demand / np.maximum(count, 1.0))
    return shares


def _group_index(group: NDArray[np.int64]) -> tuple[NDArray[np.intp], int]:
    """(n,) dense index of each row's group, and the number of indices. Leaf
    positions (the engine's groups) are small non-negative ints: used as they are."""
    g = np.asarray(group).reshape(-1)
    if g.size and g.dtype.kind in "iu" and g.min() >= 0 and g.max() < 4 * g.size:
        return g.astype(np.intp), int(g.max()) + 1
    _, index = np.unique(g, return_inverse=True)
    index = index.reshape(-1)
    return index, int(index.max()) + 1 if index.size else 0


def _group_totals(values: NDArray[np.float64], index: NDArray[np.intp], n_groups: int) -> NDArray[np.float64]:
    """(n, m) sum of ``values`` over each row's group (summed in row order)."""
    totals = np.empty((n_groups, values.shape[1]), dtype=np.float64)
    for j in range(values.shape[1]):
        totals[:, j] = np.bincount(index, weights=values[:, j], minlength=n_groups)
    out: NDArray[np.float64] = totals[index]
    return out


def _one_shot(snapshot: MarketSnapshot, shares: NDArray[np.float64], sub_budgets: NDArray[np.float64], name: str) -> Plan:
    """The Plan of a mechanism without auction rounds."""
    return Plan(
        job_ids=np.array(snapshot.job_ids, dtype=np.int64, copy=True),
        shares=shares,
        sub_budgets=sub_budgets,
        payments=budget_payments(snapshot),
        diagnostics=Diagnostics(mechanism=name, rounds=0, converged=True, prices=implied_prices(sub_budgets, snapshot.capacity)),
    )


class ProportionalPolicy:
    """Shares proportional to money: s_ij = b_ij / sum_l b_lj, b_ij = b_i / #demanded.

    Paper 000, Eq. 1 with alpha = 1 and the initial split of Algorithm 1,
    without best-response rounds. Raises ValueError on malformed snapshots.
    """

    name = "proportional"

    def clear(self, snapshot: MarketSnapshot) -> Plan:
        """Clear the snapshot in one shot (no side effects)."""
        _, sub_budgets = _demand_split(snapshot)
        return _one_shot(snapshot, _within_group(sub_budgets, snapshot), sub_budgets, self.name)


class EqualSharePolicy:
    """Equal shares: 1 / k among the k jobs of a group demanding a resource type.

    Paper 000, Eq. 1 with alpha = 0 (budgets ignored); sub-budgets are the equal
    split of Algorithm 1, used only for prices. Raises ValueError on malformed
    snapshots.
    """

    name = "equal"

    def clear(self, snapshot: MarketSnapshot) -> Plan:
        """Clear the snapshot in one shot (no side effects)."""
        demand, sub_budgets = _demand_split(snapshot)
        shares = _within_group(demand.astype(np.float64), snapshot)
        return _one_shot(snapshot, shares, sub_budgets, self.name)
