"""The plain statements of the market's hottest reads (the API's market state and allocation), built once.

Compiling these through the ORM cost more than running them, on every poll. Each builder names the
selector whose read it is (``market.selectors``) and the parameters it takes, in order; values come
back as the database gives them (ints, strings, numbers), as those selectors read them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django.db import connection

from marketplace.infra import rows
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.queues import ResourceType
from marketplace.market.models.tenants import Tenant


def recent_counts(market_id: int, cut: float) -> dict[tuple[Any, ...], list[float]]:
    """``infra.windows.history_sums``' recent part of :func:`market.selectors.job_counts`: (status,) -> [count] of the
    market's jobs that left at or after ``cut`` or have not left."""
    finish = rows.column(Job, "sim_finish_time")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {rows.column(Job, 'status')}, COUNT(*) FROM {rows.table(Job)} WHERE {rows.column(Job, 'market')} = %s "
                       f"AND ({finish} >= %s OR {finish} IS NULL) GROUP BY 1", [market_id, cut])
        return {(status,): [float(n)] for status, n in cursor.fetchall()}


@lru_cache(maxsize=2)
def allocation(of_tenant: bool) -> tuple[str, str]:
    """:func:`market.selectors.current_allocation`'s two reads, built once (compiling them cost more than they ran): the
    active jobs (id, tenant name, queue, status) by id, and their work rows (job, type name, running,
    pending) by job and the types' order; parameters: the market, ``Job.ACTIVE``, the tenant if ``of_tenant``."""
    j, w, t, rt = (lambda name, m=m: f"{rows.table(m)}.{rows.column(m, name)}" for m in (Job, JobWork, Tenant, ResourceType))
    where = f"{j('market')} = %s AND {j('status')} IN ({', '.join(['%s'] * len(Job.ACTIVE))})"
    where += f" AND {j('tenant')} = %s" if of_tenant else ""
    return (f"SELECT {j('id')}, {t('name')}, {j('queue')}, {j('status')} FROM {rows.table(Job)} INNER JOIN {rows.table(Tenant)} "
            f"ON {j('tenant')} = {t('id')} WHERE {where} ORDER BY {j('id')}",
            f"SELECT {w('job')}, {rt('name')}, {w('running')}, {w('pending')} FROM {rows.table(JobWork)} INNER JOIN {rows.table(Job)} "
            f"ON {w('job')} = {j('id')} INNER JOIN {rows.table(ResourceType)} ON {w('resource_type')} = {rt('id')} WHERE {where} "
            f"ORDER BY {w('job')}, {rt('stage')}, {rt('id')}")


@lru_cache(maxsize=8)
def queue_totals(n_types: int) -> str:
    """:func:`market.selectors.queue_totals`' read for ``n_types`` resource types, built once: per queue of the active jobs, their
    count and per type (by id, the parameters first) its work rows, running units and pending tasks."""
    j, w = (lambda name, m=m: f"{rows.table(m)}.{rows.column(m, name)}" for m in (Job, JobWork))
    of_type = [f"CASE WHEN {w('resource_type')} = %s THEN {w(name)} END" for _ in range(n_types) for name in ("id", "running", "pending")]
    sums = "".join(f", {'COUNT' if k % 3 == 0 else 'SUM'}({e})" for k, e in enumerate(of_type))
    return (f"SELECT {j('queue')}, COUNT(DISTINCT {j('id')}){sums} FROM {rows.table(Job)} LEFT OUTER JOIN {rows.table(JobWork)} "
            f"ON {j('id')} = {w('job')} WHERE {j('market')} = %s AND {j('status')} IN ({', '.join(['%s'] * len(Job.ACTIVE))}) "
            f"GROUP BY {j('queue')}")
