"""Every policy of the market, chosen by name: one registry per stage.

A market names three stages, each's policy by a name from one registry per stage
(README, "The engine"):

* :data:`FAIRSHARE` -- the fair-share policy across queues, which picks the
  leaf queue that gets a free unit: ``fifo``, ``static``, ``mlrf``, ``ltrf``, ``hltrf``
  (paper 002, Sec. 5; ``scheduler.fairshare.allocator``), and the published
  schedulers the lab compares with (``scheduler.published``): ``drf``, ``slurm``,
  ``karma`` (leaf queues) and ``tiresias``, ``themis`` (jobs across all queues,
  ``job_level``). Factories take ``(tree, t_wait=...)`` and return an allocator
  for ONE resource type; a class with a ``link`` method is linked to the other
  types' allocators of the same cluster (DRF sees every type).
* :data:`MECHANISMS` -- the mechanism within a queue, which clears a snapshot
  into a :class:`~scheduler.plan.Plan`: ``abacus`` (paper 000, Alg. 1-2),
  ``proportional`` and ``equal`` (the one-shot baselines of paper 000, Sec. 7).
* :data:`DISPATCH` -- how a leaf queue's free unit goes to one of its jobs:
  ``stride``, ``lottery``, ``fifo`` (``scheduler.dispatch``). Factories take
  ``seed=``.

Each name is defined here once; the Django model, forms, admin and API take
their choices from these registries, so an unknown name is refused when it is
entered, never at clearing time. A new mechanism is a module plus a
``register`` call.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar, get_args

import numpy as np
from numpy.typing import NDArray

from scheduler.abacus.kkt import implied_prices
from scheduler.abacus.slo import AbacusNoPoolPolicy, AbacusSloPolicy
from scheduler.base import Mechanism
from scheduler.dispatch import DispatchMode, ShareDispatcher
from scheduler.fairshare.allocator import POLICIES as FAIRSHARE_POLICIES
from scheduler.fairshare.allocator import FairShareAllocator
from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.fifo import FifoAllocator
from scheduler.fairshare.limits import HISTORY_MODES
from scheduler.plan import Diagnostics, Plan, budget_payments
from scheduler.published.drf import DrfAllocator
from scheduler.published.karma import KarmaAllocator
from scheduler.published.slurm import SlurmAllocator
from scheduler.published.themis import ThemisAllocator
from scheduler.published.tiresias import TiresiasAllocator
from scheduler.types import MarketSnapshot

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


class UnknownName(ValueError):
    """A stage name that no registry entry holds; the message lists the known ones."""


@dataclass(frozen=True)
class Entry(Generic[T]):
    """A registered policy: its name, a one-line label for people, and its factory."""

    name: str
    label: str
    factory: Callable[..., T]


class Registry(Generic[T]):
    """Policies of one stage by name (YARN's ``SchedulingPolicy.parse``, kueue's plug-ins).

    Args:
        stage: what the stage decides, used in error messages.
    """

    def __init__(self, stage: str) -> None:
        self.stage = stage
        self._entries: dict[str, Entry[T]] = {}

    def register(self, name: str, label: str) -> Callable[[F], F]:
        """Decorator registering a factory under ``name``.

        Raises:
            ValueError: another factory already holds the name.
        """

        def decorate(factory: F) -> F:
            existing = self._entries.get(name)
            if existing is not None and existing.factory is not factory:
                raise ValueError(f"{self.stage} {name!r} is already registered")
            self._entries[name] = Entry(name, label, factory)
            return factory

        return decorate

    def validate(self, name: str) -> str:
        """Return ``name`` if registered.

        Raises:
            UnknownName: naming the stage and the registered names.
        """
        if name not in self._entries:
            raise UnknownName(f"unknown {self.stage} {name!r}; choose one of: {', '.join(self.names())}")
        return name

    def build(self, name: str, **kwargs: Any) -> T:
        """Build the policy registered as ``name`` with ``kwargs``. Raises UnknownName."""
        return self._entries[self.validate(name)].factory(**kwargs)

    def names(self) -> tuple[str, ...]:
        """Registered names, in registration order."""
        return tuple(self._entries)

    def choices(self) -> list[tuple[str, str]]:
        """``(name, label)`` pairs for forms and model fields."""
        return [(e.name, e.label) for e in self._entries.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._entries


FAIRSHARE: Registry[Any] = Registry("fair-share policy")
MECHANISMS: Registry[Mechanism] = Registry("mechanism")
DISPATCH: Registry[ShareDispatcher] = Registry("dispatch mode")

# --- fair share across queues (paper 002) ---------------------------------------------------

_FAIRSHARE_LABELS = {
    "static": "Static partitioning (each queue its own share, nothing lent)",
    "mlrf": "MLRF (memoryless, current allocation)",
    "ltrf": "LTRF (long-term, flat)",
    "hltrf": "H-LTRF (long-term, hierarchical, starvation timeout)",
}
FAIRSHARE.register("fifo", "FIFO (oldest job first, across queues)")(FifoAllocator)
for _policy in FAIRSHARE_POLICIES:
    FAIRSHARE.register(_policy, _FAIRSHARE_LABELS[_policy])(partial(FairShareAllocator, policy=_policy))


# the published schedulers (docs/published_schedulers.md): each module cites its paper
FAIRSHARE.register("drf", "DRF (dominant resource fairness, as YARN's Fair Scheduler)")(DrfAllocator)
FAIRSHARE.register("slurm", "Slurm classic fair share (2^(-U/S), decayed usage)")(SlurmAllocator)
FAIRSHARE.register("karma", "Karma (credits over quanta, guaranteed share)")(KarmaAllocator)
FAIRSHARE.register("tiresias", "Tiresias (discretised 2D least attained service, per job)")(TiresiasAllocator)
FAIRSHARE.register("themis", "Themis (finish-time fairness auction, per job)")(ThemisAllocator)


def link_allocators(allocators: list[Any]) -> None:
    """Link one cluster's per-type allocators when their policy needs every type (DRF);
    a no-op for the others."""
    if allocators and hasattr(type(allocators[0]), "link"):
        type(allocators[0]).link(allocators)


def build_allocator(
    name: str, tree: QueueTree, *, t_wait: float, history: str = "forever", history_length: float = math.inf
) -> Any:
    """A fresh allocator of fair-share policy ``name`` for one resource type, remembering
    usage by the named ``history`` mode (``HISTORY``). Raises UnknownName, ValueError."""
    return FAIRSHARE.build(name, tree=tree, t_wait=t_wait, history=history, history_length=history_length)


# How much of the past accumulated usage remembers (paper 002, Sec. 6.2.2; Slurm / Kueue half-life).
_HISTORY_LABELS = {
    "forever": "Forever (all history since the market opened)",
    "rounds": "Rounds (windows of length L; each starts from zero)",
    "decay": "Exponential decay (usage halves every half-life)",
}
HISTORY_LABELS: tuple[tuple[str, str], ...] = tuple((m, _HISTORY_LABELS[m]) for m in HISTORY_MODES)


# --- dispatch inside a leaf queue -------------------------------------------------------------

_DISPATCH_LABELS = {
    "stride": "Deterministic stride (tracks shares with low variance)",
    "lottery": "Lottery (paper 000: probability = share)",
    "fifo": "FIFO (oldest eligible job first, shares ignored)",
}
for _mode in get_args(DispatchMode):
    DISPATCH.register(_mode, _DISPATCH_LABELS[_mode])(partial(ShareDispatcher, mode=_mode))

# --- mechanisms within a queue (paper 000) ----------------------------------------------------

MECHANISMS.register("abacus", "Abacus budget auction (paper 000)")(AbacusSloPolicy)
MECHANISMS.register("abacus_no_pool", "Abacus without the SLO prolific pool (paper 000, comparison)")(AbacusNoPoolPolicy)


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


@MECHANISMS.register("proportional", "Proportional to money (alpha = 1, one shot)")
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


@MECHANISMS.register("equal", "Equal shares (alpha = 0, budgets ignored)")
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


# Module-level functions (not bound methods) so that Django migrations can refer
# to them: model fields take their choices from the registries at run time.
def mechanism_choices() -> list[tuple[str, str]]:
    """``MECHANISMS.choices()``."""
    return MECHANISMS.choices()


def fairshare_choices() -> list[tuple[str, str]]:
    """``FAIRSHARE.choices()``."""
    return FAIRSHARE.choices()


def dispatch_choices() -> list[tuple[str, str]]:
    """``DISPATCH.choices()``."""
    return DISPATCH.choices()


def history_choices() -> list[tuple[str, str]]:
    """``(mode, label)`` of the history modes of accumulated usage."""
    return list(HISTORY_LABELS)
