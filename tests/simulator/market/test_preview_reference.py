"""The price preview against the plain computation it stands for: for every budget, clear the
snapshot with the bid added, and run a fresh deep copy of the engine (clear, step to the next
departure, clear again, ...) until the bid departs. Every point must be the same, bit for bit:
a faster preview (work shared between the budgets' runs) is held to this."""

from __future__ import annotations

import copy
import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.fairshare.fairness import QueueTree
from scheduler.plan import Reservation
from scheduler.registry import DISPATCH, FAIRSHARE, MECHANISMS
from simulator.market.engine import MarketEngine
from simulator.market.preview import PreviewPoint, preview_budgets, price_preview
from simulator.market.records import Bid, MarketConfig
from simulator.records import JobSpec

TREES = [QueueTree.from_paths({"root.a": 1.0, "root.b": 1.0}),
         QueueTree.from_paths({"root.g1.a": 2.0, "root.g1.b": 1.0, "root.g2": 1.0})]


def reference_preview(engine: MarketEngine, spec: JobSpec, bid: Bid, budgets: list[float], *, horizon: float,
                      max_clearings: int, finish_times: bool = True) -> list[PreviewPoint]:
    """The preview computed budget by budget, each run on its own ``copy.deepcopy`` of the engine."""
    mechanism = MECHANISMS.build(engine.config.mechanism)
    points = []
    for budget in budgets:
        trial = replace(bid, budget=float(budget))
        snap = engine.snapshot(extra=[(replace(spec, submit_time=engine.now), trial)])
        plan = mechanism.clear(snap)
        row = int(np.flatnonzero(plan.job_ids == spec.job_id)[0])
        finish = None
        if finish_times:
            sim = copy.deepcopy(engine)
            start = sim.now
            sim.submit(replace(spec, submit_time=start), trial)
            for _ in range(max_clearings):
                sim.clear()
                report = sim.step(start + horizon, stop_on_departure=True)
                if any(d.job_id == spec.job_id for d in report.departures):
                    finish = next(d.finish_time for d in report.departures if d.job_id == spec.job_id) - start
                    break
                if report.now >= start + horizon:
                    break
        points.append(PreviewPoint(float(budget), plan.shares[row].copy(), plan.sub_budgets[row].copy(), finish,
                                   plan.diagnostics.converged, spec.job_id not in plan.diagnostics.outside_pool))
    return points


def as_bytes(points: list[PreviewPoint]) -> list[tuple[bytes, bytes, bytes, bytes, bool, bool]]:
    """Each point's fields as exact bytes (shares and sub-budgets with their dtype and shape)."""
    return [(np.float64(p.budget).tobytes(), p.shares.dtype.str.encode() + repr(p.shares.shape).encode() + p.shares.tobytes(),
             p.sub_budgets.dtype.str.encode() + repr(p.sub_budgets.shape).encode() + p.sub_budgets.tobytes(),
             b"none" if p.finish_s is None else np.float64(p.finish_s).tobytes(), p.converged, p.in_pool) for p in points]


DURATIONS = st.sampled_from([0.0, 5.0, 7.5, 10.0, 20.0, 60.0])


@st.composite
def markets(draw: st.DrawFn) -> tuple[MarketEngine, JobSpec, Bid, list[float], float, int]:
    """A small market cleared and stepped a while, a bid not yet placed, its budgets and caps."""
    m = draw(st.integers(1, 2))
    tree = draw(st.sampled_from(TREES))
    leaves = len(tree.leaf_names)
    config = MarketConfig(mechanism=draw(st.sampled_from(MECHANISMS.names())), fairshare=draw(st.sampled_from(FAIRSHARE.names())),
                          dispatch=draw(st.sampled_from(DISPATCH.names())), alpha=draw(st.sampled_from([0.0, 0.5, 1.0])),
                          t_wait=draw(st.sampled_from([0.0, 20.0])))
    capacity = draw(st.lists(st.integers(1, 6), min_size=m, max_size=m))
    engine = MarketEngine.create(capacity, tree, config, seed=draw(st.integers(0, 3)),
                                 sample_interval=draw(st.sampled_from([math.inf, 15.0])),
                                 staged=draw(st.booleans()))

    def job() -> tuple[int, tuple[int, ...], tuple[float, ...], Bid]:
        tasks = tuple(draw(st.lists(st.integers(0, 6), min_size=m, max_size=m).filter(any)))
        durations = tuple(draw(st.lists(DURATIONS, min_size=m, max_size=m)))
        weights = tuple(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=m, max_size=m).filter(any)))
        slo = draw(st.sampled_from([None, None, 0.05, 0.3]))
        bid = Bid(draw(st.sampled_from([1.0, 3.0, 10.0, 25.5])), weights, draw(st.sampled_from(["linear", "log"])), slo)
        return draw(st.integers(0, leaves - 1)), tasks, durations, bid

    for job_id in range(draw(st.integers(0, 7))):
        leaf, tasks, durations, bid = job()
        engine.submit(JobSpec(job_id, leaf, tasks, durations, 0.0), bid)
    if engine.known_jobs() and draw(st.booleans()):  # a booked job: its units are held apart, at a fixed price
        engine.book(Reservation(0, 0, 1, draw(st.sampled_from([0.0, 20.0])), 80.0), 5.0)
    if engine.known_jobs():
        engine.clear()
        engine.step(draw(st.sampled_from([0.0, 10.0, 35.0])))
    leaf, tasks, durations, bid = job()
    spec = JobSpec(1000, leaf, tasks, durations, 0.0)
    budgets = preview_budgets(draw(st.sampled_from([0.5, 4.0, 30.0])))
    return (engine, spec, bid, budgets, draw(st.sampled_from([7 * 86400.0, 40.0])), draw(st.sampled_from([200, 2])))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markets())
def test_the_preview_is_the_reference_computation_bit_for_bit(case: tuple[MarketEngine, JobSpec, Bid, list[float], float, int]) -> None:
    engine, spec, bid, budgets, horizon, cap = case
    expected = reference_preview(engine, spec, bid, budgets, horizon=horizon, max_clearings=cap)
    got = price_preview(engine, spec, bid, budgets, horizon=horizon, max_clearings=cap)
    assert as_bytes(got) == as_bytes(expected)
    fast = price_preview(engine, spec, bid, budgets, horizon=horizon, max_clearings=cap, finish_times=False)
    assert as_bytes(fast) == as_bytes(reference_preview(engine, spec, bid, budgets, horizon=horizon, max_clearings=cap,
                                                        finish_times=False))


def test_a_busy_market_gives_the_reference_points_and_distinct_finish_times() -> None:
    """Two queues, 16 jobs mid-run; a bid of 30 + 6 tasks at seven budgets: the runs differ
    (so a run sharing another's state would show), and each point is the reference's."""
    tree = TREES[0]
    engine = MarketEngine.create([8, 4], tree, MarketConfig(alpha=1.0), sample_interval=60.0)
    rng = np.random.default_rng(3)
    for job_id in range(16):
        engine.submit(JobSpec(job_id, int(rng.integers(0, 2)), (int(rng.integers(1, 20)), int(rng.integers(1, 5))), (10.0, 20.0), 0.0),
                      Bid(float(rng.uniform(5, 50)), (1.0, float(rng.uniform(0.5, 2)))))
    engine.clear()
    engine.step(25.0)
    spec, bid = JobSpec(500, 0, (30, 6), (10.0, 20.0), 0.0), Bid(1.0, (1.0, 1.0))
    budgets = preview_budgets(20.0)
    got = price_preview(engine, spec, bid, budgets)
    assert as_bytes(got) == as_bytes(reference_preview(engine, spec, bid, budgets, horizon=7 * 86400.0, max_clearings=200))
    assert len({p.finish_s for p in got}) >= 4 and all(p.finish_s is not None for p in got)


@pytest.mark.parametrize("finish_times", [True, False])
def test_the_engine_is_left_as_it_was(finish_times: bool) -> None:
    import json

    engine = MarketEngine.create([4, 2], TREES[1], MarketConfig(), sample_interval=math.inf)
    engine.submit(JobSpec(1, 0, (6, 2), (10.0, 20.0), 0.0), Bid(2.0, (1.0, 1.0)))
    engine.clear()
    engine.step(15.0)
    before = json.dumps(engine.to_state(), sort_keys=True)
    price_preview(engine, JobSpec(9, 1, (4, 1), (10.0, 20.0), 0.0), Bid(1.0, (1.0, 1.0)), [1.0, 5.0], finish_times=finish_times)
    assert json.dumps(engine.to_state(), sort_keys=True) == before
