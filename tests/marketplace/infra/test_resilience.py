"""Broker and cache outages, lost triggers and dead clearers (fast, in-process versions;
tests/integration/test_faults.py does the same with a real worker and a real Redis)."""

from __future__ import annotations

import json
from unittest import mock

import pytest
import redis
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from kombu.exceptions import OperationalError

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.celery import app
from marketplace.infra import resilience
from marketplace.ledger.models import LedgerEntry
from marketplace.market.models.allocation import AllocationSnapshot
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.services import clearing
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.sweeper import market_sweep, sweeper_forget

WORK = [WorkItem("map", 2, 5.0)]
BID = {"budget": "10", "work": [{"resource_type": "map", "tasks": 2, "task_duration": 5.0}]}


@pytest.fixture(autouse=True)
def _fresh_breakers_and_sweeper():  # type: ignore[no-untyped-def]
    resilience.BROKER.reset()
    resilience.CACHE.reset()
    sweeper_forget()
    yield
    resilience.BROKER.reset()
    resilience.CACHE.reset()


@pytest.fixture
def broker_down():  # type: ignore[no-untyped-def]
    """Celery not eager, and every publish fails as kombu does when Redis refuses connections."""
    task = app.tasks["marketplace.tasks.clear_market_task"]
    app.conf.task_always_eager = False
    with mock.patch.object(task, "delay", side_effect=OperationalError("Error 111 connecting to 127.0.0.1:6379")) as delay:
        yield delay
    app.conf.task_always_eager = True


def test_a_bid_commits_and_answers_201_while_the_broker_is_down(alice_api, alice, broker_down, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        resp = alice_api.post("/api/jobs/", json.dumps(BID), content_type="application/json")
    assert resp.status_code == 201, resp.content
    assert broker_down.call_count == 1  # it was tried, failed, and the failure was swallowed
    assert Job.objects.filter(pk=resp.json()["id"]).exists()
    assert LedgerEntry.objects.filter(job_id=resp.json()["id"], kind="hold").count() == 1


def test_after_a_broker_failure_publishing_pauses(alice, broker_down, django_capture_on_commit_callbacks):
    for _ in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            bid_submit(tenant=alice, budget="5", work=WORK)
    assert broker_down.call_count == 1  # one timeout per RESILIENCE_RETRY_S, not one per request


def test_dashboard_data_answers_while_the_cache_is_down(client, alice, market):
    client.force_login(alice.user)
    with mock.patch.object(resilience.cache, "get", side_effect=redis.exceptions.ConnectionError("refused")), \
            mock.patch.object(resilience.cache, "set", side_effect=redis.exceptions.ConnectionError("refused")):
        resp = client.get("/dashboard/data.json")
        page = client.get("/")
    assert resp.status_code == 200 and "figures" in resp.json()
    assert page.status_code == 200


def test_sweeper_clears_a_market_whose_trigger_was_lost_after_one_period(market, alice):
    # given a committed bid whose clearing trigger never ran (on_commit is not run here)
    bid_submit(tenant=alice, budget="10", work=WORK)
    # when the sweeper first sees it behind, it leaves the worker one period
    first = market_sweep()
    assert first.behind == {market.pk: 1} and first.outcomes == {}
    # then at the next sweep it clears it itself
    second = market_sweep()
    assert second.outcomes == {market.pk: "cleared"}
    market.refresh_from_db()
    assert market.cleared_version == market.state_version == 1
    assert market_sweep().behind == {}


def test_sweeper_takes_over_a_dead_clearers_lease_only_at_expiry(market, alice, settings):
    bid_submit(tenant=alice, budget="10", work=WORK)
    # given a clearer that took the lease and died (it never releases it)
    settings.MARKET_LEASE_S = 60
    assert clearing._acquire_lease(market.pk) is not None
    # then while the lease runs, the sweeper's clearing is "busy"
    assert market_sweep(grace=False).outcomes == {market.pk: "busy"}
    # and once it has expired, the sweeper takes it over and clears
    Market.objects.filter(pk=market.pk).update(clearing_lease_until="2000-01-01T00:00:00Z")
    assert market_sweep(grace=False).outcomes == {market.pk: "cleared"}
    assert Market.objects.get(pk=market.pk).clearing_lease_until is None


def test_a_cleared_version_is_skipped_cheaply(market, alice):
    bid_submit(tenant=alice, budget="10", work=WORK)
    assert market_clear(market_id=market.pk).status == "cleared"
    with CaptureQueriesContext(connection) as queries:
        again = [market_clear(market_id=market.pk).status for _ in range(5)]
    assert again == ["current"] * 5
    assert len(queries) == 10  # one UPDATE and one SELECT each, no solve
    assert AllocationSnapshot.objects.count() == 1


def test_two_clearers_of_one_version_store_it_once(market, alice, settings):
    # given a clearer whose lease expires during its solve (a slow or paused worker)
    bid_submit(tenant=alice, budget="10", work=WORK)
    settings.MARKET_LEASE_S = -1
    real = clearing.MECHANISMS.build("abacus")
    inner: list[str] = []
    calls = {"n": 0}

    class TakenOverDuringSolve:
        def clear(self, snapshot):  # type: ignore[no-untyped-def]
            calls["n"] += 1
            if calls["n"] == 1:
                inner.append(market_clear(market_id=market.pk).status)  # the sweeper takes over and stores
            return real.clear(snapshot)

    with mock.patch.object(clearing.MECHANISMS, "build", return_value=TakenOverDuringSolve()):
        outer = market_clear(market_id=market.pk)
    # then the version was stored once: by the clearer that took over; the first one skips
    assert inner == ["cleared"] and outer.status == "current"
    assert AllocationSnapshot.objects.filter(market=market).count() == 1


def test_run_clock_sweeps_without_the_broker(market, alice):
    bid_submit(tenant=alice, budget="10", work=WORK)
    call_command("run_clock", "--no-tick", "--ticks", "3", "--tick", "0.01", "--sweep", "0.001")
    market.refresh_from_db()
    assert market.cleared_version == market.state_version


def test_under_a_steady_stream_of_bids_the_last_attempt_is_stored(market, alice):
    # given bids that arrive during every solve (the state always moves before the store)
    real = clearing.MECHANISMS.build("abacus")
    bid_submit(tenant=alice, budget="10", work=WORK)

    class AlwaysOvertaken:
        def clear(self, snapshot):  # type: ignore[no-untyped-def]
            bid_submit(tenant=alice, budget="1", work=WORK)
            return real.clear(snapshot)

    with mock.patch.object(clearing.MECHANISMS, "build", return_value=AlwaysOvertaken()):
        result = market_clear(market_id=market.pk)
    # then the last solve's result is stored anyway (one solve old), and the market stays behind
    market.refresh_from_db()
    assert result.status == "stale" and result.snapshot_id is not None
    assert AllocationSnapshot.objects.filter(market=market).count() == 1
    assert market.cleared_version == result.state_version < market.state_version
    # and the next clearing catches up
    assert market_clear(market_id=market.pk).status == "cleared"


@pytest.fixture
def broker_up():  # type: ignore[no-untyped-def]
    """Celery not eager; publishes are recorded, not sent (the cache is the tests' own)."""
    from django.core.cache import cache

    task = app.tasks["marketplace.tasks.clear_market_task"]
    app.conf.task_always_eager = False
    cache.clear()
    with mock.patch.object(task, "delay") as delay:
        yield delay
    app.conf.task_always_eager = True


def test_changes_while_a_clearing_waits_publish_no_second_one(alice, market, broker_up, django_capture_on_commit_callbacks):
    """One waiting clearing covers every change committed before it starts; once it has started
    (it drops the mark before reading the state), the next change publishes again."""
    from marketplace.market.services.market import clearing_started

    for _ in range(5):
        with django_capture_on_commit_callbacks(execute=True):
            bid_submit(tenant=alice, budget="1", work=WORK)
    assert broker_up.call_count == 1
    clearing_started(market_id=market.pk)
    with django_capture_on_commit_callbacks(execute=True):
        bid_submit(tenant=alice, budget="1", work=WORK)
    assert broker_up.call_count == 2


def test_the_clearing_task_drops_the_mark_before_it_reads_the_market(alice, market, broker_up, django_capture_on_commit_callbacks):
    """Run the task as a worker would: a change committed after it started publishes a new one."""
    from marketplace.market.tasks import clear_market_task

    with django_capture_on_commit_callbacks(execute=True):
        bid_submit(tenant=alice, budget="1", work=WORK)
    seen = []
    real = clearing.market_clear

    def clear_and_watch(*, market_id: int):  # type: ignore[no-untyped-def]
        with django_capture_on_commit_callbacks(execute=True):  # a bid lands while the task runs
            bid_submit(tenant=alice, budget="1", work=WORK)
        seen.append(broker_up.call_count)
        return real(market_id=market_id)

    with mock.patch("marketplace.market.tasks.market_clear", clear_and_watch):
        assert clear_market_task.run(market.pk) in ("cleared", "stale")
    assert seen == [2]  # the bid during the run published its own clearing


def test_with_the_cache_down_every_change_publishes(alice, market, broker_up, django_capture_on_commit_callbacks):
    with mock.patch("django.core.cache.cache.add", side_effect=redis.ConnectionError("down")):
        for _ in range(3):
            with django_capture_on_commit_callbacks(execute=True):
                bid_submit(tenant=alice, budget="1", work=WORK)
    assert broker_up.call_count == 3


def test_a_worker_starts_a_markets_next_clearing_no_sooner_than_the_min_interval(alice, market, broker_up, settings,
                                                                                 django_capture_on_commit_callbacks):
    """clearing_pace: back-to-back clearing tasks of one market are spaced by MARKET_CLEARING_MIN_INTERVAL_S,
    and the bids that arrive during the wait publish nothing (the waiting task covers them)."""
    from marketplace.market.services.market import _LAST_CLEARING, clearing_pace
    from marketplace.market.tasks import clear_market_task

    settings.MARKET_CLEARING_MIN_INTERVAL_S = 0.2
    _LAST_CLEARING.clear()
    waits: list[float] = []
    calls_during_wait: list[int] = []

    def fake_sleep(seconds: float) -> None:  # a bid lands while the task waits
        waits.append(seconds)
        with django_capture_on_commit_callbacks(execute=True):
            bid_submit(tenant=alice, budget="1", work=WORK)
        calls_during_wait.append(broker_up.call_count)

    with django_capture_on_commit_callbacks(execute=True):
        bid_submit(tenant=alice, budget="1", work=WORK)
    assert broker_up.call_count == 1
    with mock.patch("marketplace.market.services.market.time.sleep", fake_sleep):
        assert clear_market_task.run(market.pk) == "cleared"  # the first clearing waits for nothing
        assert waits == []
        with django_capture_on_commit_callbacks(execute=True):
            bid_submit(tenant=alice, budget="1", work=WORK)
        assert broker_up.call_count == 2
        assert clear_market_task.run(market.pk) == "cleared"  # right after the first: waits out the interval
    assert len(waits) == 1 and 0.1 < waits[0] <= 0.2
    assert calls_during_wait == [2]  # the bid during the wait published no clearing of its own...
    market.refresh_from_db()
    assert market.cleared_version == market.state_version  # ...and the waiting clearing covered it
    # eager Celery runs the task inside the request: it never waits there
    app.conf.task_always_eager = True
    assert clearing_pace(market_id=market.pk, sleep=fake_sleep) == 0.0
