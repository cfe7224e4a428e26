"""The auction's helpers against their reference forms: the group numbering of a large
market (a table of ranks) must be np.unique's inverse exactly, the log-utility mask of
one kind for every job the per-job comparison's, and the group sums of one bincount over
(group, type) slots a bincount per type's, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from scheduler.abacus.steps import _PLAIN_GROUPS, _group_index, _group_sum, _row_sum
from scheduler.abacus.utility import log_mask

DTYPES = st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64, np.intp])


@st.composite
def label_arrays(draw: st.DrawFn) -> np.ndarray:
    dtype = np.dtype(draw(DTYPES))
    info = np.iinfo(dtype)
    n = draw(st.integers(_PLAIN_GROUPS + 1, 3 * _PLAIN_GROUPS))
    span = draw(st.sampled_from([1, 3, 40, n, 4 * n, 4 * n + 1, 100 * n]))
    low = draw(st.integers(int(info.min), max(int(info.min), int(info.max) - span)))
    high = min(int(info.max), low + span)
    return draw(hnp.arrays(dtype, n, elements=st.integers(low, high)))


@settings(max_examples=150, deadline=None)
@given(label_arrays())
def test_group_index_of_a_large_market_is_np_unique_inverse(labels: np.ndarray) -> None:
    index, n_groups = _group_index(labels, labels.shape[0])
    unique, inverse = np.unique(labels, return_inverse=True)
    assert index.dtype == np.intp and index.shape == labels.shape
    assert np.array_equal(index, inverse.astype(np.intp)) and n_groups == unique.shape[0]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["linear", "log"]), min_size=0, max_size=40), st.booleans())
def test_log_mask_is_the_per_job_comparison(kinds: list[str], as_tuple: bool) -> None:
    got = log_mask(tuple(kinds) if as_tuple else kinds, len(kinds))
    want = np.array([k == "log" for k in kinds], dtype=np.bool_)
    assert got.dtype == np.bool_ and got.shape == (len(kinds),) and np.array_equal(got, want)
    assert np.array_equal(log_mask("log", 3), [True] * 3) and not log_mask("linear", 3).any()


@pytest.mark.parametrize("kinds", [["linear", "cubic"], ["cubic"], ["log", 5]])
def test_log_mask_refuses_unknown_kinds(kinds: list[object]) -> None:
    with pytest.raises(ValueError, match="unknown utility kind"):
        log_mask(kinds, len(kinds))  # type: ignore[arg-type]


def _group_sum_per_column(values: np.ndarray, index: np.ndarray, n_groups: int) -> np.ndarray:
    totals = np.empty((n_groups, values.shape[1]), dtype=np.float64)
    for j in range(values.shape[1]):
        totals[:, j] = np.bincount(index, weights=values[:, j], minlength=n_groups)
    return totals[index]


finite = st.one_of(st.floats(-1e300, 1e300), st.sampled_from([0.0, -0.0, 5e-324, 1e-308, 1.0, 3.0]))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 60), st.integers(1, 4), st.integers(1, 7), st.data())
def test_group_sums_are_a_bincount_per_type_bit_for_bit(n: int, m: int, labels: int, data: st.DataObject) -> None:
    values = data.draw(hnp.arrays(np.float64, (n, m), elements=finite))
    groups = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, labels - 1)))
    index, n_groups = _group_index(groups, n)
    if n_groups < 2:
        return  # one group: a column sum, not a bincount
    for _ in range(2):  # the second call reads the kept slots
        got, want = _group_sum(values, index, n_groups), _group_sum_per_column(values, index, n_groups)
        assert got.shape == want.shape and got.tobytes() == want.tobytes()
    other = np.ascontiguousarray(index[::-1])  # a new index is not read through the kept slots
    assert _group_sum(values, other, n_groups).tobytes() == _group_sum_per_column(values, other, n_groups).tobytes()
    assert _row_sum(values).tobytes() == (values @ np.ones(m))[:, None].tobytes()
