"""The cluster's reservations (paper 001, Sec. 2.3 and 3.1): which are in force, which
are to come, and their release when a job leaves or a window closes.

A layer of :class:`simulator.cluster.model.Cluster` over its state
(:class:`~simulator.cluster.core.ClusterCore`): the Plan's reservations
(``_reservations``, set by ``simulator.cluster.plan_apply``) read by the dispatch stages
(``simulator.cluster.stages``) and the reservation look-ahead (``simulator.cluster.lookahead``).
"""

from __future__ import annotations

from scheduler.plan import Reservation
from simulator.cluster import plan_apply
from simulator.cluster.core import ClusterCore
from simulator.engine import FINISH


class ReservationBook(ClusterCore):
    """Reservation queries and releases of a cluster (see the module docstring)."""

    def reservations_on(self, j: int) -> list[Reservation]:
        """The Plan's reservations of type j in force now."""
        now = self.now
        return [r for r in self._reservations if r.resource == j and r.start <= now < r.end]

    def reservations_of(self, j: int) -> list[Reservation]:
        """Every reservation of type j in the Plan, in force now or to come (sorted by start)."""
        return [r for r in self._reservations if r.resource == j]

    def drop_reservations(self, job_ids: set[int]) -> None:
        """Forget the reservations of departed or cancelled jobs now (their units go back
        to the shared stage before the next Plan arrives)."""
        self._reservations = tuple(r for r in self._reservations if r.job_id not in job_ids)

    def expire_reservations(self) -> None:
        """Forget the reservations whose window has closed; a job left with none runs on
        through the shared stage (late, best effort) instead of waiting for units no
        stage would give it (its window closed with work left: a capacity cut, or work
        longer than booked)."""
        now = self.now
        kept = tuple(r for r in self._reservations if r.end > now)
        if len(kept) != len(self._reservations):
            self._reservations = kept
            plan_apply.mark_reserved(self, frozenset(r.job_id for r in kept))

    def running_batches(self, j: int) -> list[tuple[float, int, int, bool]]:
        """``(finish time, units, job id, shared)`` of every running batch of type j
        (the reservation look-ahead, ``simulator.cluster.lookahead``)."""
        return [
            (t, int(p[4]), int(p[1]), bool(p[5])) for t, _, _, p in self._events if p[0] == FINISH and int(p[2]) == j
        ] + [  # a real cluster's batches end when reported: expected at their start + duration, never before now
            (max(float(p[8]), self.now), int(p[4]), int(p[1]), bool(p[5])) for p in self._external.values() if int(p[2]) == j
        ]
