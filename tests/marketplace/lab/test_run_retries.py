"""Lab runs are retried a bounded number of times with backoff, a lost worker's run is queued
again while it has attempts left, a retry is published by the market sweeper once its backoff
is over, and runs whose publication failed (broker down) are published by the sweeper once the
broker is back."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from kombu.exceptions import OperationalError

from marketplace.celery import app
from marketplace.infra import resilience
from marketplace.lab.models import ExperimentRun, SimulationStudy
from marketplace.lab.services import experiments as exp
from marketplace.lab.services import runs
from marketplace.lab.services import simulations as svc
from marketplace.market.services.sweeper import market_sweep, sweeper_forget
from simulator import experiments
from simulator.whatif.run import FB2009

WORKLOAD = {"trace": str(FB2009), "trace_format": "auto", "start_hour": 0.0, "hours": 0.25, "time_scale": 1.0,
            "tenants": 2, "groups": 1, "max_jobs": 20, "workload_seed": 0}  # fmt: skip
BASE = {"mechanism": "abacus", "fairshare": "hltrf", "dispatch": "stride", "alpha": 0.5, "t_wait": 30.0}


@pytest.fixture(autouse=True)
def _settings(settings):  # type: ignore[no-untyped-def]
    settings.EXPERIMENTS_IN_THREAD = False
    settings.SIMULATION_MAX_ATTEMPTS = 3
    settings.EXPERIMENT_RETRY_BACKOFF_S = 10.0
    settings.EXPERIMENT_RETRY_MAX_BACKOFF_S = 25.0
    sweeper_forget()


def _flaky(monkeypatch: pytest.MonkeyPatch, failures: int) -> list[int]:
    """The first ``failures`` runs of any experiment raise; the rest run for real. Returns the call log."""
    real, calls = experiments.run, []

    def run(name: str, params: Any, progress: Any) -> Any:
        calls.append(len(calls))
        if len(calls) <= failures:
            raise ConnectionResetError("transient: the database went away")
        return real(name, params, progress)

    monkeypatch.setattr(experiments, "run", run)
    return calls


def _study(user: Any, capture: Any, *, execute: bool) -> SimulationStudy:
    with capture(execute=execute):
        return svc.simulation_start(title="t", workload=WORKLOAD, capacity=[20, 10], base=BASE, seeds=[0], user=user)


def test_backoff_doubles_per_attempt_up_to_its_cap() -> None:
    assert [exp.retry_backoff_s(k) for k in (1, 2, 3, 4)] == [10.0, 20.0, 25.0, 25.0]


def test_a_failing_attempt_is_requeued_with_backoff_until_attempts_run_out(staff, django_capture_on_commit_callbacks, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # given a queued lab run (3 attempts) whose experiment always raises, and a broker that records publications
    study = _study(staff, django_capture_on_commit_callbacks, execute=False)
    (run,) = ExperimentRun.objects.filter(study=study)
    _flaky(monkeypatch, failures=99)
    published: list[tuple[list[int], float]] = []
    monkeypatch.setattr(exp, "experiment_publish", lambda *, run_ids, countdown=0.0: published.append((run_ids, countdown)) or run_ids)
    for attempt, delay in ((1, 10.0), (2, 20.0)):
        # when an attempt fails with attempts left
        before = timezone.now()
        assert exp.experiment_execute(run_id=run.pk) == "queued"
        run.refresh_from_db()
        # then it is queued again, unpublished until its countdown, with the attempt count and the error kept
        assert (run.status, run.attempts, run.enqueued_at) == ("queued", attempt, None)
        assert f"on attempt {attempt} of 3; retry in {delay:.0f} s" in run.message and "transient" in run.error
        assert before + timedelta(seconds=delay) <= run.retry_at <= timezone.now() + timedelta(seconds=delay)
        assert published[-1] == ([run.pk], delay)
    # and the last attempt fails it for good, without another publication
    assert exp.experiment_execute(run_id=run.pk) == "failed"
    run.refresh_from_db()
    assert (run.status, run.attempts, len(published)) == ("failed", 3, 2) and "after 3 attempts" in run.message


def test_a_transient_failure_is_retried_once_due_and_the_study_gathers(staff, django_capture_on_commit_callbacks, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # given a study whose first attempt raises (eager Celery runs it at commit)
    calls = _flaky(monkeypatch, failures=1)
    study = _study(staff, django_capture_on_commit_callbacks, execute=True)
    (run,) = ExperimentRun.objects.filter(study=study)
    # then its retry waits, unpublished, for its backoff: the sweeper leaves it alone until then
    assert (run.status, run.attempts, run.enqueued_at, len(calls)) == ("queued", 1, None, 1)
    assert market_sweep().requeued == []
    # when the backoff is over, the sweeper publishes it, and it runs to completion
    ExperimentRun.objects.filter(pk=run.pk).update(retry_at=timezone.now() - timedelta(seconds=1))
    assert market_sweep().requeued == [run.pk]
    run.refresh_from_db()
    assert (run.status, run.attempts, len(calls)) == ("done", 2, 2)
    study.refresh_from_db()
    assert study.summary["failed"] == [] and [r[0] for r in study.summary["rows"]] == ["base"]


def test_a_cancelled_run_is_not_retried(staff, django_capture_on_commit_callbacks, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    study = _study(staff, django_capture_on_commit_callbacks, execute=False)
    (run,) = ExperimentRun.objects.filter(study=study)
    ExperimentRun.objects.filter(pk=run.pk).update(status="running", attempts=1, cancel_requested=True, heartbeat_at=timezone.now())
    assert exp._retry_or_fail(run.pk, "failed: X", "") is False
    assert ExperimentRun.objects.get(pk=run.pk).status == "failed"


def test_a_lost_workers_run_is_queued_again_while_it_has_attempts(staff, django_capture_on_commit_callbacks, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    study = _study(staff, django_capture_on_commit_callbacks, execute=False)
    (run,) = ExperimentRun.objects.filter(study=study)
    monkeypatch.setattr(exp, "experiment_publish", lambda *, run_ids, countdown=0.0: run_ids)
    old = timezone.now() - timedelta(seconds=600)
    ExperimentRun.objects.filter(pk=run.pk).update(status="running", attempts=2, heartbeat_at=old)
    assert exp.experiment_reap(stale_after_s=300) == 1
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("queued", 2) and "worker lost (no heartbeat) on attempt 2 of 3" in run.message
    ExperimentRun.objects.filter(pk=run.pk).update(status="running", attempts=3, heartbeat_at=old)
    assert exp.experiment_reap(stale_after_s=300) == 1
    run.refresh_from_db()
    assert run.status == "failed" and "after 3 attempts" in run.message


class _Broker:
    """Stops and restarts "the broker" for this process: while it is down Celery is not eager and
    every publication of a lab task raises as kombu does when Redis refuses connections."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._down = False
        for kind in runs.KINDS.values():
            task = app.tasks[kind.task]
            monkeypatch.setattr(task, "delay", self._delay(task.delay))

    def _delay(self, real: Any) -> Any:
        def delay(*args: Any) -> Any:
            if self._down:
                raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
            return real(*args)

        return delay

    @property
    def down(self) -> bool:
        return self._down

    @down.setter
    def down(self, value: bool) -> None:
        self._down = value
        app.conf.task_always_eager = not value  # up: eager Celery runs what is published, at once
        if not value:
            resilience.BROKER.reset()  # as if its retry period (RESILIENCE_RETRY_S) were over


@pytest.fixture
def broker(monkeypatch):  # type: ignore[no-untyped-def]
    resilience.BROKER.reset()
    broker = _Broker(monkeypatch)
    yield broker
    broker.down = False


def test_runs_queued_while_the_broker_was_down_are_published_by_the_sweeper(staff, django_capture_on_commit_callbacks, broker) -> None:  # type: ignore[no-untyped-def]
    # given a study started while the broker is down: its commit-time publication fails
    broker.down = True
    study = _study(staff, django_capture_on_commit_callbacks, execute=True)
    (run,) = ExperimentRun.objects.filter(study=study)
    assert (run.status, run.enqueued_at, run.attempts) == ("queued", None, 0)
    # when the sweeper runs within the grace period, it leaves the commit-time publication its chance
    assert market_sweep().requeued == []
    ExperimentRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(seconds=60))
    # and while the broker is still down, the run stays queued and unpublished
    assert market_sweep().requeued == []
    run.refresh_from_db()
    assert (run.status, run.enqueued_at) == ("queued", None)
    # then, the broker back, the next sweep publishes it (eager Celery runs it at once) and the study gathers
    broker.down = False
    assert market_sweep().requeued == [run.pk]
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("done", 1)
    assert market_sweep().requeued == []  # nothing left to publish
    study.refresh_from_db()
    assert study.summary is not None and study.summary["failed"] == []


def test_a_due_retry_waits_for_the_broker_then_the_sweeper_sends_it(staff, django_capture_on_commit_callbacks, monkeypatch, broker) -> None:  # type: ignore[no-untyped-def]
    # given a run whose first attempt failed, its backoff over, and the broker down
    study = _study(staff, django_capture_on_commit_callbacks, execute=False)
    (run,) = ExperimentRun.objects.filter(study=study)
    _flaky(monkeypatch, failures=1)
    assert exp.experiment_execute(run_id=run.pk) == "queued"  # failed attempt 1
    ExperimentRun.objects.filter(pk=run.pk).update(retry_at=timezone.now() - timedelta(seconds=1))
    broker.down = True
    # when the sweeper tries to publish the retry, it is not taken, and stays unpublished
    assert market_sweep().requeued == []
    run.refresh_from_db()
    assert (run.status, run.enqueued_at, run.attempts) == ("queued", None, 1)
    # then, the broker back, the next sweep publishes it and it completes on attempt 2
    broker.down = False
    assert market_sweep().requeued == [run.pk]
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("done", 2)
