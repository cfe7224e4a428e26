"""The simulation lab through a broker outage, on real processes: a study started while its
Redis is stopped stays queued (nothing reached the broker), and once Redis is back the
sweeper (``manage.py run_clock``, in process, no broker needed to notice) publishes the run
to a real worker, which completes it, on its first attempt."""

from __future__ import annotations

import sys

import pytest
from django.contrib.auth import get_user_model

from marketplace.lab.models import ExperimentRun
from marketplace.lab.services.runs import SIMULATION_QUEUE
from marketplace.lab.services.simulations import simulation_start
from simulator.whatif.run import FB2009
from tests.integration.test_faults import _kill, _spawn, _sweeper, _wait_for, _wait_worker_ready, own_redis  # noqa: F401

pytestmark = pytest.mark.integration

WORKLOAD = {"trace": str(FB2009), "trace_format": "auto", "start_hour": 0.0, "hours": 0.25, "time_scale": 1.0,
            "tenants": 2, "groups": 1, "max_jobs": 30, "workload_seed": 0}  # fmt: skip
BASE = {"mechanism": "abacus", "fairshare": "hltrf", "dispatch": "stride", "alpha": 0.5, "t_wait": 30.0}


def _sim_worker(redis_url: str):  # type: ignore[no-untyped-def]
    return _spawn([sys.executable, "-m", "celery", "-A", "marketplace", "worker", "--pool=prefork", "--concurrency=1", "--loglevel=info",
                   "-Q", f"{SIMULATION_QUEUE},celery", "--without-gossip", "--without-mingle", "--hostname", "sim-outage@%h"],
                  redis_url, "test-sim-outage-worker.log")  # fmt: skip


def test_a_study_started_while_the_broker_is_down_runs_once_it_is_back(own_redis, settings) -> None:  # type: ignore[no-untyped-def] # noqa: F811
    staff = get_user_model().objects.create_user("sim-outage", password="pw-ops-123", is_staff=True)
    # given the broker is down when a study is started
    own_redis.stop()
    study = simulation_start(title="outage", workload=WORKLOAD, capacity=[20, 10], base=BASE, seeds=[0], user=staff)
    (run,) = ExperimentRun.objects.filter(study=study)
    # then the study exists and its run waits, unpublished
    assert (run.status, run.enqueued_at, run.attempts) == ("queued", None, 0)
    # when the broker comes back, with a worker on the simulation queue and the sweeper running
    own_redis.start()
    worker, sweeper = _sim_worker(own_redis.url), _sweeper(own_redis.url)
    try:
        _wait_worker_ready(worker)
        # then the sweeper publishes the run and the worker completes it, on its first attempt
        _wait_for(lambda: ExperimentRun.objects.filter(pk=run.pk, status="done").exists(), 180, "the run to be published and done")
        run.refresh_from_db()
        mt = run.result["metrics"]
        assert run.attempts == 1 and run.enqueued_at is not None and mt["finished"] == mt["jobs"] > 0
    finally:
        _kill(worker)
        _kill(sweeper)
