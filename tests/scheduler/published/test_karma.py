"""Karma (Vuppalapati et al., OSDI'23): the worked example of credits over quanta, and the cluster adapter."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.fairshare.fairness import QueueTree
from scheduler.published.karma import KarmaAllocator, karma_quantum, water_fill

# 3 users, 18 slices, alpha = 0.5: fair share 6, guaranteed 3 each, 9 shared slices,
# 3 free credits per user per quantum, 6 initial credits each
DEMANDS = {"A": [6, 12, 0, 6, 6], "B": [6, 0, 12, 6, 6], "C": [0, 0, 0, 18, 12]}
# worked by hand from the algorithm's steps (module docstring of scheduler.published.karma):
ALLOCATIONS = [[6, 6, 0], [12, 0, 0], [0, 12, 0], [3, 3, 12], [3, 3, 12]]
CREDITS_AFTER = [[6, 6, 12], [0, 12, 18], [6, 6, 24], [9, 9, 18], [12, 12, 12]]


def test_worked_example_credits_over_quanta() -> None:
    credits = np.array([6.0, 6.0, 6.0])
    totals = np.zeros(3, dtype=np.int64)
    for q in range(5):
        demand = [DEMANDS[u][q] for u in "ABC"]
        alloc, credits = karma_quantum(demand, credits, guaranteed=[3, 3, 3], shared=9, free_credits=[3, 3, 3])
        assert alloc.tolist() == ALLOCATIONS[q], f"quantum {q}"
        assert credits.tolist() == CREDITS_AFTER[q], f"quantum {q}"
        assert alloc.sum() <= 18 and (alloc <= demand).all()
        totals += alloc
    # long-term fairness: 24 slices each, where per-quantum max-min gives A 30, B 30, C 12
    assert totals.tolist() == [24, 24, 24]
    assert [sum(_max_min([DEMANDS[u][q] for u in "ABC"], 18)[k] for q in range(5)) for k in range(3)] == [30, 30, 12]


def _max_min(demand: list[int], slices: int) -> list[int]:
    """Per-quantum max-min fairness (memoryless): water-fill ``slices`` over the demands."""
    got = [0] * len(demand)
    for _ in range(slices):
        open_ = [k for k in range(len(demand)) if got[k] < demand[k]]
        if not open_:
            break
        got[min(open_, key=lambda k: (got[k], k))] += 1
    return got


def test_borrowers_are_limited_by_their_credits() -> None:
    # one user wants 10 over its guarantee but holds 2 credits: it borrows 2 (it pays 2)
    alloc, credits = karma_quantum([13, 0], [2.0, 0.0], guaranteed=[3, 3], shared=0, free_credits=[0, 0])
    assert alloc.tolist() == [5, 0]
    assert credits.tolist() == [0.0, 2.0]  # the donor earns what was borrowed


def test_water_fill_raises_the_poorest_first() -> None:
    earned = water_fill(np.array([1.0, 5.0, 2.0]), np.array([10.0, 10.0, 0.5]), 3.0)
    # level L: (L - 1) + min(L - 2, 0.5) = 3 -> L = 3.5; the third is capped at 0.5
    assert earned.tolist() == pytest.approx([2.5, 0.0, 0.5])
    assert water_fill(np.array([0.0]), np.array([1.0]), 5.0).tolist() == [1.0]


def test_adapter_settles_the_realised_allocation_and_ranks_the_richest_borrower() -> None:
    # given: 4 units, a and b equal: f = 2, guaranteed 1, 1 free credit per quantum of 60 s
    tree = QueueTree.flat(["a", "b"])
    alloc = KarmaAllocator(tree, alpha=0.5, quantum=60.0)
    alloc.capacity = 4.0
    both = np.array([True, True])
    assert alloc.pick_leaf(both, 0.0) == 0  # both below the guarantee: the lowest position
    # when: a holds all 4 units for the first quantum, b nothing
    alloc.record_start(0, 0, 0.0, units=4)
    alloc.record_finish(0, 60.0)
    # then: a borrowed 3 slices (pays 3); b's 1 donated slice was borrowed (earns 1); plus the
    # next quantum's free credit: a 1 - 3 + 1 = -1, b 1 + 1 + 1 = 3
    assert alloc.credits().tolist() == pytest.approx([-1.0, 3.0])
    # each first gets its guaranteed unit, then the borrower with the most credits wins ...
    alloc.record_start(1, 0, 60.0)
    assert alloc.pick_leaf(both, 60.0) == 1
    alloc.record_start(2, 1, 60.0)
    assert alloc.pick_leaf(both, 60.0) == 1
    # ... while its credits minus the units it borrows now exceed a's -1: borrowing 3 leaves 0
    alloc.record_start(3, 1, 60.0, units=3)
    assert alloc.pick_leaf(both, 60.0) == 1
    # borrowing 4 leaves -1, a tie with a: the lowest position
    alloc.record_more(3)
    assert alloc.pick_leaf(both, 60.0) == 0


def test_idle_quanta_only_add_free_credits_and_state_round_trips() -> None:
    tree = QueueTree.flat(["a", "b"], [1.0, 3.0])
    alloc = KarmaAllocator(tree, alpha=0.25, quantum=10.0)
    alloc.capacity = 8.0  # f = 2 and 6; free credits 1.5 and 4.5 per quantum
    alloc.pick_leaf(np.array([False, False]), 5.0)
    alloc.pick_leaf(np.array([False, False]), 35.0)  # three quanta later
    assert alloc.credits().tolist() == pytest.approx([4 * 1.5, 4 * 4.5])
    again = KarmaAllocator.from_state(tree, alloc.to_state())
    assert again.credits().tolist() == alloc.credits().tolist() and again.quantum == 10.0


def test_tied_donors_earn_least_remaining_donation_first() -> None:
    # guaranteed 3 each, no shared slices; A donates 3, B donates 1, C borrows 1; A and B tie on
    # credits: the library's heap pops the smaller remaining donation, B, whose slice C borrows
    alloc, credits = karma_quantum([0, 2, 4], [5.0, 5.0, 5.0], guaranteed=[3, 3, 3], shared=0, free_credits=[0, 0, 0])
    assert alloc.tolist() == [0, 2, 4]
    assert credits.tolist() == [5.0, 6.0, 4.0]


def test_tied_borrowers_least_remaining_want_first() -> None:
    # A wants 4 over its guarantee, B 2, equal credits; C's 3 donated slices are all the supply:
    # one each in lockstep, then the last to the smaller remaining want (B), not to the first index
    alloc, credits = karma_quantum([7, 5, 0], [10.0, 10.0, 10.0], guaranteed=[3, 3, 3], shared=0, free_credits=[0, 0, 0])
    assert alloc.tolist() == [4, 5, 0]
    assert credits.tolist() == [9.0, 8.0, 13.0]


def test_adapter_rotates_leaves_tied_on_credits() -> None:
    # alpha 0: no guarantee, every leaf a borrower; equal credits all through the first quantum
    alloc = KarmaAllocator(QueueTree.flat(["a", "b", "c"]), alpha=0.0, quantum=60.0)
    alloc.capacity = 3.0
    both = np.array([True, True, False])
    picked = []
    for k in range(4):
        leaf = alloc.pick_leaf(both, float(k))
        picked.append(leaf)
        alloc.record_start(k, leaf, float(k))
        alloc.record_finish(k, k + 0.5)
    assert alloc.credits().tolist() == [1.0, 1.0, 1.0]  # still tied: the quantum has not ended
    assert picked == [0, 1, 0, 1]  # ties rotate over the demanding leaves, never c
    again = KarmaAllocator.from_state(QueueTree.flat(["a", "b", "c"]), alloc.to_state())
    assert again.pick_leaf(both, 4.0) == 0  # the turn survives the round trip
