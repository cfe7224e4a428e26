"""Tests of the whole-slot deadline quote (paper 003, Eqs. 1-2; docs/mechanisms.md, "Whole slots")."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from numpy.typing import NDArray

from scheduler.deadline.payment import min_payment
from scheduler.deadline.slots import min_payment_slots

FloatArray = NDArray[np.float64]


def brute_force(
    l_: FloatArray, D: float, b: FloatArray, a: NDArray[np.int64], theta: float, tasks: list[int] | None = None,
) -> tuple[float, tuple[int, ...] | None]:
    """Every whole vector in the box [1, a] (0 where there is no work): the least payment
    among those meeting D, computed from the definitions alone, and of equal payments
    the vector with the fewest units."""
    R = l_.shape[0]
    ranges = [range(1, int(a[k]) + 1) if l_[k] > 0 else range(0, 1) for k in range(R)]
    best, arg = math.inf, None
    for r in itertools.product(*ranges):
        t = 0.0
        for k in range(R):
            if l_[k] > 0:
                t += l_[k] / r[k] if tasks is None else math.ceil(tasks[k] / r[k]) * l_[k] / tasks[k]
        t *= theta
        if t <= D * (1 + 1e-12):
            p = float(np.dot(b, r)) * t / R
            if p < best * (1 - 1e-12) or (p <= best * (1 + 1e-12) and arg is not None and sum(r) < sum(arg)):
                best, arg = p, r
    return best, arg


@pytest.mark.parametrize("waves", [False, True], ids=["divisible-work", "whole-tasks"])
def test_matches_brute_force_on_small_instances(waves: bool) -> None:
    rng = np.random.default_rng(11 if waves else 12)
    checked = 0
    for case in range(300):
        R = int(rng.integers(1, 4))
        a = rng.integers(1, 9, R)
        tasks = [int(x) for x in rng.integers(1, 12, R)] if waves else None
        l_ = rng.uniform(0.5, 10.0, R) if not waves else np.array([n * rng.uniform(0.5, 3.0) for n in tasks or []])
        if rng.random() < 0.2 and R > 1:
            l_[rng.integers(R)] = 0.0
        b = rng.uniform(0.1, 5.0, R)
        theta = float(rng.uniform(0.3, 1.0))
        waves_at_a = [1.0 / a[k] if tasks is None else math.ceil(tasks[k] / a[k]) / tasks[k] for k in range(R)]
        fastest = theta * sum(l_[k] * waves_at_a[k] for k in range(R) if l_[k] > 0)
        D = fastest * float(rng.uniform(0.9, 4.0))
        x = min_payment_slots(l_, D, b, a, theta=theta, tasks=tasks)
        oracle, arg = brute_force(l_, D, b, a, theta, tasks)
        if math.isinf(oracle):
            useful = a if tasks is None else np.minimum(a, tasks)  # more slots than tasks never help
            assert not x.feasible and np.array_equal(x.slots, np.where(l_ > 0, useful, 0))
            continue
        checked += 1
        assert x.feasible, f"case {case}"
        assert x.payment == pytest.approx(oracle, rel=1e-9), f"case {case}"
        assert int(x.slots.sum()) == sum(arg or ()), f"case {case}: of equal payments, the fewest units"
        assert x.exec_time <= D * (1 + 1e-12)
        assert np.all(x.slots <= a)
        assert x.payment <= x.rounded_up_payment * (1 + 1e-12)  # never worse than rounding up
        assert x.rounding_cost >= -1e-9  # whole slots never beat divisible resources
    assert checked > 150


def test_rounding_up_is_feasible_and_the_search_can_beat_it() -> None:
    rng = np.random.default_rng(13)
    beaten = 0
    for _ in range(200):
        l_, b = rng.uniform(1, 30, 3), rng.uniform(0.2, 4, 3)
        D = float(rng.uniform(2, 20))
        x = min_payment_slots(l_, D, b, [50, 50, 50])
        cont = min_payment(l_, D, b, [50, 50, 50])
        assert np.array_equal(x.rounded_up, np.ceil(cont.resources - 1e-9).astype(int))
        assert math.isfinite(x.rounded_up_payment)  # more units never take longer
        assert x.payment <= x.rounded_up_payment * (1 + 1e-12)
        assert x.rounding_cost == pytest.approx(x.payment - cont.payment)
        beaten += x.payment < x.rounded_up_payment * (1 - 1e-9)
    assert beaten > 20


def test_cheapest_node_by_whole_slot_payment() -> None:
    l_ = np.array([6.0, 2.0])
    prices = np.array([[1.0, 1.0], [1.05, 1.05]])
    avail = np.array([[3, 1], [20, 20]])
    x = min_payment_slots(l_, 5.0, prices, avail)
    brute = [brute_force(l_, 5.0, prices[p], avail[p], 1.0)[0] for p in range(2)]
    assert x.node == int(np.argmin(brute)) and x.payment == pytest.approx(min(brute))


def test_task_waves_buy_only_efficient_slot_counts() -> None:
    # 10 tasks of 1 s: 5 slots (2 waves) and 6..9 slots (also 2 waves) take equally long,
    # so the cheapest vector never holds 6..9 slots of that dimension.
    x = min_payment_slots([10.0, 4.0], 3.0, [1.0, 1.0], [20, 20], tasks=[10, 4])
    assert x.slots[0] in (1, 2, 3, 4, 5, 10) and x.slots[1] in (1, 2, 4)
    assert x.exec_time <= 3.0


def test_bad_task_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="tasks"):
        min_payment_slots([1.0, 1.0], 1.0, [1, 1], [5, 5], tasks=[1])
    with pytest.raises(ValueError, match="tasks"):
        min_payment_slots([1.0, 1.0], 1.0, [1, 1], [5, 5], tasks=[0, 1])
