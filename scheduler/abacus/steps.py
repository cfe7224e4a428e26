"""Algorithm 2's step, made to converge (paper 000, Sec. 3, Algorithms 1-2).

The auction's rounds (``scheduler.abacus.auction``) move each job's sub-budgets toward its
best response. The plain step of Algorithm 2 is exact at alpha = 0 but far too short
for linear utilities near alpha = 1; here it is a Newton step in log b on the job's
KKT condition (:func:`_newton_log_step`), damped per job when it swings
(:func:`_adapt_damping`, :func:`_damped_move`), with Algorithm 1's convergence test
(:func:`_change_by_entry`, :func:`_flat_rows`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    from scheduler.abacus.state import _Market

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

# A sub-budget below this fraction of its job's budget is "zero" for the
# convergence test and a bound (corner) entry for kkt_residual.
NEGLIGIBLE = 1e-12

_TINY = float(np.finfo(np.float64).tiny)
_MIN_DAMPING = 1.0 / 64.0
_DAMPING_REGROWTH = 1.25
_MIN_SLOPE = 1e-3  # |h| floor of the Newton step (alpha = 1, s -> 0)
_MAX_UP = 2.0  # largest Newton step in log b: x e^2 per round
_MAX_DOWN = 3.0  # a corner entry falls x e^-3 per round toward 0


def _row_sum(values: FloatArray) -> FloatArray:
    """(n, 1) row sums of (n, m) values as a matrix-vector product: numpy's reduction
    over a short last axis costs several times more per element than BLAS."""
    out: FloatArray = (values @ _ones(values.shape[1]))[:, None]
    return out


def _ones(m: int) -> FloatArray:
    """(m,) ones, made once per length (read-only: shared by every call)."""
    ones = _ONES.get(m)
    if ones is None:
        ones = np.ones(m)
        ones.flags.writeable = False
        _ONES[m] = ones
    return ones


_ONES: dict[int, FloatArray] = {}


def _change_by_entry(step: FloatArray, sub_budgets: FloatArray,
                     budgets: FloatArray) -> tuple[FloatArray, BoolArray]:
    """((n, m) |step_ij| / max(b_ij, NEGLIGIBLE * b_i), (n, m) negligible): Algorithm 1's test.

    An entry where both b_ij and b_ij + step_ij are below NEGLIGIBLE * b_i (the
    money resolution) has not moved (change 0, ``negligible``): a corner entry
    falling geometrically toward 0 is settled once it is negligible, as in
    :func:`kkt_residual`, provided it is a corner (``scheduler.abacus.auction._converged``).
    """
    floor = np.maximum(NEGLIGIBLE * budgets, _TINY)[:, None]
    scale = np.maximum(sub_budgets, floor)
    negligible = (sub_budgets < floor) & (sub_budgets + step < floor)
    change: FloatArray = np.where(negligible, 0.0, np.abs(step) / scale)
    return change, negligible


def _flat_rows(shares: FloatArray, rest: FloatArray, mk: _Market) -> BoolArray:
    """(n,) linear jobs that no split of their budget can gain NEGLIGIBLE of their utility.

    For u_i = sum_j w_ij s_ij (paper 000, Sec. 3) and any split, u_i <= sum_j w_ij,
    so the gain of job i's best response is at most sum_j w_ij (1 - s_ij). A job
    holding all but that resolution of every resource it values (its rivals all
    at corners, bidding ~0+) is indifferent between its splits; Algorithm 2's
    best response is then set by the ratios of its rivals' ~0+ bids (rounding
    noise, ~1e-308) and need not settle. Log utilities are excluded: their
    utility has no such bound relative to itself (u_i -> 0 as s_ij -> 1). So is
    a gain of exactly 0 (a job without a contested resource keeps the equal
    split: auction's module doc).
    """
    linear = ~mk.is_log
    # a flat job has 1 - s_ij <= m NEGLIGIBLE where its weight is largest
    # (w_ij (1 - s_ij) <= gain <= NEGLIGIBLE m w_ij): skip the sums where no entry has
    if mk.all_log or rest.size == 0 or float(rest.min()) > rest.shape[1] * NEGLIGIBLE:
        return np.zeros_like(linear)
    gain = _row_sum(mk.weights * rest)[:, 0]
    utility = _row_sum(mk.weights * shares)[:, 0]
    flat: BoolArray = linear & (gain > 0) & (gain <= NEGLIGIBLE * utility)
    return flat


def _newton_log_step(b: FloatArray, target: FloatArray, x: FloatArray, shares: FloatArray, rest: FloatArray,
                     mk: _Market) -> FloatArray:
    """(n, m) Newton step in y = log b_ij on job i's KKT condition, rivals frozen.

    With g_ij = log(x_ij / b_ij) (log of the marginal utility per money unit,
    up to log alpha), job i's split is a best response iff g_ij is one value
    lambda_i over its interior entries (Lemma 2 proof). g_ij depends on b_ij
    only, with slope h_ij = dg_ij/dy_ij = alpha (1 - 2 s_ij) - 1 (linear) or
    -alpha s_ij - 1 (log); both are < 0 for alpha <= 1 and 0 < s_ij. The step
    (lambda_i - g_ij) / h_ij, with lambda_i chosen so that
    sum_j b_ij dy_ij = 0 (the budget, linearised), is Newton's. Algorithm 2's
    best response is the same step with h = -1: exact for alpha = 0 and near
    it for log utilities, but 1 / (2 s_ij) times too short for linear ones at
    alpha = 1 (h = -2 s_ij), which made small shares crawl (~1,400 rounds).
    h is clipped to [-1, -_MIN_SLOPE]: a step is never shorter than Algorithm
    2's (log utilities keep exactly its step, whose rounds were already few).
    Entries where b or the target is 0 keep Algorithm 2's step (0 here; the
    move is linear there, see :func:`_damped_move`). Steps are clipped to
    [-_MAX_DOWN, _MAX_UP]: h is ~0 where s_ij ~ 0 and alpha ~ 1.
    """
    both = (b > 0) & (target > 0) & mk.active
    safe_b = np.where(both, b, 1.0)
    log_b = np.log(safe_b)  # logs apart: x / b overflows for a subnormal b
    g = np.log(np.where(both & (x > 0), x, 1.0)) - log_b
    if not mk.any_log:
        h = mk.alpha * (rest - shares) - 1.0
    elif mk.all_log:
        h = -mk.alpha * shares - 1.0
    else:
        h = np.where(mk.is_log[:, None], -mk.alpha * shares - 1.0, mk.alpha * (rest - shares) - 1.0)
    inv_h = np.where(both, 1.0 / np.clip(h, -1.0, -_MIN_SLOPE), 0.0)
    weight = b * inv_h
    denominator = _row_sum(weight)
    lam = _row_sum(weight * g) / np.where(denominator < 0, denominator, -1.0)
    step = (lam - g) * inv_h  # 0 where not both (inv_h = 0; g, lam finite)
    # a row with one usable entry has nothing to trade off: Algorithm 2's step
    single = _row_sum(both.astype(np.float64))[:, 0] < 2
    if single.any():
        best_response = np.log(np.where(both, target, 1.0)) - log_b
        step = np.where(single[:, None], np.where(both, best_response, 0.0), step)
    clipped: FloatArray = np.clip(step, -_MAX_DOWN, _MAX_UP)
    return clipped


def _adapt_damping(theta: FloatArray, step: FloatArray, previous: FloatArray,
                   b: FloatArray) -> FloatArray:
    """Halve a job's step size when its log step reverses direction, else regrow it.

    Directions are compared weighted by b_ij: entries falling toward 0 (a
    corner) keep stepping down and would hide a swing of the others.
    """
    reversed_ = _row_sum((step * previous) * b)[:, 0] < 0
    shrunk = np.maximum(theta * 0.5, _MIN_DAMPING)
    return np.where(reversed_, shrunk, np.minimum(theta * _DAMPING_REGROWTH, 1.0))


def _damped_move(b: FloatArray, target: FloatArray, log_step: FloatArray, theta: FloatArray,
                 budgets: FloatArray) -> FloatArray:
    """Move rows the fraction theta of log_step in log b (linearly toward target
    where an end is 0), then rescale to the budget. Linear damping of a bid
    swinging between ~0 and ~b_i would only halve it each time, and never settle."""
    t = theta[:, None]
    both = (b > 0) & (target > 0)
    moved = np.where(both, b * np.exp(t * log_step), b + t * (target - b))
    total = _row_sum(moved)
    # divide first: a row whose money sits in a subnormal entry would overflow budget / total
    return np.where(total > 0, moved / np.where(total > 0, total, 1.0) * budgets[:, None], moved)


def _fallback_split(budgets: FloatArray, active: BoolArray, demand: BoolArray) -> FloatArray:
    """(n, m) equal split of each budget over the resources its job competes on, else over those
    it demands (the split of a job with no contested resource: ``scheduler.abacus.auction``)."""
    support = np.where(active.any(axis=1, keepdims=True), active, demand)
    count = support.sum(axis=1, keepdims=True)
    out: FloatArray = np.where(support, budgets[:, None] / np.maximum(count, 1), 0.0)
    return out


_PLAIN_GROUPS = 512  # up to this many jobs, _group_index numbers the groups in plain Python
_INTP_BOUND = 2**62  # beyond it, labels go through np.unique (their offsets could overflow intp)


def _group_index(groups: ArrayLike | None, n: int) -> tuple[NDArray[np.intp], int]:
    if groups is None:
        return np.zeros(n, dtype=np.intp), 1 if n else 0
    arr = np.asarray(groups)
    if arr.shape != (n,):
        raise ValueError(f"groups has shape {arr.shape}, expected ({n},)")
    if n and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"groups must be integers, got dtype {arr.dtype}")
    if n <= _PLAIN_GROUPS:  # np.unique's labels and inverse in plain Python: the same arrays, less overhead
        values: list[int] = arr.tolist()
        position = {label: k for k, label in enumerate(sorted(set(values)))}
        return np.array([position[v] for v in values], dtype=np.intp).reshape(n), len(position)
    low, high = int(arr.min()), int(arr.max())
    if high - low <= 4 * n and abs(low) < _INTP_BOUND and abs(high) < _INTP_BOUND:  # dense ranks through a table, not a sort
        offset = arr.astype(np.intp) - low
        present = np.zeros(high - low + 1, dtype=np.bool_)
        present[offset] = True
        rank = np.cumsum(present, dtype=np.intp) - 1
        return rank[offset], int(rank[-1]) + 1
    labels, index = np.unique(arr, return_inverse=True)
    return index.astype(np.intp).reshape(n), int(labels.shape[0])


def _group_sum(values: FloatArray, market_index: NDArray[np.intp], n_groups: int) -> FloatArray:
    """Sum (n, m) values over each group, broadcast back to (n, m) (a read-only view
    for a single group: one column sum instead of a gather)."""
    if n_groups == 1:
        return np.broadcast_to(values.sum(axis=0, keepdims=True), values.shape)
    m = values.shape[1]
    # one bincount over the (group, j) slots of the row-major values: each slot adds its
    # entries in row order, as a bincount per column does, so the sums are the same bits
    slots = _slots(market_index, m)
    totals = cast(FloatArray, np.bincount(slots, weights=values.ravel(), minlength=n_groups * m)).reshape(n_groups, m)  # weights: float64
    out: FloatArray = totals[market_index]
    return out


def _slots(market_index: NDArray[np.intp], m: int) -> NDArray[np.intp]:
    """(n m,) the (group, j) slot g m + j of each entry of an (n, m) array, row-major; the last
    index's slots are kept (a market's rounds sum over the same groups again and again)."""
    cached = _SLOTS.get(m)
    if cached is not None and cached[0] is market_index:
        return cached[1]
    slots: NDArray[np.intp] = (market_index[:, None] * m + np.arange(m, dtype=np.intp)).ravel()
    _SLOTS[m] = (market_index, slots)
    return slots


_SLOTS: dict[int, tuple[NDArray[np.intp], NDArray[np.intp]]] = {}
