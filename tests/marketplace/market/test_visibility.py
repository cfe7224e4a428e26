"""The current allocation as a tenant reads it: its own jobs only, and per-queue totals (summed in the
database) equal to the totals over every active job's row, as staff read them."""

from __future__ import annotations

import pytest

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit, job_cancel
from marketplace.market import visibility
from marketplace.market.models.jobs import Job
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance


@pytest.mark.django_db
def test_a_tenants_queue_totals_equal_the_totals_over_every_active_job(market, alice, bob):
    # given: both tenants' jobs in two queues, map-only and map-and-reduce, some running, one cancelled
    for k in range(4):
        bid_submit(tenant=alice, budget="50", work=[WorkItem("map", 2 + k, 5.0)])
        bid_submit(tenant=bob, budget="50", work=[WorkItem("map", 1, 5.0), WorkItem("reduce", 1 + k, 5.0)])
    job_cancel(job=Job.objects.filter(tenant=bob).order_by("id").first())
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, seconds=2.0)
    # when: the allocation as alice and as someone who sees every tenant
    mine = visibility.allocation_for(market=market, viewer=visibility.Viewer(tenant=alice, all_tenants=False))
    every = visibility.allocation_for(market=market, viewer=visibility.Viewer(tenant=None, all_tenants=True))
    # then: the same public totals (of active jobs only), alice's rows only in hers
    assert mine["queues"] == every["queues"] and {q["queue"] for q in mine["queues"]} == {"root.orga.analytics", "root.orgb.research"}
    assert sum(q["jobs"] for q in mine["queues"]) == Job.objects.filter(market=market, status__in=Job.ACTIVE).count() == 7
    assert any(q["running"].get("map") for q in mine["queues"])  # something runs: the sums are not all zero
    assert mine["scope"] == "own" and every["scope"] == "all"
    assert [r.job_id for r in mine["jobs"]] == [r.job_id for r in every["jobs"] if r.tenant == alice.name]
    assert [r.job_id for r in mine["jobs"]] == list(Job.objects.filter(tenant=alice).order_by("id").values_list("id", flat=True))


@pytest.mark.django_db
@pytest.mark.parametrize("seed", range(3))
def test_the_allocation_reads_equal_a_walk_over_every_job_and_work_row(market, alice, bob, seed):
    """``current_allocation`` and ``queue_totals`` (statements built once) against the model instances, on random markets."""
    import random

    from marketplace.market import selectors
    from marketplace.market.models.jobs import JobWork

    rng = random.Random(seed)
    for _ in range(rng.randint(3, 9)):
        tenant = rng.choice([alice, bob])
        types = rng.choice([["map"], ["reduce"], ["map", "reduce"]])
        work = [WorkItem(t, rng.randint(1, 4), float(rng.randint(2, 9))) for t in types]
        bid_submit(tenant=tenant, budget=str(rng.randint(20, 60)), work=work)
        if rng.random() < 0.4:
            market_clear(market_id=market.pk)
            cluster_advance(market_id=market.pk, seconds=float(rng.randint(1, 6)))
    for job in Job.objects.filter(market=market, status__in=Job.ACTIVE).order_by("id")[: rng.randint(0, 2)]:
        job_cancel(job=job)
    active = list(Job.objects.filter(market=market, status__in=Job.ACTIVE).select_related("tenant").order_by("id"))
    works = {j.pk: list(JobWork.objects.filter(job=j).select_related("resource_type").order_by("resource_type__stage", "resource_type_id"))
             for j in active}
    paths = selectors.queue_paths(market=market)
    for tenant in (None, alice, bob):
        got = selectors.current_allocation(market=market, tenant=tenant)
        mine = [j for j in active if tenant is None or j.tenant_id == tenant.pk]
        assert [(r.job_id, r.tenant, r.queue, r.status) for r in got] == [(j.pk, j.tenant.name, paths[j.queue_id], j.status) for j in mine]
        assert [(r.running, r.pending) for r in got] == [({w.resource_type.name: w.running for w in works[j.pk]},
                                                           {w.resource_type.name: w.pending for w in works[j.pk]}) for j in mine]
    want: dict[str, dict] = {}
    for j in active:
        q = want.setdefault(paths[j.queue_id], {"jobs": 0, "running": {}, "pending": {}})
        q["jobs"] += 1
        for w in works[j.pk]:
            q["running"][w.resource_type.name] = q["running"].get(w.resource_type.name, 0) + w.running
            q["pending"][w.resource_type.name] = q["pending"].get(w.resource_type.name, 0) + w.pending
    assert selectors.queue_totals(market=market) == [{"queue": p, **q} for p, q in sorted(want.items())]
