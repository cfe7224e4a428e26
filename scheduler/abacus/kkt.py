"""Read-outs of the auction's result: implied prices and the KKT residual (paper 000, Sec. 4.2,
Lemma 2). Re-exported by ``scheduler.abacus.auction``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scheduler.abacus.steps import _TINY, NEGLIGIBLE, _group_index, _group_sum
from scheduler.abacus.utility import check_nonnegative, demand_mask, log_mask, marginal

if TYPE_CHECKING:
    from scheduler.abacus.state import AuctionResult

FloatArray = NDArray[np.float64]


def implied_prices(sub_budgets: ArrayLike, capacity: ArrayLike) -> FloatArray:
    """(m,) unit price per resource type: total sub-budget on j divided by C_j.

    Money per slot (paper 000, Sec. 4.2 / plan.Diagnostics.prices). ``sub_budgets`` is (n, m),
    ``capacity`` (m,) finite and > 0. Raises ValueError on shape mismatch,
    negative or non-finite sub-budgets, or non-positive capacity.

    A small C-ordered float64 matrix (:func:`_small_prices`) is summed and checked on floats,
    bit for bit as numpy: a column sum over the rows runs from 0.0 row after row.
    """
    small = _small_prices(sub_budgets, capacity)
    return small if small is not None else _numpy_prices(sub_budgets, capacity)


def _numpy_prices(sub_budgets: ArrayLike, capacity: ArrayLike) -> FloatArray:
    """:func:`implied_prices` through numpy, for any shape and order (its general path)."""
    b = check_nonnegative("sub_budgets", sub_budgets, 2)
    cap = np.asarray(capacity, dtype=np.float64)
    if cap.shape != (b.shape[1],):
        raise ValueError(f"capacity has shape {cap.shape}, expected ({b.shape[1]},)")
    if not (np.all(np.isfinite(cap)) and np.all(cap > 0)):
        raise ValueError("capacity must be finite and > 0")
    prices: FloatArray = b.sum(axis=0) / cap
    return prices


_SMALL_ENTRIES = 128  # implied_prices sums matrices of up to this many entries on floats
_SMALL_TYPES = (2, 8)  # ... with this many columns (one column is a contiguous, pairwise sum in numpy)


def _small_prices(sub_budgets: ArrayLike, capacity: ArrayLike) -> FloatArray | None:
    """:func:`implied_prices` of a C-ordered (n, m) float64 matrix of at most ``_SMALL_ENTRIES`` entries,
    ``_SMALL_TYPES[0] <= m <= _SMALL_TYPES[1]``, and an (m,) float64 capacity, as floats: numpy's sum
    over axis 0 of such a matrix adds row after row from 0.0, the order of this loop. None for other
    inputs, invalid ones and prices that overflow (the numpy path then computes the prices or raises).
    Paper 000, Sec. 4.2: the implied unit prices."""
    if not (isinstance(sub_budgets, np.ndarray) and isinstance(capacity, np.ndarray)
            and sub_budgets.dtype == np.float64 and capacity.dtype == np.float64 and sub_budgets.ndim == 2
            and sub_budgets.flags.c_contiguous and sub_budgets.size <= _SMALL_ENTRIES):
        return None
    m = sub_budgets.shape[1]
    if capacity.shape != (m,) or not _SMALL_TYPES[0] <= m <= _SMALL_TYPES[1]:
        return None
    cap: list[float] = capacity.tolist()
    if not all(0.0 < c < math.inf for c in cap):
        return None
    totals = [0.0] * m
    for row in sub_budgets.tolist():
        for j, v in enumerate(row):
            if not 0.0 <= v < math.inf:  # NaN, inf or negative: the numpy path raises
                return None
            totals[j] += v
    prices = [t / c for t, c in zip(totals, cap, strict=True)]
    if not all(p < math.inf for p in prices):  # an overflow: numpy's path computes it (and warns)
        return None
    return np.array(prices, dtype=np.float64)


def kkt_residual(result: AuctionResult, weights: ArrayLike, utility: str | Sequence[str],
                 demand: ArrayLike | None = None, groups: ArrayLike | None = None) -> FloatArray:
    """(n,) distance of each job from the KKT point of its budget split, in [0, 1].

    Paper 000, Lemma 2 (proof): job i's split is optimal for fixed rivals iff
    du_i/db_ij = alpha x_ij / b_ij is one value lambda_i wherever it bids, and
    <= lambda_i where it bids (next to) nothing. Residual: the larger of
    (max - min) / max of x_ij / b_ij over b_ij > NEGLIGIBLE * b_i, and
    min(1, x_ij / b_ij / lambda_i - 1) over the other demanded entries, skipping
    those where the best response b_i x_ij / sum_l x_il is also below
    NEGLIGIBLE * b_i and x_ij / b_ij <= lambda_i (a corner: a linear bid ~0+ at
    alpha = 1 has a best response ~0+ whatever its du/db). 0 at an exact KKT
    point, for zero-budget or idle jobs, and for a linear job that no split
    can gain NEGLIGIBLE of its utility (sum_j w_ij (1 - s_ij) <= NEGLIGIBLE u_i:
    it holds all but that of every resource it values, so any split is a best
    response; ``scheduler.abacus.steps._flat_rows``).

    1 - s_ij is summed from the rivals' shares in the job's group (``groups``,
    as given to :func:`auction`; None: one group) where s_ij > 1/2: computed as
    1.0 - s_ij it has an absolute error ~1e-16, so a job holding all but 1e-13 of
    a resource showed a residual ~1e-2 (and an exact 0 when 1 - s rounded to 0)
    at a point the auction had solved to 1e-10.
    """
    b = result.sub_budgets
    w = check_nonnegative("weights", weights, 2)
    if w.shape != b.shape:
        raise ValueError(f"weights has shape {w.shape}, sub-budgets {b.shape}")
    dem = demand_mask(demand, (w.shape[0], w.shape[1]))
    s = result.shares
    rest = np.where(dem, _rivals_share(s, groups), 0.0)
    is_log = log_mask(utility, w.shape[0])
    x = np.where(dem, marginal(s, rest, w, is_log), 0.0)
    budget = b.sum(axis=1, keepdims=True)
    interior = dem & (b > NEGLIGIBLE * budget)
    with np.errstate(over="ignore"):  # x / b may be huge next to b ~ 0; inf is fine
        ratio = x / np.where(b > 0, b, 1.0)
        lam = np.max(np.where(interior, ratio, 0.0), axis=1, keepdims=True, initial=0.0)
        low = np.min(np.where(interior, ratio, np.inf), axis=1, keepdims=True, initial=np.inf)
        safe_lam = np.where(lam > 0, lam, 1.0)
        spread = np.where(lam > 0, (lam - np.minimum(low, lam)) / safe_lam, 0.0)[:, 0]
        excess = np.where((b > 0) & (lam > 0), ratio / safe_lam - 1.0, 1.0)
    # below the money resolution NEGLIGIBLE * b_i on both sides: not a violation, unless
    # du/db there beats lambda_i (Algorithm 2 maps a linear bid ~0+ at alpha = 1 to ~0+)
    best = budget * x / np.maximum(x.sum(axis=1, keepdims=True), _TINY)
    bound = dem & ~interior & ((best > NEGLIGIBLE * budget) | ((b > 0) & (ratio > lam)))
    violation = np.max(np.where(bound, np.clip(excess, 0.0, 1.0), 0.0), axis=1, initial=0.0)
    residual: FloatArray = np.maximum(spread, violation)
    # a linear job that no split can gain NEGLIGIBLE of its utility is at a best response
    linear = ~is_log
    flat = linear & (np.sum(w * rest, axis=1) <= NEGLIGIBLE * np.sum(w * s, axis=1))
    out: FloatArray = np.where(flat, 0.0, residual)
    return out


def _rivals_share(shares: FloatArray, groups: ArrayLike | None) -> FloatArray:
    """(n, m) 1 - s_ij, summed from the other jobs' shares of the group where s_ij > 1/2."""
    index, n_groups = _group_index(groups, shares.shape[0])
    dominant = shares > 0.5  # at most one job per (group, j) block
    others = _group_sum(np.where(dominant, 0.0, shares), index, n_groups)
    rest: FloatArray = np.where(dominant, others, 1.0 - shares)
    return rest
