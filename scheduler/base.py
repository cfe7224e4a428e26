"""The allocation-policy interface (conventions: pluggable policies by name)."""

from __future__ import annotations

from typing import Protocol

from scheduler.types import MarketSnapshot, Outcome


class AllocationPolicy(Protocol):
    """A market-clearing policy: a snapshot in, an outcome out, no side effects."""

    name: str

    def allocate(self, snapshot: MarketSnapshot) -> Outcome:
        """Compute per-job shares for the snapshot. Must not mutate it."""
        ...
