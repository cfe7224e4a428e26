"""ERA reservations joined to the market engine (paper 001, Secs. 2.1 and 4): the look-ahead,
window wake-ups, the guarantee under a saturated auction, early finish and Rayon's early start."""

from __future__ import annotations

import json
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.era.mechanisms import BasicEcon
from scheduler.era.predictors import ConstantPrice
from scheduler.fairshare.fairness import QueueTree
from scheduler.plan import Reservation
from simulator.cluster.model import Cluster
from simulator.cluster.stages import ReservationStage, SharedStage
from simulator.market.engine import MarketEngine
from simulator.market.records import Bid, MarketConfig
from simulator.records import JobSpec

TREE = QueueTree.from_paths({"root.a": 1.0, "root.b": 1.0})


def engine(capacity: int = 10, **config: object) -> MarketEngine:
    return MarketEngine.create([capacity], TREE, MarketConfig(**config), sample_interval=math.inf)  # type: ignore[arg-type]


def run(e: MarketEngine, until: float = math.inf) -> dict[int, tuple[float, float]]:
    """Clear at every departure until ``until``; job id -> (start, finish)."""
    out = {}
    e.clear()
    while e.now < until and not e.cluster.idle():
        report = e.step(until, stop_on_departure=True)
        out.update({d.job_id: (d.start_time, d.finish_time) for d in report.departures})
        e.clear()
    return out


def test_a_shared_task_that_would_run_into_a_window_is_not_started() -> None:
    # given: job 5's 70 s tasks fill 10 units; job 17 holds 8 units in [600, 900) for 24 tasks of 100 s
    e = engine()
    e.submit(JobSpec(5, 0, (400,), (70.0,), 0.0), Bid(10.0, (1.0,)))
    e.submit(JobSpec(17, 1, (24,), (100.0,), 0.0), Bid(10.0, (1.0,)))
    e.book(Reservation(17, 0, 8, 600.0, 900.0), 50.0)
    e.clear()
    # when: at 560 a 70 s task would end at 630, inside the window
    e.step(561.0)
    # then: job 5 starts only the 2 units nobody reserved; job 17 runs ahead on the 8 left idle (Rayon)
    assert e.cluster.job_state(5)[1] == (2,) and e.cluster.job_state(17)[1] == (8,)
    done = run(e, 1000.0)
    assert done[17] == (560.0, 860.0)  # never more than its 8 units, all 24 tasks before 900


def test_a_window_opens_on_time_without_any_completion_then() -> None:
    # without early start: job 5's 1000 s tasks leave 8 units idle (look-ahead), and no task
    # ends at 300; the window's own wake-up starts job 17 there
    cluster = Cluster([10], TREE, policy="hltrf", dispatch="stride", sample_interval=math.inf,
                      stages=[ReservationStage(), SharedStage()])
    e = MarketEngine(cluster, MarketConfig())
    e.submit(JobSpec(5, 0, (10,), (1000.0,), 0.0), Bid(10.0, (1.0,)))
    e.submit(JobSpec(17, 1, (8,), (300.0,), 0.0), Bid(10.0, (1.0,)))
    e.book(Reservation(17, 0, 8, 300.0, 600.0), 20.0)
    e.clear()
    e.step(299.0)
    assert e.cluster.job_state(5)[1] == (2,) and e.cluster.job_state(17)[1] == (0,)
    assert e.cluster.next_event_time() == 300.0
    assert run(e)[17] == (300.0, 600.0)


def test_early_start_uses_idle_units_and_an_early_finish_frees_them() -> None:
    # job 17 (8 tasks of 100 s) holds [600, 900) but the cluster is idle: it runs at 0 (Rayon)
    e = engine()
    e.submit(JobSpec(17, 1, (8,), (100.0,), 0.0), Bid(10.0, (1.0,)))
    e.book(Reservation(17, 0, 8, 600.0, 900.0), 40.0)
    report = e.step(150.0)
    assert [(d.job_id, d.start_time, d.finish_time) for d in report.departures] == [(17, 0.0, 100.0)]
    assert e.booked() == () and e.cluster.reservations_of(0) == []  # its units are free again
    e.submit(JobSpec(5, 0, (10,), (1000.0,), 150.0), Bid(10.0, (1.0,)))
    e.clear()
    e.step(700.0)
    assert e.cluster.job_state(5)[1] == (10,)  # inside the old window: all 10 units shared


def test_early_start_never_takes_units_another_window_needs() -> None:
    # job 18 holds 8 units in [100, 400); both run ahead of their windows at 0, job 18 on 8 units;
    # job 17's 150 s tasks would still run at 100, so it gets only the 2 units job 18's window leaves
    e = engine()
    e.submit(JobSpec(17, 1, (8,), (150.0,), 0.0), Bid(10.0, (1.0,)))
    e.submit(JobSpec(18, 0, (24,), (100.0,), 0.0), Bid(10.0, (1.0,)))
    e.book(Reservation(17, 0, 8, 600.0, 900.0), 40.0)
    e.book(Reservation(18, 0, 8, 100.0, 400.0), 40.0)
    e.clear()
    e.step(1.0)
    assert e.cluster.job_state(17)[1] == (2,)
    done = run(e)
    assert done[18] == (0.0, 300.0)
    assert done[17][1] <= 900.0


@settings(max_examples=25, deadline=None)
@given(
    shared=st.lists(st.tuples(st.integers(0, 1), st.integers(1, 40), st.floats(5.0, 400.0), st.floats(0.0, 600.0),
                              st.floats(1.0, 1000.0)), min_size=3, max_size=12),
    requests=st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(0, 20), st.integers(0, 10)), min_size=1, max_size=5),
    mechanism=st.sampled_from(["abacus", "proportional"]),
)
def test_the_guarantee_holds_when_the_auction_is_saturated(shared: list, requests: list, mechanism: str) -> None:
    """Every reservation ERA admits runs all its tasks inside its window, however busy the auction."""
    slot = 60.0
    e = engine(mechanism=mechanism)
    for k, (leaf, tasks, duration, submit, budget) in enumerate(shared):
        e.submit(JobSpec(k, leaf, (tasks,), (duration,), submit), Bid(budget, (1.0,)))
    econ = BasicEcon(10, 40, ConstantPrice(1.0))
    windows = {}
    for k, (units, dur, arrival, slack) in enumerate(requests):
        job = 1000 + k
        decision = econ.reserve(units, dur, arrival, arrival + dur + slack, value=1e9)
        if not decision.accepted:
            continue
        assert decision.start is not None
        start, end = decision.start * slot, (decision.start + dur) * slot
        # W tasks of the whole duration: the reservation is exactly used
        e.submit(JobSpec(job, k % 2, (units,), (dur * slot,), arrival * slot), Bid(1.0, (1.0,)))
        e.book(Reservation(job, 0, units, start, end), decision.price or 0.0)
        windows[job] = (arrival * slot, start, end)
    done = run(e)
    for job, (arrival, start, end) in windows.items():
        begin, finish = done[job]
        assert arrival <= begin and finish <= end + 1e-9, (job, begin, finish, start, end)


def test_a_booked_job_pays_its_fixed_price_whatever_the_plans_say() -> None:
    e = engine()
    e.book(Reservation(3, 0, 2, 0.0, 100.0), 7.5)  # booked before it is submitted
    e.submit(JobSpec(3, 0, (2,), (50.0,), 0.0), Bid(99.0, (1.0,)))
    e.submit(JobSpec(4, 0, (2,), (50.0,), 0.0), Bid(5.0, (1.0,)))
    plan, due = e.clear()
    assert 3 not in plan.job_ids.tolist() and due == []
    assert e.rule_of(3).kind == "fixed" and e.rule_of(3).amount == 7.5
    report = e.step(math.inf)
    assert sorted(report.settled) == [3, 4]
    assert [(c.job_id, c.amount) for c in report.charges] == [(4, 5.0)]  # the fixed price was paid at acceptance


def test_bookings_survive_a_save_and_restore() -> None:
    def build() -> MarketEngine:
        e = engine()
        e.submit(JobSpec(5, 0, (300,), (70.0,), 0.0), Bid(10.0, (1.0,)))
        e.submit(JobSpec(17, 1, (16,), (100.0,), 200.0), Bid(10.0, (1.0,)))
        e.book(Reservation(17, 0, 8, 600.0, 800.0), 12.0)
        e.clear()
        e.step(300.0)
        return e

    kept = build()
    restored = MarketEngine.from_state(TREE, json.loads(json.dumps(build().to_state())))
    assert restored.booked() == kept.booked() and restored.rule_of(17) == kept.rule_of(17)
    a, b = run(kept), run(restored)
    assert a == b and a[17][1] <= 800.0
    assert np.isfinite(list(a.values())).all()


def test_the_auction_sees_the_capacity_less_the_units_reserved_now() -> None:
    e = engine(10)
    e.submit(JobSpec(5, 0, (40,), (10.0,), 0.0), Bid(10.0, (1.0,)))
    e.book(Reservation(17, 0, 6, 0.0, 100.0), 3.0)
    assert e.snapshot().capacity.tolist() == [4.0]
    e.step(150.0)
    assert e.snapshot().capacity.tolist() == [10.0]  # the window closed


def test_a_clearing_lists_every_booking_in_its_plan_once() -> None:
    e = engine(10)
    e.submit(JobSpec(5, 0, (40,), (10.0,), 0.0), Bid(10.0, (1.0,)))
    booking = Reservation(17, 0, 6, 0.0, 100.0)
    e.book(booking, 3.0)
    plan, _ = e.clear()
    assert plan.reservations == (booking,)
    e.apply_plan(plan)  # applying it again adds nothing twice
    assert e.cluster.reservations_of(0) == [booking]


def test_a_job_left_with_work_when_its_window_closes_runs_on_through_the_shared_stage() -> None:
    # job 17 booked 8 units in [0, 100) for 8 tasks of 100 s, but the capacity is cut to 4:
    # half its tasks are left when the window closes; it runs them late instead of waiting forever
    e = engine(10)
    e.submit(JobSpec(17, 1, (8,), (100.0,), 0.0), Bid(10.0, (1.0,)))
    e.book(Reservation(17, 0, 8, 0.0, 100.0), 5.0)
    e.clear()
    e.set_capacity([4])
    done = run(e)
    assert done[17] == (0.0, 200.0)
    assert e.booked() == ()
