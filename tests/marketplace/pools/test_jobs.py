"""Live Cura jobs (paper 004) on the market's clock and ledger (``services.cura``).

* live and simulator agree: a seeded workload submitted through the service at its
  arrival times, with the clock (``cluster_advance``) moving between arrivals, ends
  with every job on the VM type, cluster size and start ``run_cura`` gives it;
* money: the hold at submission covers the charge; a completed job is charged its
  configuration's cost (VMs x unit price x planned runtime) and the rest released;
  a cancelled job has everything released; every account reconciles;
* learnt profiles: a class whose runs really take twice the built-in profile's time
  is estimated at about twice the time after one completed run.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.db.models import Sum

from marketplace.ledger.models import LedgerEntry
from marketplace.ledger.services import account_deposit, ledger_reconcile, money
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.clock import cluster_advance
from marketplace.pools.models import CuraJob
from marketplace.pools.services.jobs import cura_job_cancel, cura_job_submit
from marketplace.pools.services.pools import pool_settings_update, pools_setup_paper
from scheduler.cura.profiles import PAPER_PROFILES, PAPER_SIZES, PAPER_VM_TYPES
from scheduler.cura.vm_aware import CuraJob as SchedJob
from simulator.cura.sim import run_cura


@pytest.fixture
def rich(market: Market, alice: Tenant) -> Tenant:
    account_deposit(account=alice.account, amount=Decimal("1000000"), memo="the paper's costs are in the thousands")
    pools_setup_paper(market=market, size=20, at_level=False)  # the paper's prices: its costs, as the simulator's
    pool_settings_update(market=market, beta=1e9)  # the manager decides but never re-sizes (as run_cura without one)
    return alice


def _workload(seed: int, n: int) -> list[tuple[float, int, float]]:
    """(arrival, job type, deadline in s) of n jobs over 1,200 simulated seconds."""
    rng = np.random.default_rng(seed)
    arrivals = np.round(np.sort(rng.uniform(0, 1200, n)), 1)
    return [(float(a), int(rng.integers(1, 5)), float(np.round(rng.uniform(400, 1500)))) for a in arrivals]


@pytest.mark.parametrize("seed", [1, 2])
def test_live_cura_places_every_job_as_the_simulator(market: Market, rich: Tenant, seed: int) -> None:
    # given a seeded workload, submitted live at its arrival times with the clock moving between them
    work = _workload(seed, 14)
    ids = []
    for arrival, job_type, deadline in work:
        cluster_advance(market_id=market.pk, until=arrival)
        try:
            ids.append(cura_job_submit(tenant=rich, job_type=job_type, deadline_in_s=deadline).pk)
        except ValidationError:
            ids.append(None)
    cluster_advance(market_id=market.pk, until=20_000.0)
    # when the simulator runs the same jobs on the same pools
    jobs = [SchedJob(i, a, a + d, PAPER_PROFILES[t].runtime) for i, (a, t, d) in enumerate(work)]
    sim = run_cura(jobs, PAPER_VM_TYPES, [20, 20, 20], PAPER_SIZES, framework_start=10.0)
    # then every job ran on the same configuration from the same start, and ended on time
    live = {k: CuraJob.objects.get(pk=pk) for k, pk in enumerate(ids) if pk is not None}
    assert {k for k, o in enumerate(sim.outcomes) if not o.rejected} == set(live)
    ran = 0
    for k, o in enumerate(sim.outcomes):
        if k not in live:
            continue
        job = live[k]
        if not o.ran:
            assert job.status == CuraJob.Status.MISSED
            continue
        ran += 1
        assert job.status == CuraJob.Status.DONE
        assert (job.vm_type.position, job.vms) == (o.vm_type, o.vms)
        assert job.start_s == pytest.approx(o.start) and job.finished_s == pytest.approx(o.end)
        assert job.finished_s <= job.deadline_s + 1e-6
        assert job.charged == money(o.cost) and job.held == 0
    assert ran >= 8
    assert ledger_reconcile(account=rich.account) == []


def test_money_hold_charge_release(market: Market, rich: Tenant) -> None:
    rich.account.refresh_from_db()
    before = rich.account.available
    # given two jobs: one that will complete, one cancelled while it waits or holds a reservation
    a = cura_job_submit(tenant=rich, job_type=4, deadline_in_s=600)
    b = cura_job_submit(tenant=rich, job_type=3, deadline_in_s=5000)
    rich.account.refresh_from_db()
    assert a.held > 0 and b.held > 0
    assert rich.account.held == a.held + b.held and rich.account.available == before - a.held - b.held
    assert a.held >= money(float(a.cost))  # the hold bounds any re-planned configuration's cost
    cura_job_cancel(job=b)
    cluster_advance(market_id=market.pk, until=5000.0)
    a.refresh_from_db()
    b.refresh_from_db()
    rich.account.refresh_from_db()
    # then a is charged its configuration's cost, b nothing; nothing stays held
    assert a.status == CuraJob.Status.DONE and b.status == CuraJob.Status.CANCELLED
    vm = PAPER_VM_TYPES[a.vm_type.position]
    runtime = PAPER_PROFILES[4].runtime[a.vm_type.position, PAPER_SIZES.index(a.vms)] + 10.0
    assert a.charged == money(a.vms * vm.price * runtime)
    assert b.charged == 0 and rich.account.held == 0
    assert rich.account.available == before - a.charged
    sums = dict(LedgerEntry.objects.filter(cura_link__cura_job=a).values_list("kind").annotate(s=Sum("amount")))
    assert sums["hold"] == sums["charge"] + sums["release"]
    with pytest.raises(ValidationError):
        cura_job_cancel(job=a)
    assert ledger_reconcile(account=rich.account) == []


# A sequence (found by a seeded search of the driver) in which job 1 is admitted -- some
# configuration could meet its deadline on the pools as booked -- but later arrivals outrank
# it, and it waits until no configuration can finish it in time.
MISS = [(136.0, 3, 875.0), (275.0, 3, 967.0), (358.0, 3, 1144.0), (366.0, 1, 1323.0), (375.0, 3, 897.0),
        (397.0, 4, 153.0), (527.0, 2, 873.0), (585.0, 3, 450.0)]


def test_a_job_that_can_no_longer_meet_its_deadline_is_missed_and_released(market: Market, rich: Tenant) -> None:
    ids = []
    for arrival, job_type, deadline in MISS:
        cluster_advance(market_id=market.pk, until=arrival)
        try:
            ids.append(cura_job_submit(tenant=rich, job_type=job_type, deadline_in_s=deadline).pk)
        except ValidationError:
            ids.append(None)
    assert ids[1] is not None
    cluster_advance(market_id=market.pk, until=10_000.0)
    missed = CuraJob.objects.get(pk=ids[1])
    assert missed.status == CuraJob.Status.MISSED and missed.start_s is None
    sums = dict(LedgerEntry.objects.filter(cura_link__cura_job=missed).values_list("kind").annotate(s=Sum("amount")))
    assert missed.charged == 0 and missed.held == 0 and sums == {"hold": sums["hold"], "release": sums["hold"]}
    others = CuraJob.objects.filter(pk__in=[i for i in ids if i is not None]).exclude(pk=ids[1])
    assert {j.status for j in others} == {CuraJob.Status.DONE}
    assert all(j.finished_s <= j.deadline_s + 1e-6 for j in others)
    rich.account.refresh_from_db()
    assert rich.account.held == 0 and ledger_reconcile(account=rich.account) == []


def test_learnt_profile_estimates_a_slow_class_from_its_runs(market: Market, rich: Tenant) -> None:
    # given a class whose runs really take twice the built-in type-4 times
    first = cura_job_submit(tenant=rich, job_type=4, deadline_in_s=3000, job_class="etl", runtime_scale=2.0)
    assert np.allclose(first.estimate, PAPER_PROFILES[4].runtime)  # nothing learnt yet: the prior
    cluster_advance(market_id=market.pk, until=4000.0)
    first.refresh_from_db()
    assert first.status == CuraJob.Status.DONE
    v, k = first.vm_type.position, PAPER_SIZES.index(first.vms)
    real = first.finished_s - first.start_s - 10.0
    assert real == pytest.approx(2.0 * PAPER_PROFILES[4].runtime[v, k])
    # when another job of the class arrives, it is estimated from that run
    second = cura_job_submit(tenant=rich, job_type=4, deadline_in_s=3000, job_class="etl", runtime_scale=2.0)
    est = np.array(second.estimate)
    assert est[v, k] == pytest.approx(real, rel=1e-6)
    assert np.allclose(est, 2.0 * PAPER_PROFILES[4].runtime, rtol=1e-6)  # one run scales every configuration
    # another class of the same tenant keeps the prior
    other = cura_job_submit(tenant=rich, job_type=4, deadline_in_s=3000, job_class="reports")
    assert np.allclose(other.estimate, PAPER_PROFILES[4].runtime)
    cluster_advance(market_id=market.pk, until=12_000.0)
    second.refresh_from_db()
    # the estimate was right: its run took what was planned
    assert second.finished_s == pytest.approx(second.end_s, rel=1e-6)


def test_cancel_through_the_api_and_the_page(market: Market, rich: Tenant, bob: Tenant, alice_api: object, bob_api: object) -> None:
    from django.test import Client
    from rest_framework.test import APIClient

    assert isinstance(alice_api, APIClient) and isinstance(bob_api, APIClient)
    created = alice_api.post("/api/cura/jobs/", {"job_type": 3, "deadline_in_s": 2000, "job_class": "nightly"}, format="json")
    assert created.status_code == 201 and created.data["held"] != "0.0000" and created.data["job_class"] == "nightly"
    job_id = created.data["id"]
    assert bob_api.post(f"/api/cura/jobs/{job_id}/cancel/").status_code == 404  # another tenant's job
    done = alice_api.post(f"/api/cura/jobs/{job_id}/cancel/")
    assert done.status_code == 200 and done.data["status"] == "cancelled" and done.data["held"] == "0.0000"
    assert alice_api.post(f"/api/cura/jobs/{job_id}/cancel/").status_code == 409  # already ended: a state conflict, as for a market job
    client = Client()
    client.force_login(rich.user)
    second = cura_job_submit(tenant=rich, job_type=4, deadline_in_s=900)
    page = client.get("/cura/jobs/")
    assert f"Cancel #{second.pk}".encode() in page.content and b"Cancelled" in page.content
    client.post(f"/cura/jobs/{second.pk}/cancel/")
    second.refresh_from_db()
    assert second.status == CuraJob.Status.CANCELLED and second.held == 0
    rich.account.refresh_from_db()
    assert rich.account.held == 0 and ledger_reconcile(account=rich.account) == []


def test_a_pool_staff_empty_by_hand_takes_no_new_runs(market: Market, rich: Tenant) -> None:
    from marketplace.pools.models import VMInstanceType
    from marketplace.pools.services.pools import pool_resize

    running = [cura_job_submit(tenant=rich, job_type=4, deadline_in_s=3000) for _ in range(2)]
    later = cura_job_submit(tenant=rich, job_type=4, deadline_in_s=3000)
    assert {j.vm_type.name for j in running} == {"VM-1"} and later.vm_type is not None and later.vm_type.name == "VM-1"
    assert later.status == CuraJob.Status.RESERVED  # VM-1 is full until the first two end
    pool_resize(pool=VMInstanceType.objects.get(market=market, name="VM-1").pool, size=0, reason="maintenance")
    cluster_advance(market_id=market.pk, until=5000.0)
    later.refresh_from_db()
    assert later.status == CuraJob.Status.DONE and later.vm_type.name != "VM-1"  # re-planned onto another pool
    assert {CuraJob.objects.get(pk=j.pk).status for j in running} == {CuraJob.Status.DONE}  # nothing was killed
