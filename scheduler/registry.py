"""Allocation policies chosen by name (conventions: pluggable policies).

``get_policy("abacus", alpha=0.5)`` builds a policy; ``register(name)`` adds one.
Besides Abacus (paper 000, Sec. 4) it holds the two one-shot baselines the
paper's evaluation compares against (paper 000, Sec. 7):

* ``"proportional"``: each job splits its budget equally over the resource
  types it demands and gets ``s_ij = b_ij / sum_l b_lj`` within its group
  (Eq. 1 with alpha = 1, no auction rounds).
* ``"equal"``: every demanding job of a group gets ``1 / k`` of each resource
  type it demands, whatever its budget (Eq. 1 with alpha = 0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from scheduler.abacus import AbacusPolicy, implied_prices
from scheduler.base import AllocationPolicy
from scheduler.types import MarketSnapshot, Outcome

PolicyFactory = TypeVar("PolicyFactory", bound=Callable[..., AllocationPolicy])

_REGISTRY: dict[str, Callable[..., AllocationPolicy]] = {}


def register(name: str) -> Callable[[PolicyFactory], PolicyFactory]:
    """Decorator registering a policy class (or factory) under ``name``.

    Raises ValueError if another factory already holds the name.
    """

    def decorate(factory: PolicyFactory) -> PolicyFactory:
        existing = _REGISTRY.get(name)
        if existing is not None and existing is not factory:
            raise ValueError(f"policy name {name!r} is already registered")
        _REGISTRY[name] = factory
        return factory

    return decorate


def get_policy(name: str, **kwargs: Any) -> AllocationPolicy:
    """Build the policy registered as ``name`` with ``kwargs``.

    Raises KeyError naming the available policies when ``name`` is unknown.
    """
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown policy {name!r}; available: {available()}") from None
    return factory(**kwargs)


def available() -> list[str]:
    """Sorted names of the registered policies."""
    return sorted(_REGISTRY)


register("abacus")(AbacusPolicy)


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
    _, index = np.unique(np.asarray(snapshot.group), return_inverse=True)
    index = index.reshape(-1)
    demand = np.asarray(snapshot.demand, dtype=np.float64)
    totals = np.zeros((int(index.max(initial=-1)) + 1, values.shape[1]))
    counts = np.zeros_like(totals)
    np.add.at(totals, index, values)
    np.add.at(counts, index, demand)
    total, count = totals[index], counts[index]
    by_value = values / np.where(total > 0, total, 1.0)
    return np.where(total > 0, by_value, demand / np.maximum(count, 1.0))


def _one_shot(snapshot: MarketSnapshot, shares: NDArray[np.float64],
              sub_budgets: NDArray[np.float64], name: str) -> Outcome:
    """Outcome of a policy without auction rounds."""
    return Outcome(
        job_ids=np.array(snapshot.job_ids, dtype=np.int64, copy=True),
        shares=shares,
        sub_budgets=sub_budgets,
        prices=implied_prices(sub_budgets, snapshot.capacity),
        rounds=0,
        converged=True,
        policy=name,
    )


@register("proportional")
class ProportionalPolicy:
    """Shares proportional to money: s_ij = b_ij / sum_l b_lj, b_ij = b_i / #demanded.

    Paper 000, Eq. 1 with alpha = 1 and the initial split of Algorithm 1,
    without best-response rounds. Raises ValueError on malformed snapshots.
    """

    name = "proportional"

    def allocate(self, snapshot: MarketSnapshot) -> Outcome:
        """Clear the snapshot in one shot (no side effects)."""
        _, sub_budgets = _demand_split(snapshot)
        return _one_shot(snapshot, _within_group(sub_budgets, snapshot), sub_budgets, self.name)


@register("equal")
class EqualSharePolicy:
    """Equal shares: 1 / k among the k jobs of a group demanding a resource type.

    Paper 000, Eq. 1 with alpha = 0 (budgets ignored); sub-budgets are the equal
    split of Algorithm 1, used only for prices. Raises ValueError on malformed
    snapshots.
    """

    name = "equal"

    def allocate(self, snapshot: MarketSnapshot) -> Outcome:
        """Clear the snapshot in one shot (no side effects)."""
        demand, sub_budgets = _demand_split(snapshot)
        shares = _within_group(demand.astype(np.float64), snapshot)
        return _one_shot(snapshot, shares, sub_budgets, self.name)
