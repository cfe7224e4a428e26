"""Deadline quotes (paper 003) on a busy cluster (docs/economy.md, "Quotes on a busy cluster").

With the auction holding every map slot, a quote with slack used to answer ``feasible: false``
(available 0, "takes inf s"). Running tasks are never pre-empted, but they end, and the slots
they free go to bookings before the auction: the quote promises capacity from those times, and
the booking meets its deadline.
"""

from __future__ import annotations

import math

import pytest

from marketplace.auction.services import WorkItem, bid_submit
from marketplace.deadlines.services import deadline_book, deadline_quote
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.services.clock import cluster_advance

WORK = [WorkItem("map", 10, 60.0), WorkItem("reduce", 2, 30.0)]


@pytest.fixture
def busy(market: Market, bob) -> Job:  # type: ignore[no-untyped-def]
    """bob's auction job holds all 10 map slots: waves of 10 tasks of 300 s, the first ending at 300 s (the clock is at 1 s)."""
    job = bid_submit(tenant=bob, budget="80", work=[WorkItem("map", 40, 300.0)])
    cluster_advance(market_id=market.pk, until=1.0)
    assert JobWork.objects.get(job=job, resource_type__name="map").running == 10
    market.refresh_from_db()
    return job


def test_a_quote_on_a_full_cluster_waits_for_the_slots_to_free(market, busy):
    q = deadline_quote(market=market, work=WORK, deadline=market.sim_time + 86400.0)
    assert q.feasible and q.busy_now[0] == 10
    assert q.start_delay == pytest.approx(300.0 - market.sim_time)  # the first wave's end: every map slot frees at 300 s
    assert q.available[0] > 0 and math.isfinite(q.fastest_time) and q.reason == ""
    assert q.guarantee[1] <= q.relative_deadline and q.start_delay + q.exec_time <= q.planned_deadline
    assert q.curve  # the cost of urgency is drawn, from the fastest feasible deadline on


def test_the_booking_gets_the_freed_slots_before_the_auction_and_meets_its_deadline(market, alice, busy):
    deadline = market.sim_time + 1200.0
    job, q = deadline_book(tenant=alice, work=WORK, deadline=deadline)
    assert q.feasible and q.start_delay == pytest.approx(300.0 - market.sim_time)
    cluster_advance(market_id=market.pk, until=320.0)
    # the first wave ended at 300: the freed map slots went to the booking first, up to its slots
    assert JobWork.objects.get(job=job, resource_type__name="map").running + JobWork.objects.get(
        job=job, resource_type__name="map").done == min(q.slots[0], 10)
    assert JobWork.objects.get(job=busy, resource_type__name="map").running == 10 - q.slots[0]
    cluster_advance(market_id=market.pk, until=deadline + 1.0)
    job.refresh_from_db()
    assert job.status == Job.Status.FINISHED and job.sim_finish_time <= deadline
    assert job.sim_finish_time <= q.start + q.start_delay + q.exec_time + 1e-6


def test_a_deadline_before_the_slots_free_is_refused_with_a_finite_earliest_time(market, alice, busy):
    q = deadline_quote(market=market, work=WORK, deadline=market.sim_time + 200.0)
    assert not q.feasible and math.isfinite(q.fastest_time) and q.fastest_time > 200.0
    assert "inf" not in q.reason and f"{math.ceil(q.fastest_time)} s from now" in q.reason
