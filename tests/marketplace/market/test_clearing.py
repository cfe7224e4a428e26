"""Market clearing: lease, version check (stale results dropped), the stored Plan and prices."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from django.db import models

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.market.models.allocation import AllocationSnapshot
from marketplace.market.models.market import Market
from marketplace.market.services import clearing
from marketplace.market.services.clearing import market_clear
from scheduler.plan import Plan
from scheduler.registry import MECHANISMS
from tests.factories import TenantFactory, leaf

WORK = [WorkItem("map", 4, 10.0, 1.0), WorkItem("reduce", 2, 10.0, 1.0)]


def test_clearing_stores_within_queue_shares_that_sum_to_one(market, alice, bob):
    # given three jobs: two in alice's leaf queue, one in bob's
    carol = TenantFactory(market=market, username="carol", queue=leaf(market, "root.orga.analytics"))
    jobs = [bid_submit(tenant=t, budget=b, work=WORK) for t, b in ((alice, "100"), (carol, "300"), (bob, "50"))]
    # when the market clears
    result = market_clear(market_id=market.pk)
    # then each leaf queue's shares of each resource sum to one
    assert result.status == "cleared" and result.n_jobs == 3
    snap = AllocationSnapshot.objects.get(pk=result.snapshot_id)
    plan = Plan.from_bytes(bytes(snap.plan))
    row = {job: k for k, job in enumerate(plan.job_ids.tolist())}
    for j, _resource in enumerate(("map", "reduce")):
        share = {job.pk: plan.shares[row[job.pk], j] for job in jobs}
        assert share[jobs[0].pk] + share[jobs[1].pk] == pytest.approx(1.0)
        assert share[jobs[2].pk] == pytest.approx(1.0)
        # more money buys a larger share inside the queue (alpha = 0.5 > 0)
        assert share[jobs[1].pk] > share[jobs[0].pk]
    # and every job's sub-budgets add up to its budget, which it pays at completion
    for job in jobs:
        assert plan.sub_budgets[row[job.pk]].sum() == pytest.approx(float(job.budget), rel=1e-9)
        assert plan.payments[job.pk].kind == "at_completion" and plan.payments[job.pk].amount == float(job.budget)
    # and prices are the sub-budgets over capacity
    prices = {p.resource_type.name: p.price for p in snap.prices.select_related("resource_type")}
    assert prices["map"] == pytest.approx(plan.sub_budgets[:, 0].sum() / 10)
    assert list(plan.diagnostics.prices) == pytest.approx([prices["map"], prices["reduce"]])
    assert snap.mechanism == plan.diagnostics.mechanism == "abacus"


def test_stale_result_is_dropped_and_recomputed(market, alice):
    # given a bid, and a solve during which another bid arrives
    bid_submit(tenant=alice, budget="100", work=WORK)
    real = MECHANISMS.build("abacus")
    calls = {"n": 0}

    class ArrivalDuringSolve:
        def clear(self, snapshot):
            calls["n"] += 1
            if calls["n"] == 1:
                bid_submit(tenant=alice, budget="10", work=WORK)  # bumps the state version mid-solve
            return real.clear(snapshot)

    with mock.patch.object(clearing.MECHANISMS, "build", return_value=ArrivalDuringSolve()):
        result = market_clear(market_id=market.pk)
    # then the first result (1 job) was dropped and the stored one has both jobs
    market.refresh_from_db()
    assert calls["n"] == 2
    assert result.status == "cleared" and result.n_jobs == 2
    assert AllocationSnapshot.objects.count() == 1
    assert market.cleared_version == market.state_version


def test_a_second_clearing_while_one_holds_the_lease_is_busy(market, alice):
    bid_submit(tenant=alice, budget="100", work=WORK)
    lease = clearing._acquire_lease(market.pk)
    assert lease is not None
    assert market_clear(market_id=market.pk).status == "busy"
    clearing._release_lease(market.pk, lease)
    assert market_clear(market_id=market.pk).status == "cleared"


def test_expired_lease_of_a_crashed_worker_is_taken_over(market, alice, settings):
    settings.MARKET_LEASE_S = -1  # the lease taken below is already expired
    assert clearing._acquire_lease(market.pk)
    assert market_clear(market_id=market.pk).status == "cleared"
    assert Market.objects.get(pk=market.pk).clearing_lease_until is None


def test_warm_start_reuses_previous_sub_budgets(market, alice, bob):
    for b in ("100", "200", "150"):
        bid_submit(tenant=alice, budget=b, work=WORK)
    cold = market_clear(market_id=market.pk)
    bid_submit(tenant=alice, budget="120", work=WORK)
    warm = market_clear(market_id=market.pk)
    assert cold.status == warm.status == "cleared"
    assert warm.rounds <= cold.rounds + 2  # a single arrival should not need a full cold solve
    assert np.isfinite(warm.solve_ms)


def test_failed_solve_leaves_no_partial_snapshot_and_frees_the_lease(market, alice):
    bid_submit(tenant=alice, budget="100", work=WORK)

    class Broken:
        def clear(self, snapshot):
            raise RuntimeError("solver crashed")

    with mock.patch.object(clearing.MECHANISMS, "build", return_value=Broken()), pytest.raises(RuntimeError):
        market_clear(market_id=market.pk)
    assert not AllocationSnapshot.objects.exists()
    assert Market.objects.get(pk=market.pk).clearing_lease_until is None


def test_the_market_s_mechanism_is_used_and_old_plans_are_pruned(market, alice):
    # given a market switched to the one-shot proportional mechanism
    from marketplace.market.services.config import market_configure

    market_configure(market=market, mechanism="proportional")
    for b in ("100", "300"):
        bid_submit(tenant=alice, budget=b, work=WORK)
    # when it clears more often than the retention window
    for _ in range(clearing.PLAN_RETENTION + 3 * clearing.PRUNE_EVERY):
        Market.objects.filter(pk=market.pk).update(state_version=models.F("state_version") + 1)
        assert market_clear(market_id=market.pk).status == "cleared"
    # then every clearing used it, the newest ones keep their whole Plan, and the
    # older ones lose it within PRUNE_EVERY clearings
    snaps = AllocationSnapshot.objects.filter(market=market).order_by("-id")
    assert {s.mechanism for s in snaps} == {"proportional"} and snaps[0].rounds == 0
    kept = [s.plan is not None for s in snaps]
    assert kept[: clearing.PLAN_RETENTION] == [True] * clearing.PLAN_RETENTION
    assert not any(kept[clearing.PLAN_RETENTION + clearing.PRUNE_EVERY :])
    assert sum(kept) < clearing.PLAN_RETENTION + clearing.PRUNE_EVERY
    assert all(s.prices.count() == 2 for s in snaps)  # the price history stays whole
