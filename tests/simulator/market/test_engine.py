"""The market engine: Plans applied through the dispatch stages, payments decided by the Plan."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.fairshare.fairness import QueueTree
from scheduler.payments import PaymentRule
from scheduler.plan import Diagnostics, Plan, Reservation, empty_plan
from scheduler.registry import UnknownName
from simulator.cluster.lookahead import EarlyStartStage
from simulator.cluster.stages import ReservationStage, SharedStage
from simulator.market.engine import MarketEngine
from simulator.market.records import Bid, MarketConfig
from simulator.records import JobSpec

TREE = QueueTree.from_paths({"root.a": 1.0, "root.b": 1.0})


def engine(capacity: tuple[int, ...] = (10,), **config: object) -> MarketEngine:
    return MarketEngine.create(list(capacity), TREE, MarketConfig(**config), sample_interval=math.inf)  # type: ignore[arg-type]


def plan_with(job_ids: list[int], m: int = 1, *, reservations: tuple[Reservation, ...] = (),
              payments: dict[int, PaymentRule] | None = None) -> Plan:
    """Equal shares for ``job_ids`` plus the given reservations and payment rules."""
    n = len(job_ids)
    return Plan(
        job_ids=np.array(job_ids, dtype=np.int64), shares=np.full((n, m), 1.0 / max(n, 1)), sub_budgets=np.ones((n, m)),
        payments=payments or {}, diagnostics=Diagnostics("test", 0, True, np.zeros(m)), reservations=reservations,
    )


def test_the_pipeline_is_reservations_then_shared_capacity() -> None:
    stages = engine().cluster.stages
    assert [type(s) for s in stages] == [ReservationStage, SharedStage, EarlyStartStage]
    assert [s.name for s in stages] == ["reservations", "shared", "early_start"]


def test_a_reservation_holds_8_units_for_job_17_from_600_to_900() -> None:
    # given: job 17 (24 tasks of 100 s) holds 8 of 10 map slots in [600, 900); job 5
    # (400 tasks of 50 s) shares the cluster
    e = engine()
    e.submit(JobSpec(5, 0, (400,), (50.0,), 0.0), Bid(10.0, (1.0,)))
    e.submit(JobSpec(17, 1, (24,), (100.0,), 0.0), Bid(10.0, (1.0,)))
    e.apply_plan(plan_with([5], reservations=(Reservation(17, 0, 8, 600.0, 900.0),)))
    # before the window job 17 gets nothing and job 5 has every slot
    e.step(599.0)
    assert e.cluster.job_state(17)[1] == (0,) and e.cluster.job_state(5)[1] == (10,)
    # at 600 the running 50 s tasks of job 5 end: 8 slots go to job 17, 2 to job 5
    e.step(600.0)
    e.step(600.0)  # the dispatch at 600 happens after the events at 600
    assert e.cluster.job_state(17)[1] == (8,) and e.cluster.job_state(5)[1] == (2,)
    # inside the window job 17 keeps exactly its 8 units, in three waves of 100 s
    e.step(899.0)
    assert e.cluster.job_state(17)[1] == (8,) and e.cluster.job_state(17)[2] == (16,)
    assert e.cluster.job_state(5)[1] == (2,)
    report = e.step(900.0)
    assert [(d.job_id, d.start_time, d.finish_time) for d in report.departures] == [(17, 600.0, 900.0)]
    # after the window the 10 slots go to job 5 again
    e.step(950.0)
    assert e.cluster.job_state(5)[1] == (10,)


def test_reserved_units_stay_withheld_while_the_reserved_job_cannot_use_them() -> None:
    # job 17's reduce tasks wait for its maps (staged): its 2 reserved reduce units stay idle
    e = engine((4, 4))
    e.submit(JobSpec(17, 0, (1, 2), (100.0, 10.0), 0.0), Bid(10.0, (1.0, 1.0)))
    e.submit(JobSpec(5, 1, (0, 50), (1.0, 10.0), 0.0), Bid(10.0, (1.0, 1.0)))
    e.apply_plan(plan_with([5], m=2, reservations=(Reservation(17, 1, 2, 0.0, 500.0), Reservation(17, 0, 1, 0.0, 500.0))))
    e.step(50.0)
    assert e.cluster.job_state(17)[1] == (1, 0)  # its map runs; its reduces are not eligible yet
    assert e.cluster.job_state(5)[1] == (0, 2)  # job 5 gets only the 2 unreserved reduce units


def test_unknown_stage_names_are_refused_before_anything_runs() -> None:
    for bad in ({"mechanism": "vcg"}, {"fairshare": "wfq"}, {"dispatch": "random"}):
        with pytest.raises(UnknownName):
            MarketConfig(**bad)  # type: ignore[arg-type]


def test_completion_pays_the_budget_and_cancellation_nothing() -> None:
    e = engine(mechanism="abacus")
    e.submit(JobSpec(1, 0, (2,), (10.0,), 0.0), Bid(40.0, (1.0,)))
    e.submit(JobSpec(2, 1, (500,), (10.0,), 0.0), Bid(25.0, (1.0,)))
    plan, due = e.clear()
    assert due == [] and plan.payments[1] == PaymentRule.at_completion(40.0)
    report = e.step(100.0)
    assert [(c.job_id, c.amount, c.kind) for c in report.charges] == [(1, 40.0, "at_completion")]
    assert report.settled == [1]
    e.cancel(2)
    assert not e.knows(2) and e.cluster.idle()


def test_a_fixed_price_is_due_once_at_acceptance_and_nothing_at_completion() -> None:
    e = engine()
    e.submit(JobSpec(3, 0, (1,), (5.0,), 0.0), Bid(99.0, (1.0,)))
    fixed = plan_with([3], payments={3: PaymentRule.fixed(12.5)})
    due = e.apply_plan(fixed)
    assert [(c.job_id, c.amount, c.kind) for c in due] == [(3, 12.5, "fixed")]
    assert e.apply_plan(fixed) == []  # applied again: not charged twice
    report = e.step(10.0)
    assert report.settled == [3] and report.charges == []


def test_an_slo_job_pays_only_when_its_average_share_meets_the_slo() -> None:
    # two jobs of one leaf with linear utility w = 1: utility = time-averaged share
    e = engine()
    e.submit(JobSpec(1, 0, (40,), (1.0,), 0.0), Bid(30.0, (1.0,), min_utility=0.7))
    e.submit(JobSpec(2, 0, (40,), (1.0,), 0.0), Bid(30.0, (1.0,), min_utility=0.2))
    rules = {1: PaymentRule.if_slo_met(30.0, 0.7), 2: PaymentRule.if_slo_met(30.0, 0.2)}
    e.apply_plan(plan_with([1, 2], payments=rules))  # both get share 1/2
    report = e.step(math.inf)
    paid = {c.job_id: c.amount for c in report.charges}
    assert sorted(report.settled) == [1, 2]
    assert paid == {2: 30.0}  # 0.5 >= 0.2 is met; 0.5 < 0.7 is not


def test_engine_state_round_trips_and_continues_identically() -> None:
    def run(split: bool) -> list[tuple[int, float]]:
        e = engine((3,), dispatch="lottery", fairshare="hltrf", t_wait=5.0)
        for k in range(6):
            e.submit(JobSpec(k, k % 2, (5 + k,), (3.0 + k,), float(k)), Bid(10.0 + k, (1.0,)))
        e.clear()
        out = [(d.job_id, d.finish_time) for d in e.step(20.0).departures]
        if split:
            e = MarketEngine.from_state(TREE, e.to_state())
        e.clear()
        out += [(d.job_id, d.finish_time) for d in e.step(math.inf).departures]
        return out

    assert run(split=True) == run(split=False)


def test_configure_switches_stages_of_a_running_market() -> None:
    e = engine((2,))
    e.submit(JobSpec(1, 0, (6,), (5.0,), 0.0), Bid(10.0, (1.0,)))
    e.submit(JobSpec(2, 1, (6,), (5.0,), 0.0), Bid(10.0, (1.0,)))
    e.clear()
    e.step(7.0)
    e.configure(MarketConfig(fairshare="fifo", dispatch="fifo", mechanism="equal"))
    assert (e.cluster.policy, e.cluster.dispatch) == ("fifo", "fifo")
    e.clear()
    finished = [d.job_id for d in e.step(math.inf).departures]
    assert finished == [1, 2]  # FIFO: the older job first


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(1, 6), st.floats(0.5, 4.0), st.integers(0, 8),
                          st.sampled_from(["at_completion", "fixed"])), min_size=1, max_size=8))
def test_every_completed_job_pays_exactly_its_rule_once(jobs: list[tuple[int, int, float, int, str]]) -> None:
    e = engine((3,))
    rules = {}
    for k, (leaf, tasks, duration, submit, kind) in enumerate(jobs):
        e.submit(JobSpec(k, leaf, (tasks,), (duration,), float(submit)), Bid(10.0 + k, (1.0,)))
        rules[k] = PaymentRule.fixed(1.0 + k) if kind == "fixed" else PaymentRule.at_completion(10.0 + k)
    paid: dict[int, float] = {}
    settled: list[int] = []
    for _ in range(100):
        known = [j for j in rules if e.knows(j)]
        if not known:
            break
        for c in e.apply_plan(plan_with(known, payments={j: rules[j] for j in known})):
            paid[c.job_id] = paid.get(c.job_id, 0.0) + c.amount
        report = e.step(math.inf, stop_on_departure=True)
        settled += report.settled
        for c in report.charges:
            paid[c.job_id] = paid.get(c.job_id, 0.0) + c.amount
    assert sorted(settled) == list(range(len(jobs)))
    assert paid == {k: r.amount for k, r in rules.items()}


def test_an_empty_plan_clears_shares_and_reservations() -> None:
    e = engine()
    e.submit(JobSpec(1, 0, (3,), (1.0,), 0.0), Bid(5.0, (1.0,)))
    e.apply_plan(plan_with([], reservations=(Reservation(1, 0, 1, 0.0, 10.0),)))
    e.step(0.0)
    assert e.cluster.job_state(1)[1] == (1,)  # only through its reservation
    e.apply_plan(empty_plan(1))
    e.step(0.5)
    assert e.cluster.job_state(1)[1] == (3,)  # back in the shared stage: its other tasks start too
