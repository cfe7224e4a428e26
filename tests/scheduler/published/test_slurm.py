"""Slurm's classic fair share: the factor 2^(-U/S), decayed usage, effective usage, stale priorities."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scheduler.fairshare.fairness import QueueTree
from scheduler.published.slurm import SlurmAllocator, effective_usage, fairshare_factor


@pytest.mark.parametrize(("usage", "share", "factor"), [
    (0.0, 0.25, 1.0),  # no usage: the highest priority
    (0.25, 0.25, 0.5),  # exactly its share
    (0.5, 0.25, 0.25),  # twice its share: 2^-2
    (0.1, 0.4, 2 ** -0.25),
], ids=["unused", "at-share", "twice", "quarter"])
def test_factor_is_two_to_the_minus_usage_over_share(usage: float, share: float, factor: float) -> None:
    assert float(fairshare_factor(usage, share)) == pytest.approx(factor)


def test_factor_refuses_negative_usage_and_empty_shares() -> None:
    with pytest.raises(ValueError):
        fairshare_factor(-0.1, 0.5)
    with pytest.raises(ValueError):
        fairshare_factor(0.1, 0.0)


def test_effective_usage_two_levels_by_hand() -> None:
    # accounts g1 = {a, b}, g2 = {c}; raw usage a 30, b 10, c 60 (total 100)
    tree = QueueTree.from_paths({"root.g1.a": 1.0, "root.g1.b": 1.0, "root.g2.c": 1.0})
    ue = effective_usage(tree, [30.0, 10.0, 60.0])
    # U_g1 = 0.4 (first level: UE = U); a: 0.3 + (0.4 - 0.3) * 1/2 = 0.35; b: 0.1 + 0.3 / 2 = 0.25
    # g2's only user: 0.6 + (0.6 - 0.6) * 1 = 0.6
    assert ue.tolist() == pytest.approx([0.35, 0.25, 0.6])
    assert effective_usage(tree, [0.0, 0.0, 0.0]).tolist() == [0.0, 0.0, 0.0]


def test_usage_halves_after_one_half_life() -> None:
    tree = QueueTree.flat(["a", "b"])
    alloc = SlurmAllocator(tree, history="decay", history_length=100.0)
    alloc.record_start(0, 0, 0.0, units=2)
    alloc.record_finish(0, 50.0)
    held = alloc.decayed_usage()[0]
    # 2 units for 50 s with a 100 s half-life: 2 * 100 / ln 2 * (1 - 2^-0.5)
    assert held == pytest.approx(2 * 100 / math.log(2) * (1 - 2 ** -0.5))
    alloc.update_demand(np.array([False, False]), 150.0)
    alloc.pick_leaf(np.array([False, False]), 150.0)
    assert alloc.decayed_usage()[0] == pytest.approx(held / 2)
    # without decay (PriorityDecayHalfLife = 0) usage is the plain integral
    plain = SlurmAllocator(tree)
    plain.record_start(0, 0, 0.0, units=2)
    plain.record_finish(0, 50.0)
    assert plain.decayed_usage()[0] == pytest.approx(100.0)


def test_priorities_are_recomputed_only_every_calc_period() -> None:
    # given: a used 3 units for 100 s, b nothing; the calculation runs at multiples of 300 s
    tree = QueueTree.flat(["a", "b"])
    alloc = SlurmAllocator(tree, calc_period=300.0)
    alloc.record_start(0, 0, 0.0, units=3)
    alloc.record_finish(0, 100.0)
    both = np.array([True, True])
    # before the first calculation every factor is 1: ties go to the earlier-submitted head (b's here)
    assert alloc.pick_leaf(both, 200.0, head=np.array([5.0, 2.0])) == 1
    assert alloc.pick_leaf(both, 200.0, head=np.array([1.0, 2.0])) == 0
    # at t = 300: U_a = 1, S = 1/2 -> F_a = 2^-2, F_b = 1: b first whatever the heads
    assert alloc.pick_leaf(both, 300.0, head=np.array([1.0, 2.0])) == 1
    assert alloc.factors().tolist() == pytest.approx([0.25, 1.0])
    # b now runs 3 units from t = 300; until t = 600 the stale factors still favour b
    alloc.record_start(1, 1, 300.0, units=3)
    assert alloc.pick_leaf(both, 599.0) == 1
    # at t = 600: a used 300 unit-s, b 900: U = 1/4 and 3/4, S = 1/2 -> F = 2^-0.5 and 2^-1.5: a first
    assert alloc.pick_leaf(both, 600.0, head=np.array([5.0, 2.0])) == 0
    assert alloc.factors().tolist() == pytest.approx([2 ** -0.5, 2 ** -1.5])


def test_state_round_trip_keeps_usage_and_factors() -> None:
    tree = QueueTree.flat(["a", "b"])
    alloc = SlurmAllocator(tree, history="decay", history_length=3600.0, calc_period=60.0)
    alloc.record_start(0, 1, 0.0, units=2)
    alloc.pick_leaf(np.array([True, True]), 120.0)
    again = SlurmAllocator.from_state(tree, alloc.to_state())
    for t in (130.0, 200.0):
        assert again.pick_leaf(np.array([True, True]), t) == alloc.pick_leaf(np.array([True, True]), t)
    assert again.decayed_usage().tolist() == pytest.approx(alloc.decayed_usage().tolist())
