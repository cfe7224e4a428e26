"""The fair-share allocator's contract: what the cluster calls on the policy of one resource type.

Paper 002's Alg. 1 splits the scheduler into a *policy* that picks the leaf queue (or job) that gets
a free unit and the *bookkeeping* that tells it what runs (task starts and finishes). Every entry of
``scheduler.registry.FAIRSHARE`` builds an :class:`Allocator`; the cluster
(``simulator.cluster.stages``) calls only what this protocol names, and a policy that needs more
says so by a flag and a second protocol:

* ``uses_arrival_order`` -- :class:`ArrivalOrderAllocator` (``pick_oldest``; FIFO across queues);
* ``job_level`` -- :class:`JobLevelAllocator` (``pick_jobs``; Tiresias and Themis rank jobs);
* a class with ``link`` -- :class:`LinkedAllocator` (DRF sees every type's usage).

mypy checks each registered factory against this protocol (``Registry[Allocator]``), so the contract
no longer exists by convention only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from scheduler.fairshare.fairness import QueueTree
    from scheduler.published.jobs import Grants, JobView


@runtime_checkable
class Allocator(Protocol):
    """The fair-share policy of one resource type (paper 002, Alg. 1: ``pick`` plus bookkeeping).

    Times are simulated seconds and never go backwards across calls; ``leaf`` is a position in the
    queue tree's leaves (0 .. L-1); ``task_key`` names a batch of tasks started together.
    """

    capacity: float
    """Units of this type (set by the cluster; share limits and quotas are fractions of it)."""
    t_wait: float
    """The starvation timeout T_wait, simulated s (paper 002, Sec. 5.2.2; kept by every policy so a
    market can switch freely)."""

    @property
    def policy(self) -> str:
        """The registry name of the rule in force."""
        ...

    @property
    def uses_arrival_order(self) -> bool:
        """``pick_leaf`` reads ``head`` (the leaves' oldest eligible job's arrival rank)."""
        ...

    @property
    def tracks_demand(self) -> bool:
        """``update_demand`` starts and stops starvation clocks (callers may skip it otherwise)."""
        ...

    @property
    def job_level(self) -> bool:
        """The policy ranks jobs across all queues (:class:`JobLevelAllocator`), not leaves."""
        ...

    @property
    def work_conserving(self) -> bool:
        """False when share limits or static quotas may leave units idle while a leaf waits."""
        ...

    def update_demand(self, demanding: NDArray[np.bool_], now: float) -> None:
        """(L,) leaves that demand now; starts and stops starvation clocks where ``tracks_demand``."""
        ...

    def pick_leaf(self, demanding: NDArray[np.bool_], now: float, head: NDArray[np.float64] | None = None) -> int:
        """The leaf among the (L,) ``demanding`` that gets the next unit; -1 when none may."""
        ...

    def room(self, leaf: int) -> int:
        """More units ``leaf`` may take under its share limits (a large number when unlimited)."""
        ...

    def record_start(
        self, task_key: int, leaf: int, now: float, expected_duration: float | None = None, units: int = 1, app: int | None = None
    ) -> None:
        """``units`` tasks of ``leaf`` (job ``app``) started at ``now`` as batch ``task_key``."""
        ...

    def record_more(self, task_key: int, units: int = 1) -> None:
        """Batch ``task_key`` grew by ``units`` at the instant it started."""
        ...

    def record_finish(self, task_key: int, now: float) -> None:
        """Batch ``task_key`` ended at ``now`` (its usage stops)."""
        ...

    def to_state(self) -> dict[str, Any]:
        """Everything needed to continue, JSON-serialisable."""
        ...

    @classmethod
    def from_state(cls, tree: QueueTree, state: dict[str, Any]) -> Allocator:
        """The allocator :meth:`to_state` saved, on the same ``tree``. Raises ValueError on another tree."""
        ...


@runtime_checkable
class ArrivalOrderAllocator(Allocator, Protocol):
    """An allocator that ranks leaves by the arrival of their oldest eligible job (FIFO)."""

    def pick_oldest(self, head: Sequence[float]) -> int:
        """The leaf whose ``head`` rank is smallest (ties: lowest position); -1 when none is finite."""
        ...


@runtime_checkable
class JobLevelAllocator(Allocator, Protocol):
    """An allocator that ranks jobs across every queue (Tiresias, Themis)."""

    def pick_jobs(self, view: JobView, free: int, now: float) -> Grants:
        """``(job position in view, units)`` grants of at most ``free`` units in all."""
        ...


def link(allocators: Sequence[Allocator]) -> None:
    """Link one cluster's per-type allocators when their class defines ``link`` (DRF ranks leaves by
    every type's usage); a no-op for the others."""
    if allocators:
        linker = getattr(type(allocators[0]), "link", None)
        if linker is not None:
            linker(allocators)
