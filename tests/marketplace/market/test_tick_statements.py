"""How many statements a clock tick runs: a bound that does not grow with its departures or tenants.

Every statement of a tick runs while the market row, which every bid waits for, is locked, and each is
a round trip to the database. On PostgreSQL a tick reads what it needs (the market row, the active
jobs, the newest Plan, the departed jobs and their holds), stores each Plan it clears in one statement,
moves the accounts of all its departures in one, reads the spot settlements' pools in one, and writes
everything else (task counts, jobs, ledger entries, rates, samples, the engine, the market row) in its
last statement (``infra.batch.Batch``)."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.ledger.services import ledger_reconcile
from marketplace.market.models.allocation import AllocationSnapshot, FairnessSample, ShareSample
from marketplace.market.models.jobs import Job
from marketplace.market.services.clearing import PRUNE_EVERY
from marketplace.market.services.clock import cluster_advance

READS = 5  # the market row, the active jobs, the newest Plan, the departed jobs, their holds
MONEY = 2  # the accounts of all departures, the settlements' pools


def test_a_tick_with_departures_of_two_tenants_runs_a_bounded_number_of_statements(
        market, alice, bob, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    # given eight jobs of two tenants that finish at different instants, and a sample falls in the tick
    with django_capture_on_commit_callbacks(execute=True):
        jobs = [bid_submit(tenant=(alice, bob)[k % 2], budget="20", work=[WorkItem("map", 1 + k % 3, 5.0 + 4.0 * k)])
                for k in range(8)]
    with django_capture_on_commit_callbacks(execute=True):
        cluster_advance(market_id=market.pk, until=1.0)
    before = set(AllocationSnapshot.objects.filter(market=market).values_list("id", flat=True))
    # when one tick runs past all of them
    with CaptureQueriesContext(connection) as queries, django_capture_on_commit_callbacks(execute=True):
        tick = cluster_advance(market_id=market.pk, until=200.0)
    # then it did the work: every job departed and settled, each departure cleared, samples written
    assert tick.finished_jobs == len(jobs)
    assert set(Job.objects.filter(pk__in=[j.pk for j in jobs]).values_list("status", flat=True)) == {Job.Status.FINISHED}
    assert all(ledger_reconcile(account=t.account) == [] for t in (alice, bob))
    assert FairnessSample.objects.filter(market=market).exists() and ShareSample.objects.filter(job__market=market).exists()
    cleared = set(AllocationSnapshot.objects.filter(market=market).values_list("id", flat=True)) - before
    assert len(cleared) >= len(jobs)
    prunes = sum(1 for pk in cleared if pk % PRUNE_EVERY == 0)  # a pruning of old Plans every PRUNE_EVERY-th clearing
    statements = len(queries.captured_queries)
    if connection.vendor == "postgresql":
        # and its statements: the reads, one per Plan (with its prices), the money, and one for every other write
        assert statements <= READS + len(cleared) + prunes + MONEY + 1, [q["sql"][:80] for q in queries.captured_queries]
    else:
        # SQLite has no writes inside WITH: each write is its own statement, but none repeats per departure
        # (a Plan is two: the snapshot and its prices; each tenant's account two: the balances and the entries)
        assert statements <= READS + 2 * len(cleared) + prunes + 2 * 2 + 10, [q["sql"][:80] for q in queries.captured_queries]
