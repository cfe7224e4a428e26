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
from django.db import connection

from marketplace.infra import rows
from marketplace.infra.batch import Batch
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
                 utilisation: Sequence[float], batch: Batch | None = None) -> None:
    """Insert the settlements of :func:`settlement_rows` (none for no job), then publish each type's
    pool of unpublished settlements that now comes from enough tenants (:func:`rates_pool`; its
    writes added to ``batch`` when given). On PostgreSQL the insert and the read of the pools are one
    statement (``WITH new AS (INSERT ... RETURNING ...) SELECT ...``)."""
    settled = settlement_rows(market_id=market_id, sim_time=sim_time, types=types, served=served, utilisation=utilisation)
    if not settled:
        return
    if connection.vendor == "postgresql":
        fields = [SpotSettlement._meta.get_field(name) for name in SETTLEMENT_FIELDS]
        prepared = [[f.get_db_prep_save(v, connection) for f, v in zip(fields, row, strict=True)] for row in settled]
        insert = rows.insert_statement(SpotSettlement, SETTLEMENT_FIELDS)
        sql = (f"WITH new AS ({insert} RETURNING {_POOL_COLUMNS}) SELECT {_POOL_COLUMNS} FROM {rows.table(SpotSettlement)}"
               f" WHERE {_col('market')} = %s AND {_col('pooled')} = %s UNION ALL SELECT {_POOL_COLUMNS} FROM new ORDER BY 2")
        with connection.cursor() as cursor:
            cursor.execute(sql, [*rows.column_values(fields, prepared), market_id, False])
            pending = cursor.fetchall()
    else:
        rows.insert_rows(SpotSettlement, SETTLEMENT_FIELDS, settled)
        pending = _unpooled(market_id)
    _publish(market_id, sim_time, pending, batch)


def _col(name: str) -> str:
    return rows.column(SpotSettlement, name)


_POOL_COLUMNS = ", ".join(_col(name) for name in ("resource_type", "id", "tenant", "charged", "slot_seconds", "utilisation"))


def _unpooled(market_id: int) -> list[tuple]:
    """The market's unpublished settlements: (type id, id, tenant id, charged, slot-seconds, utilisation), by id."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {_POOL_COLUMNS} FROM {rows.table(SpotSettlement)} WHERE {_col('market')} = %s AND {_col('pooled')} = %s "
                       f"ORDER BY {_col('id')}", [market_id, False])
        return list(cursor.fetchall())


def rates_pool(*, market_id: int, sim_time: float) -> int:
    """Publish one ``RateSample`` per resource type whose unpublished settlements come from at least
    :func:`min_tenants` distinct tenants (an unknown tenant counts as one): their sums, the number
    of jobs and tenants, and their slot-second-weighted utilisation, at ``sim_time``. Returns the
    rows published.

    Every departure calls it, so it reads the unpublished settlements in one plain statement and
    sums them here (the grouped ORM query it replaces cost more to build than to run: a fifth of a
    drained replay's time), then writes the published rows in one statement and marks their
    settlements pooled in another."""
    return _publish(market_id, sim_time, _unpooled(market_id), None)


def _publish(market_id: int, sim_time: float, unpooled: list[tuple], batch: Batch | None) -> int:
    """:func:`rates_pool` on the unpublished settlements ``unpooled`` (rows as :func:`_unpooled`'s)."""
    pending: dict[int, list[tuple[int, int | None, float, float, float]]] = {}
    for type_id, *row in unpooled:
        pending.setdefault(int(type_id), []).append(tuple(row))  # type: ignore[arg-type]
    need, published, pooled = min_tenants(), [], []
    for type_id, settled in sorted(pending.items()):
        tenants = {t for _, t, _, _, _ in settled if t is not None}
        n_tenants = len(tenants) + (1 if any(t is None for _, t, _, _, _ in settled) else 0)
        used = sum(w for _, _, _, w, _ in settled)
        if n_tenants < need or not used > 0:
            continue
        level = sum(u * w for _, _, _, w, u in settled) / used
        published.append((market_id, type_id, sim_time, float(sum(c for _, _, c, _, _ in settled)), float(used), len(settled),
                          n_tenants, float(level)))
        pooled += [(True, i) for i, _, _, _, _ in settled]
    if published:
        rows.insert_rows(RateSample, RATE_FIELDS, published, batch=batch)
        rows.update_rows(SpotSettlement, ("pooled",), ("id",), pooled, batch=batch)
    return len(published)


RATE_FIELDS = ("market", "resource_type", "sim_time", "charged", "slot_seconds", "jobs", "tenants", "utilisation")
