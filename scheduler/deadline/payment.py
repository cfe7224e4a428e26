"""Deadline quotes at minimum payment (paper 003, Sections 2-4).

A task has a workload vector ``l`` over R dimensions (unit-seconds: e.g. slot-
seconds of map work and of reduce work), a deadline ``D`` (seconds) and an
overlap coefficient ``theta`` in (0, 1]. A node offers an availability vector
``a`` (units) and unit prices ``b`` (money per unit per second). Giving the
task the resource vector ``r`` (units) makes it run for

    T(r) = theta * sum_k l_k / r_k                               (paper 003, Eq. 1)

and, under pay-by-reserve, it pays

    P(r) = (1/R) * b . r * T(r)                                  (Eq. 2)

(the code keeps the paper's ``1/R``, docs/mechanisms.md; its Fig. 2 plots ``b . r * T`` without it).
``P`` is unchanged by scaling ``r``, so by Cauchy-Schwarz its least value is
``theta * (sum_k sqrt(l_k b_k))^2 / R``, reached on the ray
``r_k ~ sqrt(l_k / b_k)`` (Eq. 12); the smallest vector on that ray that meets
the deadline is Theorem 1's closed form (Eq. 7). With availability limits the
least payment still has ``T = D`` (shrinking a feasible vector towards the
deadline never raises ``P``), so the problem is ``min b . r`` subject to
``T(r) <= D``, ``r <= a``: a convex water-filling problem that Algorithm 1
solves by capping every dimension whose optimum exceeds its availability,
taking its time out of the deadline and re-solving the rest (the water level
only rises, so a capped dimension stays capped). Error tolerance (Sec. 4) is
in :func:`error_tolerant`; whole slots are in ``scheduler.deadline.slots``.

Conventions: a dimension without work (``l_k = 0``) gets ``r_k = 0`` and adds
nothing to the time; ``R`` in ``1/R`` is the length of the workload vector; a
dimension with work but price 0 is free and is given all of its availability
(the limit of Eq. 7 as ``b_k -> 0``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

# Relative slack when comparing a time with the deadline (floating-point sums).
_TIME_RTOL = 1e-12


@dataclass(frozen=True)
class DeadlineAllocation:
    """The cheapest resource vector that finishes the work by the deadline.

    Attributes:
        resources: (R,) units of each dimension, ``r`` (0 where there is no work).
        exec_time: seconds, ``T(r)`` (Eq. 1); ``<= deadline`` when feasible.
        payment: money, ``P(r) = (1/R) b . r T(r)`` (Eq. 2).
        feasible: False when even the whole availability misses the deadline
            (then ``resources = available`` and ``exec_time`` is the real,
            longer time: Lemma 1 with theta, docs/mechanisms.md).
        capped: (R,) True where ``r_k = a_k`` (a binding limit, Alg. 1 line 8).
        node: index of the chosen candidate node (0 for a single node).
        node_payments: (P,) payment on each candidate node (inf where infeasible).
    """

    resources: FloatArray
    exec_time: float
    payment: float
    feasible: bool
    capped: BoolArray
    node: int = 0
    node_payments: FloatArray | None = None


def exec_time(workload: ArrayLike, resources: ArrayLike, theta: float = 1.0) -> float:
    """``T(r) = theta * sum_k l_k / r_k`` in seconds (paper 003, Eq. 1); dimensions
    without work add nothing, a dimension with work and no resources makes it inf."""
    l_ = np.asarray(workload, dtype=np.float64)
    r = np.asarray(resources, dtype=np.float64)
    work = l_ > 0
    if np.any(r[work] <= 0):
        return math.inf
    return float(theta * np.sum(l_[work] / r[work]))


def payment(workload: ArrayLike, resources: ArrayLike, prices: ArrayLike, theta: float = 1.0) -> float:
    """Pay-by-reserve payment ``P(r) = (1/R) b . r T(r)`` (paper 003, Eq. 2), money."""
    l_ = np.asarray(workload, dtype=np.float64)
    reserve = float(np.dot(np.asarray(prices, dtype=np.float64), np.asarray(resources, dtype=np.float64)))
    t = exec_time(l_, resources, theta)
    if reserve == 0.0:
        return 0.0
    return reserve * t / int(l_.shape[0])


def unlimited_optimum(workload: ArrayLike, deadline: float, prices: ArrayLike, theta: float = 1.0) -> FloatArray:
    """Theorem 1, Eq. 7: ``r_k = (theta / D) (sum_j sqrt(l_j b_j)) sqrt(l_k / b_k)``.

    Args:
        workload: (R,) unit-seconds, >= 0. prices: (R,) > 0 where there is work.
        deadline: seconds, > 0.

    Returns:
        (R,) units; it meets the deadline exactly and pays
        ``theta (sum_j sqrt(l_j b_j))^2 / R``.
    """
    l_ = np.asarray(workload, dtype=np.float64)
    b = np.asarray(prices, dtype=np.float64)
    work = l_ > 0
    r = np.zeros_like(l_)
    r[work] = theta / deadline * float(np.sum(np.sqrt(l_[work] * b[work]))) * np.sqrt(l_[work] / b[work])
    return r


def _check(workload: FloatArray, deadline: float, prices: FloatArray, available: FloatArray, theta: float) -> None:
    """Input checks shared by the entry points (ValueError with the field's name)."""
    if workload.ndim != 1 or workload.size == 0:
        raise ValueError("workload must be a non-empty (R,) vector")
    if not np.all(np.isfinite(workload)) or np.any(workload < 0):
        raise ValueError("workload must be finite and >= 0 in every dimension")
    if not np.any(workload > 0):
        raise ValueError("workload must be positive in at least one dimension")
    if not (math.isfinite(deadline) and deadline > 0):
        raise ValueError("deadline must be a positive number of seconds")
    if not (0 < theta <= 1):
        raise ValueError("theta must lie in (0, 1]")
    R = workload.shape[0]
    if prices.shape[-1] != R or available.shape != prices.shape or prices.ndim not in (1, 2):
        raise ValueError(f"prices and available must both be (R,) or (P, R) with R = {R}")
    if not np.all(np.isfinite(prices)) or np.any(prices < 0):
        raise ValueError("prices must be finite and >= 0")
    if np.any(np.isnan(available)) or np.any(available < 0):
        raise ValueError("available must be >= 0 (inf for no limit)")


def _on_node(l_: FloatArray, D: float, b: FloatArray, a: FloatArray, theta: float) -> DeadlineAllocation:
    """Algorithm 1, lines 2-10, on one node (inputs already checked)."""
    work = l_ > 0
    t_full = exec_time(l_, np.where(work, a, 1.0), theta)  # the fastest this node can go
    if t_full > D * (1 + _TIME_RTOL):  # Lemma 1 (with theta): no vector meets D
        r = np.where(work, a, 0.0)
        return DeadlineAllocation(r, t_full, _pay(l_, r, b, t_full), False, work.copy())
    r = np.zeros_like(l_)
    capped = work & (b == 0)  # free dimensions: take all there is (Eq. 7 as b_k -> 0)
    r[capped] = a[capped]
    budget = D - theta * float(np.sum(l_[capped] / a[capped]))
    open_ = work & ~capped
    while np.any(open_):
        level = theta / budget * float(np.sum(np.sqrt(l_[open_] * b[open_])))  # CO-STEP(Gamma, C)
        r[open_] = level * np.sqrt(l_[open_] / b[open_])
        over = open_ & (r > a)  # Omega, Alg. 1 line 5
        if not np.any(over):
            break
        r[over] = a[over]
        capped |= over
        open_ &= ~over
        budget -= theta * float(np.sum(l_[over] / a[over]))  # line 7
        if budget <= 0:  # every remaining dimension would need more than it has (rounding only)
            r[open_] = a[open_]
            capped |= open_
            break
    t = exec_time(l_, r, theta)
    return DeadlineAllocation(r, t, _pay(l_, r, b, t), True, capped)


def _pay(l_: FloatArray, r: FloatArray, b: FloatArray, t: float) -> float:
    reserve = float(np.dot(b, np.where(r > 0, r, 0.0)))
    return 0.0 if reserve == 0.0 else reserve * t / l_.shape[0]


def min_payment(
    workload: ArrayLike, deadline: float, prices: ArrayLike, available: ArrayLike, *, theta: float = 1.0,
) -> DeadlineAllocation:
    """The resource vector that finishes ``workload`` by ``deadline`` at the least
    payment (paper 003, Algorithm 1 with Theorem 1's CO-STEP).

    Args:
        workload: (R,) work per dimension, unit-seconds, >= 0, not all 0.
        deadline: seconds from the start, > 0.
        prices: (R,) unit prices of one node (money per unit-second, >= 0), or
            (P, R) for P candidate nodes.
        available: same shape as ``prices``: units available (>= 0; inf = no limit).
        theta: overlap coefficient in (0, 1] (Eq. 1; 1 = phases run one after another).

    Returns:
        The :class:`DeadlineAllocation` of the cheapest node among those that
        meet the deadline; when none does, the node that comes closest (least
        execution time) with ``resources = available`` and ``feasible = False``.

    Raises:
        ValueError: non-positive work or deadline, theta outside (0, 1],
            mismatched shapes, negative prices or availability.
    """
    l_ = np.asarray(workload, dtype=np.float64)
    b = np.asarray(prices, dtype=np.float64)
    a = np.asarray(available, dtype=np.float64)
    _check(l_, float(deadline), b, a, float(theta))
    b2, a2 = b.reshape(-1, l_.shape[0]), a.reshape(-1, l_.shape[0])
    nodes = [_on_node(l_, float(deadline), b2[p], a2[p], float(theta)) for p in range(b2.shape[0])]
    pays = np.array([x.payment if x.feasible else math.inf for x in nodes])
    if np.isfinite(pays).any():
        best = int(np.argmin(pays))  # Alg. 1 line 12: the smallest payment
    else:
        best = min(range(len(nodes)), key=lambda p: (nodes[p].exec_time, nodes[p].payment))
    x = nodes[best]
    return DeadlineAllocation(x.resources, x.exec_time, x.payment, x.feasible, x.capped, best, pays)


# --------------------------------------------------------------------------- error tolerance


@dataclass(frozen=True)
class TolerantQuote:
    """A quote planned with the stricter deadline ``D' = alpha_err * D`` (paper 003, Sec. 4).

    Attributes:
        allocation: :func:`min_payment` at ``planned_deadline``.
        planned_deadline: ``D' = alpha_err * D`` (Eq. 22), seconds.
        guarantee: ``(D'/beta_err, D'/alpha_err)``: the real execution time lies
            in it whenever the estimate errs within ``[alpha_err, beta_err]`` and
            the node could meet ``D'`` (Theorems 3-4), seconds.
        nominal: :func:`min_payment` at the user's deadline D (no tolerance).
        extra_cost: ``allocation.payment - nominal.payment``, money (>= 0 when
            both are feasible: a stricter deadline never costs less).
    """

    allocation: DeadlineAllocation
    planned_deadline: float
    guarantee: tuple[float, float]
    nominal: DeadlineAllocation
    extra_cost: float


def check_error_range(alpha_err: float, beta_err: float) -> None:
    """Paper 003, Definition 2: ``0 < alpha_err <= l'/l <= beta_err``; a meaningful
    range contains 1 (the estimate itself).

    Raises:
        ValueError: a bound that is not a positive finite number, or a range
            that does not contain 1.
    """
    if not (math.isfinite(alpha_err) and math.isfinite(beta_err) and alpha_err > 0 and beta_err > 0):
        raise ValueError("the estimate range [alpha_err, beta_err] must be positive and finite")
    if not alpha_err <= 1 <= beta_err:
        raise ValueError("the estimate range [alpha_err, beta_err] must contain 1 (alpha_err <= 1 <= beta_err)")


def error_tolerant(
    workload_estimate: ArrayLike, deadline: float, prices: ArrayLike, available: ArrayLike, *,
    alpha_err: float, beta_err: float, theta: float = 1.0,
) -> TolerantQuote:
    """Plan with ``D' = alpha_err * D`` so that the real execution time stays within
    D although the estimate errs (paper 003, Sec. 4, Theorems 3-4, Eq. 22).

    Args:
        workload_estimate: (R,) the estimate ``l'`` in unit-seconds.
        deadline: the user's deadline D, seconds, > 0.
        prices, available, theta: as :func:`min_payment`.
        alpha_err, beta_err: bounds on ``l'_k / l_k`` (Definition 2), with
            ``0 < alpha_err <= 1 <= beta_err``.

    Returns:
        The :class:`TolerantQuote`. The guarantee is
        ``[D'/beta_err, D'/alpha_err] = [alpha_err D / beta_err, D]``.

    Raises:
        ValueError: as :func:`min_payment` and :func:`check_error_range`.
    """
    check_error_range(float(alpha_err), float(beta_err))
    planned = float(alpha_err) * float(deadline)
    strict = min_payment(workload_estimate, planned, prices, available, theta=theta)
    nominal = min_payment(workload_estimate, deadline, prices, available, theta=theta)
    return TolerantQuote(strict, planned, (planned / beta_err, planned / alpha_err), nominal, strict.payment - nominal.payment)
