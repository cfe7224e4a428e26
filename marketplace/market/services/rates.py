"""The spot market's realised rate: what auction jobs paid for the slot-seconds they used
(docs/economy.md, "One unit of price" and "A price nobody moves alone").

Every auction job that leaves the market, by completing or by a cancellation, adds one private
``SpotSettlement`` per resource type it used: its charge, split over the types in proportion to
the slot-seconds it used of each, those slot-seconds, its tenant, and the type's utilisation then
(the level of demand). Jobs at a price fixed at acceptance (ERA reservations, deadline bookings)
are not the auction's and add nothing. The published series (``RateSample``) pools a type's
unpublished settlements into one row once they come from ``MARKET_RATE_MIN_TENANTS`` tenants, so
no published row is one tenant's payment. The reads are in ``market.prices``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, Sum

from marketplace.infra import rows
from marketplace.market.models.allocation import RateSample, SpotSettlement
from marketplace.market.models.queues import ResourceType


@dataclass(frozen=True)
class Served:
    """One auction job leaving the market: what it was charged (money), the slot-seconds it was
    served per resource type (in the market's resource-type order), and its tenant."""

    job_id: int
    charged: Decimal
    slot_seconds: tuple[float, ...]
    tenant_id: int | None = None

    @property
    def total(self) -> float:
        return float(sum(self.slot_seconds))


def min_tenants() -> int:
    """``MARKET_RATE_MIN_TENANTS`` (default 3): distinct tenants a published rate row pools."""
    return max(int(getattr(settings, "MARKET_RATE_MIN_TENANTS", 3)), 1)


SETTLEMENT_FIELDS = ("market", "resource_type", "tenant", "sim_time", "charged", "slot_seconds", "utilisation", "pooled")


def settlement_rows(*, market_id: int, sim_time: float, types: Sequence[ResourceType], served: Sequence[Served],
                    utilisation: Sequence[float]) -> list[tuple]:
    """The ``SpotSettlement`` rows of ``served`` jobs settled at ``sim_time``: one per job and resource
    type it used (fields as :data:`SETTLEMENT_FIELDS`)."""
    out = []
    for s in served:
        total = s.total
        if total <= 0:
            continue  # nothing used: no rate to learn from (a job cancelled before any task ended)
        for j, ss in enumerate(s.slot_seconds[:len(types)]):
            if ss > 0:
                out.append((market_id, types[j].pk, s.tenant_id, sim_time, float(s.charged) * ss / total, float(ss),
                            float(utilisation[j]), False))
    return out


def rates_record(*, market_id: int, sim_time: float, types: Sequence[ResourceType], served: Sequence[Served],
                 utilisation: Sequence[float]) -> None:
    """Insert the settlements of :func:`settlement_rows` (one statement; none for no job), then publish
    each type's pool of unpublished settlements that now comes from enough tenants (:func:`rates_pool`)."""
    settled = settlement_rows(market_id=market_id, sim_time=sim_time, types=types, served=served, utilisation=utilisation)
    if settled:
        rows.insert_rows(SpotSettlement, SETTLEMENT_FIELDS, settled)
        rates_pool(market_id=market_id, sim_time=sim_time)


def rates_pool(*, market_id: int, sim_time: float) -> int:
    """Publish one ``RateSample`` per resource type whose unpublished settlements come from at least
    :func:`min_tenants` distinct tenants (an unknown tenant counts as one): their sums, the number
    of jobs and tenants, and their slot-second-weighted utilisation, at ``sim_time``. Returns the
    rows published."""
    pending = SpotSettlement.objects.filter(market_id=market_id, pooled=False)
    groups = list(pending.values("resource_type_id").annotate(
        tenants=Count("tenant_id", distinct=True), unknown=Count("id", filter=None) - Count("tenant_id"),
        c=Sum("charged"), w=Sum("slot_seconds"), jobs=Count("id")))
    ready = [g for g in groups if g["tenants"] + (1 if g["unknown"] else 0) >= min_tenants() and (g["w"] or 0) > 0]
    for g in ready:
        ids = list(pending.filter(resource_type_id=g["resource_type_id"]).values_list("id", "utilisation", "slot_seconds"))
        level = sum(u * w for _, u, w in ids) / sum(w for _, _, w in ids)
        RateSample.objects.create(market_id=market_id, resource_type_id=g["resource_type_id"], sim_time=sim_time,
                                  charged=float(g["c"] or 0.0), slot_seconds=float(g["w"]), jobs=g["jobs"],
                                  tenants=g["tenants"] + (1 if g["unknown"] else 0), utilisation=float(level))
        SpotSettlement.objects.filter(id__in=[i for i, _, _ in ids]).update(pooled=True)
    return len(ready)
