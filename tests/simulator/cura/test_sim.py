"""Cura in the simulator: invariants of every schedule, and the reconfiguration manager (paper 004, Sec. III)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cura.profiles import PAPER_PROFILES, PAPER_SIZES, PAPER_VM_TYPES
from scheduler.cura.reconfig import ReconfigurationManager
from scheduler.cura.vm_aware import CuraJob
from simulator.cura.sim import run_cura, summarise

job_specs = st.lists(
    st.tuples(st.integers(1, 4), st.floats(0.0, 600.0), st.floats(100.0, 2000.0)), min_size=1, max_size=14,
)


@settings(max_examples=40, deadline=None)
@given(job_specs, st.lists(st.sampled_from([10, 20, 30, 40, 60]), min_size=3, max_size=3), st.floats(0.0, 10.0))
def test_every_schedule_keeps_deadlines_capacity_and_profiles(spec: list[tuple[int, float, float]], pools: list[int], fs: float) -> None:
    jobs = [CuraJob(i, a, a + slack, PAPER_PROFILES[t].runtime) for i, (t, a, slack) in enumerate(sorted(spec, key=lambda x: x[1]))]
    run = run_cura(jobs, PAPER_VM_TYPES, pools, PAPER_SIZES, framework_start=fs)
    ran = [o for o in run.outcomes if o.ran]
    types = [t for t, _, _ in sorted(spec, key=lambda x: x[1])]
    for o in ran:
        assert o.end <= o.deadline + 1e-6  # only deadline-meeting configurations (Alg. 1 line 10)
        assert o.start >= o.arrival - 1e-9
        t = types[o.job_id]
        rt = PAPER_PROFILES[t].runtime[o.vm_type, PAPER_SIZES.index(o.vms)] + fs
        assert o.end - o.start == pytest.approx(rt)
    for t in {o.start for o in ran}:
        for v in range(3):
            assert sum(o.vms for o in ran if o.vm_type == v and o.start <= t < o.end) <= pools[v]
    assert len(run.outcomes) == len(jobs)


def _workload(n: int, seed: int) -> list[CuraJob]:
    rng = np.random.default_rng(seed)
    arrivals = np.sort(rng.uniform(0, 2000, n))
    return [CuraJob(i, float(a), float(a + rng.uniform(600, 1500)), PAPER_PROFILES[1].runtime) for i, a in enumerate(arrivals)]


def test_reconfiguration_moves_vms_to_the_type_the_workload_prefers() -> None:
    # Only type-1 jobs (optimal on VM-1), pools split equally: the manager grows VM-1.
    jobs = _workload(20, 0)
    budget = 3 * 40 * 2 + 0  # cores of 40 VM-1 + 20 VM-2 + 10 VM-3 = 80 + 80 + 80
    manager = ReconfigurationManager(PAPER_VM_TYPES, budget, window=300.0, beta=1.0, framework_start=0.0)
    fixed = run_cura(jobs, PAPER_VM_TYPES, [40, 20, 10], PAPER_SIZES, framework_start=0.0)
    moved = run_cura(jobs, PAPER_VM_TYPES, [40, 20, 10], PAPER_SIZES, framework_start=0.0, reconfig=manager)
    done = [r for r in moved.reconfigurations if r.executed]
    assert done, moved.reconfigurations
    assert done[0].target[0] > 40 and done[0].benefit > done[0].cost
    for r in moved.reconfigurations:
        assert sum(np.array(r.after) * [2, 4, 8]) <= budget
        assert r.executed == (r.benefit > 1.0 * r.cost and r.target != r.before)
    assert moved.all_met and fixed.all_met
    assert sum(o.cost for o in moved.outcomes) < sum(o.cost for o in fixed.outcomes)


def test_a_large_beta_keeps_the_pools() -> None:
    jobs = _workload(30, 1)
    manager = ReconfigurationManager(PAPER_VM_TYPES, 240, window=300.0, beta=1e9, framework_start=0.0)
    run = run_cura(jobs, PAPER_VM_TYPES, [40, 20, 10], PAPER_SIZES, framework_start=0.0, reconfig=manager)
    assert run.reconfigurations and not any(r.executed for r in run.reconfigurations)
    assert all(s.sizes == (40, 20, 10) for s in run.samples)


def test_booting_vms_are_held_until_ready() -> None:
    jobs = _workload(30, 2)
    manager = ReconfigurationManager(PAPER_VM_TYPES, 240, window=300.0, beta=0.0, shutdown_s=20.0, boot_s=100.0, framework_start=0.0)
    run = run_cura(jobs, PAPER_VM_TYPES, [40, 20, 10], PAPER_SIZES, framework_start=0.0, reconfig=manager)
    first = next(r for r in run.reconfigurations if r.executed)
    grown = [v for v in range(3) if first.after[v] > first.before[v]]
    for o in run.outcomes:
        if o.ran and o.vm_type in grown and first.time <= o.start < first.time + 120.0:
            # only the VMs that were already there can run jobs during shutdown + boot
            assert o.vms <= first.before[o.vm_type]


def test_summary_metrics() -> None:
    jobs = _workload(10, 3)
    run = run_cura(jobs, PAPER_VM_TYPES, [40, 20, 10], PAPER_SIZES, framework_start=0.0)
    s = summarise(run.outcomes, PAPER_VM_TYPES, servers=15, cores_per_server=16)
    assert 0 < s.utilisation <= 1 and s.met == pytest.approx(sum(o.met for o in run.outcomes) / 10)
    assert s.per_job_cost == pytest.approx(15 * s.horizon / 10)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.floats(100.0, 3000.0)), min_size=1, max_size=12), st.integers(100, 2000))
def test_target_sizes_keep_the_budget_and_the_largest_optimal_cluster(spec: list[tuple[int, float]], budget: int) -> None:
    manager = ReconfigurationManager(PAPER_VM_TYPES, budget, framework_start=0.0)
    floors = np.zeros(3, dtype=int)
    for i, (t, slack) in enumerate(spec):
        job = CuraJob(i, 0.0, slack, PAPER_PROFILES[t].runtime)
        manager.observe(job, PAPER_SIZES, None)
        opt = manager.optimal(job, PAPER_SIZES)
        if opt is not None:
            floors[opt[0]] = max(floors[opt[0]], opt[1])
    if not floors.any():
        return
    target = manager.target_sizes()
    cores = np.array([2, 4, 8])
    assert int(target @ cores) <= budget
    if int(floors @ cores) <= budget:
        assert (target >= floors).all()
    assert ((target > 0) <= (floors > 0) | (manager.demand > 0)).all()  # nothing for types nobody asked for
