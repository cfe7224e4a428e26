"""A straightforward reference of the Abacus auction in plain Python loops (for bench_auction).

The same O(n m)-per-round algorithm as ``scheduler.abacus.auction.auction`` (paper 000,
Algorithms 1-2 with its erratum (docs/mechanisms.md); Newton-scaled, damped simultaneous
rounds, the same convergence test), written entry by entry with lists and
``math`` for one leaf queue where every job demands every resource type and
starts cold. It exists to measure what the vectorised code buys, and its outputs
are asserted equal (to the auction's tolerance) in the benchmark.
"""

from __future__ import annotations

import math

from scheduler.abacus.steps import _DAMPING_REGROWTH, _MAX_DOWN, _MAX_UP, _MIN_DAMPING, _MIN_SLOPE, _TINY, NEGLIGIBLE

Matrix = list[list[float]]


def _shares_and_rest(b: Matrix, w: Matrix, alpha: float) -> tuple[Matrix, Matrix]:
    n, m = len(b), len(b[0]) if b else 0
    s = [[0.0] * m for _ in range(n)]
    rest = [[0.0] * m for _ in range(n)]
    for j in range(m):
        power = [0.0] * n
        competitors = 0
        for i in range(n):
            if w[i][j] > 0 and sum(b[i]) > 0:  # active: positive weight and budget (every job demands j)
                power[i] = b[i][j] ** alpha if alpha > 0 else 1.0
                competitors += 1
        total = sum(power)
        for i in range(n):
            if total > 0:
                s[i][j] = power[i] / total
            elif competitors:
                s[i][j] = (1.0 if w[i][j] > 0 else 0.0) / competitors
            else:
                s[i][j] = 1.0 / n
            rest[i][j] = 1.0 - s[i][j]
        if total > 0:
            for i in range(n):
                if s[i][j] > 0.5:  # the dominant job: 1 - s from the rivals' power
                    rest[i][j] = sum(power[k] for k in range(n) if k != i) / total
    return s, rest


def auction_reference(budgets: list[float], weights: Matrix, *, utility: str, alpha: float, tol: float = 1e-6,
                      max_rounds: int = 1000) -> tuple[Matrix, Matrix, int, bool]:
    """(shares, sub-budgets, rounds, converged) like ``scheduler.abacus.auction.auction`` (cold start,
    one group, full demand, budgets > 0)."""
    n, m = len(budgets), len(weights[0])
    is_log = utility == "log"
    active = [[weights[i][j] > 0 for j in range(m)] for i in range(n)]
    n_active = [sum(active[i][j] for i in range(n)) for j in range(m)]
    contested = [[active[i][j] and n_active[j] >= 2 for j in range(m)] for i in range(n)]
    fallback = []
    for i in range(n):
        support = active[i] if any(active[i]) else [True] * m
        count = sum(support)
        fallback.append([budgets[i] / count if support[j] else 0.0 for j in range(m)])
    b = [row[:] for row in fallback]
    theta = [1.0] * n
    previous = [[0.0] * m for _ in range(n)]
    for rounds in range(1, max_rounds + 1):
        s, rest = _shares_and_rest(b, weights, alpha)
        worst = 0.0
        steps: Matrix = []
        targets: Matrix = []
        for i in range(n):
            x = [weights[i][j] * rest[i][j] if is_log else weights[i][j] * s[i][j] * rest[i][j] for j in range(m)]
            xsum = sum(x)
            target = [x[j] / xsum * budgets[i] for j in range(m)] if xsum > 0 else fallback[i][:]
            floor = max(NEGLIGIBLE * budgets[i], _TINY)
            for j in range(m):
                if not (b[i][j] < floor and target[j] < floor):
                    worst = max(worst, abs(target[j] - b[i][j]) / max(b[i][j], floor))
            targets.append(target)
            steps.append(_newton(b[i], target, x, s[i], rest[i], active[i], weights[i], alpha, is_log))
        if worst < tol:
            return _shares_and_rest(b, weights, alpha)[0], b, rounds, True
        for i in range(n):
            dot = sum(steps[i][j] * previous[i][j] * b[i][j] for j in range(m))
            theta[i] = max(theta[i] * 0.5, _MIN_DAMPING) if dot < 0 else min(theta[i] * _DAMPING_REGROWTH, 1.0)
            moved = [b[i][j] * math.exp(theta[i] * steps[i][j]) if b[i][j] > 0 and targets[i][j] > 0
                     else b[i][j] + theta[i] * (targets[i][j] - b[i][j]) for j in range(m)]
            total = sum(moved)
            row = [v / total * budgets[i] for v in moved] if total > 0 else moved
            b[i] = [max(v, _TINY) if contested[i][j] else v for j, v in enumerate(row)]
        previous = steps
    return _shares_and_rest(b, weights, alpha)[0], b, max_rounds, False


def _newton(b: list[float], target: list[float], x: list[float], s: list[float], rest: list[float],
            active: list[bool], w: list[float], alpha: float, is_log: bool) -> list[float]:
    """One job's Newton step in log b (``scheduler.abacus.auction._newton_log_step``)."""
    m = len(b)
    both = [b[j] > 0 and target[j] > 0 and active[j] for j in range(m)]
    g, inv_h = [0.0] * m, [0.0] * m
    for j in range(m):
        if both[j]:
            g[j] = math.log(x[j] if x[j] > 0 else 1.0) - math.log(b[j])
            h = -alpha * s[j] - 1.0 if is_log else alpha * (rest[j] - s[j]) - 1.0
            inv_h[j] = 1.0 / min(max(h, -1.0), -_MIN_SLOPE)
    if sum(both) < 2:
        step = [math.log(target[j]) - math.log(b[j]) if both[j] else 0.0 for j in range(m)]
    else:
        denominator = sum(b[j] * inv_h[j] for j in range(m))
        lam = sum(b[j] * inv_h[j] * g[j] for j in range(m)) / (denominator if denominator < 0 else -1.0)
        step = [(lam - g[j]) * inv_h[j] if both[j] else 0.0 for j in range(m)]
    return [min(max(v, -_MAX_DOWN), _MAX_UP) for v in step]
