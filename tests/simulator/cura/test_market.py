"""Cura's reservations run by the market engine (README, "How the market runs"): App. A through MarketEngine."""

from __future__ import annotations

import pytest

from scheduler.cura.profiles import PAPER_PROFILES, PAPER_SIZES, PAPER_VM_TYPES
from scheduler.cura.vm_aware import CuraJob
from simulator.cura.market import run_on_engine
from simulator.cura.sim import run_cura
from tests.scheduler.cura.test_example import IMPLIED_TYPE, TABLE_VI


def test_the_engine_runs_appendix_a_as_the_scheduler_planned() -> None:
    jobs = [CuraJob(j, float(a), float(d), PAPER_PROFILES[IMPLIED_TYPE.get(j, t)].runtime) for j, t, a, d, *_ in TABLE_VI]
    planned = {o.job_id: o for o in run_cura(jobs, PAPER_VM_TYPES, [40, 40, 40], PAPER_SIZES, framework_start=0.0).outcomes}
    departures, charges, _ = run_on_engine(jobs, PAPER_VM_TYPES, [40, 40, 40], PAPER_SIZES, framework_start=0.0)
    done = {d.job_id: d for d in departures}
    assert set(done) == set(planned)
    for job_id, o in planned.items():
        # the engine's reservation stage starts each gang at its reservation's start and
        # it ends after the profile's runtime: the schedule, executed
        assert done[job_id].start_time == pytest.approx(o.start)
        assert done[job_id].finish_time == pytest.approx(o.end)
        assert done[job_id].finish_time <= o.deadline + 1e-6
    paid = {c.job_id: c.amount for c in charges}
    assert paid == pytest.approx({j: o.cost for j, o in planned.items()})
    assert all(c.kind == "fixed" for c in charges)
