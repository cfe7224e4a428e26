"""Plans and their Diagnostics compare by value: ``==`` answers a bool whatever the arrays' identity.

With the dataclass-generated equality, two Plans holding different array objects raised numpy's
"truth value of an array ... is ambiguous" instead of answering.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from scheduler.abacus.policy import AbacusPolicy
from scheduler.payments import PaymentRule
from scheduler.plan import Diagnostics, Plan, Reservation
from scheduler.types import MarketSnapshot

FLOATS = st.floats(0.0, 1e6, allow_nan=False)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    n = draw(st.integers(0, 5))
    m = draw(st.integers(1, 3))
    ids = np.array(draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n, unique=True)), dtype=np.int64)
    shares = draw(hnp.arrays(np.float64, (n, m), elements=st.floats(0.0, 1.0)))
    sub = draw(hnp.arrays(np.float64, (n, m), elements=FLOATS))
    payments = {int(j): PaymentRule.at_completion(draw(FLOATS)) for j in ids.tolist()}
    diagnostics = Diagnostics("abacus", draw(st.integers(0, 50)), draw(st.booleans()),
                              draw(hnp.arrays(np.float64, (m,), elements=FLOATS)), draw(FLOATS),
                              tuple(draw(st.lists(st.integers(0, 99), max_size=2))))
    reservations = tuple(Reservation(int(j), 0, 1, 0.0, 60.0) for j in ids.tolist()[:1] if draw(st.booleans()))
    return Plan(ids, shares, sub, payments, diagnostics, reservations)


def _fresh(plan: Plan) -> Plan:
    """The same values in new array objects."""
    d = plan.diagnostics
    return Plan(plan.job_ids.copy(), plan.shares.copy(), plan.sub_budgets.copy(), dict(plan.payments),
                replace(d, prices=d.prices.copy()), plan.reservations)


@settings(max_examples=150, deadline=None)
@given(plans(), st.data())
def test_equal_values_compare_equal_and_any_changed_field_unequal(plan: Plan, data: st.DataObject) -> None:
    same = _fresh(plan)
    assert same == plan and plan == same
    assert Plan.from_bytes(plan.to_bytes()) == plan
    assert Plan.from_state(json.loads(json.dumps(plan.to_state()))) == plan
    assert copy.deepcopy(plan) == plan
    d = plan.diagnostics
    changed = [replace(plan, diagnostics=replace(d, prices=d.prices + 1.0)),
               replace(plan, diagnostics=replace(d, rounds=d.rounds + 1)),
               replace(plan, diagnostics=replace(d, max_kkt_residual=d.max_kkt_residual + 1.0))]
    if plan.n:
        k = data.draw(st.integers(0, plan.n - 1))
        for name in ("shares", "sub_budgets"):
            arr = getattr(plan, name).copy()
            arr[k, 0] += 1.0
            changed.append(replace(plan, **{name: arr}))
        ids = plan.job_ids.copy()
        ids[k] = -1
        changed.append(replace(plan, job_ids=ids))
        changed.append(replace(plan, payments={**plan.payments, int(plan.job_ids[k]): PaymentRule.fixed(1e7)}))
    changed.append(replace(plan, reservations=(*plan.reservations, Reservation(1, 0, 1, 0.0, 1.0))))
    for other in changed:
        assert other != plan and plan != other


def test_a_shape_change_is_unequal_not_an_error() -> None:
    d = Diagnostics("abacus", 3, True, np.array([1.0, 2.0]))
    assert d != replace(d, prices=np.array([1.0, 2.0, 3.0]))
    assert d == replace(d, prices=np.array([1.0, 2.0]))


def test_other_types_and_hashing() -> None:
    d = Diagnostics("abacus", 3, True, np.array([1.0]))
    assert d != ("abacus", 3, True) and (d == object()) is False
    with pytest.raises(TypeError):
        hash(d)
    plan = Plan(np.zeros(0, dtype=np.int64), np.zeros((0, 1)), np.zeros((0, 1)), {}, d)
    with pytest.raises(TypeError):
        hash(plan)


def test_two_clearings_of_the_same_snapshot_compare_equal() -> None:
    snap = MarketSnapshot(
        job_ids=np.array([1, 2, 3], dtype=np.int64), group=np.array([0, 0, 1], dtype=np.int64),
        budgets=np.array([100.0, 50.0, 80.0]), weights=np.array([[1.0, 0.5], [1.0, 1.0], [0.2, 1.0]]),
        utility=("linear",) * 3, demand=np.ones((3, 2), dtype=np.bool_), capacity=np.array([6.0, 4.0]),
    )
    first, second = AbacusPolicy().clear(snap), AbacusPolicy().clear(snap)
    assert first.diagnostics.prices is not second.diagnostics.prices
    assert first == second
    assert first != AbacusPolicy().clear(replace(snap, budgets=np.array([100.0, 60.0, 80.0])))
