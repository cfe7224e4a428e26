"""The market on the real slurmctld of ``make slurm-up``: bid -> Slurm array -> departure -> charge;
cancel -> scancel; a failing task -> retry; a reservation -> a Slurm advance reservation; a
slurmctld restart -> reconciliation without duplicates; and the client's own round trips.

Without a running Slurm these tests are skipped, saying so; under ``CI`` they fail.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit, job_cancel
from marketplace.ledger.services import ledger_reconcile
from marketplace.market import hooks
from marketplace.market.models.jobs import Job
from marketplace.market.services.clock import cluster_advance
from marketplace.market.services.config import market_part_arguments_set, resource_capacity_set
from marketplace.slurm.client import CliSlurmClient, SlurmError, SlurmUnavailable
from marketplace.slurm.models import SlurmTask
from marketplace.slurm.services import backend
from tests.factories import MarketFactory, TenantFactory

pytestmark = pytest.mark.integration


@pytest.fixture
def client() -> CliSlurmClient:
    cli = CliSlurmClient()
    try:
        parts = {p.name for p in cli.partitions()}
    except (SlurmUnavailable, SlurmError) as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI requires Slurm: {exc} (make slurm-up)")
        pytest.skip(f"Slurm is not running here: {exc} (start it with `make slurm-up`, as root)")
    if not {"map", "reduce"} <= parts:
        pytest.fail(f"Slurm's partitions {sorted(parts)} are not the demo market's map and reduce (make slurm-up)")
    return cli


def _until(done: Callable[[], bool], timeout: float = 60.0, every: float = 0.3) -> bool:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(every)
    return True


# ------------------------------------------------------------------------------ the client alone

def test_an_array_runs_and_each_element_reports_its_end(client: CliSlurmClient) -> None:
    before = client.diag()
    key = f"it-{uuid.uuid4().hex[:8]}"
    array = client.submit_array(name="it", comment=key, partition="reduce", count=3, command="sleep 0.3", time_limit_s=60)
    bad = client.submit_array(name="it", comment=key + "x", partition="reduce", count=1, command="exit 3", time_limit_s=60)
    mine = lambda: [j for j in client.jobs() if j.comment in (key, key + "x")]  # noqa: E731
    assert _until(lambda: len(mine()) == 4 and all(j.state in ("COMPLETED", "FAILED") for j in mine()))
    ok = sorted((j.array_task_id, j.state, j.exit_code) for j in mine() if j.comment == key)
    assert ok == [(0, "COMPLETED", 0), (1, "COMPLETED", 0), (2, "COMPLETED", 0)]
    failed = next(j for j in mine() if j.comment == key + "x")
    assert failed.state == "FAILED" and failed.exit_code != 0 and failed.array_job_id == bad
    assert {j.array_job_id for j in mine() if j.comment == key} == {array}
    after = client.diag()
    assert after.submitted - before.submitted >= 4 and after.completed - before.completed >= 4


def test_a_reservation_is_created_listed_and_deleted(client: CliSlurmClient) -> None:
    name = f"it-{uuid.uuid4().hex[:8]}"
    start = datetime.now(UTC) + timedelta(minutes=5)
    client.create_reservation(name=name, partition="map", cores=2, start=start, duration_s=120)
    held = {r.name: r for r in client.reservations()}
    assert name in held and held[name].cores == 2 and held[name].partition == "map"
    client.delete_reservation(name)
    assert name not in {r.name for r in client.reservations()}
    client.delete_reservation(name)  # deleting what is gone is not an error


def test_an_unknown_partition_is_refused_with_slurm_s_message(client: CliSlurmClient) -> None:
    with pytest.raises(SlurmError, match="partition"):
        client.submit_array(name="it", comment="it-nope", partition="nope", count=1, command="true", time_limit_s=60)


# ------------------------------------------------------------------------------ the market on Slurm

@pytest.fixture
def market_on_slurm(transactional_db, settings, client) -> Iterator:  # type: ignore[no-untyped-def]
    settings.CLUSTER_BACKEND, settings.CLUSTER_EXECUTOR = "slurm", "external"
    settings.MARKET_PARTS = [*settings.MARKET_PARTS, "marketplace.slurm.hooks.SlurmPart"]
    hooks.reload_parts()
    backend.use_client(client)
    market = MarketFactory(name=f"it-{uuid.uuid4().hex[:6]}")
    market.clock_speed = 60.0  # a 60 s task sleeps 1 s on Slurm
    market.save(update_fields=["clock_speed"])
    caps = {p.name: p.usable_cpus for p in client.partitions()}
    for rt in market.resource_types.all():  # the market's capacities are Slurm's
        resource_capacity_set(resource_type=rt, capacity=caps[rt.name])
    tenant = TenantFactory(market=market, username=f"t{uuid.uuid4().hex[:6]}", deposit=Decimal("1000"))
    yield market, tenant
    for t in SlurmTask.objects.filter(market=market, state__in=SlurmTask.LIVE).exclude(slurm_job_id=None):
        subprocess.run(["scancel", str(t.slurm_job_id)], check=False, capture_output=True)
    backend.use_client(None)
    settings.MARKET_PARTS = settings.MARKET_PARTS[:-1]
    hooks.reload_parts()


def _run(market, job: Job, timeout: float = 90.0) -> Job:  # type: ignore[no-untyped-def]
    """Tick the live clock (0.3 s) until the job leaves the active states."""
    def done() -> bool:
        cluster_advance(market_id=market.pk, seconds=0.3 * market.clock_speed)
        job.refresh_from_db()
        return job.status not in Job.ACTIVE
    assert _until(done, timeout=timeout), (f"job {job.pk} still {job.status}", list(SlurmTask.objects.filter(job=job).values_list(
        "state", "slurm_state", "slurm_job_id", "index", "key")), list(job.work.values_list("pending", "running", "done")))
    return job


def test_bid_to_slurm_job_to_departure_to_charge(market_on_slurm) -> None:  # type: ignore[no-untyped-def]
    market, tenant = market_on_slurm
    job = bid_submit(tenant=tenant, budget="50", work=[WorkItem("map", 4, 60.0, 1.0), WorkItem("reduce", 2, 60.0, 1.0)])
    job = _run(market, job)
    tasks = SlurmTask.objects.filter(job=job)
    assert job.status == Job.Status.FINISHED and job.charged == Decimal("50")
    assert tasks.count() == 6 and set(tasks.values_list("state", flat=True)) == {SlurmTask.State.COMPLETED}
    assert set(tasks.values_list("partition", flat=True)) == {"map", "reduce"}
    ran = {(j.comment, j.array_task_id): (j.state, j.partition) for j in CliSlurmClient().jobs() if j.comment in
           set(tasks.values_list("key", flat=True))}
    assert sorted(ran.values()) == [("COMPLETED", "map")] * 4 + [("COMPLETED", "reduce")] * 2  # what Slurm says it ran
    tenant.account.refresh_from_db()
    assert ledger_reconcile(account=tenant.account) == []
    from django.core.management import call_command
    call_command("slurm_check", "--market", str(market.pk))  # no difference (it raises on one)


def test_cancel_scancels_the_slurm_jobs(market_on_slurm, client) -> None:  # type: ignore[no-untyped-def]
    market, tenant = market_on_slurm
    job = bid_submit(tenant=tenant, budget="50", work=[WorkItem("map", 2, 6000.0, 1.0)])  # 100 s on Slurm
    assert _until(lambda: (cluster_advance(market_id=market.pk, seconds=18.0) and False) or
                  SlurmTask.objects.filter(job=job, state=SlurmTask.State.RUNNING).count() == 2, timeout=30)
    key = SlurmTask.objects.filter(job=job).first().key
    job_cancel(job=job)
    cluster_advance(market_id=market.pk, seconds=18.0)
    assert _until(lambda: {j.state for j in client.jobs() if j.comment == key} == {"CANCELLED"}, timeout=20)
    assert set(SlurmTask.objects.filter(job=job).values_list("state", flat=True)) == {SlurmTask.State.CANCELLED}


def test_a_failing_task_runs_again_and_is_not_charged(market_on_slurm) -> None:  # type: ignore[no-untyped-def]
    market, tenant = market_on_slurm
    market_part_arguments_set(market=market, part="slurm", values={"commands": ["false"]})  # every task fails ...
    job = bid_submit(tenant=tenant, budget="50", work=[WorkItem("map", 1, 60.0, 1.0)])
    assert _until(lambda: (cluster_advance(market_id=market.pk, seconds=18.0) and False) or
                  SlurmTask.objects.filter(job=job, state=SlurmTask.State.FAILED).exists(), timeout=30)
    market_part_arguments_set(market=market, part="slurm", values={"commands": ["sleep"]})  # ... until the command is fixed
    job = _run(market, job)
    rows = SlurmTask.objects.filter(job=job).order_by("id")
    assert job.status == Job.Status.FINISHED and rows.first().state == SlurmTask.State.FAILED
    assert rows.last().state == SlurmTask.State.COMPLETED and rows.last().attempt > 1


def test_a_slurmctld_restart_is_reconciled_without_duplicates(market_on_slurm) -> None:  # type: ignore[no-untyped-def]
    market, tenant = market_on_slurm
    job = bid_submit(tenant=tenant, budget="50", work=[WorkItem("map", 6, 180.0, 1.0)])  # 3 s each on Slurm
    assert _until(lambda: (cluster_advance(market_id=market.pk, seconds=18.0) and False) or
                  SlurmTask.objects.filter(job=job, state=SlurmTask.State.RUNNING).count() == 6, timeout=30)
    with open("/run/slurmctld.pid") as fh:
        pid = int(fh.read())
    subprocess.run(["kill", str(pid)], check=True)
    assert _until(lambda: subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0, timeout=20)
    cluster_advance(market_id=market.pk, seconds=18.0)  # the controller is away: nothing is lost, nothing resubmitted
    subprocess.run(["slurmctld"], check=True)
    job = _run(market, job)
    assert job.status == Job.Status.FINISHED
    rows = SlurmTask.objects.filter(job=job)
    assert rows.count() == 6 and set(rows.values_list("state", flat=True)) == {SlurmTask.State.COMPLETED}  # none twice
