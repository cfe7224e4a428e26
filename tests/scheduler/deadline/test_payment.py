"""Tests of the deadline quote at minimum payment (paper 003, Secs. 2-4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray
from scipy.optimize import minimize  # type: ignore[import-untyped]

from scheduler.deadline.payment import check_error_range, error_tolerant, exec_time, min_payment, payment, unlimited_optimum

FloatArray = NDArray[np.float64]


def slsqp_min_payment(l_: FloatArray, D: float, b: FloatArray, a: FloatArray, theta: float, seed: int) -> float:
    """Independent oracle: SLSQP on P(r) itself (Eq. 2) s.t. T(r) <= D, 0 < r <= a,
    from several random feasible starts; the least payment found."""
    rng = np.random.default_rng(seed)
    R = l_.shape[0]
    best = math.inf
    for _ in range(6):
        x0 = a * rng.uniform(0.6, 1.0, R)
        res = minimize(
            lambda r: (b @ r) * theta * np.sum(l_ / r) / R, x0, method="SLSQP",
            bounds=[(1e-9 * a[k], a[k]) for k in range(R)],
            constraints=[{"type": "ineq", "fun": lambda r: 1.0 - theta * np.sum(l_ / r) / D}],
            options={"ftol": 1e-15, "maxiter": 2000},
        )
        if res.success and theta * np.sum(l_ / res.x) <= D * (1 + 1e-9):
            best = min(best, float(res.fun))
    return best


def random_instance(rng: np.random.Generator, R: int, binding: bool) -> tuple[FloatArray, float, FloatArray, FloatArray, float]:
    l_ = rng.uniform(0.5, 20.0, R)
    b = rng.uniform(0.2, 5.0, R)
    theta = float(rng.uniform(0.3, 1.0))
    D = float(rng.uniform(2.0, 10.0))
    r_free = unlimited_optimum(l_, D, b, theta)
    if binding:  # some limits below the unlimited optimum, but the deadline still reachable
        a = r_free * rng.uniform(0.4, 1.6, R)
        while theta * np.sum(l_ / a) > D:
            a = a * 1.3
    else:
        a = r_free * rng.uniform(1.01, 3.0, R)
    return l_, D, b, a, theta


# --- the worked example (docs/mechanisms.md, "Payment")


def test_spec_example_b_l_ones() -> None:
    # b = l = (1, 1), theta = 1 gives b . r * T = 4 (the paper's Fig. 2), P = 2.
    for D in (0.5, 1.0, 7.0):
        x = min_payment([1, 1], D, [1, 1], [np.inf, np.inf])
        assert x.feasible and not x.capped.any()
        assert x.exec_time == pytest.approx(D)
        assert np.dot([1, 1], x.resources) * x.exec_time == pytest.approx(4.0)
        assert x.payment == pytest.approx(2.0)
        assert x.resources[0] == pytest.approx(x.resources[1])  # on the line r1 = r2


def test_payment_is_scale_invariant_and_bounded_below_by_cauchy_schwarz() -> None:
    rng = np.random.default_rng(1)
    for _ in range(50):
        l_, b, r = rng.uniform(0.1, 5, 3), rng.uniform(0.1, 5, 3), rng.uniform(0.1, 5, 3)
        assert payment(l_, 2.5 * r, b) == pytest.approx(payment(l_, r, b))
        assert payment(l_, r, b) >= np.sum(np.sqrt(l_ * b)) ** 2 / 3 * (1 - 1e-12)


def test_closed_form_meets_deadline_exactly_with_least_payment() -> None:
    rng = np.random.default_rng(2)
    for _ in range(50):
        l_, D, b, _, theta = random_instance(rng, 4, binding=False)
        r = unlimited_optimum(l_, D, b, theta)
        assert exec_time(l_, r, theta) == pytest.approx(D)
        assert payment(l_, r, b, theta) == pytest.approx(theta * np.sum(np.sqrt(l_ * b)) ** 2 / 4)


# --- against an independent optimiser


@pytest.mark.parametrize("binding", [False, True], ids=["no-binding-limits", "binding-limits"])
def test_algorithm_1_matches_slsqp(binding: bool) -> None:
    rng = np.random.default_rng(3 if binding else 4)
    seen_cap = 0
    for case in range(25):
        R = int(rng.integers(2, 6))
        l_, D, b, a, theta = random_instance(rng, R, binding)
        x = min_payment(l_, D, b, a, theta=theta)
        oracle = slsqp_min_payment(l_, D, b, a, theta, seed=case)
        assert x.feasible
        assert np.all(x.resources <= a * (1 + 1e-12))
        assert x.exec_time <= D * (1 + 1e-9)
        assert x.payment == pytest.approx(oracle, rel=1e-6), f"case {case}"
        seen_cap += int(x.capped.any())
        if not binding:
            assert not x.capped.any()
            assert np.allclose(x.resources, unlimited_optimum(l_, D, b, theta))
    if binding:
        assert seen_cap >= 15  # the instances really exercise Alg. 1's capping


def kkt_residual(l_: FloatArray, D: float, b: FloatArray, a: FloatArray, theta: float, r: FloatArray) -> tuple[float, float]:
    """Paper 003, Eq. 6 at ``r``: the multiplier lambda from the uncapped dimensions and
    the largest stationarity residual (relative) and most negative mu (relative)."""
    R = l_.shape[0]
    grad_p = theta / R * (b * np.sum(l_ / r) - (b @ r) * l_ / r**2)  # dP/dr_k
    grad_t = -theta * l_ / r**2  # dT/dr_k
    free = r < a * (1 - 1e-9)
    lam = float(np.mean(-grad_p[free] / grad_t[free])) if free.any() else 0.0
    scale = float(np.max(theta / R * b * np.sum(l_ / r)))  # the size of the gradient's terms
    stationarity = np.abs(grad_p + lam * grad_t)[free].max(initial=0.0) / scale
    mu = -(grad_p + lam * grad_t)  # mu_k for the capped dimensions
    worst_mu = float(min(0.0, mu[~free].min(initial=0.0))) / scale
    assert lam * float(np.max(np.abs(grad_t))) >= -1e-9 * scale
    return float(stationarity), -worst_mu


def test_kkt_conditions_hold_at_the_solution() -> None:
    rng = np.random.default_rng(5)
    for _ in range(100):
        R = int(rng.integers(2, 7))
        l_, D, b, a, theta = random_instance(rng, R, binding=bool(rng.integers(2)))
        x = min_payment(l_, D, b, a, theta=theta)
        stat, neg_mu = kkt_residual(l_, D, b, a, theta, x.resources)
        assert stat < 1e-9 and neg_mu < 1e-9
        assert x.exec_time == pytest.approx(D)  # complementary slackness: the deadline binds


# --- infeasible deadlines, several nodes, edge cases


def test_infeasible_deadline_returns_availability_and_real_time_with_theta() -> None:
    l_, b, a, theta = np.array([4.0, 6.0]), np.array([1.0, 2.0]), np.array([2.0, 2.0]), 0.5
    fastest = theta * (4 / 2 + 6 / 2)  # 2.5 s: Lemma 1 with theta (the paper drops it)
    x = min_payment(l_, 2.0, b, a, theta=theta)
    assert not x.feasible and x.capped.all()
    assert np.array_equal(x.resources, a)
    assert x.exec_time == pytest.approx(fastest)
    assert x.payment == pytest.approx((b @ a) * fastest / 2)
    # The same work is feasible at exactly the fastest time (without theta it would not be).
    y = min_payment(l_, fastest, b, a, theta=theta)
    assert y.feasible and np.allclose(y.resources, a)


def test_cheapest_node_is_named() -> None:
    l_, D = np.array([3.0, 1.0]), 2.0
    prices = np.array([[2.0, 2.0], [1.0, 1.0], [0.5, 0.5]])
    avail = np.array([[10.0, 10.0], [10.0, 10.0], [1.0, 1.0]])  # the cheapest prices cannot make it
    x = min_payment(l_, D, prices, avail)
    assert x.node == 1 and x.feasible
    assert x.node_payments is not None and math.isinf(x.node_payments[2])
    assert x.payment == pytest.approx(min_payment(l_, D, prices[1], avail[1]).payment)
    # No node can make it: the one that comes closest, with its availability.
    z = min_payment(l_, 0.1, prices, avail)
    assert not z.feasible and z.node in (0, 1) and np.array_equal(z.resources, avail[z.node])


def test_dimension_without_work_gets_nothing_and_free_dimension_gets_all() -> None:
    x = min_payment([2.0, 0.0, 1.0], 3.0, [1.0, 5.0, 1.0], [10, 10, 10])
    assert x.resources[1] == 0 and x.feasible
    y = min_payment([2.0, 1.0], 3.0, [0.0, 1.0], [4.0, 10.0])
    assert y.resources[0] == 4.0 and y.capped[0]
    assert y.exec_time == pytest.approx(3.0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([0, 0], 1.0, [1, 1], [1, 1]), "positive"),
        (([-1, 1], 1.0, [1, 1], [1, 1]), ">= 0"),
        (([1, 1], 0.0, [1, 1], [1, 1]), "deadline"),
        (([1, 1], -5.0, [1, 1], [1, 1]), "deadline"),
        (([1, 1], 1.0, [1, 1, 1], [1, 1, 1]), "shape|R ="),
        (([1, 1], 1.0, [-1, 1], [1, 1]), "prices"),
        (([1, 1], 1.0, [1, 1], [-1, 1]), "available"),
    ],
)
def test_bad_input_is_refused(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        min_payment(*args)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="theta"):
        min_payment([1, 1], 1.0, [1, 1], [1, 1], theta=0.0)


# --- error tolerance (Sec. 4, Theorems 3-4)


@pytest.mark.parametrize(("alpha", "beta"), [(0.0, 1.0), (-0.5, 2.0), (1.1, 2.0), (0.5, 0.9), (0.5, math.inf)])
def test_error_range_must_be_positive_and_contain_one(alpha: float, beta: float) -> None:
    with pytest.raises(ValueError, match="estimate range"):
        check_error_range(alpha, beta)


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    R=st.integers(1, 5),
    alpha=st.floats(0.3, 1.0),
    beta=st.floats(1.0, 3.0),
    limited=st.booleans(),
)
def test_error_tolerance_bound_holds_on_skewed_workloads(seed: int, R: int, alpha: float, beta: float, limited: bool) -> None:
    # Theorems 3-4: if alpha <= l'_k / l_k <= beta, the real time under the plan made with
    # l' lies in [T'/beta, T'/alpha] (T' = the planned time = D' when the plan is not all
    # capped); planning with D' = alpha D therefore finishes within D.
    rng = np.random.default_rng(seed)
    real = rng.uniform(0.1, 50.0, R)
    skew = rng.uniform(alpha, beta, R)
    skew[rng.integers(R)] = rng.choice([alpha, beta])  # push one dimension to an extreme of the range
    estimate = real * skew
    b = rng.uniform(0.1, 10.0, R)
    theta = float(rng.uniform(0.2, 1.0))
    D = float(rng.uniform(1.0, 100.0))
    a = unlimited_optimum(estimate, alpha * D, b, theta) * (rng.uniform(0.3, 1.5, R) if limited else 2.0)
    quote = error_tolerant(estimate, D, b, a, alpha_err=alpha, beta_err=beta, theta=theta)
    if not quote.allocation.feasible:
        return  # Theorem 4 needs Lemma 1's condition (14) at D'
    planned = quote.allocation.exec_time
    real_time = exec_time(real, quote.allocation.resources, theta)
    assert planned / beta * (1 - 1e-9) <= real_time <= planned / alpha * (1 + 1e-9)
    assert real_time <= quote.guarantee[1] * (1 + 1e-9) and quote.guarantee[1] == pytest.approx(D)
    if not quote.allocation.capped.all():
        assert real_time >= quote.guarantee[0] * (1 - 1e-9)
    if quote.nominal.feasible:
        assert quote.extra_cost >= -1e-9 * max(1.0, quote.nominal.payment)


def test_error_tolerance_bound_is_tight() -> None:
    # Theorem 3's remark: l' = alpha * l everywhere reaches D'/alpha = D.
    real, b, D, alpha = np.array([3.0, 5.0, 1.0]), np.array([1.0, 2.0, 3.0]), 10.0, 0.7
    quote = error_tolerant(alpha * real, D, b, [np.inf] * 3, alpha_err=alpha, beta_err=1.5)
    assert exec_time(real, quote.allocation.resources) == pytest.approx(D)
    assert quote.planned_deadline == pytest.approx(alpha * D)
    assert quote.extra_cost == pytest.approx(0.0, abs=1e-9)  # unlimited: P does not depend on D
    # With a binding limit the stricter deadline costs more.
    a = unlimited_optimum(alpha * real, D, b) * np.array([1.0, 0.8, 3.0])
    q2 = error_tolerant(alpha * real, D, b, a / alpha * 0.95, alpha_err=alpha, beta_err=1.5)
    assert q2.allocation.feasible and q2.extra_cost > 0
