"""Joint Newton solve of the auction's equilibrium (paper 000, Sec. 4.2, Lemma 2; SPEC 3.1).

Algorithm 2 moves each job toward its best response to the others' bids. When a
small budget meets a large one (budgets 1e-2 against 1e6) with linear utilities
near alpha = 1, that map is unstable: the small job is a price taker whose payoff
is almost flat in its split (its KKT slope is -2 s_ij ~ 0), so its best response
jumps between resources when the rich job's split moves by a hair, and the rich
job's split follows the small job's bids (as sqrt(b_small) at alpha = 1). The
loop gain is ~ b_large / b_small: every per-job damping short of that cycles,
simultaneous or sequential (the rounds hit the cap).

Here all jobs' KKT conditions are solved at once, so the coupling is in the
Jacobian instead of in the loop. Unknowns are y_ij = log(b_ij / b_i) on the
entries a job bids on (scale-free: budgets from cents to millions give the
same system) and one multiplier lambda_i per job; the equations are

    g_ij(y) - lambda_i = 0,  g_ij = log x_ij - log b_ij    (Lemma 2: equal du/db)
    log sum_j exp(y_ij) = 0                                 (the budget)

with x_ij Algorithm 2's ``(du/ds) s (1 - s)``. dg_ij / dy_kj =
c_ij alpha (delta_ik - s_kj) - delta_ik, with c_ij = 1 - s_ij / (1 - s_ij)
(linear) or -s_ij / (1 - s_ij) (log). Corners (b_ij = 0 while du/db_ij at 0 is
finite) exist only for linear utilities at alpha = 1; there x_ij is replaced by
x_ij + mu_i, the KKT condition of the job's utility plus a barrier
mu_i sum_j log b_ij (an interior-point method), and mu is driven from 1e-2 to
1e-16 of the job's mean marginal, each stage starting from the last: a corner
ends at b_ij ~ mu b_i, below the money resolution, and is set to 0+. Steps are
Newton's, halved until the residual's norm falls (a backtracking line search).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from scheduler.abacus.steps import _TINY, NEGLIGIBLE

if TYPE_CHECKING:
    from scheduler.abacus.state import _Market

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]
SharesFn = Callable[[FloatArray, "_Market"], tuple[FloatArray, FloatArray]]
GroupSumFn = Callable[[FloatArray, NDArray[np.intp], int], FloatArray]

MAX_UNKNOWNS = 150  # dense Jacobian and solve per iteration; larger markets keep the rounds
_MAX_LOG_STEP = 8.0  # largest move of one log b_ij in a Newton step
_START_FLOOR = 1e-12  # a start below this fraction of the budget starts here
# barrier weights (relative to a job's mean marginal), stage by stage: linear, alpha = 1
_BARRIERS = (1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-12, 1e-14, 1e-16)
_SOLVED = 1e-12  # ||F|| (differences of log marginals) at which the support is solved


def _residual(y: FloatArray, lam: FloatArray, support: BoolArray, mk: _Market,
              shares_and_rest: SharesFn, barrier: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """(F over the support, F of the budget rows, shares, rest) at y; ``barrier`` (n,) mu_i."""
    b = np.where(support, np.exp(y) * mk.budgets[:, None], 0.0)
    shares, rest = shares_and_rest(b, mk)
    x = _marginal_x(shares, rest, mk) + barrier[:, None]
    g = np.log(np.where(support, np.maximum(x, _TINY), 1.0)) - np.log(np.where(support, b, 1.0))
    f_entries = np.where(support, g - lam[:, None], 0.0)
    row_total = np.sum(np.where(support, np.exp(np.where(support, y, 0.0)), 0.0), axis=1)
    has = support.any(axis=1)
    f_rows = np.where(has, np.log(np.where(has, row_total, 1.0)), 0.0)
    return f_entries, f_rows, shares, rest


def _marginal_x(shares: FloatArray, rest: FloatArray, mk: _Market) -> FloatArray:
    linear = mk.weights * shares * rest
    log = mk.weights * rest
    out: FloatArray = np.where(mk.is_log[:, None], log, linear)
    return out


def _jacobian(support: BoolArray, shares: FloatArray, rest: FloatArray, mk: _Market,
              y: FloatArray, barrier: FloatArray) -> FloatArray:
    """Dense Jacobian of (entries on the support, budget rows) in (y on the support, lambda)."""
    rows_i, cols_j = np.nonzero(support)
    k = rows_i.shape[0]
    has = np.nonzero(support.any(axis=1))[0]
    n_rows = has.shape[0]
    lam_index = -np.ones(mk.budgets.shape[0], dtype=np.intp)
    lam_index[has] = k + np.arange(n_rows)
    jac = np.zeros((k + n_rows, k + n_rows))
    ratio = shares / np.maximum(rest, _TINY)
    c = np.where(mk.is_log[:, None], -ratio, 1.0 - ratio)
    if barrier.any():  # d log(x + mu) = x / (x + mu) d log x
        x = _marginal_x(shares, rest, mk)
        c = c * x / np.maximum(x + barrier[:, None], _TINY)
    group = mk.group_index[rows_i]
    same = (cols_j[:, None] == cols_j[None, :]) & (group[:, None] == group[None, :])  # bids on one (group, j)
    coef = c[rows_i, cols_j] * mk.alpha
    jac[:k, :k] = np.where(same, -coef[:, None] * shares[rows_i, cols_j][None, :], 0.0)
    jac[np.arange(k), np.arange(k)] += coef - 1.0
    jac[np.arange(k), lam_index[rows_i]] = -1.0
    weights = np.where(support, np.exp(np.where(support, y, -np.inf)), 0.0)
    row_total = weights.sum(axis=1)
    jac[lam_index[rows_i], np.arange(k)] = weights[rows_i, cols_j] / row_total[rows_i]
    return jac



def joint_newton(mk: _Market, start: FloatArray, shares_and_rest: SharesFn, group_sum: GroupSumFn,
                 max_iterations: int) -> tuple[FloatArray, int]:
    """Newton's method on every job's KKT condition at once, from ``start``.

    Returns (sub-budgets, iterations used). The caller decides convergence with
    Algorithm 1's test, as for the rounds. Rows whose job bids on fewer than two
    contested entries keep their best response from ``start``'s structure:
    only the contested support is solved for (the uncontested entries of a job
    are bid 0, as in the rounds; see scheduler.abacus.auction's module doc).
    """
    budgets = mk.budgets
    corners_possible = (~mk.is_log[:, None]) & (mk.alpha >= 1.0)
    support = mk.contested.copy()
    # a job with no contested entry keeps the start (the rounds' fallback split)
    fixed_rows: BoolArray = ~np.any(support, axis=1)
    fixed = np.where(fixed_rows[:, None], start, 0.0)
    frac = start / np.where(budgets > 0, budgets, 1.0)[:, None]
    y = np.where(support, np.log(np.maximum(np.where(support, frac, 1.0), _START_FLOOR)), 0.0)
    has: BoolArray = np.any(support, axis=1)
    zero = np.zeros(budgets.shape[0])
    f_e, _, shares, rest = _residual(y, zero, support, mk, shares_and_rest, zero)
    wts = np.where(support, np.exp(np.where(support, y, -np.inf)), 0.0)
    lam = np.where(has, np.sum(wts * f_e, axis=1) / np.maximum(wts.sum(axis=1), _TINY), 0.0)
    iterations = 0
    stages = _BARRIERS if corners_possible.any() else (0.0,)
    for mu in stages:
        # mu_i in units of x: relative to the job's mean marginal, so corners sit at ~mu b_i
        x = _marginal_x(shares, rest, mk)
        scale = np.sum(np.where(support, x, 0.0), axis=1) / np.maximum(support.sum(axis=1), 1)
        barrier = np.where(has & corners_possible.any(axis=1), mu * scale, 0.0)
        target = _SOLVED if mu == stages[-1] else 1e-3 * mu
        while iterations < max_iterations:
            iterations += 1
            f_e, f_r, shares, rest = _residual(y, lam, support, mk, shares_and_rest, barrier)
            vector = np.concatenate([f_e[support], f_r[has]])
            norm = float(np.linalg.norm(vector))
            if norm < target:
                break
            moved = _newton_step(y, lam, support, vector, norm, shares, rest, mk, shares_and_rest, barrier)
            if moved is None:
                break
            y, lam = moved
    b = np.where(support, np.exp(np.where(support, y, 0.0)) * budgets[:, None], 0.0)
    b = np.where(fixed_rows[:, None], fixed, b)
    # a corner's bid ~mu b_i is below the money resolution: bid 0+ there
    b = np.where(corners_possible & support & (b < NEGLIGIBLE * budgets[:, None]), 0.0, b)
    total = b.sum(axis=1, keepdims=True)
    b = np.where(has[:, None], b / np.where(total > 0, total, 1.0) * budgets[:, None], b)
    out: FloatArray = np.where(mk.contested & ~fixed_rows[:, None], np.maximum(b, _TINY), b)
    return out, iterations


def _newton_step(y: FloatArray, lam: FloatArray, support: BoolArray, vector: FloatArray, norm: float,
                 shares: FloatArray, rest: FloatArray, mk: _Market,
                 shares_and_rest: SharesFn, barrier: FloatArray) -> tuple[FloatArray, FloatArray] | None:
    """One Newton step on the support, halved until ||F|| falls (at most 40 halvings)."""
    has = support.any(axis=1)
    jac = _jacobian(support, shares, rest, mk, y, barrier)
    try:
        delta = np.linalg.solve(jac, -vector)
    except np.linalg.LinAlgError:
        delta = np.linalg.lstsq(jac, -vector, rcond=None)[0]
    k = int(support.sum())
    dy = np.zeros_like(y)
    dy[support] = delta[:k]
    dlam = np.zeros_like(lam)
    dlam[has] = delta[k:]
    largest = float(np.max(np.abs(dy), initial=0.0))
    t = min(1.0, _MAX_LOG_STEP / largest) if largest > 0 else 1.0
    for _ in range(40):
        y_try, lam_try = y + t * dy, lam + t * dlam
        fe_try, fr_try, _, _ = _residual(y_try, lam_try, support, mk, shares_and_rest, barrier)
        trial = float(np.linalg.norm(np.concatenate([fe_try[support], fr_try[has]])))
        if np.isfinite(trial) and trial < norm * (1.0 - 1e-4 * t):
            return y_try, lam_try
        t *= 0.5
    return None  # no descent
