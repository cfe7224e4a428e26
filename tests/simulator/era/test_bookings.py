"""Trace jobs as ERA requests decided by Basic-Econ (simulator.era.bookings) and booked into a run."""

from __future__ import annotations

import pytest

from scheduler.fairshare.fairness import QueueTree
from scheduler.plan import Reservation
from simulator.era.bookings import era_decide, stages_of
from simulator.runner import MarketParams
from simulator.runner import run as run_market
from simulator.workloads.traces import TraceJob


def test_stages_ask_for_at_most_the_capacity_and_cover_the_waves() -> None:
    job = TraceJob(1, 0.0, "u", "g", (10, 2), (30.0, 90.0))
    stages = stages_of(job, [4, 5], 60.0)
    # maps: 4 units, 3 waves of 30 s = 90 s -> 2 slots; reduces: 2 units, one 90 s wave -> 2 slots
    assert [(s.resource, s.units, s.slots) for s in stages] == [(0, 4, 2), (1, 2, 2)]
    assert stages_of(TraceJob(2, 0.0, "u", "g", (0, 3), (5.0, 10.0)), [4, 5], 60.0)[0].resource == 1


def test_accepted_jobs_hold_ordered_reservations_inside_their_windows_and_capacity() -> None:
    # four jobs at once, each wanting both units of the only type for 2 slots: the windows
    # (3 x 2 slots) hold at most three of them back to back
    jobs = [TraceJob(k, 0.0, "u", "g", (2,), (120.0,)) for k in range(4)]
    values = dict.fromkeys(range(4), 1000.0)
    out = era_decide(jobs, [2], values, values, slot_s=60.0, window_factor=3.0)
    assert out.offered == 4 and out.accepted == 3 and set(out.bookings) == {0, 1, 2}
    spans = sorted((r.start, r.end) for rs in out.bookings.values() for r, _ in rs)
    assert spans == [(0.0, 120.0), (120.0, 240.0), (240.0, 360.0)]  # never two at once: 2 units each
    assert out.revenue == pytest.approx(sum(rs[0][1] for rs in out.bookings.values()))


def test_a_job_pays_only_if_its_value_covers_the_price_and_stages_follow_each_other() -> None:
    jobs = [TraceJob(1, 30.0, "u", "g", (4, 1), (60.0, 60.0)), TraceJob(2, 30.0, "v", "g", (4, 1), (60.0, 60.0))]
    history = {1: 500.0, 2: 500.0}
    cheap = era_decide(jobs, [4, 1], {1: 1e-9, 2: 1e6}, history, slot_s=60.0, window_factor=3.0)
    assert 1 not in cheap.bookings or cheap.bookings[1][0][1] <= 1e-9
    (maps, price), (reduces, same) = cheap.bookings[2]
    assert price == same and maps.resource == 0 and reduces.resource == 1
    # slots count from the first submit (30 s); the window is 3 x the 2 slots asked
    assert maps.start >= 30.0 and reduces.start >= maps.end and reduces.end <= 30.0 + 3 * 2 * 60.0


def test_a_booked_job_runs_in_its_reservation_not_at_submission() -> None:
    # job 8 (best effort) fills both units until t = 100, when job 7's reservation opens; job 7,
    # submitted at 0, waits for it (no unit is idle before, so it cannot start early)
    tree = QueueTree.flat(["u", "v"])
    jobs = [TraceJob(7, 0.0, "u", "g", (2,), (50.0,)), TraceJob(8, 0.0, "v", "g", (2,), (100.0,))]
    booking = {7: [(Reservation(7, 0, 2, 100.0, 200.0), 3.0)]}
    params = MarketParams(mechanism="equal", dispatch="fifo")
    result = run_market(jobs, tree=tree, leaf_of_user={"u": 0, "v": 1}, capacity=[2], params=params, bookings=booking)
    assert {f.job_id: (f.start_time, f.finish_time) for f in result.finished} == {8: (0.0, 100.0), 7: (100.0, 150.0)}
    # unbooked, the two share the units from t = 0
    free = run_market(jobs, tree=tree, leaf_of_user={"u": 0, "v": 1}, capacity=[2], params=params)
    assert min(f.start_time for f in free.finished) == max(f.start_time for f in free.finished) == 0.0
