"""Abacus budget auction (paper 000, Ding, Zhang, Ma, Yang 2015, Sections 3-4).

Each job ``i`` splits its budget ``b_i`` into sub-budgets ``b_ij`` (one per
resource type) and receives, on each resource type, the allocation probability

    s_ij = b_ij^alpha / sum_l b_lj^alpha                       (Eq. 1)

where the sum runs over the jobs of the same group (leaf queue). The auction
looks for the sub-budgets at which every job's split is a best response to the
others' (Algorithms 1 and 2):

    x_ij  = (du_i/ds_ij) * s_ij * (1 - s_ij)
    b'_ij = b_i * x_ij / sum_l x_il       (sum over job i's OWN resources:
                                           erratum to Algorithm 2, docs/mechanisms.md)

A fixed point makes ``du_i/db_ij = alpha * x_ij / b_ij`` equal across the
resources job ``i`` bids on, which is the KKT condition of job ``i`` maximising
its utility for its budget (Lemma 2, with the corrected normaliser).

Choices where the paper is silent:

* Rounds are simultaneous (every job answers the previous round), not
  sequential: a round is a few numpy operations; the fixed points are the
  same. A job moves by a Newton step on its own KKT condition in log b
  (:func:`_newton_log_step`), not by Algorithm 2's plain best response, whose
  step is too short by 1 / (2 s_ij) for linear utilities at alpha = 1 (~1,400
  rounds at 32 jobs). A job whose step reverses direction (budget-weighted)
  has its step halved (regrown by 25 % a round otherwise). Measured on the
  paper's set-up: at most ~70 rounds for every alpha in [0, 1] and both
  utilities. A market of at most _SEQUENTIAL_MAX_JOBS jobs still unsettled
  half-way to the cap continues with the paper's sequential rounds (each job
  answers the others' latest bids).
* Joint solve: a market of at most MAX_UNKNOWNS unknowns still unsettled after
  _NEWTON_AFTER rounds solves every job's KKT condition at once
  (``scheduler.abacus.newton``: Newton in log b with a barrier homotopy for
  the corners of linear utilities at alpha = 1; at alpha = 1 also
  ``scheduler.abacus.prices``: Newton in the m log prices). A tiny budget
  against a large one makes Algorithm 2's map cycle however it is damped
  (the price taker's best response jumps with the rich job's split: the loop
  gain is ~ b_large / b_small). Measured on 600 markets of 2-8 jobs with
  budgets log-uniform on [1e-2, 1e6], linear, alpha = 1: 205 unconverged
  before, 0 then (bench_abacus_convergence --hard), but 8 of those stopped at
  points that were not equilibria (next item); with the corrected test, 599
  converge to equilibria (no job gains 1e-6 by its exact best response) and
  one reports non-convergence (n = 5, seed 27: the joint solve stalls at
  every try). The joint solve's point is certified by the same test as the
  rounds; if it fails, the rounds go on from it and the solve is retried
  _NEWTON_AFTER rounds later.
* Convergence: the largest ``|b'_ij - b_ij| / max(b_ij, NEGLIGIBLE b_i)`` is
  below ``tol`` (b' Algorithm 2's best response; entries where both are below
  NEGLIGIBLE b_i count as settled); being relative to b_ij, it bounds the KKT
  residual by ~2 tol. Two corrections where b' is not the job's best response
  (:func:`_converged`): such a negligible entry counts as settled only at a
  KKT corner (du_i/db_ij <= lambda_i, Lemma 2), since for a linear utility at
  alpha = 1 b' maps a bid ~0+ to ~0+ however much the job would gain there;
  and a linear job that no split can gain NEGLIGIBLE of its utility (it holds
  all but that of every resource it values, its rivals all at corners) is
  settled, since its b' is set by the ratios of its rivals' ~0+ bids. Without
  them, 42 of 60,000 markets of the equilibrium property test's strategy
  (test_equilibrium) failed it: 15 cycled to the cap on such a job, 27
  stopped where a job could gain 0.02-100 % by its best response (mostly by
  bidding on a resource left to bids of ~0+). With them (and the joint
  solve's predictor and clipped steps), 0.
* Job i *competes* on j when it demands j with a positive weight and budget.
  Only competitors get a share where the group has one; otherwise the group's
  demanders split j equally (shares still sum to 1).
* The only competitor of its group on j has s_ij = 1 for any b_ij > 0, so its
  best response is the limit b_ij -> 0+: it bids 0 there, keeps s_ij = 1 and
  spends its budget on contested resources. A job with no contested resource
  (all x_ij = 0) keeps an equal split over the resources it competes on (with
  none, over those it demands); a job demanding nothing bids nothing.
* Warm start: the previous clearing's sub-budgets seed the rounds, and new
  jobs first best-respond to them (``_initial_sub_budgets``).
* A market of two resource types and at most ``plain.MAX_JOBS`` jobs runs the same
  rounds on float lists (``scheduler.abacus.plain``, bit-identical; numpy's call
  overhead dominates such markets), unless it needs the joint solve or sequential rounds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from scheduler.abacus.kkt import implied_prices, kkt_residual
from scheduler.abacus.newton import MAX_UNKNOWNS, joint_newton
from scheduler.abacus.plain import iterate_market, small_auction
from scheduler.abacus.prices import price_equilibrium
from scheduler.abacus.state import AuctionResult, BoolArray, FloatArray, _Market
from scheduler.abacus.steps import (
    _TINY,
    NEGLIGIBLE,
    _adapt_damping,
    _change_by_entry,
    _damped_move,
    _fallback_split,
    _flat_rows,
    _group_index,
    _group_sum,
    _newton_log_step,
    _row_sum,
)
from scheduler.abacus.utility import check_alpha, check_iteration, check_nonnegative, demand_mask, log_mask, marginal, utility_of

__all__ = ["AuctionResult", "auction", "implied_prices", "kkt_residual", "utility_of"]


_SEQUENTIAL_MAX_JOBS = 64  # markets this small fall back to sequential rounds half-way to the cap
_SEQUENTIAL_AFTER = 100  # ... but never before this many simultaneous rounds
_NEWTON_AFTER = 60  # rounds before an unsettled market tries the joint Newton solve
_NEWTON_ITERATIONS = 60  # its iterations, each counted as a round


def _prepare(budgets: ArrayLike, weights: ArrayLike, utility: str | Sequence[str], alpha: float,
             groups: ArrayLike | None, demand: ArrayLike | None) -> _Market:
    """Validate the inputs of :func:`auction` (see its Raises) and build the masks."""
    b = check_nonnegative("budgets", budgets, 1)
    w = check_nonnegative("weights", weights, 2)
    if w.shape[0] != b.shape[0]:
        raise ValueError(f"weights has {w.shape[0]} rows for {b.shape[0]} budgets")
    dem = demand_mask(demand, (w.shape[0], w.shape[1]))
    index, n_groups = _group_index(groups, b.shape[0])
    w = np.where(dem, w, 0.0)
    active = dem & (w > 0) & (b > 0)[:, None]
    n_active = _group_sum(active.astype(np.float64), index, n_groups)
    return _Market(
        budgets=b, weights=w, is_log=log_mask(utility, b.shape[0]), demand=dem,
        active=active, contested=active & (n_active >= 2), group_index=index,
        n_groups=n_groups, alpha=check_alpha(alpha), n_active=n_active,
        n_demand=_group_sum(dem.astype(np.float64), index, n_groups),
        fallback=_fallback_split(b, active, dem),
    )


def _power(sub_budgets: FloatArray, mk: _Market) -> FloatArray:
    """(n, m) b_ij^alpha of competitors, 0 elsewhere (alpha = 0: 1 per competitor)."""
    if mk.alpha > 0:
        return np.where(mk.active, sub_budgets**mk.alpha, 0.0)
    return mk.active.astype(np.float64)


def _total_power(power: FloatArray, mk: _Market) -> FloatArray:
    """(n, m) the denominator of Eq. 1: sum of b_lj^alpha over the job's group (and frozen rivals)."""
    total = _group_sum(power, mk.group_index, mk.n_groups)
    return total if mk.rival_power is None else total + mk.rival_power


def _shares_and_rest(sub_budgets: FloatArray, mk: _Market) -> tuple[FloatArray, FloatArray]:
    """(s, 1 - s): Eq. 1 within each group, with the equal splits of the module doc.

    For the (at most one) job holding over half a (group, j) block, 1 - s is
    summed from the rivals' power: 1.0 - s could round to 0 and make it swing.
    """
    power = _power(sub_budgets, mk)
    total = _total_power(power, mk)
    positive = total > 0
    if positive.all():
        safe_total = total
        shares = power / total
    else:
        safe_total = np.where(positive, total, 1.0)
        equal_active = mk.active / np.maximum(mk.n_active, 1.0)
        equal_demand = mk.demand / np.maximum(mk.n_demand, 1.0)
        equal = np.where(mk.n_active > 0, equal_active, equal_demand)
        shares = np.where(positive, power / safe_total, equal)
    rest = 1.0 - shares
    dominant = (shares > 0.5) & positive
    if dominant.any():
        others = _group_sum(np.where(dominant, 0.0, power), mk.group_index, mk.n_groups)
        if mk.rival_power is not None:
            others = others + mk.rival_power
        rest = np.where(dominant, others / safe_total, rest)
    return shares, rest


def _best_response(sub_budgets: FloatArray, mk: _Market) -> FloatArray:
    """b'_ij = b_i x_ij / sum_l x_il (Algorithm 2 with its erratum, docs/mechanisms.md)."""
    return _best_response_from(*_shares_and_rest(sub_budgets, mk), mk)


def _best_response_from(shares: FloatArray, rest: FloatArray, mk: _Market) -> FloatArray:
    """:func:`_best_response` from the shares and 1 - shares at the current b."""
    return _best_response_of(_marginal(shares, rest, mk), mk)


def _marginal(shares: FloatArray, rest: FloatArray, mk: _Market) -> FloatArray:
    """x_ij (``scheduler.abacus.utility.marginal``), without the select when all jobs share a kind."""
    if not mk.any_log:
        x: FloatArray = mk.weights * shares * rest
        return x
    if mk.all_log:
        x = mk.weights * rest
        return x
    return marginal(shares, rest, mk.weights, mk.is_log)


def _best_response_of(x: FloatArray, mk: _Market) -> FloatArray:
    """b_i x_ij / sum_l x_il, or the fallback split for rows with no x > 0."""
    total = _row_sum(x)
    positive = total > 0
    if positive.all():
        out: FloatArray = x / total * mk.budgets[:, None]  # divide first: x <= total, no overflow
        return out
    scaled = x / np.where(positive, total, 1.0) * mk.budgets[:, None]
    return np.where(positive, scaled, mk.fallback)


def _switch_rounds(n: int, contested: int, max_rounds: int) -> tuple[int, int]:
    """(first sequential round, first joint-solve round) of :func:`_iterate` for a market of
    ``n`` jobs with ``contested`` contested entries (max_rounds + 1: never)."""
    sequential_from = max(max_rounds // 2, _SEQUENTIAL_AFTER) if n <= _SEQUENTIAL_MAX_JOBS else max_rounds + 1
    newton_at = _NEWTON_AFTER if contested + n <= MAX_UNKNOWNS else max_rounds + 1
    return sequential_from, newton_at


def _handover(n: int, contested: int, max_rounds: int) -> int:
    """The round after which :func:`_iterate` leaves its simultaneous rounds (the plain path stops there)."""
    return min(_switch_rounds(n, contested, max_rounds))


def _iterate(mk: _Market, start: FloatArray, tol: float,
             max_rounds: int) -> tuple[FloatArray, int, bool]:
    """Damped simultaneous Newton-scaled rounds (Algorithm 1); returns (b, rounds, converged).

    Convergence is Algorithm 1's test on Algorithm 2's best response: when
    converged, the returned b is the point whose best response moved less
    than ``tol``: the point the convergence test certifies. The move itself is
    :func:`_newton_log_step`, which has the same fixed points.
    """
    b = start
    theta = np.ones(b.shape[0])
    previous = np.zeros_like(b)
    sequential_from, newton_at = _switch_rounds(b.shape[0], int(mk.contested.sum()), max_rounds)
    rounds = 0
    while rounds < max_rounds:
        rounds += 1
        shares, rest = _shares_and_rest(b, mk)
        x = _marginal(shares, rest, mk)
        target = _best_response_of(x, mk)
        if _converged(b, target, shares, rest, mk, tol):
            return b, rounds, True
        if rounds >= newton_at:
            b, rounds, done = _solve_jointly(mk, b, rounds, tol, max_rounds)
            if done:
                return b, rounds, True
            # unsettled: the rounds go on from the solvers' point, which may
            # only need Algorithm 2's rounds to settle a job left alone on its
            # resources; another joint solve after _NEWTON_AFTER more rounds
            newton_at = rounds + _NEWTON_AFTER
            theta, previous = np.ones(b.shape[0]), np.zeros_like(b)
            continue
        if rounds >= sequential_from:
            b, theta, previous = _sequential_round(b, theta, previous, mk)
            continue
        step = _newton_log_step(b, target, x, shares, rest, mk)
        theta = _adapt_damping(theta, step, previous, b)
        b = _damped_move(b, target, step, theta, mk.budgets)
        # Underflow guard: a competitor on a contested resource must keep b > 0,
        # or a linear utility would never bid there again (x = w s (1 - s) = 0).
        b = np.where(mk.contested, np.maximum(b, _TINY), b)
        previous = step
    return b, max_rounds, False


def _solve_jointly(mk: _Market, b: FloatArray, rounds: int, tol: float,
                   max_rounds: int) -> tuple[FloatArray, int, bool]:
    """Every job's KKT condition solved at once (scheduler.abacus.newton; at alpha = 1 also
    in prices, scheduler.abacus.prices), each iteration counted as a round; returns
    (sub-budgets, rounds, settled by Algorithm 1's test)."""
    solved, used = joint_newton(mk, b, _shares_and_rest, _group_sum, min(_NEWTON_ITERATIONS, max_rounds - rounds))
    rounds += used
    if _settled(solved, mk, tol):
        return solved, rounds, True
    if mk.alpha == 1.0 and mk.rival_power is None and rounds < max_rounds:
        solved, used = price_equilibrium(mk, b, min(_NEWTON_ITERATIONS, max_rounds - rounds))
        rounds += used
        if _settled(solved, mk, tol):
            return solved, rounds, True
    return solved, rounds, False


def _settled(b: FloatArray, mk: _Market, tol: float) -> bool:
    """Algorithm 1's convergence test at b (as in :func:`_iterate`)."""
    shares, rest = _shares_and_rest(b, mk)
    return _converged(b, _best_response_of(_marginal(shares, rest, mk), mk), shares, rest, mk, tol)


def _converged(b: FloatArray, target: FloatArray, shares: FloatArray, rest: FloatArray, mk: _Market,
               tol: float) -> bool:
    """Algorithm 1's test (no sub-budget moves by ``tol`` relative: module doc), with two cases
    where Algorithm 2's best response ``target`` is not a job's best response (Lemma 2).

    * A job that no split can gain NEGLIGIBLE of its utility (:func:`_flat_rows`) is
      settled: any split is its best response, and Algorithm 2's is set by noise.
    * An entry negligible on both sides is settled only at a KKT corner (Lemma 2:
      du/db_ij <= lambda_i there; :func:`_corner_violated`): Algorithm 2's best response
      maps b_ij ~ 0 to ~0 for a linear utility at alpha = 1 (x_ij is proportional to
      s_ij), however much the job would gain by bidding there.
    """
    change, negligible = _change_by_entry(target - b, b, mk.budgets)
    flat: BoolArray | None = None
    if float(change.max()) >= tol:  # change is not empty: auction returns early on size 0
        flat = _flat_rows(shares, rest, mk)
        if not flat.any() or float(np.max(np.where(flat[:, None], 0.0, change))) >= tol:
            return False
    corners = negligible & mk.contested
    if mk.alpha == 0.0 or not corners.any():  # alpha = 0: u_i does not depend on b at all
        return True
    if flat is None:
        flat = _flat_rows(shares, rest, mk)
    return not _corner_violated(b, rest, corners & ~flat[:, None], mk, tol)


def _corner_violated(b: FloatArray, rest: FloatArray, corners: BoolArray, mk: _Market, tol: float) -> bool:
    """Whether some entry of ``corners`` has du_i/db_ij above (1 + tol) lambda_i, lambda_i the
    largest du_i/db_ij over job i's non-negligible entries (Lemma 2's KKT condition).

    du/db_ij / alpha = x_ij / b_ij is w_ij (1 - s_ij) b_ij^(alpha - 1) / P_j (linear; P_j
    the denominator of Eq. 1) or w_ij (1 - s_ij) / b_ij (log), in logs: s_ij itself
    is subnormal at b_ij ~ 0+.
    """
    floor = NEGLIGIBLE * mk.budgets[:, None]
    usable = mk.active & (b > 0)
    with np.errstate(divide="ignore"):
        log_b = np.log(np.where(usable, b, 1.0))
        log_total = np.log(np.maximum(_total_power(_power(b, mk), mk), _TINY))
        linear = np.log(np.where(usable, mk.weights * rest, 0.0)) + (mk.alpha - 1.0) * log_b - log_total
        log_ratio = np.where(mk.is_log[:, None], np.log(np.where(usable, mk.weights * rest, 0.0)) - log_b, linear)
    interior = usable & (b >= floor)
    lam = np.max(np.where(interior, log_ratio, -np.inf), axis=1, keepdims=True, initial=-np.inf)
    return bool(np.any(corners & usable & (log_ratio > lam + np.log1p(tol))))


def _sequential_round(b: FloatArray, theta: FloatArray, previous: FloatArray,
                      mk: _Market) -> tuple[FloatArray, FloatArray, FloatArray]:
    """One round of the paper's sequential order (Algorithm 1: each job answers the
    others' latest sub-budgets), each job moving by its damped Newton step. The
    fallback of :func:`_iterate` for small markets whose simultaneous rounds cycle
    (a tiny-budget price-taker against a rich rival at alpha ~ 1)."""
    b, theta, previous = b.copy(), theta.copy(), previous.copy()
    for i in range(b.shape[0]):
        shares, rest = _shares_and_rest(b, mk)
        x = _marginal(shares, rest, mk)
        target = _best_response_of(x, mk)
        step = _newton_log_step(b, target, x, shares, rest, mk)[i:i + 1]
        row = slice(i, i + 1)
        theta[row] = _adapt_damping(theta[row], step, previous[row], b[row])
        moved = _damped_move(b[row], target[row], step, theta[row], mk.budgets[row])
        b[row] = np.where(mk.contested[row], np.maximum(moved, _TINY), moved)
        previous[row] = step
    return b, theta, previous


def _newcomers_market(mk: _Market, rows: BoolArray, start: FloatArray) -> _Market:
    """The auction among ``rows`` with every other job frozen at ``start``.

    Masks that depend on the whole group (contested, competitor counts) are
    kept from the full market; the frozen jobs enter as ``rival_power``.
    """
    frozen = np.where(rows[:, None], 0.0, _power(start, mk))
    rivals = _group_sum(frozen, mk.group_index, mk.n_groups)
    labels, index = np.unique(mk.group_index[rows], return_inverse=True)
    return _Market(
        budgets=mk.budgets[rows], weights=mk.weights[rows], is_log=mk.is_log[rows],
        demand=mk.demand[rows], active=mk.active[rows], contested=mk.contested[rows],
        group_index=index.astype(np.intp), n_groups=int(labels.shape[0]), alpha=mk.alpha,
        n_active=mk.n_active[rows], n_demand=mk.n_demand[rows], fallback=mk.fallback[rows],
        rival_power=rivals[rows],
    )


def _initial_sub_budgets(mk: _Market, warm_start: ArrayLike | None, tol: float, max_rounds: int,
                         plain_newcomers: bool = True) -> FloatArray:
    """Algorithm 1 line 1 (equal split), or the previous clearing's sub-budgets.

    Warm rows are masked to the job's support and rescaled to its budget (rows
    left with less than NEGLIGIBLE of it start as new ones); a
    contested entry at 0 (uncontested before) is re-seeded with the equal split,
    as a linear bidder at b = 0 has x = 0 and would never return. New rows (NaN
    or bidding nothing) start from their best response to the warm rows: rounds
    over the newcomers alone, O(newcomers * m), not counted in ``rounds``; on float lists
    (``plain.iterate_market``, bit-identical) when they are few, unless ``plain_newcomers`` is False.
    """
    start = mk.fallback.copy()
    if warm_start is None:
        return start
    warm = np.asarray(warm_start, dtype=np.float64)
    if warm.shape != start.shape:
        raise ValueError(f"warm_start has shape {warm.shape}, expected {start.shape}")
    new_rows = np.asarray(np.isnan(warm).any(axis=1), dtype=np.bool_)
    warm = np.where(new_rows[:, None], 0.0, warm)
    if not np.all(np.isfinite(warm)) or np.any(warm < 0):
        raise ValueError("warm_start must be finite and >= 0 outside NaN rows")
    warm = np.where(start > 0, warm, 0.0)
    warm = np.where(mk.contested & (warm <= 0), start, warm)
    total = warm.sum(axis=1)
    # a row left with only negligible money (its old bids were on types it no longer
    # demands) starts afresh: rescaling ~1e-308 to the budget would overflow
    usable = ~new_rows & (total > NEGLIGIBLE * mk.budgets)
    start[usable] = warm[usable] / total[usable][:, None] * mk.budgets[usable][:, None]
    if usable.any() and not usable.all():
        newcomers = _newcomers_market(mk, ~usable, start)
        solved = iterate_market(newcomers, start[~usable], tol, max_rounds, _handover) if plain_newcomers else None
        start[~usable] = _iterate(newcomers, start[~usable], tol, max_rounds)[0] if solved is None else solved
    return start


def auction(budgets: ArrayLike, weights: ArrayLike, *, utility: str | Sequence[str], alpha: float,
            tol: float = 1e-6, max_rounds: int = 1000, groups: ArrayLike | None = None,
            demand: ArrayLike | None = None, warm_start: ArrayLike | None = None) -> AuctionResult:
    """Run the Abacus auction (paper 000, Sec. 4.2, Eq. 1, Algorithms 1-2).

    Args:
        budgets: (n,) money units, finite and >= 0.
        weights: (n, m) utility weights w_ij, finite and >= 0.
        utility: "linear" (u = sum w s), "log" (u = sum w log s), or an (n,)
            sequence of those, one per job (paper Sec. 3).
        alpha: exponent of Eq. 1 in [0, 1]; 0 gives equal shares.
        tol: relative convergence tolerance on sub-budgets (module doc).
        max_rounds: cap on rounds; when hit, ``converged`` is False.
        groups: optional (n,) int leaf-queue labels; jobs compete only within
            their group (independent auctions solved together).
        demand: optional (n, m) bool; a job bids nothing and gets share 0 where
            it has no demand.
        warm_start: optional (n, m) sub-budgets of a previous clearing; rows
            with NaN are new jobs, which start from their best response to
            the others' warm sub-budgets.

    Returns:
        AuctionResult with (n, m) shares and sub-budgets; never NaN or inf.

    Raises:
        ValueError: negative, NaN or inf budgets/weights/warm start, alpha
            outside [0, 1], non-positive tol or max_rounds, shape mismatches,
            non-bool demand, non-integer groups, unknown utility kind.
    """
    small = small_auction(budgets, weights, utility=utility, alpha=alpha, tol=tol, max_rounds=max_rounds,
                          groups=groups, demand=demand, warm_start=warm_start, handover=_handover)
    if small is not None:  # the same clearing in plain Python (scheduler.abacus.plain)
        return small
    return _array_auction(budgets, weights, utility, alpha, tol, max_rounds, groups, demand, warm_start)


def _array_auction(budgets: ArrayLike, weights: ArrayLike, utility: str | Sequence[str], alpha: float, tol: float,
                   max_rounds: int, groups: ArrayLike | None, demand: ArrayLike | None,
                   warm_start: ArrayLike | None, plain_newcomers: bool = True) -> AuctionResult:
    """:func:`auction` on numpy arrays, whatever the market's size (``plain_newcomers``: as :func:`_initial_sub_budgets`)."""
    mk = _prepare(budgets, weights, utility, alpha, groups, demand)
    check_iteration(tol, max_rounds)
    start = _initial_sub_budgets(mk, warm_start, float(tol), int(max_rounds), plain_newcomers)
    if start.size == 0:
        return AuctionResult(_shares_and_rest(start, mk)[0], start, rounds=0, converged=True)
    b, rounds, converged = _iterate(mk, start, float(tol), int(max_rounds))
    return AuctionResult(_shares_and_rest(b, mk)[0], b, rounds=rounds, converged=converged)

