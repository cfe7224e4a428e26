"""DRF (Ghodsi et al., NSDI'11): the paper's two-user example and DRF in the cluster."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scheduler.fairshare.fairness import QueueTree
from scheduler.published.drf import DrfAllocator, dominant_shares, drf_tasks
from scheduler.registry import FAIRSHARE
from simulator.cluster.model import Cluster
from simulator.records import JobSpec


def test_paper_example_a_gets_three_tasks_and_b_two() -> None:
    # DRF paper, Sec. 4 (Fig. 3): cluster <9 CPU, 18 GB>; A's tasks <1 CPU, 4 GB>, B's <3 CPU, 1 GB>
    tasks = drf_tasks([[1, 4], [3, 1]], [9, 18])
    assert tasks.tolist() == [3, 2]
    # by hand: A holds <3 CPU, 12 GB> (dominant: memory 12/18), B <6 CPU, 2 GB> (CPU 6/9) -- both 2/3
    shares = dominant_shares(tasks[:, None] * np.array([[1, 4], [3, 1]]), [9, 18])
    assert shares.tolist() == pytest.approx([2 / 3, 2 / 3])


def test_weights_scale_the_dominant_share() -> None:
    # B weighs 2: progressive filling equalises s_i / w_i (Sec. 4.3); both users want CPU only
    tasks = drf_tasks([[1, 0], [1, 0]], [9, 18], weights=[1, 2])
    assert tasks.tolist() == [3, 6]


def test_filling_stops_when_the_chosen_task_does_not_fit() -> None:
    # Alg. 1 returns "the cluster is full" at the first task that does not fit
    assert drf_tasks([[5, 1], [1, 1]], [6, 100], max_tasks=[3, 1]).tolist() == [1, 1]


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError):
        drf_tasks([[0, 0]], [1, 1])
    with pytest.raises(ValueError):
        dominant_shares([[1, 1]], [0, 1])


def test_linked_allocators_rank_leaves_by_the_dominant_share_over_both_types() -> None:
    # given: a holds 3 of 6 map units, b 1 of 2 reduce units: both dominant shares are 1/2
    tree = QueueTree.flat(["a", "b"])
    maps, reduces = DrfAllocator(tree), DrfAllocator(tree)
    maps.capacity, reduces.capacity = 6.0, 2.0
    DrfAllocator.link([maps, reduces])
    maps.record_start(0, 0, 0.0, units=3)
    reduces.record_start(1, 1, 0.0, units=1)
    both = np.array([True, True])
    assert maps.pick_leaf(both, 0.0) == 0  # a tie: the lowest position
    # when b takes a map unit its dominant share stays 1/2 (reduce; maps 1/6): still a tie
    maps.record_start(2, 1, 0.0)
    assert maps.pick_leaf(both, 0.0) == 0
    # when a takes a fourth map unit (4/6 = 2/3 > 1/2) the next map unit goes to b
    maps.record_start(3, 0, 0.0)
    assert maps.pick_leaf(both, 0.0) == 1
    # a type alone (unlinked) only sees its own usage: b (1 map unit) is below a (4)
    alone = DrfAllocator.from_state(tree, maps.to_state())
    assert alone.pick_leaf(both, 0.0) == 1


def test_in_the_cluster_drf_equalises_dominant_shares_not_units() -> None:
    # given: 12 map and 3 reduce slots, unstaged; b holds all 3 reduce slots from t = 0,
    # then at t = 1 a and b each want 20 map slots
    tree = QueueTree.flat(["a", "b"])
    assert FAIRSHARE.validate("drf") == "drf"
    running = {}
    for policy in ("drf", "mlrf"):
        cluster = Cluster([12, 3], tree, policy=policy, dispatch="fifo", staged=False, sample_interval=math.inf)
        cluster.submit(JobSpec(1, 1, (0, 3), (0.0, 100.0), 0.0))
        cluster.submit(JobSpec(2, 0, (20, 0), (100.0, 0.0), 1.0))
        cluster.submit(JobSpec(3, 1, (20, 0), (100.0, 0.0), 1.0))
        cluster.advance(1.0)
        running[policy] = (cluster.job_state(2)[1][0], cluster.job_state(3)[1][0])
    # then: b's dominant share is 1 (3 of 3 reduce slots), so DRF gives a every map slot
    # (a reaches 12/12 = 1 only with all of them); MLRF, per type, splits the maps 6 / 6
    assert running["drf"] == (12, 0)
    assert running["mlrf"] == (6, 6)
