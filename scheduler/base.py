"""The mechanism interface (conventions: pluggable policies chosen by name).

A mechanism clears a market snapshot into a :class:`~scheduler.plan.Plan`
(README, "The engine"); ``scheduler.registry.MECHANISMS`` names them.
"""

from __future__ import annotations

from typing import Protocol

from scheduler.plan import Plan
from scheduler.types import MarketSnapshot


class Mechanism(Protocol):
    """A market-clearing mechanism: a snapshot in, a Plan out, no side effects."""

    name: str

    def clear(self, snapshot: MarketSnapshot) -> Plan:
        """Compute the Plan for ``snapshot``. Must not mutate it.

        Raises:
            ValueError: a malformed snapshot.
        """
        ...
