"""What a dispatch stage sees of the cluster (``simulator.cluster.stages``, ``simulator.cluster.lookahead``).

A stage reads the clock, the Plan's reservations, the jobs' counters and the
fair-share allocators, and starts tasks; :class:`ClusterView` names exactly that,
and :class:`~simulator.cluster.model.Cluster` has it without naming it. The
stages take a ``ClusterView`` instead of importing the model: the model's
default pipeline imports them, so the imports run one way, and a stage can be
tested on a stand-in.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.protocol import Allocator
from scheduler.plan import Reservation
from simulator.cluster.jobs import JobState
from simulator.cluster.placement import LeafPlacement


class ClusterView(Protocol):
    """The cluster as the dispatch stages use it (read-only but for :meth:`start_tasks`)."""

    @property
    def now(self) -> float:
        """The clock (s)."""
        ...

    @property
    def staged(self) -> bool:
        """Tasks of type j wait for every task of the types before j."""
        ...

    @property
    def known_durations(self) -> bool:
        """Task durations are known at start (the reservation look-ahead needs them)."""
        ...

    @property
    def m(self) -> int:
        """Number of resource types."""
        ...

    @property
    def capacity(self) -> NDArray[np.int64]:
        """(m,) slots per resource type."""
        ...

    @property
    def placement(self) -> LeafPlacement:
        """The within-leaf dispatch: which job of a leaf gets a unit."""
        ...

    def job(self, job_id: int) -> JobState | None:
        """The counters of a known job, or None."""
        ...

    def active_states(self) -> list[JobState]:
        """The active jobs' counters in arrival order."""
        ...

    def allocator(self, j: int) -> Allocator:
        """The fair-share allocator of resource type j."""
        ...

    def shared_demanding(self, j: int) -> NDArray[np.bool_]:
        """(L,) leaves with pending tasks of type j the shared stage may start."""
        ...

    def shared_flags(self, j: int) -> list[bool]:
        """:meth:`shared_demanding` as (L,) plain bools."""
        ...

    def leaf_heads(self, j: int) -> NDArray[np.float64]:
        """(L,) arrival rank of each leaf's oldest shared-eligible job of type j (inf: none)."""
        ...

    def head_ranks(self, j: int) -> list[float]:
        """:meth:`leaf_heads` as a list."""
        ...

    def reservations_on(self, j: int) -> list[Reservation]:
        """The Plan's reservations of type j in force now."""
        ...

    def reservations_of(self, j: int) -> list[Reservation]:
        """Every reservation of type j in the Plan, in force now or to come (sorted by start)."""
        ...

    def running_batches(self, j: int) -> list[tuple[float, int, int, bool]]:
        """``(finish time, units, job id, shared)`` of every running batch of type j."""
        ...

    def start_tasks(self, job: JobState, j: int, units: int, *, shared: bool) -> None:
        """Start ``units`` eligible pending tasks of type j of ``job`` now."""
        ...
