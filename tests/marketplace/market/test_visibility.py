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
