"""The auction's equilibrium where Algorithm 2's rounds cycle: budgets from 1e-2 to 1e6 in one
market, linear utilities, alpha = 1 (paper 000, Sec. 4.2, Eq. 1, Lemma 2).

The oracle is independent of scheduler.abacus.auction*: each job's exact best response to its
frozen rivals, written from Eq. 1 and the utility alone. du_i/db_ij is decreasing in
b_ij for alpha <= 1 (both utilities), so the best response is water-filling: for a
multiplier lambda, b_ij(lambda) solves du_i/db_ij = lambda (0 where du_i/db_ij at 0+
is already <= lambda), and lambda is the root of sum_j b_ij(lambda) = b_i; both
roots by brentq in logs, so budgets from cents to millions are equally accurate.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy.optimize import brentq  # type: ignore[import-untyped]

from scheduler.abacus.auction import AuctionResult, auction
from scheduler.abacus.kkt import kkt_residual
from scheduler.abacus.utility import utility_of

FloatArray = NDArray[np.float64]


def _log_marginal(w: float, rivals: float, y: float, kind: str, alpha: float) -> float:
    """log du/db at b = e^y of w s (linear) or w log s (log), s = b^a / (b^a + rivals); in
    logs, as b runs over 700 decades."""
    log_total = float(np.logaddexp(alpha * y, math.log(rivals)))
    if kind == "linear":
        return math.log(w * alpha * rivals) + (alpha - 1.0) * y - 2.0 * log_total
    return math.log(w * alpha * rivals) - y - log_total


def _rival_power(i: int, sub_budgets: FloatArray, weights: FloatArray, alpha: float) -> FloatArray:
    """sum over the other competitors of b^alpha; a job with weight 0 on j does not compete
    there, whatever money its fallback split leaves on j (scheduler.abacus.auction module doc)."""
    power = np.where(weights > 0, sub_budgets**alpha, 0.0)
    out: FloatArray = np.delete(power, i, axis=0).sum(axis=0)
    return out


def oracle_best_response(i: int, sub_budgets: FloatArray, budgets: FloatArray, weights: FloatArray,
                         kind: str, alpha: float) -> FloatArray | None:
    """Job i's exact best response (water-filling) to the others' frozen sub-budgets, or
    None when it has no resource with a positive weight and a rival (nothing to choose)."""
    rival_power = _rival_power(i, sub_budgets, weights, alpha)
    w, total = weights[i], float(budgets[i])
    cols = [j for j in range(w.shape[0]) if w[j] > 0 and rival_power[j] > 0]
    if not cols:
        return None

    def bid(j: int, log_lam: float) -> float:
        at_zero = w[j] / rival_power[j] if (kind == "linear" and alpha == 1.0) else math.inf
        if math.log(at_zero) <= log_lam:
            return 0.0  # a corner: du/db at 0+ is below lambda

        def gap(y: float) -> float:
            return _log_marginal(w[j], rival_power[j], y, kind, alpha) - log_lam

        lo, hi = math.log(total) - 700.0, math.log(total) + 5.0
        if gap(hi) > 0:
            return math.exp(hi)
        if gap(lo) < 0:
            return 0.0
        return math.exp(brentq(gap, lo, hi, xtol=1e-15, rtol=1e-15))

    def excess(log_lam: float) -> float:
        return sum(bid(j, log_lam) for j in cols) - total

    log_lam = brentq(excess, -750.0, 750.0, xtol=1e-15, rtol=1e-15)
    out = np.zeros_like(w)
    for j in cols:
        out[j] = bid(j, log_lam)
    return out * (total / out.sum())


def own_utility(i: int, own: FloatArray, sub_budgets: FloatArray, weights: FloatArray, kind: str,
                alpha: float) -> float:
    """u_i when job i bids ``own`` against the others' sub-budgets (Eq. 1)."""
    power = own**alpha
    total = power + _rival_power(i, sub_budgets, weights, alpha)
    shares = np.where(total > 0, power / np.where(total > 0, total, 1.0), 1.0)
    on = weights[i] > 0
    if kind == "log":
        return float(np.sum(weights[i][on] * np.log(shares[on])))
    return float(np.sum(weights[i] * shares))


def largest_gain(sub_budgets: FloatArray, budgets: FloatArray, weights: FloatArray, kind: str,
                 alpha: float) -> float:
    """Largest gain any job finds by its exact best response, relative to |u| (Nash test)."""
    worst = 0.0
    for i in range(len(budgets)):
        best = oracle_best_response(i, sub_budgets, budgets, weights, kind, alpha)
        if best is None:
            continue
        ours = own_utility(i, sub_budgets[i], sub_budgets, weights, kind, alpha)
        better = own_utility(i, best, sub_budgets, weights, kind, alpha)
        worst = max(worst, (better - ours) / max(abs(better), 1e-300))
    return worst


def mixed_market(seed: int, n: int, m: int = 4) -> tuple[FloatArray, FloatArray]:
    """Budgets log-uniform on [1e-2, 1e6], weights U[0, 2] with 30 % zeros (bench_abacus_convergence)."""
    rng = np.random.default_rng(seed)
    weights = rng.uniform(0.0, 2.0, (n, m))
    weights[rng.random((n, m)) < 0.3] = 0.0
    return 10 ** rng.uniform(-2, 6, n), weights


def test_oracle_agrees_with_the_closed_form_of_a_price_taker() -> None:
    """The oracle itself: at alpha = 1, linear, the best response is
    b_j = max(0, sqrt(w_j R_j / lambda) - R_j) (first-order condition w R / (b + R)^2 = lambda)."""
    rivals = np.array([[3.0, 1.0, 8.0]])
    weights = np.array([[1.0, 2.0, 0.5], [1.0, 1.0, 1.0]])
    sub = np.vstack([np.zeros(3), rivals])
    best = oracle_best_response(0, sub, np.array([4.0, 12.0]), weights, "linear", 1.0)
    assert best is not None
    lam = weights[0, 0] * rivals[0, 0] / (best[0] + rivals[0, 0]) ** 2
    expected = np.maximum(np.sqrt(weights[0] * rivals[0] / lam) - rivals[0], 0.0)
    np.testing.assert_allclose(best, expected, rtol=1e-9, atol=1e-12)
    assert best[2] == 0.0  # w / R = 0.0625 < lambda: a corner


@pytest.mark.parametrize("n", [2, 8])
def test_the_issue_instances_converge_to_a_nash_equilibrium(n: int) -> None:
    """The closing note's hard case: 2 and 8 jobs, seeds 0-9, linear, alpha = 1 (4/10 and 8/10
    converged before). Each converges within the default cap, and no job gains more than 1e-6
    of its utility by its exact best response."""
    for seed in range(10):
        budgets, weights = mixed_market(seed, n)
        result = auction(budgets, weights, utility="linear", alpha=1.0)
        assert result.converged, (seed, result.rounds)
        np.testing.assert_allclose(result.sub_budgets.sum(axis=1), budgets, rtol=1e-12)
        assert largest_gain(result.sub_budgets, budgets, weights, "linear", 1.0) < 1e-6, seed


def wide_market(seed: int, n: int, m: int, decades: int) -> tuple[FloatArray, FloatArray]:
    """Budgets log-uniform over ``decades`` decades from 1e-2, weights U[0, 2] with 30 % zeros."""
    rng = np.random.default_rng(seed)
    budgets = 10 ** rng.uniform(-2, -2 + decades, n)
    weights = rng.uniform(0.0, 2.0, (n, m))
    weights[rng.random((n, m)) < 0.3] = 0.0
    return budgets, weights


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(2, 8), m=st.integers(2, 4), seed=st.integers(0, 2**32 - 1),
       kind=st.sampled_from(["linear", "log"]), alpha=st.sampled_from([0.5, 0.9, 1.0]),
       decades=st.integers(1, 8))
def test_wide_budget_ranges_converge_to_a_nash_equilibrium(n: int, m: int, seed: int, kind: str, alpha: float,
                                                           decades: int) -> None:
    """Budgets spanning up to 8 decades (1e-2 .. 1e6), weights with zeros: converged, and the
    result is a Nash equilibrium by the independent best-response oracle."""
    budgets, weights = wide_market(seed, n, m, decades)
    result = auction(budgets, weights, utility=kind, alpha=alpha)
    assert result.converged, result.rounds
    assert largest_gain(result.sub_budgets, budgets, weights, kind, alpha) < 1e-6


# Markets that failed the assertions above (linear, alpha = 1: every rival of one job sits at
# a corner, bidding ~0+, on the resources it holds); the first five are the strategy's.
WIDE_BUDGET_FAILURES: dict[str, Callable[[], tuple[FloatArray, FloatArray]]] = {
    # the job holding everything it values has a flat payoff; Algorithm 2's answer follows
    # the ratios of its rivals' ~0+ bids and never settled (1,000 rounds)
    "flat job cycles, seed 76": lambda: wide_market(76, 5, 3, 8),
    "flat job cycles, 3 decades": lambda: wide_market(758356370, 6, 4, 3),
    # that job moved its money off a resource whose rivals all bid ~0+; Algorithm 2 maps their
    # ~0+ bids to ~0+, so the test certified a point where one gains ~100 % by bidding there
    "resource left to bids of 0+": lambda: wide_market(3400301639, 3, 3, 6),
    "resource left to bids of 0+, 2 decades": lambda: wide_market(4086596485, 4, 4, 2),
    # as above; with that point refused, the joint solve ran out of its 60 iterations on every
    # try (1,000 rounds)
    "joint solve out of iterations": lambda: wide_market(2549123571, 5, 4, 8),
    # as above; refused, the joint solve's point was refused too: its corners set to 0+ moved
    # the rich job's answer by 6e-6 (bench_abacus_convergence --hard, n = 6, seed 23)
    "joint solve's corners set to 0+": lambda: mixed_market(23, 6),
}


@pytest.mark.parametrize("market", list(WIDE_BUDGET_FAILURES.values()), ids=list(WIDE_BUDGET_FAILURES))
def test_wide_budget_failures_converge_to_a_nash_equilibrium(
        market: Callable[[], tuple[FloatArray, FloatArray]]) -> None:
    """The property test's assertions on markets that failed them (found by it, by a scan of
    60,000 of its draws, and by bench_abacus_convergence --hard): converged within the
    default cap, and no job gains 1e-6."""
    budgets, weights = market()
    result = auction(budgets, weights, utility="linear", alpha=1.0)
    assert result.converged, result.rounds
    np.testing.assert_allclose(result.sub_budgets.sum(axis=1), budgets, rtol=1e-12)
    assert largest_gain(result.sub_budgets, budgets, weights, "linear", 1.0) < 1e-6


def test_kkt_residual_of_a_near_monopoly_is_exact() -> None:
    """A job holding all but ~1e-14 of both resources (budgets 1e6 and 1e-8, log, alpha = 1):
    1.0 - s has an absolute error ~1e-16, which made kkt_residual report ~7e-3 at a point the
    auction solved to 1e-10 (the closing note's ~1e-2). The oracle confirms the point is optimal."""
    budgets = np.array([1e6, 1e-8])
    weights = np.array([[1.0, 1.5], [1.2, 1.0]])
    result = auction(budgets, weights, utility="log", alpha=1.0, tol=1e-10)
    assert result.converged
    assert 1.0 - result.shares[0].max() < 1e-12  # the near-monopoly
    assert largest_gain(result.sub_budgets, budgets, weights, "log", 1.0) < 1e-9
    assert kkt_residual(result, weights, "log").max() < 1e-9


def _alpha_one_result(sub_budgets: list[list[float]]) -> AuctionResult:
    """A result with the shares of Eq. 1 at alpha = 1 (s = b / column sum)."""
    b = np.array(sub_budgets)
    return AuctionResult(b / b.sum(axis=0), b, rounds=1, converged=True)


def test_kkt_residual_flags_a_resource_left_to_bids_of_0_plus() -> None:
    """Both jobs bid ~0+ on resource 1, below 1e-12 of their budgets, as at the point the
    auction once certified: Algorithm 2's best response there is ~0+ too (x = w s (1 - s),
    s ~ 1e-20), which kkt_residual skipped, yet du/db = w (1 - s) / p_1 ~ 1e280 > lambda."""
    result = _alpha_one_result([[1.0, 1e-300], [100.0, 1e-280]])
    assert kkt_residual(result, np.ones((2, 2)), "linear")[0] == 1.0


def test_kkt_residual_of_a_job_holding_everything_it_values_is_zero() -> None:
    """Job 0 holds all but ~1e-305 of both resources (its rival bids ~0+): no split gains it
    more than that, so any split is a best response, not only Algorithm 2's (set by the ratio
    of the rival's two ~0+ bids)."""
    result = _alpha_one_result([[1e5, 9e5], [1e-300, 2e-300]])
    assert kkt_residual(result, np.ones((2, 2)), "linear")[0] == 0.0


def test_kkt_residual_sums_rivals_within_the_job_group() -> None:
    """Two groups (leaf queues): the rival share of a dominant job is its own group's."""
    budgets = np.array([1e6, 1e-7, 5.0, 5.0])
    weights = np.array([[1.0, 1.5], [1.2, 1.0], [1.0, 1.0], [2.0, 1.0]])
    groups = np.array([0, 0, 1, 1])
    result = auction(budgets, weights, utility="log", alpha=1.0, tol=1e-10, groups=groups)
    assert result.converged
    assert kkt_residual(result, weights, "log", groups=groups).max() < 1e-9
    ours = utility_of(result.shares, weights, "log")
    assert np.all(np.isfinite(ours))
