"""Fairness metrics of paper 002, Eqs. 1-5, and the T_wait guidance of Eq. 7."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from scheduler.fairshare.fairness import (
    QueueTree,
    fair_share_units,
    fairness_degree,
    fairness_series,
    sharing_benefit,
    sharing_loss,
    twait_for_tasks,
    twait_guidance,
)
from scheduler.fairshare.unit_tasks import allocate_rounds

PROPERTY = settings(max_examples=100, deadline=None)


def test_fair_share_units_follow_tree_weights() -> None:
    tree = QueueTree.from_paths({"root.g1.a": 1, "root.g1.b": 3, "root.g2": 2})
    assert fair_share_units(tree, 120) == pytest.approx([10.0, 30.0, 80.0])
    assert fair_share_units(QueueTree.flat(["A", "B"]), 100).tolist() == [50.0, 50.0]
    with pytest.raises(ValueError):
        fair_share_units(tree, -1)


@pytest.mark.parametrize(
    ("usage", "entitled", "rho"),
    [
        pytest.param([2.0, 3.0], [1.0, 4.0], [2.0, 0.75], id="ratio"),
        pytest.param([0.0], [0.0], [1.0], id="no-demand-no-loss"),
        pytest.param([5.0], [0.0], [math.inf], id="usage-without-entitlement"),
        pytest.param([0.0], [4.0], [0.0], id="starved"),
    ],
)
def test_fairness_degree_cases(usage: list[float], entitled: list[float], rho: list[float]) -> None:
    assert fairness_degree(np.array(usage), np.array(entitled)).tolist() == rho


def test_fairness_degree_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        fairness_degree(np.array([1.0, 2.0]), np.array([1.0]))
    with pytest.raises(ValueError):
        fairness_degree(np.array([-1.0]), np.array([1.0]))
    with pytest.raises(ValueError):
        fairness_degree(np.array([np.nan]), np.array([1.0]))
    with pytest.raises(ValueError):
        sharing_benefit(np.array([np.nan]))


def test_benefit_and_loss_hand_checked() -> None:
    rho = np.array([1.5, 0.25, 1.0, 0.5])
    assert sharing_benefit(rho) == 0.5
    assert sharing_loss(rho) == -1.25


# Table 1 "Total demand" and "Current allocation" columns, as published.
TABLE1 = {
    "mlrf": ([[20, 80], [40, 60], [50, 50], [50, 50]], [[20, 100], [40, 80], [80, 70], [90, 70]]),
    "ltrf": ([[20, 80], [40, 60], [80, 20], [60, 40]], [[20, 100], [40, 80], [80, 70], [60, 100]]),
}


@pytest.mark.parametrize(
    ("policy", "rho_t4"),
    [
        # MLRF: A gets 160 of an entitled 20+40+50+50, B 240 of 4 x 50
        pytest.param("mlrf", [1.0, 1.2], id="table1a"),
        # LTRF: A gets 200 of 160, B 200 of 200
        pytest.param("ltrf", [1.25, 1.0], id="table1b"),
    ],
)
def test_fairness_of_table1(policy: str, rho_t4: list[float]) -> None:
    allocated, demand = (np.array(x) for x in TABLE1[policy])
    share = fair_share_units(QueueTree.flat(["A", "B"]), 100)
    rho = fairness_series(allocated, demand, share)
    assert rho[-1] == pytest.approx(rho_t4)
    assert sharing_loss(rho[-1]) == 0.0
    assert sharing_benefit(rho[-1]) == pytest.approx(sum(r - 1 for r in rho_t4))


def test_table1_allocation_driver_feeds_the_metrics() -> None:
    # the published allocation is what allocate_rounds produces (see test_fairshare)
    tree = QueueTree.flat(["A", "B"])
    new = np.array([[20, 100], [40, 60], [80, 50], [60, 50]])
    for policy, (allocated, _) in TABLE1.items():
        assert allocate_rounds(tree, 100, new, policy=policy).tolist() == allocated


rhos = hnp.arrays(np.float64, st.integers(1, 8), elements=st.floats(0, 10))


@PROPERTY
@given(rhos)
def test_loss_nonpositive_benefit_nonnegative(rho: np.ndarray) -> None:
    psi, omega = sharing_benefit(rho), sharing_loss(rho)
    assert omega <= 0.0 <= psi
    assert psi + omega == pytest.approx(float((rho - 1).sum()), abs=1e-9)


@PROPERTY
@given(
    st.integers(1, 6).flatmap(
        lambda n: st.tuples(
            hnp.arrays(np.int64, st.tuples(st.integers(1, 12), st.just(n)), elements=st.integers(0, 30)),
            st.lists(st.integers(1, 4), min_size=n, max_size=n),
            st.integers(1, 40),
        )
    )
)
def test_static_partition_has_rho_one(case: tuple[np.ndarray, list[int], int]) -> None:
    demand, weights, capacity = case
    share = fair_share_units(QueueTree.flat([f"u{i}" for i in range(len(weights))], weights), capacity)
    allocated = np.minimum(demand, share)  # each leaf gets exactly min(d, S)
    rho = fairness_series(allocated, demand, share)
    assert rho == pytest.approx(np.ones_like(rho))
    assert sharing_benefit(rho[-1]) == pytest.approx(0.0) and sharing_loss(rho[-1]) == pytest.approx(0.0)


@PROPERTY
@given(hnp.arrays(np.int64, st.tuples(st.integers(1, 10), st.just(3)), elements=st.integers(0, 20)))
def test_giving_half_the_entitlement_is_a_loss(demand: np.ndarray) -> None:
    share = np.array([5.0, 5.0, 5.0])
    entitled = np.minimum(demand, share)
    rho = fairness_series(np.floor(entitled / 2), demand, share)[-1]
    owed = entitled.sum(0) > 0
    assert (rho[owed] < 1.0).all() and (rho[~owed] == 1.0).all()
    assert (sharing_loss(rho) < 0) == owed.any()


def test_twait_guidance_eq7() -> None:
    # paper 002, Sec. 7.6: TPC-H tasks average 23.6 s
    assert twait_guidance(23.6, 2.0) == pytest.approx(11.8)  # "about 12 running tasks"
    assert twait_guidance(23.6, 4.0) == pytest.approx(5.9)  # "about 6"
    assert twait_guidance(23.6, 0.0) == math.inf  # never starved: plain LTRF
    assert twait_guidance(23.6, math.inf) == 0.0  # the naive hierarchy
    assert twait_for_tasks(23.6, 12.0) == pytest.approx(23.6 / 12)
    with pytest.raises(ValueError):
        twait_guidance(-1.0, 2.0)
    with pytest.raises(ValueError):
        twait_for_tasks(10.0, 0.0)


@PROPERTY
@given(st.floats(0.1, 1e4), st.floats(0.1, 1e3))
def test_twait_guidance_inverts(t_avg: float, n_task: float) -> None:
    assert twait_guidance(t_avg, twait_for_tasks(t_avg, n_task)) == pytest.approx(n_task)
