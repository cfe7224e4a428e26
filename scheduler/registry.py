"""Every policy of the market, chosen by name: one registry per stage.

A market names three stages, each's policy by a name from one registry per stage
(README, "The engine"):

* :data:`FAIRSHARE` -- the fair-share policy across queues, which picks the
  leaf queue that gets a free unit: ``fifo``, ``static``, ``mlrf``, ``ltrf``, ``hltrf``
  (paper 002, Sec. 5; ``scheduler.fairshare.allocator``), and the published
  schedulers the lab compares with (``scheduler.published``): ``drf``, ``slurm``,
  ``karma`` (leaf queues) and ``tiresias``, ``tiresias3``, ``themis``,
  ``themis_est`` and the size-oracle control ``srpt`` (jobs across all queues,
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
entered, never at clearing time. Policies live in their papers' packages; this module
only names them. A new mechanism is a module plus a ``register`` call here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar, get_args

from scheduler.abacus.baselines import EqualSharePolicy, ProportionalPolicy
from scheduler.abacus.slo import AbacusNoPoolPolicy, AbacusSloPolicy
from scheduler.base import Mechanism
from scheduler.dispatch import DispatchMode, ShareDispatcher
from scheduler.fairshare.allocator import POLICIES as FAIRSHARE_POLICIES
from scheduler.fairshare.allocator import FairShareAllocator
from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.fifo import FifoAllocator
from scheduler.fairshare.limits import HISTORY_MODES
from scheduler.fairshare.protocol import Allocator
from scheduler.fairshare.protocol import link as _link
from scheduler.published.drf import DrfAllocator
from scheduler.published.karma import KarmaAllocator
from scheduler.published.slurm import SlurmAllocator
from scheduler.published.srpt import SrptAllocator
from scheduler.published.themis import ThemisAllocator
from scheduler.published.tiresias import THREE_LIMITS_S, TiresiasAllocator

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
            self.add(name, label, factory)
            return factory

        return decorate

    def add(self, name: str, label: str, factory: Callable[..., T]) -> None:
        """Register ``factory`` under ``name``; mypy checks that it builds a ``T`` (the stage's protocol).

        Raises:
            ValueError: another factory already holds the name.
        """
        existing = self._entries.get(name)
        if existing is not None and existing.factory is not factory:
            raise ValueError(f"{self.stage} {name!r} is already registered")
        self._entries[name] = Entry(name, label, factory)

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


FAIRSHARE: Registry[Allocator] = Registry("fair-share policy")
MECHANISMS: Registry[Mechanism] = Registry("mechanism")
DISPATCH: Registry[ShareDispatcher] = Registry("dispatch mode")

# --- fair share across queues (paper 002) ---------------------------------------------------

_FAIRSHARE_LABELS = {
    "static": "Static partitioning (each queue its own share, nothing lent)",
    "mlrf": "MLRF (memoryless, current allocation)",
    "ltrf": "LTRF (long-term, flat)",
    "hltrf": "H-LTRF (long-term, hierarchical, starvation timeout)",
}
FAIRSHARE.add("fifo", "FIFO (oldest job first, across queues)", FifoAllocator)
for _policy in FAIRSHARE_POLICIES:
    FAIRSHARE.add(_policy, _FAIRSHARE_LABELS[_policy], partial(FairShareAllocator, policy=_policy))


# the published schedulers (docs/published_schedulers.md): each module cites its paper
FAIRSHARE.add("drf", "DRF (dominant resource fairness, as YARN's Fair Scheduler)", DrfAllocator)
FAIRSHARE.add("slurm", "Slurm classic fair share (2^(-U/S), decayed usage)", SlurmAllocator)
FAIRSHARE.add("karma", "Karma (credits over quanta, guaranteed share)", KarmaAllocator)
FAIRSHARE.add("tiresias", "Tiresias (discretised 2D least attained service, per job)", TiresiasAllocator)
FAIRSHARE.add("tiresias3", "Tiresias, three limits (30 min, 1 h, 2 h of unit-time)", partial(TiresiasAllocator, thresholds=THREE_LIMITS_S))
FAIRSHARE.add("themis", "Themis (finish-time fairness auction, per job; exact sizes)", ThemisAllocator)
FAIRSHARE.add("themis_est", "Themis, sizes estimated from attained service", partial(ThemisAllocator, sizes="attained"))
FAIRSHARE.add("srpt", "SRPT (shortest remaining work first, per job; exact sizes)", SrptAllocator)


def link_allocators(allocators: Sequence[Allocator]) -> None:
    """Link one cluster's per-type allocators when their policy needs every type (DRF);
    a no-op for the others (``scheduler.fairshare.protocol.link``)."""
    _link(allocators)


def build_allocator(
    name: str, tree: QueueTree, *, t_wait: float, history: str = "forever", history_length: float = math.inf
) -> Allocator:
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
    DISPATCH.add(_mode, _DISPATCH_LABELS[_mode], partial(ShareDispatcher, mode=_mode))

# --- mechanisms within a queue (paper 000) ----------------------------------------------------

MECHANISMS.add("abacus", "Abacus budget auction (paper 000)", AbacusSloPolicy)
MECHANISMS.add("abacus_no_pool", "Abacus without the SLO prolific pool (paper 000, comparison)", AbacusNoPoolPolicy)


MECHANISMS.add("proportional", "Proportional to money (alpha = 1, one shot)", ProportionalPolicy)
MECHANISMS.add("equal", "Equal shares (alpha = 0, budgets ignored)", EqualSharePolicy)


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
