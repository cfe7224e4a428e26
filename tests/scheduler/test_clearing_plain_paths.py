"""The plain-Python paths around a clearing give the numpy computations they stand in for, bit for bit:
the payment table of a snapshot without SLOs (``scheduler.payments.budget_payments``), the implied prices of
a small sub-budget matrix (``scheduler.abacus.kkt.implied_prices``) and the share check of a Plan
(``simulator.cluster.plan_apply._valid_shares``); invalid inputs raise as before."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from scheduler.abacus.kkt import _numpy_prices, implied_prices
from scheduler.payments import PAYMENT_KINDS, PaymentTable, budget_payments
from scheduler.types import MarketSnapshot
from simulator.cluster.plan_apply import _valid_shares

_SPECIAL = [0.0, -0.0, 1.0, 5e-324, 1e-300, 1e300, 1.7e308, math.inf, -math.inf, math.nan, -1.0, -5e-324]
_FLOATS = st.one_of(st.sampled_from(_SPECIAL), st.floats(min_value=0.0, max_value=1e6),
                    st.floats(allow_nan=True, allow_infinity=True))


def _numpy_budget_payments(job_ids: NDArray[np.int64], budgets: NDArray[np.float64]) -> PaymentTable:
    """``budget_payments`` of a snapshot without SLOs through the constructor's checks (the general path)."""
    n = job_ids.shape[0]
    slo = np.full(n, np.nan)
    has_slo = np.isfinite(slo)
    kind = np.where(has_slo, PAYMENT_KINDS.index("if_slo_met"), PAYMENT_KINDS.index("at_completion")).astype(np.int8)
    return PaymentTable(np.array(job_ids, dtype=np.int64), kind, np.array(budgets, dtype=np.float64),
                        np.where(has_slo, slo, np.nan))


def _same_array(got: NDArray[np.generic], want: NDArray[np.generic]) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape and got.tobytes() == want.tobytes()


def _nan_safe(values: list[float]) -> list[object]:
    return ["nan" if v != v else (v, math.copysign(1.0, v)) for v in values]


@settings(max_examples=300, deadline=None)
@given(budgets=st.lists(_FLOATS, max_size=70), offset=st.integers(-5, 10**6))
def test_a_table_of_budgets_is_the_constructors(budgets: list[float], offset: int) -> None:
    """Without SLOs: the arrays, lists, rules and errors of the constructor's table."""
    n = len(budgets)
    ids = np.arange(offset, offset + 3 * n, 3, dtype=np.int64)[::-1].copy()
    snap = MarketSnapshot(job_ids=ids, group=np.zeros(n, dtype=np.int64), budgets=np.array(budgets, dtype=np.float64),
                          weights=np.ones((n, 2)), utility=("log",) * n, demand=np.ones((n, 2), dtype=np.bool_),
                          capacity=np.array([10.0, 5.0]))
    try:
        want = _numpy_budget_payments(snap.job_ids, snap.budgets)
    except ValueError as error:
        with pytest.raises(ValueError, match=re.escape(str(error))):
            budget_payments(snap)
        assert PaymentTable.at_completion_rows(snap.job_ids, snap.budgets) is None
        return
    got = budget_payments(snap)
    assert n > 64 or PaymentTable.at_completion_rows(snap.job_ids, snap.budgets) is not None  # the plain path ran
    for name in ("ids", "kind", "amount", "min_utility"):
        _same_array(getattr(got, name), getattr(want, name))
    assert got.ids is not snap.job_ids and got.amount is not snap.budgets  # copies, as the constructor's
    assert got.extra == {} and dict(got.extra) == dict(want.extra)
    got_cols, want_cols = got.columns(), want.columns()
    assert got_cols[:2] == want_cols[:2]
    assert [type(v) for col in got_cols for v in col] == [type(v) for col in want_cols for v in col]
    assert _nan_safe(got_cols[2]) == _nan_safe(want_cols[2]) and _nan_safe(got_cols[3]) == _nan_safe(want_cols[3])
    assert got.raw_items() == want.raw_items() and list(got.items()) == list(want.items())


_MATRIX = st.integers(1, 9).flatmap(lambda m: st.tuples(
    st.just(m), st.lists(st.lists(st.one_of(_FLOATS, st.floats(0.0, 200.0)), min_size=m, max_size=m), max_size=70)))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # numpy's own sums of huge entries
@settings(max_examples=300, deadline=None)
@given(matrix=_MATRIX, capacity=st.lists(st.one_of(st.sampled_from(_SPECIAL), st.floats(0.5, 500.0)), min_size=1, max_size=10),
       order=st.sampled_from(["C", "F"]), match=st.booleans())
def test_implied_prices_of_a_small_matrix_are_numpys(matrix: tuple[int, list[list[float]]], capacity: list[float],
                                                      order: str, match: bool) -> None:
    """Prices (bytes) and errors of numpy's sum over the rows divided by the capacity."""
    m, rows = matrix
    b = np.array(rows, dtype=np.float64, order=order).reshape(-1, m)
    cap = np.array((capacity * m)[:m] if match else capacity, dtype=np.float64)
    try:
        want = _numpy_prices(b, cap)
    except ValueError as error:
        with pytest.raises(ValueError, match=re.escape(str(error))):
            implied_prices(b, cap)
        return
    _same_array(implied_prices(b, cap), want)


@pytest.mark.parametrize("m", [1, 2, 3, 8])
@pytest.mark.parametrize("order", ["C", "F"])
def test_implied_prices_add_rows_in_numpys_order(m: int, order: str) -> None:
    """Sums whose rounding depends on the order (numpy's: from 0.0, row after row; pairwise along a
    contiguous column), negative zeros included."""
    rng = np.random.default_rng(m)
    for n in range(128 // m + 1):
        for _ in range(40):
            b = np.exp(rng.uniform(-30.0, 30.0, (n, m))) * (rng.random((n, m)) < 0.8)
            b[rng.random((n, m)) < 0.1] = -0.0
            b = np.asarray(b, order=order)
            cap = rng.uniform(0.5, 100.0, m)
            _same_array(implied_prices(b, cap), _numpy_prices(b, cap))


def _numpy_valid(shares: object, n: int, m: int) -> bool:
    if not isinstance(shares, np.ndarray) or shares.shape != (n, m):
        return False
    if n == 0:
        return True
    return bool(shares.min() >= 0) and math.isfinite(float(shares.sum()))


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # numpy's own sums of huge entries
@settings(max_examples=300, deadline=None)
@given(matrix=_MATRIX, order=st.sampled_from(["C", "F"]), m_off=st.integers(-1, 1))
def test_the_share_check_in_floats_is_numpys(matrix: tuple[int, list[list[float]]], order: str, m_off: int) -> None:
    m, rows = matrix
    shares = np.array(rows, dtype=np.float64, order=order).reshape(-1, m)
    n = shares.shape[0]
    assert _valid_shares(shares, n, m + m_off) == _numpy_valid(shares, n, m + m_off)
    big = np.full((8, 8), 1.7e308)  # finite entries whose sum overflows: numpy's check fails
    assert _valid_shares(big, 8, 8) is False and _numpy_valid(big, 8, 8) is False
