"""Cura's VM-aware scheduler (paper 004, Sec. III-A, Alg. 1): priorities, rejection, re-planning."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cura.costs import deferral_priority, penalty
from scheduler.cura.profiles import PAPER_PROFILES, PAPER_SIZES, PAPER_VM_TYPES, prices_of
from scheduler.cura.timeline import Interval, PoolTimeline
from scheduler.cura.vm_aware import CuraJob, Rejected, VMAwareScheduler
from scheduler.plan import Reservation


def exact_best(pools: list[PoolTimeline], job: CuraJob, sizes: tuple[int, ...]) -> tuple[float, int, float, float]:
    """(cost, pool, start, end) of the job's cheapest deadline-meeting configuration,
    ties to the earlier end then the lower index -- configuration by configuration."""
    prices = prices_of(PAPER_VM_TYPES)
    best: tuple[float, float, int, int, float, float] = (math.inf, math.inf, -1, -1, 0.0, 0.0)
    for v, pool in enumerate(pools):
        for s, k in enumerate(sizes):
            rt = float(job.runtime[v, s])
            start = pool.earliest(0.0, np.array([k], float), np.array([rt]), np.array([0.0]))[0][0]
            if start + rt <= job.deadline + 1e-9:
                key = (k * prices[v] * rt, start + rt, v * len(sizes) + s, v, start, start + rt)
                best = min(best, key)
    cost, _, c, v, start, end = best
    return cost, c, start, end


def oracle_priority(jobs: list[CuraJob], capacity: int, penalty: float) -> np.ndarray:
    """P_i = sum_j Cost(Jj, Ji) - Cost(Ji, Jj) with every pairwise cost computed by
    actually reserving the first job on a copy of the (empty) pools."""
    n = len(jobs)
    cost = np.zeros((n, n))  # cost[i, j] = Cost(Ji, Jj): i first
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            pools = [PoolTimeline(capacity) for _ in PAPER_VM_TYPES]
            ci, c, start, end = exact_best(pools, jobs[i], PAPER_SIZES)
            v, s = divmod(c, len(PAPER_SIZES))
            pools[v].add(Interval(-1, PAPER_SIZES[s], start, end))
            cj = exact_best(pools, jobs[j], PAPER_SIZES)[0]
            cost[i, j] = (ci if math.isfinite(ci) else penalty) + (cj if math.isfinite(cj) else penalty)
    return np.array([sum(cost[j, i] - cost[i, j] for j in range(n) if j != i) for i in range(n)])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.floats(80.0, 1500.0)), min_size=2, max_size=6), st.sampled_from([20, 40, 60]))
def test_priority_matches_exact_pairwise_costs_on_idle_pools(spec: list[tuple[int, float]], capacity: int) -> None:
    # On idle pools with every job ready now, the single-reservation interaction model
    # is exact, so the vectorised priorities must equal the pair-by-pair oracle.
    jobs = [CuraJob(i, 0.0, d, PAPER_PROFILES[t].runtime) for i, (t, d) in enumerate(spec)]
    sched = VMAwareScheduler(PAPER_VM_TYPES, [capacity] * 3, PAPER_SIZES, framework_start=0.0)
    for job in jobs:
        if any(job.runtime[v, s] <= job.deadline for v in range(3) for s in range(4) if PAPER_SIZES[s] <= capacity):
            sched.jobs[job.job_id] = job
    ids = list(sched.jobs)
    if len(ids) < 2:
        return
    tab = sched._table(ids, 0.0, windowed=False)
    got = deferral_priority(tab)
    want = oracle_priority([sched.jobs[i] for i in ids], capacity, penalty(tab))
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-6)


def test_a_job_no_configuration_can_serve_is_rejected_with_the_earliest_deadline() -> None:
    sched = VMAwareScheduler(PAPER_VM_TYPES, [40, 40, 40], PAPER_SIZES, framework_start=10.0)
    job = CuraJob(1, 100.0, 150.0, PAPER_PROFILES[3].runtime)  # type 3 needs 257.35 s at best
    with pytest.raises(Rejected) as info:
        sched.submit(job)
    assert info.value.earliest_deadline == pytest.approx(100.0 + 257.35 + 10.0)
    assert "earliest deadline" in str(info.value)
    # With a pool too small for the 40-VM configuration, the best is 30 VM-3.
    small = VMAwareScheduler(PAPER_VM_TYPES, [40, 40, 30], PAPER_SIZES, framework_start=0.0)
    with pytest.raises(Rejected) as info:
        small.submit(job)
    assert info.value.earliest_deadline == pytest.approx(100.0 + 324.07)


def test_a_new_arrival_that_outranks_a_reserved_job_cancels_its_reservation() -> None:
    # Only VM-1 has VMs (40). Job 1 (type 4, deadline 100) takes 30 VMs for 92.59 s.
    sched = VMAwareScheduler(PAPER_VM_TYPES, [40, 0, 0], PAPER_SIZES, framework_start=0.0)
    sched.submit(CuraJob(1, 0.0, 100.0, PAPER_PROFILES[4].runtime))
    sched.plan(0.0)
    sched.start_due(0.0)
    assert sched.started[1].vms == 30
    # Job 2 (type 1, deadline 700) is reserved on 20 VMs from 92.59 (10 VMs take 900 s).
    sched.submit(CuraJob(2, 10.0, 700.0, PAPER_PROFILES[1].runtime))
    sched.plan(10.0)
    assert sched.tentative[2].start == pytest.approx(92.59) and sched.tentative[2].vms == 20
    # Job 3 (type 4, deadline 170) needs all 40 VMs from 92.59 (73.52 s); job 2 first would
    # make it impossible, job 3 first only delays job 2: job 3 outranks job 2.
    sched.submit(CuraJob(3, 20.0, 170.0, PAPER_PROFILES[4].runtime))
    sched.plan(20.0)
    assert sched.cancellations == 1
    p3 = sched.tentative[3]
    assert (p3.vm_type, p3.vms) == (0, 40) and p3.end <= 170.0
    # Job 2 no longer fits the window (it ends at 92.59): it waits for the next one.
    assert 2 in sched.waiting


def test_reservations_are_engine_reservations() -> None:
    sched = VMAwareScheduler(PAPER_VM_TYPES, [40, 40, 40], PAPER_SIZES, framework_start=0.0)
    sched.submit(CuraJob(7, 0.0, 300.0, PAPER_PROFILES[4].runtime))
    sched.plan(0.0)
    (r,) = sched.reservations()
    assert r == Reservation(7, 0, 10, 0.0, 250.0)


def test_resize_shrinks_only_idle_vms_and_boots_new_ones() -> None:
    sched = VMAwareScheduler(PAPER_VM_TYPES, [40, 40, 40], PAPER_SIZES, framework_start=0.0)
    sched.submit(CuraJob(1, 0.0, 300.0, PAPER_PROFILES[4].runtime))  # 10 VM-1 until 250
    sched.plan(0.0)
    sched.start_due(0.0)
    reached = sched.resize([0, 60, 40], 0.0, ready_after=70.0)
    assert reached == [0, 60, 40]
    # VM-1's 10 busy VMs leave when job 1 ends at 250; the 20 new VM-2 boot until 250 + 70.
    assert sched.pools[0].capacity == 0 and sched.pools[0].used_at(100.0) == 10
    assert sched.pools[1].used_at(300.0) == 20 and sched.pools[1].used_at(320.0) == 0


def test_bad_construction_is_refused() -> None:
    with pytest.raises(ValueError):
        VMAwareScheduler(PAPER_VM_TYPES, [40, 40], PAPER_SIZES)
    sched = VMAwareScheduler(PAPER_VM_TYPES, [40, 40, 40], PAPER_SIZES)
    with pytest.raises(ValueError, match="profile"):
        sched.submit(CuraJob(1, 0.0, 1e4, np.ones((2, 4))))
    sched.submit(CuraJob(1, 0.0, 1e4, PAPER_PROFILES[1].runtime))
    with pytest.raises(ValueError, match="already"):
        sched.submit(copy.copy(CuraJob(1, 0.0, 1e4, PAPER_PROFILES[1].runtime)))
