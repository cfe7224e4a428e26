"""``GET /api/jobs/`` without a model instance or a serializer walk per row.

The list is the API's most requested page (a fifth of ``bench/load.py``'s mix): 50 jobs
and their work rows through ``JobSerializer`` built some 200 model instances and walked
DRF's field machinery for each of them (about 15 ms of CPU a page). Here the page is
read with ``values()`` (one query for the jobs, one for their work rows) and each value
goes through the very field objects ``JobSerializer`` declares, so every number, money
amount and time is formatted exactly as before (``tests/marketplace/test_job_list.py``
compares the two on jobs in every state). The money (held), the latest shares and the SLO
standing come from the same selectors as the serializer's context.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from functools import lru_cache
from typing import Any

from django.db.models import QuerySet

from marketplace import selectors, selectors_abacus
from marketplace.api.fields import money_text
from marketplace.api.serializers import JobSerializer, JobWorkSerializer
from marketplace.models.jobs import Job, JobWork
from marketplace.models.market import Market
from marketplace.models.queues import Queue

# JobSerializer's plain model fields, in its order (queue, held, work, shares and slo are computed).
_COMPUTED = ("queue", "held", "work", "shares", "slo")
_WORK_FIELDS = ("tasks", "task_duration", "weight", "pending", "running", "done")


@lru_cache(maxsize=1)
def _fields() -> tuple[tuple[str, Any], ...]:
    fields = JobSerializer().fields
    return tuple((name, fields[name]) for name in JobSerializer.Meta.fields if name not in _COMPUTED)


@lru_cache(maxsize=1)
def _work_fields() -> tuple[tuple[str, Any], ...]:
    fields = JobWorkSerializer().fields
    return tuple((name, fields[name]) for name in _WORK_FIELDS)


def page_values(jobs: QuerySet[Job]) -> QuerySet[Any]:
    """``jobs`` (filtered, ordered) as the value rows :func:`job_dicts` reads."""
    names = [name for name, _ in _fields()]
    return jobs.values(*names, *(n for n in ("queue_id", "status", "utility") if n not in names))


def job_dicts(rows: list[dict[str, Any]], market: Market) -> list[dict[str, Any]]:
    """The JSON of ``JobSerializer(many=True)`` for the jobs in ``rows`` (from :func:`page_values`)."""
    ids = [r["id"] for r in rows]
    if not ids:
        return []
    return _format(rows, market, _work_rows(ids), selectors.job_money(job_ids=ids), selectors.current_shares(market=market, job_ids=ids))


def placed_job_dict(job: Job, works: list[JobWork], market: Market) -> dict[str, Any]:
    """``JobSerializer(job).data`` for a bid placed in the current transaction, from the objects
    ``services.bids.bid_submit`` wrote instead of reading them back: its work rows are ``works``
    (with their resource types), all of its budget is held and nothing charged, and it has no
    share yet (no Plan has seen it: its clearing runs after the commit)."""
    work_rows = [{"job_id": job.pk, "resource_type__name": w.resource_type.name} | {n: getattr(w, n) for n in _WORK_FIELDS}
                 for w in sorted(works, key=lambda w: (w.resource_type.stage, w.resource_type_id))]
    return _format([_row(job)], market, work_rows, {job.pk: (job.budget, Decimal("0"))}, {})[0]


def cancelled_job_dict(job: Job, market: Market) -> dict[str, Any]:
    """``JobSerializer(job).data`` for a job ``services.bids.job_cancel`` has just cancelled (``job``
    as it returned it, read under the lock and updated): nothing is held any more (the whole hold
    was released); its work rows and its share in the latest Plan are read."""
    return _format([_row(job)], market, _work_rows([job.pk]), {job.pk: (Decimal("0"), job.charged)},
                   selectors.current_shares(market=market, job_ids=[job.pk]))[0]


def _row(job: Job) -> dict[str, Any]:
    """A model instance as the value row :func:`page_values` would read for it."""
    return {name: getattr(job, name) for name, _ in _fields()} | {"queue_id": job.queue_id, "status": job.status, "utility": job.utility}


def _work_rows(job_ids: list[int]) -> list[dict[str, Any]]:
    return list(JobWork.objects.filter(job_id__in=job_ids).order_by("resource_type__stage", "resource_type_id")
                .values("job_id", "resource_type__name", *_WORK_FIELDS))


def _format(rows: list[dict[str, Any]], market: Market, work_rows: list[dict[str, Any]],
            money: dict[int, tuple[Decimal, Decimal]], shares: dict[int, dict[str, float]]) -> list[dict[str, Any]]:
    works: dict[int, list[dict[str, Any]]] = defaultdict(list)
    wf = _work_fields()
    for row in work_rows:
        item: dict[str, Any] = {"resource_type": row["resource_type__name"]}
        for name, field in wf:
            value = row[name]
            item[name] = None if value is None else field.to_representation(value)
        works[row["job_id"]].append(item)
    paths = selectors.queue_paths(market=market)
    slo = _slo(rows, market)
    zero = (Decimal("0"), Decimal("0"))
    out = []
    fields = _fields()
    for r in rows:
        d: dict[str, Any] = {}
        for name, field in fields:
            value = r[name]
            d[name] = None if value is None else field.to_representation(value)
        pk = r["id"]
        d["queue"] = paths[r["queue_id"]] if r["queue_id"] in paths else Queue.objects.get(pk=r["queue_id"]).path
        d["held"] = money_text(money.get(pk, zero)[0])
        d["work"] = works.get(pk, [])
        d["shares"] = shares.get(pk, {})
        d["slo"] = slo.get(pk)
        out.append({name: d[name] for name in JobSerializer.Meta.fields})
    return out


def _slo(rows: list[dict[str, Any]], market: Market) -> dict[int, dict[str, object]]:
    """``JobSerializer.get_slo`` for the SLO jobs among ``rows`` (None for the others)."""
    slo_rows = [r for r in rows if r["min_utility"] is not None]
    if not slo_rows:
        return {}
    jobs = [Job(id=r["id"], status=r["status"], utility=r["utility"], min_utility=r["min_utility"],
                achieved_utility=r["achieved_utility"]) for r in slo_rows]
    out = {}
    for pk, status in selectors_abacus.slo_status(market=market, jobs=jobs).items():
        out[pk] = {"in_pool": status.in_pool, "predicted_utility": status.predicted, "achieved_utility": status.achieved,
                   "met": status.met}
    return out
