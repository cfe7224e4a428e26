"""Lock order under real concurrency (PostgreSQL): bids, cancellations, clock ticks (the
live clock and fixed steps), clearings and configuration changes on one market at once all
get through, none fails, and the ledger reconciles after.

Every writer locks the market row first (``FOR NO KEY UPDATE``: ``marketplace.infra.locking``)
and an account after it. A version of the bid that inserted its job before locking the row
(a ``KEY SHARE`` lock through the foreign key, upgraded later) deadlocked under ``make load``
(12 "deadlock detected" in a minute with three gunicorn processes) and was dropped; this
in-process test did not catch that one (threads under one GIL interleave too little), so
``make load`` is the check for it (its error count).
"""

from __future__ import annotations

import random
import threading
import time
from decimal import Decimal

import pytest
from django.db import connection

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit, job_cancel
from marketplace.ledger.services import ledger_reconcile
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance, cluster_tick
from marketplace.market.services.config import market_configure, resource_capacity_set
from tests.factories import MarketFactory, TenantFactory

pytestmark = pytest.mark.integration

SECONDS = 6.0


def test_bids_cancels_ticks_clearings_and_changes_never_deadlock(postgres):
    # given a market with four tenants
    market = MarketFactory(name="locks")
    tenants = [TenantFactory(market=market, username=f"lock-{k}", deposit=Decimal("100000")) for k in range(4)]
    errors: list[BaseException] = []
    counts = {"bids": 0, "cancels": 0, "ticks": 0, "clearings": 0, "changes": 0}
    stop = time.monotonic() + SECONDS

    def loop(name: str, step) -> None:  # type: ignore[no-untyped-def]
        rng = random.Random(name)
        try:
            while time.monotonic() < stop:
                if step(rng):
                    counts[name] += 1
        except BaseException as exc:
            errors.append(exc)
        finally:
            connection.close()

    def bid(rng: random.Random, tenant) -> bool:  # type: ignore[no-untyped-def]
        bid_submit(tenant=tenant, budget=str(rng.randint(1, 20)), work=[WorkItem("map", rng.randint(1, 4), 5.0),
                                                                        WorkItem("reduce", 1, 5.0)])
        return True

    def cancel(rng: random.Random) -> bool:
        job = Job.objects.filter(market=market, status__in=Job.ACTIVE).order_by("?").first()
        if job is None:
            return False
        try:
            job_cancel(job=job)
        except Exception as exc:  # a job that finished or was cancelled meanwhile: a 400, not a failure
            if "cannot be cancelled" not in str(exc):
                raise
            return False
        return True

    def tick(rng: random.Random) -> bool:  # the live clock (run_clock) and a fixed step, in turn
        if rng.random() < 0.5:
            cluster_tick(market_id=market.pk)
        else:
            cluster_advance(market_id=market.pk, seconds=5.0)
        return True

    def clear(rng: random.Random) -> bool:
        return market_clear(market_id=market.pk).status in ("cleared", "current", "busy", "stale")

    def change(rng: random.Random) -> bool:
        time.sleep(0.2)
        if rng.random() < 0.5:
            market_configure(market=Market.objects.get(pk=market.pk), clock_speed=rng.choice([30.0, 60.0]), reason="test")
        else:
            resource_capacity_set(resource_type=ResourceType.objects.get(market=market, name="map"), capacity=rng.choice([8, 10]))
        return True

    # when they all run at once for a few seconds
    threads = [threading.Thread(target=loop, args=("bids", lambda r, t=t: bid(r, t))) for t in tenants]
    threads += [threading.Thread(target=loop, args=(name, fn)) for name, fn in
                (("cancels", cancel), ("cancels", cancel), ("ticks", tick), ("ticks", tick), ("clearings", clear),
                 ("changes", change))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # then nothing failed (a deadlock raises), every kind of writer got through, and the money reconciles
    assert not errors, [repr(e) for e in errors[:3]]
    assert all(n > 0 for n in counts.values()), counts
    for tenant in tenants:
        tenant.account.refresh_from_db()
        assert ledger_reconcile(account=tenant.account) == []
