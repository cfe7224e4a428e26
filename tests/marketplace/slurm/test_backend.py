"""The Slurm backend on a fake Slurm (``marketplace.slurm.fake``): bid -> Slurm array -> departure ->
charge; cancel -> scancel; failure -> retry; an unreachable controller; a crashed dispatcher; a
Slurm that lost its jobs; cores held by jobs that did not come from the market."""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit, job_cancel
from marketplace.ledger.services import ledger_reconcile
from marketplace.market import hooks
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance
from marketplace.slurm.fake import FakeSlurmClient
from marketplace.slurm.models import SlurmStatus, SlurmTask
from marketplace.slurm.services import backend, dispatch, poll, reservations


class Clock:
    """The fake Slurm's wall clock, moved by the test."""

    def __init__(self) -> None:
        self.t = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.t


@pytest.fixture
def slurm(settings, market: Market) -> Iterator[FakeSlurmClient]:
    """The market on the Slurm backend, with a fake Slurm whose partitions match its resource types."""
    settings.CLUSTER_BACKEND, settings.CLUSTER_EXECUTOR = "slurm", "external"
    settings.MARKET_PARTS = [*settings.MARKET_PARTS, "marketplace.slurm.hooks.SlurmPart"]
    hooks.reload_parts()
    caps = {rt.name: rt.capacity for rt in market.resource_types.all()}
    fake = FakeSlurmClient(caps=caps, now=Clock())
    backend.use_client(fake)
    settings_capacity = poll.CAPACITY_POLL_S
    poll.CAPACITY_POLL_S = 0.0  # read the partitions at every poll: tests change them between ticks
    yield fake
    poll.CAPACITY_POLL_S = settings_capacity
    backend.use_client(None)
    settings.MARKET_PARTS = settings.MARKET_PARTS[:-1]
    hooks.reload_parts()


def _tick(market: Market, seconds: float, capture) -> None:  # type: ignore[no-untyped-def]
    """One clock tick, its commit callbacks (the dispatch) run as after a real commit."""
    with capture(execute=True):
        cluster_advance(market_id=market.pk, seconds=seconds)


def _bid(tenant: Tenant, tasks: int = 3, duration: float = 60.0) -> Job:
    return bid_submit(tenant=tenant, budget="100", work=[WorkItem("map", tasks, duration, 1.0)])


def test_a_bid_runs_as_a_slurm_array_departs_when_slurm_says_and_is_charged(market, alice, slurm,
                                                                             django_capture_on_commit_callbacks) -> None:
    # given a bid, cleared
    job = _bid(alice)
    market_clear(market_id=market.pk)
    # when the clock ticks: the Plan starts its tasks, and they become one Slurm array on the map partition
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    tasks = list(SlurmTask.objects.filter(job=job))
    assert len(tasks) == 3 and {t.state for t in tasks} == {SlurmTask.State.SUBMITTED} and {t.partition for t in tasks} == {"map"}
    assert slurm.submissions == [(tasks[0].key, 3)] and tasks[0].key.startswith(backend.key_prefix(market.pk))
    assert {t.command for t in tasks} == {"sleep"} and tasks[0].wall_seconds == pytest.approx(60.0 / market.clock_speed)
    # and ticks while Slurm runs them change nothing: the model does not end them by their duration
    slurm.schedule()
    _tick(market, 600.0, django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING and job.charged == 0
    assert set(SlurmTask.objects.filter(job=job).values_list("state", flat=True)) == {SlurmTask.State.RUNNING}
    # when Slurm completes them, the next tick sees a departure and charges the job by its Plan's rule
    slurm.finish([j.job_id for j in slurm.by_comment(tasks[0].key)])
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert job.status == Job.Status.FINISHED and job.charged > 0
    assert set(SlurmTask.objects.filter(job=job).values_list("state", "applied")) == {(SlurmTask.State.COMPLETED, True)}
    # once: more ticks do not depart it again or charge more
    charged = job.charged
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert job.charged == charged
    alice.account.refresh_from_db()
    assert ledger_reconcile(account=alice.account) == []


def test_a_cancel_scancels_its_slurm_jobs(market, alice, slurm, django_capture_on_commit_callbacks) -> None:
    job = _bid(alice)
    market_clear(market_id=market.pk)
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    slurm.schedule()
    key = SlurmTask.objects.filter(job=job).first().key
    job_cancel(job=job)
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    assert {j.state for j in slurm.by_comment(key)} == {"CANCELLED"}
    assert set(SlurmTask.objects.filter(job=job).values_list("state", flat=True)) == {SlurmTask.State.CANCELLED}


def test_a_failed_task_runs_again_and_the_tenant_pays_for_no_failed_work(market, alice, slurm,
                                                                         django_capture_on_commit_callbacks) -> None:
    job = _bid(alice, tasks=2)
    market_clear(market_id=market.pk)
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    slurm.schedule()
    first = SlurmTask.objects.filter(job=job).first().key
    elements = sorted(slurm.by_comment(first), key=lambda j: j.array_task_id or 0)
    slurm.finish([elements[0].job_id], state="FAILED", exit_code=256, reason="NonZeroExitCode")
    slurm.finish([elements[1].job_id])
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    failed = SlurmTask.objects.get(job=job, key=first, index=0)
    assert failed.state == SlurmTask.State.FAILED and failed.exit_code == 256 and failed.reason == "NonZeroExitCode"
    retry = SlurmTask.objects.exclude(key=first).get(job=job)
    assert retry.attempt == 2 and retry.state == SlurmTask.State.SUBMITTED  # the failed task, submitted again
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING
    slurm.schedule()
    slurm.finish([j.job_id for j in slurm.by_comment(retry.key)])
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert job.status == Job.Status.FINISHED and job.charged == job.budget  # pay at completion: the whole work, once


def test_retries_are_bounded_then_the_job_is_cancelled(market, alice, slurm, django_capture_on_commit_callbacks) -> None:
    job = _bid(alice, tasks=1)
    market_clear(market_id=market.pk)
    limit = backend.arguments(market).max_retries
    for _ in range(limit + 1):
        _tick(market, 1.0, django_capture_on_commit_callbacks)
        slurm.schedule()
        live = SlurmTask.objects.get(job=job, state__in=SlurmTask.LIVE)
        slurm.finish([j.job_id for j in slurm.by_comment(live.key)], state="NODE_FAIL")
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    job.refresh_from_db()
    assert job.status == Job.Status.CANCELLED and job.charged == 0  # nothing completed: nothing paid
    assert SlurmTask.objects.filter(job=job, state=SlurmTask.State.FAILED).count() == limit + 1


def test_an_unreachable_controller_pauses_dispatch_and_loses_nothing(market, alice, slurm,
                                                                     django_capture_on_commit_callbacks) -> None:
    slurm.down = True
    job = _bid(alice)  # a bid is still accepted
    market_clear(market_id=market.pk)
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    status = SlurmStatus.objects.get(market=market)
    assert not status.reachable and status.unreachable_since is not None and "Unable to contact" in status.error
    assert set(SlurmTask.objects.filter(job=job).values_list("state", flat=True)) == {SlurmTask.State.NEW}  # decided, kept
    assert slurm.submissions == []
    slurm.down = False
    _tick(market, 1.0, django_capture_on_commit_callbacks)  # the poll reconnects; the before-tick dispatch submits
    assert SlurmStatus.objects.get(market=market).reachable
    assert set(SlurmTask.objects.filter(job=job).values_list("state", flat=True)) == {SlurmTask.State.SUBMITTED}
    assert len(slurm.submissions) == 1


def test_a_dispatcher_killed_after_sbatch_does_not_submit_twice(market, alice, slurm, django_capture_on_commit_callbacks) -> None:
    job = _bid(alice)
    market_clear(market_id=market.pk)
    with django_capture_on_commit_callbacks(execute=False):  # the tick commits, its dispatcher dies before running
        cluster_advance(market_id=market.pk, seconds=1.0)
    rows = list(SlurmTask.objects.filter(job=job))
    # a dispatcher claimed the batch and got as far as sbatch, then died before recording it
    long_ago = timezone.now() - timedelta(seconds=dispatch.CLAIM_STALE_S + 1)
    SlurmTask.objects.filter(job=job).update(state=SlurmTask.State.SUBMITTING, submitted_at=long_ago)
    slurm.submit_array(name="x", comment=rows[0].key, partition="map", count=len(rows), command="sleep 1", time_limit_s=60)
    # another dispatcher leaves a fresh claim alone ...
    SlurmTask.objects.filter(job=job).update(submitted_at=timezone.now())
    assert dispatch.slurm_dispatch(market_id=market.pk) == 0 and len(slurm.submissions) == 1
    # ... and adopts a stale one by its key: found in Slurm, not submitted again
    SlurmTask.objects.filter(job=job).update(submitted_at=long_ago)
    assert dispatch.slurm_dispatch(market_id=market.pk) == 0
    assert len(slurm.submissions) == 1
    assert set(SlurmTask.objects.filter(job=job).values_list("state", flat=True)) == {SlurmTask.State.SUBMITTED}
    # and a stale claim whose sbatch never ran is submitted (nothing forgotten)
    other = _bid(alice, tasks=1)
    market_clear(market_id=market.pk)
    with django_capture_on_commit_callbacks(execute=False):
        cluster_advance(market_id=market.pk, seconds=1.0)
    SlurmTask.objects.filter(job=other).update(state=SlurmTask.State.SUBMITTING, submitted_at=long_ago)
    assert dispatch.slurm_dispatch(market_id=market.pk) == 1 and len(slurm.submissions) == 2


def test_two_dispatchers_never_submit_a_batch_twice(market, alice, slurm, django_capture_on_commit_callbacks) -> None:
    job = _bid(alice)
    market_clear(market_id=market.pk)
    with django_capture_on_commit_callbacks(execute=False):
        cluster_advance(market_id=market.pk, seconds=1.0)
    # the tick's own dispatch and a sweeper's run over the same new rows
    assert dispatch.slurm_dispatch(market_id=market.pk) == 3
    assert dispatch.slurm_dispatch(market_id=market.pk) == 0
    assert len(slurm.submissions) == 1 and SlurmTask.objects.filter(job=job, state=SlurmTask.State.SUBMITTED).count() == 3


def test_tasks_slurm_lost_run_again(market, alice, slurm, django_capture_on_commit_callbacks) -> None:
    job = _bid(alice, tasks=2)
    market_clear(market_id=market.pk)
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    slurm.schedule()
    key = SlurmTask.objects.filter(job=job).first().key
    slurm.lose([j.job_id for j in slurm.by_comment(key)])  # slurmctld restarted without its state
    earlier = timezone.now() - timedelta(seconds=backend.LOST_AFTER_S + 1)  # and that was a while ago
    SlurmTask.objects.filter(key=key).update(submitted_at=earlier)
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    assert set(SlurmTask.objects.filter(job=job, key=key).values_list("state", flat=True)) == {SlurmTask.State.LOST}
    again = SlurmTask.objects.filter(job=job).exclude(key=key)
    assert again.count() == 2 and set(again.values_list("attempt", flat=True)) == {2}


def test_cores_held_by_jobs_not_from_the_market_are_taken_capacity(market, alice, slurm,
                                                                   django_capture_on_commit_callbacks) -> None:
    cap = market.resource_types.get(name="map").capacity
    slurm.foreign("map", cap - 1)  # someone's sbatch holds all but one map core
    job = _bid(alice, tasks=3)
    market_clear(market_id=market.pk)
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    assert SlurmTask.objects.filter(job=job).count() == 1  # never more tasks than Slurm has free cores


def test_a_drained_partition_is_a_capacity_change_quotes_see(market, alice, slurm, django_capture_on_commit_callbacks) -> None:
    slurm.caps["map"] = 7  # the partition's usable cores as Slurm reports them
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    assert market.resource_types.get(name="map").capacity == 7
    assert market.config_changes.filter(field="capacity[map]", new_value="7").exists()


def test_slurm_check_lists_each_difference_and_fix_repairs_what_it_can(market, alice, slurm,
                                                                        django_capture_on_commit_callbacks) -> None:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    job = _bid(alice)
    market_clear(market_id=market.pk)
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    slurm.schedule()
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    out = io.StringIO()
    call_command("slurm_check", stdout=out)  # in step: exit 0
    assert "no difference" in out.getvalue()
    # given an orphan (Slurm runs a market task the market cancelled without telling it) and a drained partition
    orphan = SlurmTask.objects.filter(job=job).first()
    SlurmTask.objects.filter(pk=orphan.pk).update(state=SlurmTask.State.CANCELLED)
    slurm.caps["reduce"] = 3
    out = io.StringIO()
    with pytest.raises(CommandError, match="2 difference"):
        call_command("slurm_check", stdout=out)
    assert "orphan task" in out.getvalue() and "capacity: partition reduce" in out.getvalue()
    # when --fix runs, the orphan is scancelled and the capacity follows Slurm
    out = io.StringIO()
    call_command("slurm_check", "--fix", stdout=out)
    assert "scancelled 1 orphan" in out.getvalue() and "no difference" in out.getvalue()
    assert market.resource_types.get(name="reduce").capacity == 3


def test_the_pages_and_the_cluster_api_show_what_runs_on_slurm(market, alice, slurm, django_capture_on_commit_callbacks,
                                                                client, admin_user) -> None:
    from rest_framework.test import APIClient

    job = _bid(alice)
    market_clear(market_id=market.pk)
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    slurm.schedule()
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    task = SlurmTask.objects.filter(job=job).order_by("index").first()
    # the job page lists its Slurm job ids with their states
    client.force_login(alice.user)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f"{task.slurm_job_id}_0" in page and 'id="job-slurm"' in page and "RUNNING" in page
    # the dashboard shows the backend: version, partitions, cores in use and free
    board = client.get("/").content.decode()
    assert "Cluster backend: Slurm" in board and "22.05.8" in board and "In use by the market" in board
    # the cluster API reports what runs on Slurm
    api = APIClient()
    api.force_authenticate(admin_user)
    rows = {r["job"]: r for r in api.get("/api/cluster/allocation/").json()["jobs"]}
    assert {e["id"] for e in rows[job.pk]["executions"]} == {f"{task.slurm_job_id}_{i}" for i in range(3)}
    assert {e["executor_state"] for e in rows[job.pk]["executions"]} == {"RUNNING"}
    # and when Slurm is away, the dashboard says since when
    slurm.down = True
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    assert "Cluster unreachable since" in client.get("/").content.decode()


def test_an_era_reservation_is_a_slurm_advance_reservation_its_tasks_run_in(market, alice, slurm,
                                                                            django_capture_on_commit_callbacks) -> None:
    from marketplace.reservations.services import reservation_accept, reservation_quote

    # given an accepted ERA reservation of 2 map units for 300 s, its window opening at 60 s
    r = reservation_accept(quote=reservation_quote(tenant=alice, resource_type="map", units=2, duration=300, arrival=60,
                                                   deadline=3600))
    # when the clock ticks, Slurm holds a reservation of those cores for that window (as wall time)
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    held = {x.name: x for x in slurm.reservations()}
    name = f"{backend.key_prefix(market.pk)}job{r.job_id}-map"
    assert name in held and held[name].cores == 2 and held[name].partition == "map"
    window = (held[name].end - held[name].start).total_seconds()  # Slurm's durations are whole minutes
    assert window == max(60, math.ceil((r.end - max(r.start, market.sim_time)) / market.clock_speed))
    # and once the window opens, the reserved job's tasks are submitted into it
    _tick(market, r.start + 1.0, django_capture_on_commit_callbacks)
    tasks = SlurmTask.objects.filter(job_id=r.job_id)
    assert tasks.exists() and set(tasks.values_list("reservation", flat=True)) == {name}
    assert {j.reservation for j in slurm.by_comment(tasks.first().key)} == {name}
    # when the job is cancelled, the Slurm reservation is deleted: the market and Slurm agree
    job_cancel(job=Job.objects.get(pk=r.job_id))
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    assert name not in {x.name for x in slurm.reservations()}


def test_a_resource_type_without_a_partition_is_an_error_at_start(market, slurm) -> None:
    from marketplace.slurm.hooks import partitions_match

    assert partitions_match() == []
    del slurm.caps["reduce"]
    errors = partitions_match()
    assert [e.id for e in errors] == ["slurm.E001"] and "'reduce' has no Slurm partition" in errors[0].msg
    slurm.down = True
    assert [e.id for e in partitions_match()] == ["slurm.W001"]


def test_a_deadline_booking_s_tasks_run_inside_its_slurm_reservation_from_the_first_tick(market, alice, slurm, monkeypatch,
                                                                                         django_capture_on_commit_callbacks) -> None:
    from marketplace.deadlines.services import deadline_book

    # given a booking committed after the tick's poll (the race a live clock sees), whose window opens now
    real, calls = reservations.reservations_sync, []

    def late(*, market_id: int) -> tuple[int, int]:
        calls.append(market_id)
        return (0, 0) if len(calls) == 1 else real(market_id=market_id)  # the poll ran before the booking existed

    monkeypatch.setattr(reservations, "reservations_sync", late)  # the before-tick work's ...
    monkeypatch.setattr(dispatch, "reservations_sync", late)  # ... and the dispatcher's
    job, _ = deadline_book(tenant=alice, work=[WorkItem("map", 2, 60.0, 1.0)], deadline=3600.0)
    _tick(market, 1.0, django_capture_on_commit_callbacks)
    tasks = SlurmTask.objects.filter(job=job)
    names = {x.name for x in slurm.reservations()}
    # then Slurm holds the booking's cores and its tasks were submitted into that reservation
    assert tasks.exists() and {t.reservation for t in tasks} <= names and all(t.reservation for t in tasks)
    assert {j.reservation for j in slurm.by_comment(tasks.first().key)} == {tasks.first().reservation}
