"""The simulation lab on real services: runs and a sweep on a real `celery worker` consuming the
``simulation`` queue (Redis broker, PostgreSQL), cancellation of a running run, and a worker
killed mid-run: its run is never redelivered by the broker (acked early); the reaper queues
it again while it has attempts left (``SIMULATION_MAX_ATTEMPTS``), else marks it failed; a split
experiment run runs part by part on the worker and is combined."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from marketplace.celery import app
from marketplace.lab.models import ExperimentRun, SimulationStudy
from marketplace.lab.services.experiments import experiment_reap, experiment_requeue, experiment_start
from marketplace.lab.services.runs import SIMULATION_QUEUE
from marketplace.lab.services.simulations import simulation_cancel, simulation_gather, simulation_start
from simulator import experiments
from simulator.whatif.run import FB2009
from tests.integration.conftest import ROOT
from tests.integration.polling import wait_for

pytestmark = pytest.mark.integration

WORKLOAD = {"trace": str(FB2009), "trace_format": "auto", "start_hour": 0.0, "hours": 0.5, "time_scale": 1.0,
            "tenants": 4, "groups": 2, "max_jobs": 0, "workload_seed": 0}  # fmt: skip
LONG = WORKLOAD | {"hours": 24.0}  # minutes of work: never finishes inside a test
BASE = {"mechanism": "abacus", "fairshare": "hltrf", "dispatch": "stride", "alpha": 0.5, "t_wait": 30.0}


def _spawn(name: str) -> subprocess.Popen[bytes]:
    """A real worker (prefork, one child, as in compose): with the solo pool an early ack
    would wait for the event loop, which the running task blocks."""
    s = connection.settings_dict
    url = f"postgres://{s['USER']}:{s['PASSWORD'] or ''}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    env = dict(os.environ, DATABASE_URL=url, PYTHONPATH=str(ROOT))
    log = open(ROOT / "var" / f"test-sim-worker-{name}.log", "w")  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "marketplace", "worker", "--pool=prefork", "--concurrency=1", "--loglevel=info",
         "-Q", f"{SIMULATION_QUEUE},celery",
         "--without-gossip", "--without-mingle", "--hostname", f"sim-{name}-{os.getpid()}@%h"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip


def _wait_ping(proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not app.control.ping(timeout=1.0):
        if proc.poll() is not None or time.monotonic() > deadline:
            pytest.fail("the simulation worker did not start; see var/test-sim-worker-*.log")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture
def sim_worker(real_services) -> Iterator[subprocess.Popen[bytes]]:  # type: ignore[no-untyped-def]
    proc = _spawn("a")
    try:
        _wait_ping(proc)
        yield proc
    finally:
        _stop(proc)
        connection.close()


@pytest.fixture
def staff(real_services):  # type: ignore[no-untyped-def]
    return get_user_model().objects.create_user("sim-ops", password="pw-ops-123", is_staff=True)


def _statuses(study: SimulationStudy) -> list[str]:
    return list(ExperimentRun.objects.filter(study=study).order_by("pk").values_list("status", flat=True))


def test_a_run_and_a_sweep_end_to_end_on_a_real_worker(sim_worker, staff) -> None:  # type: ignore[no-untyped-def]
    assert not app.conf.task_always_eager
    # given a one-configuration study and an alpha sweep over two seeds, enqueued after commit
    one = simulation_start(title="one", workload=WORKLOAD, capacity=[20, 10], base=BASE, seeds=[0], user=staff)
    sweep = simulation_start(title="sweep", workload=WORKLOAD, capacity=[20, 10], base=BASE, vary="alpha", values=[0.2, 0.8],
                             seeds=[0, 1], user=staff)  # fmt: skip
    # then the worker runs every configuration and gathers each study's table itself
    for study in (one, sweep):
        wait_for(lambda s=study: SimulationStudy.objects.get(pk=s.pk).gathered_at, 120, f"study {study.pk} gathered")
        assert set(_statuses(study)) == {"done"}
    table = SimulationStudy.objects.get(pk=sweep.pk).summary
    assert [r[:2] for r in table["rows"]] == [["alpha=0.2", 2], ["alpha=0.8", 2]] and table["failed"] == []
    run = ExperimentRun.objects.filter(study=one).get()
    assert run.progress == 1.0 and run.result["metrics"]["finished"] == run.result["metrics"]["jobs"]


def test_a_running_run_is_cancelled_on_a_real_worker(sim_worker, staff) -> None:  # type: ignore[no-untyped-def]
    study = simulation_start(title="long", workload=LONG, capacity=[20, 10], base=BASE, seeds=[0], user=staff)
    wait_for(lambda: ExperimentRun.objects.filter(study=study, status="running", progress__gt=0).exists(), 60, "the run to progress")
    assert simulation_cancel(study_id=study.pk, user=staff) == 1
    wait_for(lambda: _statuses(study) == ["cancelled"], 30, "the run to stop")
    assert simulation_gather(study_id=study.pk)


def test_a_killed_workers_run_is_not_redelivered_but_retried_by_the_reaper(real_services, staff, settings) -> None:  # type: ignore[no-untyped-def]
    settings.SIMULATION_MAX_ATTEMPTS = 2
    settings.EXPERIMENT_RETRY_BACKOFF_S = 0.5
    proc = _spawn("killed")
    try:
        _wait_ping(proc)
        study = simulation_start(title="killed", workload=LONG, capacity=[20, 10], base=BASE, seeds=[0], user=staff)
        wait_for(lambda: ExperimentRun.objects.filter(study=study, status="running", progress__gt=0).exists(), 60, "the run to progress")
        os.killpg(proc.pid, signal.SIGKILL)  # the worker machine dies mid-run: main process and pool child
        proc.wait(timeout=10)
    finally:
        _stop(proc)
    # the message was acked on receipt: nothing is left queued or in kombu's unacked set to redeliver
    assert real_services.llen(SIMULATION_QUEUE) == 0 and real_services.hlen("unacked") == 0
    time.sleep(1.5)
    # the reaper finds the lost run and, with an attempt left, queues it again for after its backoff
    assert experiment_reap(stale_after_s=1.0) == 1
    run = ExperimentRun.objects.get(study=study)
    assert (run.status, run.attempts) == ("queued", 1) and run.message.startswith("worker lost (no heartbeat) on attempt 1 of 2")
    # once the backoff is over, the sweeper's requeue publishes it
    time.sleep(0.6)
    assert experiment_requeue() == [run.pk]
    # a fresh worker runs it again, as attempt 2 (cancelled here: the 24 h run is long)
    again = _spawn("after")
    try:
        _wait_ping(again)
        wait_for(lambda: ExperimentRun.objects.filter(study=study, status="running", attempts=2, progress__gt=0).exists(), 60,
              "the retry to progress")  # fmt: skip
        assert simulation_cancel(study_id=study.pk, user=staff) == 1
        wait_for(lambda: _statuses(study) == ["cancelled"], 30, "the retry to stop")
    finally:
        _stop(again)
        connection.close()
    assert simulation_gather(study_id=study.pk) and SimulationStudy.objects.get(pk=study.pk).summary["failed"] == ["base"]


def test_a_killed_worker_leaves_a_failed_run_when_no_attempt_is_left(real_services, staff, settings) -> None:  # type: ignore[no-untyped-def]
    settings.SIMULATION_MAX_ATTEMPTS = 1
    proc = _spawn("killed-once")
    try:
        _wait_ping(proc)
        study = simulation_start(title="killed", workload=LONG, capacity=[20, 10], base=BASE, seeds=[0], user=staff)
        wait_for(lambda: ExperimentRun.objects.filter(study=study, status="running", progress__gt=0).exists(), 60, "the run to progress")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        _stop(proc)
        connection.close()
    time.sleep(1.5)
    assert experiment_reap(stale_after_s=1.0) == 1
    assert _statuses(study) == ["failed"] and ExperimentRun.objects.get(study=study).message == "worker lost (no heartbeat)"
    assert real_services.llen(SIMULATION_QUEUE) == 0  # nothing published again


def test_an_upload_is_checked_on_the_worker_then_its_runs_run(sim_worker, staff, settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The worker reads an uploaded trace (the request only stored it), then runs
    the study, and the upload is deleted when the study ends; a malformed upload is refused
    there, with its line, and deleted."""
    settings.SIMULATION_UPLOAD_DIR = ROOT / "var" / "simulation-uploads"  # the worker's setting too (same checkout)
    folder = settings.SIMULATION_UPLOAD_DIR
    folder.mkdir(parents=True, exist_ok=True)
    good, bad = folder / "it-good.tsv", folder / "it-bad.tsv"
    good.write_text("".join(f"job{k}\t{10 * k}\t1\t{64 * 2**20}\t0\t0\n" for k in range(20)))
    bad.write_text("job0\t10\t1\t100\t0\t0\njob1\t20\t1\tinf\t0\t0\n")
    ok = simulation_start(title="up", workload=WORKLOAD | {"trace": str(good), "hours": 1.0}, capacity=[20, 10], base=BASE,
                          seeds=[0], user=staff, uploaded=True, trace_name="upload good.tsv")
    refused = simulation_start(title="bad", workload=WORKLOAD | {"trace": str(bad), "hours": 1.0}, capacity=[20, 10], base=BASE,
                               seeds=[0], user=staff, uploaded=True, trace_name="upload bad.tsv")
    wait_for(lambda: SimulationStudy.objects.get(pk=ok.pk).gathered_at, 120, "the uploaded study gathered")
    assert SimulationStudy.objects.get(pk=ok.pk).check_status == "passed" and set(_statuses(ok)) == {"done"}
    wait_for(lambda: SimulationStudy.objects.get(pk=refused.pk).check_status == "refused", 60, "the bad upload refused")
    study = SimulationStudy.objects.get(pk=refused.pk)
    assert "bad.tsv:2:" in study.check_message and set(_statuses(refused)) == {"failed"}
    assert not bad.exists()  # refused: deleted at once
    assert not good.exists()  # its study ended: deleted, out of the owner's storage quota (lab.services.quotas)


def test_a_split_experiment_runs_part_by_part_on_a_real_worker_and_is_combined(sim_worker, staff) -> None:  # type: ignore[no-untyped-def]
    # given the published-schedulers study, small: two (trace, window) cells, so two parts
    params = {"quick": True, "traces": ["fb2009"], "seeds": 2, "policies": ["H-LTRF", "DRF"]}
    run = experiment_start(name="published_schedulers", params=params, user=staff)
    cells = ExperimentRun.objects.filter(parent=run).order_by("part_index").values_list("params__cell", flat=True)
    assert list(cells) == [["fb2009", 0], ["fb2009", 1]]
    # then the worker runs each part as its own task on the simulation queue, and the last one combines the parent
    wait_for(lambda: ExperimentRun.objects.filter(pk=run.pk, status__in=["done", "failed", "cancelled"]).exists(), 180, "the parent to end")
    run.refresh_from_db()
    assert (run.status, run.progress, run.attempts) == ("done", 1.0, 0), run.message
    parts = list(ExperimentRun.objects.filter(parent=run).order_by("part_index"))
    assert [(p.status, p.attempts) for p in parts] == [("done", 1), ("done", 1)]
    assert {p.worker for p in parts} == {next(iter({p.worker for p in parts}))} and parts[0].worker.startswith("sim-a-")
    # and its result is the study's own, as run_in_parts computes it in one process
    whole = experiments.run_in_parts("published_schedulers", params)
    assert {k: v for k, v in run.result.items() if k not in ("wall_s", "workers")} == whole
    assert run.result["workers"] == 1 and run.result["wall_s"] > 0
