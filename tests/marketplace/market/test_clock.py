"""The live cluster clock: dispatch, departures (charges), samples, cancellations."""

from __future__ import annotations

import re
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit, job_cancel
from marketplace.ledger.models import LedgerEntry
from marketplace.ledger.services import ledger_reconcile
from marketplace.market.models.allocation import AllocationSnapshot, FairnessSample, MarketSample
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance
from marketplace.market.services.market import clearings_deferred

TRACE = Path(__file__).resolve().parents[3] / "data" / "traces" / "FB-2009_samples_24_times_1hr_0.tsv"


def test_job_runs_to_completion_and_is_charged(market, alice, django_capture_on_commit_callbacks):
    # given a job of 4 map tasks of 10 s then 1 reduce task of 20 s, on 10 map slots
    with django_capture_on_commit_callbacks(execute=True):
        job = bid_submit(tenant=alice, budget="80", work=[WorkItem("map", 4, 10.0), WorkItem("reduce", 1, 20.0)])
    # when the clock runs 5 s: the maps run in parallel, the reduce waits (staged)
    cluster_advance(market_id=market.pk, until=5.0)
    job.refresh_from_db()
    work = {w.resource_type.name: w for w in JobWork.objects.filter(job=job).select_related("resource_type")}
    assert job.status == Job.Status.RUNNING
    assert (work["map"].running, work["reduce"].pending, work["reduce"].running) == (4, 1, 0)
    # when it runs on past the reduce
    version = Market.objects.get(pk=market.pk).state_version
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        tick = cluster_advance(market_id=market.pk, until=100.0)
    # then it finished at 10 + 20 s, was charged its budget, and the tick itself re-cleared
    # the market at the departure (no clearing task is enqueued for it)
    job.refresh_from_db()
    assert tick.finished_jobs == 1 and not any("enqueue_clearing" in cb.__qualname__ for cb in callbacks)
    assert job.status == Job.Status.FINISHED
    assert job.sim_finish_time == pytest.approx(30.0) and job.response_time == pytest.approx(30.0)
    assert job.charged == Decimal("80")
    alice.account.refresh_from_db()
    assert (alice.account.available, alice.account.held) == (Decimal("920"), Decimal("0"))
    assert ledger_reconcile(account=alice.account) == []
    market.refresh_from_db()
    assert market.state_version == version + 1 == market.cleared_version
    assert AllocationSnapshot.objects.order_by("-id").first().n_jobs == 0


def test_fairness_and_market_samples_are_stored(market, alice, bob):
    bid_submit(tenant=alice, budget="10", work=[WorkItem("map", 30, 50.0)])
    bid_submit(tenant=bob, budget="10", work=[WorkItem("map", 30, 50.0)])
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, until=600.0)
    samples = FairnessSample.objects.filter(market=market, resource_type__name="map")
    assert samples.exists()
    last_t = samples.order_by("-sim_time").first().sim_time
    last = {s.queue.path: s for s in samples.filter(sim_time=last_t).select_related("queue")}
    # both demanding leaves got work and the map slots were fully used while both had demand
    assert last["root.orga.analytics"].usage > 0 and last["root.orgb.research"].usage > 0
    util = MarketSample.objects.filter(market=market, resource_type__name="map").order_by("sim_time").first()
    assert util.utilisation == pytest.approx(1.0)


def test_cancel_while_running_frees_the_slots(market, alice):
    job = bid_submit(tenant=alice, budget="10", work=[WorkItem("map", 20, 100.0)])
    cluster_advance(market_id=market.pk, until=10.0)
    assert JobWork.objects.get(job=job).running == 10
    job_cancel(job=job)
    cluster_advance(market_id=market.pk, until=20.0)
    market.refresh_from_db()
    assert job.pk not in _active_ids(market)
    assert sum(w.running for w in JobWork.objects.filter(job__market=market)) == 0
    assert LedgerEntry.objects.filter(job=job, kind="release").exists()


def _active_ids(market: Market) -> list[int]:
    from marketplace.market.services.market import engine_context, engine_stored

    engine = engine_stored(market=market, context=engine_context(market))
    assert engine is not None
    return engine.cluster.active_jobs()


def test_clock_never_runs_backwards(market):
    cluster_advance(market_id=market.pk, until=50.0)
    with pytest.raises(ValueError):
        cluster_advance(market_id=market.pk, until=10.0)


@pytest.mark.django_db(transaction=True)  # real commits, so on_commit triggers clearings as in production
def test_replay_drain_summary(market, alice, bob):
    out = StringIO()
    call_command("replay_trace", str(TRACE), "--hours", "0.25", "--tenants", "3", "--drain", stdout=out)
    line = out.getvalue().strip().splitlines()[-1]
    m = re.fullmatch(r"replayed=(\d+) finished=(\d+) clearings=(\d+) mean_response_s=([\d.]+)", line)
    assert m, line
    replayed, finished, clearings = (int(m.group(i)) for i in (1, 2, 3))
    assert replayed == finished > 0
    assert clearings >= replayed  # at least one clearing per arrival (departures add more)
    assert Job.objects.filter(status__in=Job.ACTIVE).count() == 0
    for tenant in market.tenants.all():
        assert ledger_reconcile(account=tenant.account) == []


def test_replay_once_does_not_replay_onto_a_market_that_holds_a_replay(market, alice):
    # given a market a first replay has run on
    call_command("replay_trace", str(TRACE), "--hours", "0.1", "--max-jobs", "3", "--drain", "--once", stdout=StringIO())
    first = Job.objects.count()
    assert first == 3
    # when `make run` replays again
    out = StringIO()
    call_command("replay_trace", str(TRACE), "--hours", "0.1", "--max-jobs", "3", "--drain", "--once", stdout=out)
    # then no job is added, and the output says why and how to start over
    assert Job.objects.count() == first
    assert "holds a replay already (3 jobs)" in out.getvalue() and "make reset" in out.getvalue()


def test_ctrl_c_stops_the_replay_without_a_traceback(market, alice, monkeypatch):
    from marketplace.management.commands import replay_trace

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(replay_trace, "_drain", interrupted)
    out = StringIO()
    with pytest.raises(SystemExit) as stop:
        call_command("replay_trace", str(TRACE), "--hours", "0.1", "--drain", stdout=out)
    assert stop.value.code == 130 and "Replay stopped (Ctrl-C)." in out.getvalue()


def test_a_tick_clears_changes_no_clearing_has_seen_before_handing_out_slots(market, alice, django_capture_on_commit_callbacks):
    # given a bid placed while clearings are deferred (as the drain does), so no clearing task runs
    with clearings_deferred(), django_capture_on_commit_callbacks(execute=True) as callbacks:
        job = bid_submit(tenant=alice, budget="40", work=[WorkItem("map", 2, 10.0)])
    assert not any("enqueue_clearing" in cb.__qualname__ for cb in callbacks)
    market.refresh_from_db()
    assert market.cleared_version < market.state_version
    snapshots = AllocationSnapshot.objects.filter(market=market).count()
    # when the clock ticks
    cluster_advance(market_id=market.pk, until=5.0)
    # then the tick cleared the bid first (at the bid's time, with the job in the Plan) and ran its tasks
    market.refresh_from_db()
    assert market.cleared_version == market.state_version
    cleared = AllocationSnapshot.objects.filter(market=market).order_by("id")[snapshots:]
    assert [(c.sim_time, c.n_jobs) for c in cleared] == [(0.0, 1)]
    assert JobWork.objects.get(job=job).running == 2
    # and a clearing task arriving late for that version does nothing
    assert market_clear(market_id=market.pk).status == "current"
    assert AllocationSnapshot.objects.filter(market=market).count() == snapshots + 1


def test_a_ticks_writes_do_not_repeat_per_departure(market, alice, bob, django_capture_on_commit_callbacks):
    # given six jobs that finish at six different instants within one tick
    with django_capture_on_commit_callbacks(execute=True):
        jobs = [bid_submit(tenant=(alice, bob)[k % 2], budget="20", work=[WorkItem("map", 1, 5.0 + 7.0 * k)]) for k in range(6)]
    cluster_advance(market_id=market.pk, until=1.0)
    # when one tick runs past all of them
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        tick = cluster_advance(market_id=market.pk, until=200.0)
    # then each departure was cleared inside the tick (one Plan each), but every other table
    # was written once for the whole tick, not once per departure
    assert tick.finished_jobs == 6
    assert AllocationSnapshot.objects.filter(market=market).count() >= 6
    writes: dict[str, int] = {}
    for q in queries.captured_queries:  # every write a statement makes (several in one WITH ... on PostgreSQL)
        for table in re.findall(r'(?:UPDATE|INSERT INTO)\s+"?(marketplace_\w+)"?', q["sql"]):
            if table in ("marketplace_jobwork", "marketplace_fairnesssample", "marketplace_marketsample", "marketplace_sharesample"):
                writes[table] = writes.get(table, 0) + 1
    assert writes == {"marketplace_jobwork": 1, "marketplace_fairnesssample": 1, "marketplace_marketsample": 1,
                      "marketplace_sharesample": 1}, writes
    held_reads = [q for q in queries.captured_queries if "SUM(" in q["sql"] and "marketplace_ledgerentry" in q["sql"]]
    assert len(held_reads) == 1  # the departures' holds read together
    # and the money and the jobs' rows are as six separate ticks would leave them
    for job in jobs:
        job.refresh_from_db()
        assert job.status == Job.Status.FINISHED and job.charged > 0 and job.sim_start_time is not None
    for tenant in (alice, bob):
        assert ledger_reconcile(account=tenant.account) == []
        tenant.account.refresh_from_db()
        assert tenant.account.held == 0
