"""The step-at-a-time Cura driver (``simulator.cura.live``) against the simulator's own loop.

``run_cura`` is the oracle: the driver, fed the same arrivals and advanced in
arbitrary slices, with its state round-tripped through JSON at every slice (as
the live market stores it), must place every job exactly as ``run_cura`` does.
"""

from __future__ import annotations

import contextlib
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cura.profiles import PAPER_PROFILES, PAPER_SIZES, PAPER_VM_TYPES
from scheduler.cura.reconfig import ReconfigurationManager
from scheduler.cura.vm_aware import CuraJob, Rejected, VMAwareScheduler
from simulator.cura.live import CuraDriver
from simulator.cura.sim import run_cura


def _jobs(spec: list[tuple[int, float, float]]) -> list[CuraJob]:
    ordered = sorted(spec, key=lambda x: x[1])
    return [CuraJob(i, a, a + slack, PAPER_PROFILES[t].runtime) for i, (t, a, slack) in enumerate(ordered)]


def _drive(jobs: list[CuraJob], pools: list[int], *, slices: list[float], reconfig: bool) -> dict[int, tuple[int, int, float, float]]:
    budget = int(np.dot(pools, [2, 4, 8]))
    manager = ReconfigurationManager(PAPER_VM_TYPES, budget, window=300.0, framework_start=0.0) if reconfig else None
    driver = CuraDriver(VMAwareScheduler(PAPER_VM_TYPES, pools, PAPER_SIZES, framework_start=0.0), manager)
    placed: dict[int, tuple[int, int, float, float]] = {}
    i, cuts = 0, iter(slices)
    while True:
        cut = next(cuts, math.inf)
        # a tick up to the next arrival or the slice's end, then the arrivals of that instant (submissions)
        until = min(cut, jobs[i].arrival) if i < len(jobs) else cut
        if not math.isfinite(until):
            if not driver.sched.jobs:
                break
            until = driver.next_time() + 1.0
            if not math.isfinite(until):
                break
        ev = driver.advance(until)
        driver = CuraDriver.from_state(json.loads(json.dumps(driver.to_state())))  # stored between ticks
        placed.update({p.job_id: (p.vm_type, p.vms, p.start, p.end) for p in ev.started})
        if i < len(jobs) and jobs[i].arrival <= until + 1e-9:
            while i < len(jobs) and jobs[i].arrival <= until + 1e-9:
                with contextlib.suppress(Rejected):
                    driver.submit(jobs[i])
                i += 1
            placed.update({p.job_id: (p.vm_type, p.vms, p.start, p.end) for p in driver.step(until).started})
    return placed


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 4), st.floats(0.0, 600.0), st.floats(100.0, 2000.0)), min_size=1, max_size=12),
    st.lists(st.sampled_from([10, 20, 40]), min_size=3, max_size=3),
    st.lists(st.floats(1.0, 400.0), max_size=6),
)
def test_the_driver_places_every_job_as_the_simulator_does(
    spec: list[tuple[int, float, float]], pools: list[int], gaps: list[float],
) -> None:
    jobs = _jobs(spec)
    run = run_cura(jobs, PAPER_VM_TYPES, pools, PAPER_SIZES, framework_start=0.0)
    want = {o.job_id: (o.vm_type, o.vms, o.start, o.end) for o in run.outcomes if o.ran}
    got = _drive(jobs, pools, slices=list(np.cumsum(gaps)), reconfig=False)
    assert got.keys() == want.keys(), (spec, pools, gaps)
    for job_id, (v, k, s, e) in want.items():
        assert got[job_id][:2] == (v, k) and got[job_id][2:] == pytest.approx((s, e))


def test_with_reconfiguration_the_driver_agrees_while_arrivals_continue() -> None:
    rng = np.random.default_rng(3)
    arrivals = np.sort(rng.uniform(0, 2000, 24))
    jobs = [CuraJob(i, float(a), float(a + rng.uniform(600, 1500)), PAPER_PROFILES[1 + i % 4].runtime) for i, a in enumerate(arrivals)]
    manager = ReconfigurationManager(PAPER_VM_TYPES, 40 * 2 + 20 * 4 + 10 * 8, window=300.0, framework_start=0.0)
    run = run_cura(jobs, PAPER_VM_TYPES, [40, 20, 10], PAPER_SIZES, framework_start=0.0, reconfig=manager)
    assert any(r.executed for r in run.reconfigurations)
    got = _drive(jobs, [40, 20, 10], slices=[], reconfig=True)
    last = jobs[-1].arrival
    # decisions made before the last arrival's window closes are the simulator's
    early = {o.job_id for o in run.outcomes if o.ran and o.start < last}
    assert early
    for o in run.outcomes:
        if o.job_id in early:
            assert got[o.job_id][:2] == (o.vm_type, o.vms) and got[o.job_id][2] == pytest.approx(o.start)


def test_a_longer_real_run_holds_its_vms_and_others_are_replanned() -> None:
    # two type-4 jobs that both want the 10-VM pool of VM-1; the first really runs twice as long
    types = [PAPER_VM_TYPES[0]]
    rt = PAPER_PROFILES[4].runtime[:1, :1]
    driver = CuraDriver(VMAwareScheduler(types, [10], (10,), framework_start=0.0))
    driver.submit(CuraJob(0, 0.0, 10_000.0, rt), scale=2.0)
    driver.submit(CuraJob(1, 0.0, 10_000.0, rt))
    ev = driver.step(0.0)
    ev2 = driver.advance(20_000.0)
    runs = {p.job_id: p for p in ev.started + ev2.started}
    first, second = sorted(runs.values(), key=lambda p: p.start)
    assert first.end - first.start == pytest.approx(rt[0, 0] * (2.0 if first.job_id == 0 else 1.0))
    assert second.start >= first.end - 1e-9  # never two runs on the 10 VMs at once
    assert {p.job_id for p in ev.finished + ev2.finished} == {0, 1}
