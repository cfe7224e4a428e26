"""Joint Newton solve of the auction's equilibrium (paper 000, Sec. 4.2, Lemma 2).

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
ends at b_ij ~ mu b_i, below the money resolution, and stays there. Steps are
Newton's, halved until the residual's norm falls (a backtracking line search;
a step too long is also tried clipped entry by entry: :func:`_newton_step`);
a new stage starts with an Euler predictor along the path (:func:`_predict`).
Without it each stage took ~6 Newton steps, the 8 stages ~all of the solve's
60 iterations, and a solve stuck on a plateau ran out of them (a market of
test_equilibrium's strategy never converged); with it a stage takes 2-4.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from scheduler.abacus.steps import _TINY

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
    previous: FloatArray | None = None
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
            moved = None
            if previous is not None:  # a stage's first step: along the path, if that helps
                moved = _predict(y, lam, support, norm, shares, rest, mk, shares_and_rest, previous, barrier)
                previous = None
            if moved is None:
                moved = _newton_step(y, lam, support, vector, norm, shares, rest, mk, shares_and_rest, barrier)
            if moved is None:
                break
            y, lam = moved
        previous = barrier
    b = np.where(support, np.exp(np.where(support, y, 0.0)) * budgets[:, None], 0.0)
    b = np.where(fixed_rows[:, None], fixed, b)
    # a corner keeps its bid ~mu b_i (below the money resolution, a settled corner for
    # Algorithm 1's test): set to 0+, it moved the rivals' total where the other bids are
    # a price taker's ~1e-10 b_k by ~1e-5, and the rich job's answer by half that (> tol)
    total = b.sum(axis=1, keepdims=True)
    b = np.where(has[:, None], b / np.where(total > 0, total, 1.0) * budgets[:, None], b)
    out: FloatArray = np.where(mk.contested & ~fixed_rows[:, None], np.maximum(b, _TINY), b)
    return out, iterations


def _predict(y: FloatArray, lam: FloatArray, support: BoolArray, norm: float, shares: FloatArray,
             rest: FloatArray, mk: _Market, shares_and_rest: SharesFn, old: FloatArray,
             new: FloatArray) -> tuple[FloatArray, FloatArray] | None:
    """Euler predictor from the barrier ``old`` to ``new`` (n,) along the homotopy path, from
    y where ||F|| at ``new`` is ``norm``; None if it does not lower that norm.

    dF_ij / d log mu_i = mu_i / (x_ij + mu_i), so the path's tangent solves
    J dy = -(mu / (x + mu)) d log mu. At a corner x_ij ~ (w_ij / P_j) b_ij (linear,
    alpha = 1, s_ij ~ 0), so its bid mu_i / (lambda_i - w_ij / P_j) is proportional
    to mu: a straight line in log b against log mu, which the tangent follows.
    Newton's first step from the old point sees log(x + mu) nearly flat in log b
    there and overshoots to the step cap.
    """
    has = support.any(axis=1)
    x = _marginal_x(shares, rest, mk)
    ratio = np.log(np.where(old > 0, new, 1.0) / np.where(old > 0, old, 1.0))
    slope = old[:, None] / np.maximum(x + old[:, None], _TINY) * ratio[:, None]
    rhs = np.concatenate([slope[support], np.zeros(int(has.sum()))])
    try:
        delta = np.linalg.solve(_jacobian(support, shares, rest, mk, y, old), -rhs)
    except np.linalg.LinAlgError:
        return None
    dy, dlam = _unpack(delta, support)
    largest = float(np.max(np.abs(dy), initial=0.0))
    t = min(1.0, _MAX_LOG_STEP / largest) if largest > 0 else 1.0  # a curved path: part of the tangent
    fe_try, fr_try, _, _ = _residual(y + t * dy, lam + t * dlam, support, mk, shares_and_rest, new)
    trial = float(np.linalg.norm(np.concatenate([fe_try[support], fr_try[has]])))
    return (y + t * dy, lam + t * dlam) if np.isfinite(trial) and trial < norm else None


def _unpack(delta: NDArray[Any], support: BoolArray) -> tuple[FloatArray, FloatArray]:
    """A solve's vector as full-shape steps: (n, m) ``dy`` on the support (its first entries, row
    by row) and (n,) ``dlam`` for the rows with a support (the rest), zero elsewhere."""
    k = int(support.sum())
    dy = np.zeros(support.shape)
    dy[support] = delta[:k]
    dlam = np.zeros(support.shape[0])
    dlam[support.any(axis=1)] = delta[k:]
    return dy, dlam


def _newton_step(y: FloatArray, lam: FloatArray, support: BoolArray, vector: FloatArray, norm: float,
                 shares: FloatArray, rest: FloatArray, mk: _Market,
                 shares_and_rest: SharesFn, barrier: FloatArray) -> tuple[FloatArray, FloatArray] | None:
    """One Newton step on the support, halved until ||F|| falls (at most 40 halvings).

    A step moving some log b_ij by more than _MAX_LOG_STEP is scaled down as a whole;
    then the step with those moves clipped to it is tried too, and the one reaching
    the lower ||F|| kept. A price taker (s_ij ~ 0, linear, alpha = 1) has x_ij / b_ij
    ~ w_ij / P_j whatever it bids, so its row of J is nearly flat in its own y and
    Newton asks it to move by ~1e2: scaled to 8, the step left every other entry
    where it was, iteration after iteration (a plateau of ~40 iterations, or no end).
    """
    jac = _jacobian(support, shares, rest, mk, y, barrier)
    try:
        delta = np.linalg.solve(jac, -vector)
    except np.linalg.LinAlgError:
        delta = np.linalg.lstsq(jac, -vector, rcond=None)[0]
    dy, dlam = _unpack(delta, support)
    largest = float(np.max(np.abs(dy), initial=0.0))
    if largest <= _MAX_LOG_STEP:
        return _backtrack(y, lam, dy, dlam, 1.0, norm, support, mk, shares_and_rest, barrier)[0]
    scaled, scaled_norm = _backtrack(y, lam, dy, dlam, _MAX_LOG_STEP / largest, norm, support, mk,
                                     shares_and_rest, barrier)
    clipped, clipped_norm = _backtrack(y, lam, np.clip(dy, -_MAX_LOG_STEP, _MAX_LOG_STEP), dlam, 1.0, norm,
                                       support, mk, shares_and_rest, barrier)
    return clipped if clipped_norm < scaled_norm else scaled


def _backtrack(y: FloatArray, lam: FloatArray, dy: FloatArray, dlam: FloatArray, t: float, norm: float,
               support: BoolArray, mk: _Market, shares_and_rest: SharesFn,
               barrier: FloatArray) -> tuple[tuple[FloatArray, FloatArray] | None, float]:
    """(y, lambda) + t (dy, dlam) with t halved until ||F|| falls, and that ||F||; (None, inf)
    if 40 halvings do not."""
    has = support.any(axis=1)
    for _ in range(40):
        y_try, lam_try = y + t * dy, lam + t * dlam
        fe_try, fr_try, _, _ = _residual(y_try, lam_try, support, mk, shares_and_rest, barrier)
        trial = float(np.linalg.norm(np.concatenate([fe_try[support], fr_try[has]])))
        if np.isfinite(trial) and trial < norm * (1.0 - 1e-4 * t):
            return (y_try, lam_try), trial
        t *= 0.5
    return None, float("inf")  # no descent
