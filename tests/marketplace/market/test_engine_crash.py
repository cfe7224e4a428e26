"""The crash-consistency rule of the stored engine (docs/engine.md): a tick killed between any two of
its statements leaves the state of the tick before it, and the market restarted from the database
resumes with no task lost or doubled."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection, transaction

import marketplace.market.services.market
from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.ledger.models import Account, LedgerEntry
from marketplace.market import adapters, structure
from marketplace.market.models.allocation import AllocationSnapshot
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import EngineJob, Market
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance


class Killed(Exception):
    """The clock process died here."""


@contextmanager
def killed_at(k: int | None, texts: list[str] | None = None) -> Iterator[list[int]]:
    """Count the statements run inside the block (their text into ``texts``); the k-th one is never
    run: the process dies instead."""
    count = [0]

    def wrapper(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        count[0] += 1
        if texts is not None:
            texts.append(sql)
        if count[0] == k:
            raise Killed(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield count


def restart() -> None:
    """What a new clock process starts with: nothing in memory."""
    with marketplace.market.services.market._CACHE_LOCK:
        marketplace.market.services.market._CACHE.clear()
    with adapters._PLANS_LOCK:
        adapters._PLANS.clear()
    adapters.forget_bids()
    structure.forget()


def outcome(market: Market) -> tuple[Any, ...]:
    """What the database says the market is: clock, task counts, jobs, money, the stored engine."""
    m = Market.objects.get(pk=market.pk)
    work = list(JobWork.objects.filter(job__market=market).order_by("job_id", "resource_type_id")
                .values_list("job_id", "resource_type_id", "tasks", "pending", "running", "done"))
    jobs = list(Job.objects.filter(market=market).order_by("id")
                .values_list("id", "status", "charged", "sim_start_time", "sim_finish_time", "achieved_utility"))
    money = list(Account.objects.filter(tenant__market=market).order_by("tenant_id").values_list("tenant_id", "available", "held"))
    entries = sorted(LedgerEntry.objects.filter(job__market=market).values_list("job_id", "kind", "amount"))
    engine = marketplace.market.services.market.engine_stored(market=m, context=marketplace.market.services.market.engine_context(m))
    assert engine is not None
    state = engine.to_state()
    state.pop("plan_id")  # a Plan's id: sequences do not roll back
    records = sorted(EngineJob.objects.filter(market=market).values_list("job_id", flat=True))
    return (m.sim_time, m.state_version, m.clearings, AllocationSnapshot.objects.filter(market=market).count(),
            work, jobs, money, entries, state, records)


def no_task_lost_or_doubled(stored: tuple[Any, ...]) -> None:
    work = stored[4]
    assert work and all(pending + running + done == tasks for _, _, tasks, pending, running, done in work)
    engine_jobs = [job for job, *_ in stored[8]["books"]]
    active = [job for job, status, *_ in stored[5] if status in Job.ACTIVE]
    assert sorted(engine_jobs) == active  # every active job is in the stored engine once, and no other
    assert stored[9] == active  # one record a job


@pytest.fixture
def busy(market, alice, bob, django_capture_on_commit_callbacks) -> Market:  # type: ignore[no-untyped-def]
    with django_capture_on_commit_callbacks(execute=True):
        for k in range(8):
            bid_submit(tenant=alice if k % 2 else bob, budget=str(40 + 5 * k),
                       work=[WorkItem("map", 2 + k % 5, 10.0 + k), WorkItem("reduce", 1 + k % 2, 20.0)])
    market_clear(market_id=market.pk)
    with django_capture_on_commit_callbacks(execute=True):
        cluster_advance(market_id=market.pk, seconds=12.0)  # the stored engine; this process keeps its copy
    return market


def _run(market: Market, capture: Any, kill_at: int | None, *, restart_after: bool = True,
         texts: list[str] | None = None) -> tuple[tuple[Any, ...], int]:
    """In a savepoint rolled back after: a tick from this process's copy, then the next tick, killed at
    its statement ``kill_at`` and run again (after a restart); the outcome and the statements counted
    (their text into ``texts``)."""
    sid = transaction.savepoint()
    try:
        with capture(execute=True):
            cluster_advance(market_id=market.pk, seconds=15.0)  # stores a delta over the copy's version
        with killed_at(kill_at, texts) as count, capture(execute=True):
            try:
                cluster_advance(market_id=market.pk, seconds=25.0)
            except Killed:
                assert kill_at is not None
            else:
                assert kill_at is None or kill_at > count[0]
        if kill_at is not None:
            if restart_after:
                restart()
            with capture(execute=True):
                cluster_advance(market_id=market.pk, seconds=25.0)
        return outcome(market), count[0]
    finally:
        transaction.savepoint_rollback(sid)
        restart()


def test_a_tick_killed_at_any_statement_resumes_with_no_task_lost_or_doubled(busy, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    capture = django_capture_on_commit_callbacks
    texts: list[str] = []
    reference, statements = _run(busy, capture, None, texts=texts)
    no_task_lost_or_doubled(reference)
    assert reference[0] == pytest.approx(12.0 + 15.0 + 25.0)
    departed = sum(1 for job in reference[5] if job[1] == Job.Status.FINISHED)
    assert departed > 0 and any(running for *_, running, _ in reference[4])  # the tick moved tasks and settled jobs
    written = " ".join(texts)
    for table in ("marketplace_allocationsnapshot", "marketplace_account", "marketplace_ledgerentry", "marketplace_jobwork",
                  "marketplace_enginejob", "marketplace_enginecolumns"):  # the statements killed below write all of these
        assert f'"{table}"' in written, table
    assert statements == len(texts) > 3
    for k in range(1, statements + 1):
        after, _ = _run(busy, capture, k, restart_after=k % 2 == 1)  # odd: a new process; even: the same one goes on
        assert after == reference, f"killed at statement {k} of {statements}"


def test_a_tick_after_a_killed_one_writes_only_what_changed(busy, django_capture_on_commit_callbacks) -> None:  # type: ignore[no-untyped-def]
    capture = django_capture_on_commit_callbacks
    written: list[int] = []
    original = marketplace.market.services.market.delta.split

    def split(engine: Any, stored: Any) -> Any:
        parts = original(engine, stored)
        written.append(-1 if stored is None else len(parts.records))
        return parts

    marketplace.market.services.market.delta.split = split
    try:
        with capture(execute=True):
            cluster_advance(market_id=busy.pk, seconds=15.0)
        with killed_at(3), capture(execute=True), pytest.raises(Killed):
            cluster_advance(market_id=busy.pk, seconds=25.0)
        with capture(execute=True):
            cluster_advance(market_id=busy.pk, seconds=25.0)
            cluster_advance(market_id=busy.pk, seconds=25.0)
    finally:
        marketplace.market.services.market.delta.split = original
    # the copy's delta; the killed tick wrote nothing; its copy was dropped, so the next tick read
    # the stored version and wrote a delta over it (never all the records again), as did the next
    assert len(written) == 3 and min(written) >= 0
    active = sorted(Job.objects.filter(market=busy, status__in=Job.ACTIVE).values_list("id", flat=True))
    assert sorted(EngineJob.objects.filter(market=busy).values_list("job_id", flat=True)) == active
