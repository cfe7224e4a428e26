"""Paper 004 Table VII (``simulator.experiments.cura.table7``): properties the paper states or the tables imply."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.cura.profiles import PAPER_PROFILES, PAPER_SIZES, PAPER_VM_TYPES, prices_of
from simulator.cura.sim import run_cura
from simulator.experiments.cura.table7 import OPTIMAL_TYPE, TABLE_VI, TABLE_VII, extended, paper_pools, run, workload

SIZES = (10, 20, 30, 40, 50, 60, 70)


def test_the_extension_reproduces_the_printed_tables() -> None:
    for profile in PAPER_PROFILES.values():
        assert extended(profile, PAPER_SIZES) == pytest.approx(profile.runtime, rel=2e-3)


def test_the_paper_pools_hold_table_vii_and_job_5_needs_70_vms() -> None:
    pools = paper_pools()
    for v, size in enumerate(pools, start=1):
        for t in range(0, 900):
            assert sum(k for w, k, s, e in TABLE_VII.values() if w == v and s <= t < e) <= size
    # job 5 (type 1, deadline 185 at t = 0): the cheapest deadline-meeting configuration, by brute force
    rt = extended(PAPER_PROFILES[1], SIZES)
    cost = np.asarray(SIZES)[None, :] * prices_of(PAPER_VM_TYPES)[:, None] * rt
    v, s = np.unravel_index(np.argmin(np.where(rt <= 185.0, cost, np.inf)), cost.shape)
    assert (v, SIZES[s]) == (0, 70) == (TABLE_VII[5][0] - 1, TABLE_VII[5][1])


def test_on_the_reconfigured_pools_every_job_that_runs_gets_its_optimal_type() -> None:
    jobs = workload(SIZES)
    fixed = {o.job_id: o for o in run_cura(jobs, PAPER_VM_TYPES, [40, 40, 40], SIZES, framework_start=0.0).outcomes}
    moved = {o.job_id: o for o in run_cura(jobs, PAPER_VM_TYPES, paper_pools(), SIZES, framework_start=0.0).outcomes}
    ran = [j for j in jobs if moved[j.job_id].ran]
    assert all(moved[j.job_id].vm_type == OPTIMAL_TYPE[j.job_class] for j in ran)  # the paper's claim
    assert all(moved[j.job_id].met for j in ran)
    assert sum(o.cost for o in moved.values() if o.ran) < sum(o.cost for o in fixed.values() if o.ran)
    # the one job left out is the one whose Table VII row misses its deadline
    missed = {j.job_id for j in jobs} - {j.job_id for j in ran}
    deadline = {j: d for j, _t, _a, d in TABLE_VI}
    assert missed <= {j for j, (_v, _k, _s, e) in TABLE_VII.items() if e > deadline[j]}


def test_the_experiment_reports_the_three_pool_settings() -> None:
    result = run({"sizes": list(SIZES)}, lambda f, m: None)
    summary = result["tables"][1]["rows"]
    assert summary[0][1] == "40/40/40" and len(summary) == 3
    assert all(r[2] <= 560 for r in summary)  # within Table VI's cores
    assert len(result["tables"][0]["rows"]) == 15
