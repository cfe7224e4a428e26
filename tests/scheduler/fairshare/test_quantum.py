"""Adaptive time quantum per application and per queue, bottom-up (paper 002, Sec. 6.2.1, Fig. 4)."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.fairshare.allocator import FairShareAllocator
from scheduler.fairshare.fairness import QueueTree

TREE = {"root.G1.a": 1.0, "root.G1.b": 1.0, "root.G2.c": 1.0}


def _two_apps() -> FairShareAllocator:
    # given: in leaf a, application 1 ran three tasks of 10 s, application 2 one task of 2 s
    alloc = FairShareAllocator(QueueTree.from_paths(TREE), policy="ltrf", initial_q=5.0)
    for k in range(3):
        alloc.record_start(k, 0, 0.0, None, app=1)
    alloc.record_start(3, 0, 0.0, None, app=2)
    alloc.record_start(9, 0, 0.0, None, app=1)  # application 1 keeps a task running
    alloc.record_finish(3, 2.0)
    for k in range(3):
        alloc.record_finish(k, 10.0)
    return alloc


def test_leaf_quantum_is_the_mean_of_its_applications_not_of_its_tasks() -> None:
    alloc = _two_apps()
    q = alloc.quantum()
    tree = alloc.tree
    assert q[tree.index("root.G1.a")] == pytest.approx((10 + 2) / 2)  # not (3 * 10 + 2) / 4
    assert q[tree.index("root.G1")] == pytest.approx(6.0)  # the group: mean of children with history
    assert q[tree.index("root.G2.c")] == pytest.approx(6.0)  # no history: inherits top-down
    assert q[tree.index("root")] == pytest.approx(6.0)


def test_running_task_uses_its_applications_quantum_else_its_leafs() -> None:
    alloc = _two_apps()
    alloc.record_start(20, 0, 10.0, None, app=3)  # a new application of leaf a
    # at t = 11: app 1's running task counts max(Q_app1 = 10, elapsed 11) = 11; app 3's counts Q_leaf = 6
    finished = 3 * 10 + 2
    assert alloc.usage(11.0)[0] == pytest.approx(finished + 11 + 6)
    # once the application's own task finishes, its other tasks use its own Q
    alloc.record_start(21, 0, 11.0, None, app=3)
    alloc.record_finish(20, 12.0)  # app 3: Q = 2
    assert alloc.usage(12.0)[0] == pytest.approx(finished + 2 + 12 + 2)
    assert alloc.quantum()[alloc.tree.index("root.G1.a")] == pytest.approx((10 + 2 + 2) / 3)


def test_state_round_trip_keeps_application_quanta() -> None:
    alloc = _two_apps()
    again = FairShareAllocator.from_state(alloc.tree, alloc.to_state())
    assert again.usage(15.0).tolist() == alloc.usage(15.0).tolist()
    assert np.array_equal(again.quantum(), alloc.quantum())
    again.record_finish(9, 20.0)
    alloc.record_finish(9, 20.0)
    assert np.array_equal(again.quantum(), alloc.quantum())


def test_an_application_leaves_its_quantum_in_its_leaf() -> None:
    alloc = _two_apps()
    alloc.record_finish(9, 10.0)  # application 1's last task: Q_app1 stays 10
    assert 1 not in alloc._apps.apps  # its entry is dropped
    assert alloc.quantum()[alloc.tree.index("root.G1.a")] == pytest.approx(6.0)


def test_tasks_without_an_application_keep_the_leaf_mean_of_tasks() -> None:
    alloc = FairShareAllocator(QueueTree.from_paths(TREE), policy="ltrf")
    for key in (1, 2, 3):
        alloc.record_start(key, 0, 0.0, None)
    for key, end in ((3, 4.0), (1, 10.0), (2, 10.0)):
        alloc.record_finish(key, end)
    assert alloc.quantum()[alloc.tree.index("root.G1.a")] == pytest.approx(8.0)


def test_older_state_without_application_quanta_loads() -> None:
    alloc = FairShareAllocator(QueueTree.from_paths(TREE), policy="ltrf")
    alloc.record_start(1, 1, 0.0, None)
    state = alloc.to_state()
    del state["quanta"]
    state["q_sum"], state["q_count"] = [12.0, 0.0, 0.0], [3, 0, 0]
    state["running"] = [row[:5] for row in state["running"]]
    old = FairShareAllocator.from_state(alloc.tree, state)
    assert old.quantum()[alloc.tree.index("root.G1.a")] == pytest.approx(4.0)
    old.record_finish(1, 6.0)  # the running task of leaf b finishes under its pseudo-application
    assert old.quantum()[alloc.tree.index("root.G1.b")] == pytest.approx(6.0)


def test_an_application_cannot_move_between_leaves() -> None:
    alloc = FairShareAllocator(QueueTree.from_paths(TREE), policy="ltrf")
    alloc.record_start(1, 0, 0.0, None, app=7)
    with pytest.raises(ValueError, match="application 7"):
        alloc.record_start(2, 1, 0.0, None, app=7)
    with pytest.raises(ValueError, match=">= 0"):
        alloc.record_start(3, 1, 0.0, None, app=-4)
