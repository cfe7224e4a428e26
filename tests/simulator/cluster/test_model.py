"""Cluster model: invariants at every event, edge cases, the paper's starvation case."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.fairshare.fairness import QueueTree
from simulator.cluster.model import Cluster
from simulator.records import JobSpec
from tests.simulator.simtools import Scenario, Tracker, critical_path, four_leaf_tree, scenarios


def run_tracked(scenario: Scenario) -> Tracker:
    cluster = scenario.cluster()
    tracker = Tracker(cluster, {j.job_id: j for j in scenario.jobs}, scenario.staged)
    tracker.run()
    return tracker


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_invariants_hold_at_every_event(scenario: Scenario) -> None:
    # Checked after every event time by the tracker: capacity never exceeded,
    # no slot idle while an eligible task waits (work conservation), staged
    # order, usage integral = finished durations + elapsed running time.
    tracker = run_tracked(scenario)
    total = sum(sum(j.tasks) for j in scenario.jobs)
    assert tracker.started == tracker.completed == total  # every task ran exactly once
    assert tracker.cluster.idle()
    by_id = {j.job_id: j for j in scenario.jobs}
    assert sorted(f.job_id for f in tracker.finished) == sorted(by_id)
    for f in tracker.finished:
        spec = by_id[f.job_id]
        assert f.submit_time == spec.submit_time <= f.start_time <= f.finish_time
        assert f.response_time >= critical_path(spec, scenario.staged) - 1e-9
        assert tracker.state[f.job_id] == ((0,) * len(spec.tasks), (0,) * len(spec.tasks), spec.tasks)


def test_staged_reduces_wait_for_every_map() -> None:
    tree = QueueTree.flat(["a"])
    cluster = Cluster([4, 4], tree)
    cluster.submit(JobSpec(1, 0, (3, 2), (5.0, 1.0), 0.0))
    cluster.advance(4.9)
    assert cluster.job_state(1) == ((0, 2), (3, 0), (0, 0))
    report = cluster.advance(5.0)
    assert cluster.job_state(1) == ((0, 0), (0, 2), (3, 0))
    assert report.progress[1] == ((0, 0), (0, 2), (3, 0))
    (done,) = cluster.advance(100.0).finished
    assert (done.start_time, done.finish_time) == (0.0, 6.0)


def test_unstaged_types_run_together() -> None:
    cluster = Cluster([4, 4], QueueTree.flat(["a"]), staged=False)
    cluster.submit(JobSpec(1, 0, (3, 2), (5.0, 1.0), 0.0))
    cluster.advance(0.0)
    assert cluster.job_state(1) == ((0, 0), (3, 2), (0, 0))


def test_zero_durations_and_empty_jobs_terminate() -> None:
    cluster = Cluster([1, 1], QueueTree.flat(["a", "b"]))
    cluster.submit(JobSpec(1, 0, (50, 50), (0.0, 0.0), 0.0))
    cluster.submit(JobSpec(2, 1, (0, 0), (3.0, 3.0), 0.0))  # no tasks: departs on arrival
    cluster.submit(JobSpec(3, 1, (0, 0), (0.0, 0.0), 4.0))
    report = cluster.advance(math.inf)
    assert [(f.job_id, f.finish_time) for f in report.finished] == [(2, 0.0), (1, 0.0), (3, 4.0)]
    assert report.started_tasks == report.finished_tasks == 100
    assert cluster.idle() and report.now == 4.0


def test_zero_capacity_type_never_runs_and_advance_stops() -> None:
    cluster = Cluster([2, 0], QueueTree.flat(["a"]))
    cluster.submit(JobSpec(1, 0, (2, 1), (1.0, 1.0), 0.0))
    report = cluster.advance(math.inf)
    assert report.now == 1.0 and not report.finished
    assert cluster.job_state(1) == ((0, 1), (0, 0), (2, 0))
    assert cluster.demand_mask()[1].tolist() == [False, True]


def test_stop_on_departure_returns_before_handing_out_freed_slots() -> None:
    cluster = Cluster([1], QueueTree.flat(["a"]))
    cluster.submit(JobSpec(1, 0, (1,), (2.0,), 0.0))
    cluster.submit(JobSpec(2, 0, (1,), (3.0,), 0.0))
    first = cluster.advance(100.0, stop_on_departure=True)
    assert first.now == 2.0 and [f.job_id for f in first.finished] == [1]
    assert cluster.job_state(2) == ((1,), (0,), (0,))  # the market may re-clear first
    second = cluster.advance(100.0, stop_on_departure=True)
    assert second.now == 5.0 and [(f.job_id, f.start_time) for f in second.finished] == [(2, 2.0)]


def test_samples_fall_on_the_interval_grid() -> None:
    cluster = Cluster([2], QueueTree.flat(["a", "b"]), sample_interval=10.0, now=5.0)
    cluster.submit(JobSpec(1, 0, (4,), (7.0,), 5.0))
    report = cluster.advance(40.0)
    assert [s.time for s in report.samples] == [15.0, 25.0, 35.0]
    last = report.samples[-1]
    assert last.usage[:, 0].tolist() == [28.0, 0.0]
    # leaf a demanded 4 then 2 tasks against a fair share of 1 slot: entitled 1 slot
    # while it had demand (5..19), so rho = 28 / 14 = 2, and b never demanded.
    assert last.entitled[:, 0].tolist() == [14.0, 0.0]
    assert last.rho[:, 0].tolist() == [2.0, 1.0]
    assert last.benefit.tolist() == [1.0] and last.loss.tolist() == [0.0]
    assert last.utilisation.tolist() == [0.0]


def test_shares_steer_the_job_inside_a_leaf() -> None:
    cluster = Cluster([1], QueueTree.flat(["a"]))
    cluster.submit(JobSpec(1, 0, (100,), (1.0,), 0.0))
    cluster.submit(JobSpec(2, 0, (100,), (1.0,), 0.0))
    cluster.set_shares({1: np.array([0.75]), 2: np.array([0.25])})
    cluster.advance(39.5)
    started = {jid: sum(cluster.job_state(jid)[1]) + sum(cluster.job_state(jid)[2]) for jid in (1, 2)}
    assert started == {1: 30, 2: 10}


def test_jobs_without_shares_stay_eligible() -> None:
    cluster = Cluster([1], QueueTree.flat(["a"]))
    cluster.submit(JobSpec(1, 0, (3,), (1.0,), 0.0))
    cluster.submit(JobSpec(2, 0, (3,), (1.0,), 0.0))
    cluster.set_shares({1: np.array([1.0])})
    report = cluster.advance(math.inf)
    assert sorted(f.job_id for f in report.finished) == [1, 2]


def test_cancel_kills_running_and_drops_pending() -> None:
    cluster = Cluster([2], QueueTree.flat(["a"]))
    cluster.submit(JobSpec(1, 0, (5,), (10.0,), 0.0))
    cluster.submit(JobSpec(2, 0, (1,), (10.0,), 50.0))
    cluster.advance(4.0)
    cluster.cancel(1)
    cluster.cancel(2)  # not yet arrived
    report = cluster.advance(math.inf)
    assert report.finished == [] and cluster.idle()
    assert cluster.sample().usage[0, 0] == pytest.approx(8.0)  # 2 tasks x 4 s
    with pytest.raises(KeyError):
        cluster.cancel(1)


def test_shrinking_capacity_lets_running_tasks_finish() -> None:
    cluster = Cluster([4], QueueTree.flat(["a"]))
    cluster.submit(JobSpec(1, 0, (20,), (1.0,), 0.0))
    cluster.advance(0.5)
    cluster.set_capacity([2])
    assert cluster.job_state(1)[1] == (4,)
    cluster.advance(1.0)
    assert cluster.job_state(1)[1] == (2,)
    cluster.set_capacity([3])
    cluster.advance(1.0)
    assert cluster.job_state(1)[1] == (3,)


@pytest.mark.parametrize(
    ("name", "spec", "error"),
    [
        ("duplicate id", JobSpec(1, 0, (1, 1), (1.0, 1.0), 0.0), "already known"),
        ("wrong length", JobSpec(2, 0, (1,), (1.0,), 0.0), "2 entries"),
        ("negative tasks", JobSpec(3, 0, (-1, 1), (1.0, 1.0), 0.0), "negative"),
        ("negative duration", JobSpec(4, 0, (1, 1), (-1.0, 1.0), 0.0), "durations"),
        ("leaf out of range", JobSpec(5, 9, (1, 1), (1.0, 1.0), 0.0), "leaf"),
    ],
)
def test_submit_rejects(name: str, spec: JobSpec, error: str) -> None:
    cluster = Cluster([1, 1], four_leaf_tree())
    cluster.submit(JobSpec(1, 0, (1, 1), (1.0, 1.0), 0.0))
    with pytest.raises(ValueError, match=error):
        cluster.submit(spec)


def test_other_argument_checks() -> None:
    cluster = Cluster([1], QueueTree.flat(["a"]), now=10.0)
    with pytest.raises(ValueError):
        cluster.advance(9.0)
    with pytest.raises(ValueError):
        cluster.set_capacity([1, 2])
    with pytest.raises(ValueError):
        cluster.set_shares({1: np.array([0.5, 0.5])})
    with pytest.raises(ValueError):
        Cluster([-1], QueueTree.flat(["a"]))
    with pytest.raises(ValueError):
        cluster.set_policy(policy="drf-prime")
    with pytest.raises(ValueError):
        cluster.set_policy(policy="mlrf", t_wait=-1.0)
    assert (cluster.policy, cluster.t_wait) == ("hltrf", 0.0)  # unchanged by the failures
    cluster.set_policy(policy="mlrf", t_wait=math.inf)
    assert (cluster.policy, cluster.t_wait) == ("mlrf", math.inf)
    assert json.loads(json.dumps(cluster.to_state(), allow_nan=False))["config"]["t_wait"] is None


def starvation_wait(t_wait: float) -> float:
    """Paper 002, Sec. 5.2.1: 12 units, G1 = {A, B}, G2 = {C, D}, unit tasks;
    demands 200, 10, 50, 60, then new demands 20, 60, 40, 80 once the first
    ones are served. Returns how long B's new demand waits for its first unit."""
    tree = QueueTree.from_paths({"root.G1.A": 1, "root.G1.B": 1, "root.G2.C": 1, "root.G2.D": 1})
    cluster = Cluster([12], tree, policy="hltrf", t_wait=t_wait)
    for leaf, demand in enumerate([200, 10, 50, 60]):
        cluster.submit(JobSpec(leaf, leaf, (demand,), (1.0,), 0.0))
    for leaf, demand in enumerate([20, 60, 40, 80]):
        cluster.submit(JobSpec(10 + leaf, leaf, (demand,), (1.0,), 27.0))
    finished = {f.job_id: f for f in cluster.advance(math.inf).finished}
    assert max(finished[k].finish_time for k in range(4)) <= 27.0
    return finished[11].start_time - finished[11].submit_time


def test_naive_hierarchy_starves_b_and_hltrf_does_not() -> None:
    assert starvation_wait(math.inf) >= 8.0  # |(210 - 110) / 12| = 8 time units
    for t_wait in (0.0, 1.0, 2.0, 4.0):
        assert starvation_wait(t_wait) <= t_wait + 1.0


@given(st.sampled_from(["hltrf", "ltrf", "mlrf"]), st.integers(1, 6))
@settings(max_examples=20, deadline=None)
def test_many_task_jobs_are_cheap_to_hold(policy: str, slots: int) -> None:
    # 10^6 pending tasks are counters, not objects: submit and a short
    # advance touch only the tasks that start.
    cluster = Cluster([slots], QueueTree.flat(["a"]), policy=policy)
    cluster.submit(JobSpec(1, 0, (1_000_000,), (10.0,), 0.0))
    report = cluster.advance(25.0)
    assert report.started_tasks == 3 * slots and report.finished_tasks == 2 * slots
    assert len(json.dumps(cluster.to_state())) < 20_000
