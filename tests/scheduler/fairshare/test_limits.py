"""Static partitioning, per-queue min / max shares, and the history modes
(rounds, exponential decay) of long-term fair share (paper 002, Sec. 6.2.2-6.2.3).

Oracles: scipy's quadrature for the decayed usage integral; a plain count of
units held for the limits; the engine's cluster for the stage wiring.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad

from scheduler.fairshare.allocator import FairShareAllocator
from scheduler.fairshare.fairness import QueueTree
from scheduler.registry import FAIRSHARE, build_allocator
from simulator.cluster.model import Cluster
from simulator.records import JobSpec

FIG1B = {"root.G1.A": 1.0, "root.G1.B": 1.0, "root.G2.C": 1.0, "root.G2.D": 1.0}


def _grant(alloc: FairShareAllocator, demanding: list[bool], now: float, n: int, first_key: int = 0) -> list[int]:
    """Hand out up to n units one by one (unknown durations); returns the leaves picked (-1 = refused)."""
    picks = []
    for key in range(first_key, first_key + n):
        leaf = alloc.pick_leaf(np.array(demanding), now)
        picks.append(leaf)
        if leaf < 0:
            break
        alloc.record_start(key, leaf, now, expected_duration=5.0)
    return picks


def test_every_policy_is_registered_by_name() -> None:
    assert set(FAIRSHARE.names()) >= {"fifo", "static", "mlrf", "ltrf", "hltrf"}
    for name in FAIRSHARE.names():
        alloc = build_allocator(name, QueueTree.flat(["a", "b"]), t_wait=1.0, history="decay", history_length=60.0)
        assert alloc.history == "decay"


# --------------------------------------------------------------------------- static partitioning


def test_static_lends_nothing() -> None:
    # given: 10 units, a and b equal, only a demands
    alloc = FairShareAllocator(QueueTree.flat(["a", "b"]), policy="static")
    alloc.capacity = 10
    # when / then: a gets its 5 and the rest stays idle
    picks = _grant(alloc, [True, False], 0.0, 10)
    assert picks == [0] * 5 + [-1]
    assert alloc.room(0) == 0 and alloc.room(1) == 5
    assert not alloc.work_conserving


def test_static_quota_follows_weights_in_whole_units() -> None:
    alloc = FairShareAllocator(QueueTree.flat(["a", "b", "c"], [1.0, 1.0, 2.0]), policy="static")
    alloc.capacity = 10  # 2.5, 2.5, 5 -> 3, 2, 5 (largest remainder, ties to the first)
    picks = _grant(alloc, [True, True, True], 0.0, 11)
    assert [picks.count(k) for k in range(3)] == [3, 2, 5]
    assert picks[-1] == -1


# --------------------------------------------------------------------------- min / max shares


@settings(max_examples=40, deadline=None)
@given(
    cap=st.integers(1, 20),
    max_a=st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0]),
    max_g2=st.sampled_from([0.2, 0.5, 1.0]),
    policy=st.sampled_from(["mlrf", "ltrf", "hltrf"]),
)
def test_max_shares_are_never_exceeded(cap: int, max_a: float, max_g2: float, policy: str) -> None:
    tree = QueueTree.from_paths(FIG1B).with_limits(max_share={"root.G1.A": max_a, "root.G2": max_g2})
    alloc = FairShareAllocator(tree, policy=policy, t_wait=1.0)
    alloc.capacity = cap
    picks = _grant(alloc, [True] * 4, 0.0, cap)
    held = [picks.count(k) for k in range(4)]
    assert held[0] <= math.floor(max_a * cap + 1e-9)
    assert held[2] + held[3] <= math.floor(max_g2 * cap + 1e-9)
    # work-conserving up to the limits: a refusal means every leaf is at a cap
    if -1 in picks:
        assert all(alloc.room(k) == 0 for k in range(4))
    else:
        assert sum(held) == cap


def test_min_share_goes_first_despite_higher_usage() -> None:
    # given: b has used far more than a, but b is below its minimum share of 40 %
    tree = QueueTree.flat(["a", "b"]).with_limits(min_share={"b": 0.4})
    alloc = FairShareAllocator(tree, policy="ltrf")
    alloc.capacity = 10
    alloc.record_start(99, 1, 0.0, expected_duration=100.0)  # 100 unit-seconds for b
    alloc.record_finish(99, 100.0)
    # when: 10 units free, both demand
    picks = _grant(alloc, [True, True], 100.0, 9, first_key=0)
    # then: b first gets up to 4 units (its minimum), then LTRF gives a the rest
    assert picks[:4] == [1] * 4 and picks[4:] == [0] * 5


@pytest.mark.parametrize(
    ("lo", "hi", "message"),
    [({"a": 0.6}, {"a": 0.5}, "exceeds"), ({"a": -0.1}, {}, r"\[0, 1\]"), ({}, {"a": 1.5}, r"\[0, 1\]")],
)
def test_limits_are_validated(lo: dict[str, float], hi: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        QueueTree.flat(["a", "b"]).with_limits(lo, hi)


def test_limits_survive_the_cluster_and_its_state() -> None:
    # given: a cluster of 10 slots where leaf a may hold at most 30 %
    tree = QueueTree.flat(["a", "b"]).with_limits(max_share={"a": 0.3})
    cluster = Cluster([10], tree, policy="ltrf", sample_interval=math.inf)
    cluster.submit(JobSpec(1, 0, (20,), (5.0,), 0.0))
    # when
    cluster.advance(0.0)
    # then: only 3 run, though 7 slots are idle; the limit holds after a save / restore too
    assert cluster.job_state(1)[1] == (3,)
    restored = Cluster.from_state(tree, cluster.to_state())
    restored.advance(5.0)
    assert restored.job_state(1)[1] == (3,) and restored.job_state(1)[2] == (3,)


def test_static_cluster_leaves_units_idle_and_follows_capacity_changes() -> None:
    cluster = Cluster([10], QueueTree.flat(["a", "b"]), policy="static", sample_interval=math.inf)
    cluster.submit(JobSpec(1, 0, (20,), (5.0,), 0.0))
    cluster.advance(0.0)
    assert cluster.job_state(1)[1] == (5,)
    cluster.set_capacity([20])
    cluster.advance(5.0)
    assert cluster.job_state(1)[1] == (10,)


# --------------------------------------------------------------------------- history modes


@pytest.mark.parametrize("half_life", [3.0, 10.0, 60.0])
@pytest.mark.parametrize("finish", [4.0, 20.0])
@pytest.mark.parametrize("later", [0.0, 7.0, 30.0])
def test_decayed_usage_is_the_decayed_integral(half_life: float, finish: float, later: float) -> None:
    # given: one unit held on [0, finish), usage decaying with the half-life
    alloc = FairShareAllocator(QueueTree.flat(["a", "b"]), policy="ltrf", history="decay", history_length=half_life)
    alloc.record_start(1, 0, 0.0, expected_duration=finish)
    alloc.record_finish(1, finish)
    now = finish + later
    alloc.update_demand(np.array([False, False]), now)
    # then: usage = integral over [0, finish) of 2^(-(now - s) / h) ds
    want, _ = quad(lambda s: 2.0 ** (-(now - s) / half_life), 0.0, finish)
    assert alloc.usage(now)[0] == pytest.approx(want, rel=1e-9)


def test_decay_lets_an_old_heavy_user_back_in() -> None:
    def first_pick(history: str) -> int:
        alloc = FairShareAllocator(QueueTree.flat(["a", "b"]), policy="ltrf", history=history, history_length=10.0)
        alloc.record_start(1, 0, 0.0, expected_duration=100.0)  # a: 100 unit-seconds long ago
        alloc.record_finish(1, 100.0)
        alloc.record_start(2, 1, 190.0, expected_duration=5.0)  # b: 5 unit-seconds just now
        alloc.record_finish(2, 195.0)
        return alloc.pick_leaf(np.array([True, True]), 200.0)

    assert first_pick("forever") == 1  # LTRF remembers a's 100
    assert first_pick("decay") == 0  # 20 half-lives later a's usage is ~0, b's is not


def test_rounds_forget_the_last_window() -> None:
    alloc = FairShareAllocator(QueueTree.flat(["a", "b"]), policy="ltrf", history="rounds", history_length=50.0)
    alloc.record_start(1, 0, 0.0, expected_duration=40.0)
    alloc.record_finish(1, 40.0)
    alloc.record_start(2, 1, 45.0, expected_duration=10.0)  # crosses the boundary at 50
    assert alloc.usage(49.0).tolist() == [40.0, 10.0]
    alloc.update_demand(np.array([False, False]), 51.0)
    # after t = 50 only the running task's part after 50 counts (5 of its 10 s)
    assert alloc.usage(51.0).tolist() == [0.0, 5.0]


def test_history_modes_round_trip_and_validate() -> None:
    alloc = FairShareAllocator(QueueTree.flat(["a", "b"]), policy="hltrf", history="decay", history_length=30.0)
    alloc.capacity = 8
    alloc.record_start(1, 0, 0.0, expected_duration=4.0)
    alloc.record_finish(1, 4.0)
    again = FairShareAllocator.from_state(alloc.tree, alloc.to_state())
    assert (again.history, again.history_length, again.capacity) == ("decay", 30.0, 8)
    assert again.usage(9.0).tolist() == alloc.usage(9.0).tolist()
    for history, length in (("weekly", 1.0), ("decay", 0.0), ("rounds", math.inf)):
        with pytest.raises(ValueError, match="history"):
            FairShareAllocator(alloc.tree, history=history, history_length=length)


def test_cluster_switches_history_mode_keeping_running_tasks() -> None:
    cluster = Cluster([4], QueueTree.flat(["a", "b"]), policy="ltrf", sample_interval=math.inf)
    cluster.submit(JobSpec(1, 0, (8,), (10.0,), 0.0))
    cluster.advance(0.0)
    cluster.set_policy(history="decay", history_length=20.0)
    alloc = cluster.allocator(0)
    assert alloc.history == "decay" and alloc.capacity == 4
    assert alloc.running().tolist() == [4, 0]  # the running batch was replayed
    with pytest.raises(ValueError, match="history"):
        cluster.set_policy(history="rounds", history_length=-1.0)
