"""The spot market's realised rate: what auction jobs paid for the slot-seconds they used
(docs/economy.md, "One unit of price").

Every auction job that leaves the market, by completing or by a cancellation, adds one
``RateSample`` contribution per resource type: its charge, split over the types in proportion
to the slot-seconds it used of each, and those slot-seconds, tagged with the type's utilisation
then (the level of demand). Jobs at a price fixed at acceptance (ERA reservations, deadline
bookings) are not the auction's and add nothing. The reads are in ``market.prices``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from marketplace.infra import rows
from marketplace.market.models.allocation import RateSample
from marketplace.market.models.queues import ResourceType


@dataclass(frozen=True)
class Served:
    """One auction job leaving the market: what it was charged (money) and the slot-seconds it
    was served per resource type (in the market's resource-type order)."""

    job_id: int
    charged: Decimal
    slot_seconds: tuple[float, ...]

    @property
    def total(self) -> float:
        return float(sum(self.slot_seconds))


def rate_rows(*, market_id: int, sim_time: float, types: Sequence[ResourceType], served: Sequence[Served],
              utilisation: Sequence[float]) -> list[tuple]:
    """The ``RateSample`` rows of ``served`` jobs settled at ``sim_time``: one per resource type
    they used (fields as :data:`RATE_FIELDS`)."""
    m = len(types)
    charged, used, jobs = [0.0] * m, [0.0] * m, [0] * m
    for s in served:
        total = s.total
        if total <= 0:
            continue  # nothing used: no rate to learn from (a job cancelled before any task ended)
        for j, ss in enumerate(s.slot_seconds[:m]):
            if ss > 0:
                charged[j] += float(s.charged) * ss / total
                used[j] += ss
                jobs[j] += 1
    return [(market_id, t.pk, sim_time, charged[j], used[j], jobs[j], float(utilisation[j]))
            for j, t in enumerate(types) if used[j] > 0]


RATE_FIELDS = ("market", "resource_type", "sim_time", "charged", "slot_seconds", "jobs", "utilisation")


def rates_record(*, market_id: int, sim_time: float, types: Sequence[ResourceType], served: Sequence[Served],
                 utilisation: Sequence[float]) -> None:
    """Insert the ``RateSample`` rows of :func:`rate_rows` (one statement; none for no job)."""
    rows.insert_rows(RateSample, RATE_FIELDS, rate_rows(market_id=market_id, sim_time=sim_time, types=types, served=served,
                                                         utilisation=utilisation))
