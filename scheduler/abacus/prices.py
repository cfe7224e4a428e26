"""The auction's equilibrium at alpha = 1 solved in prices (paper 000, Sec. 4.2, Eq. 1, Lemma 2).

At alpha = 1, Eq. 1 is s_ij = b_ij / p_j with p_j = sum_l b_lj the money bid on
resource j (its "price", the implied price of paper 000, Sec. 4.2, times C_j). Job i's KKT
condition du_i/db_ij = lambda_i (<= lambda_i where b_ij = 0) then fixes its share
of j from t_ij = lambda_i p_j / w_ij alone:

    linear  (w s):      w_ij (1 - s_ij) / p_j = lambda_i   ->  s_ij = max(0, 1 - t_ij)
    logscale (w log s): w_ij (1 - s_ij) / (s_ij p_j) = lambda_i -> s_ij = 1 / (1 + t_ij)

(the linear corner b_ij = 0 is exactly t_ij >= 1: its marginal at 0, w_ij / p_j,
is at most lambda_i). The equilibrium is then a market in m prices, as in a
Fisher market (the prices add up to the money, sum_j p_j = sum_i b_i):

    sum_j p_j s_ij(p_j, lambda_i) = b_i   for each job    -> lambda_i(p), by bisection
    z_j(p) = sum_i s_ij - 1 = 0            for each contested (group, j)

Each job's spend is decreasing in its lambda_i, so lambda_i(p) is a bisection in
log lambda (vectorised over jobs); the excess shares z(p) = 0 are solved by
Newton's method in log p with the implicit-function Jacobian and a backtracking
line search on ||z||, falling back to a tatonnement step log p += z where
Newton finds no descent. Everything is in logs of money, so budgets from 1e-2
to 1e6 in one market are as well scaled as equal ones (the unknowns are the m
prices, whatever the spread of budgets).

Why: with linear utilities at alpha = 1, a tiny budget against a large one makes
Algorithm 2's best-response map unstable (scheduler.abacus.newton's doc), and
the joint Newton in log b meets near-singular Jacobians where small jobs sit at
or near corners; in prices the corners are the kink of max(0, 1 - t), where the
spend is still continuous and monotone in the job's own lambda.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from scheduler.abacus.steps import _TINY

if TYPE_CHECKING:
    from scheduler.abacus.state import _Market

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]

_BISECTIONS = 90  # halvings of a log bracket ~1e3 wide: below 1e-16 relative
_SOLVED = 1e-14  # ||excess shares|| at which the market clears
# smoothing of the linear corner max(0, 1 - t), stage by stage; the last is ~exact
# (a corner's share is then ~mu^2 / (t - 1), far below NEGLIGIBLE)
_SMOOTHING = (1e-2, 1e-4, 1e-6, 1e-8, 1e-10, 1e-13)


def _phi(t: FloatArray, is_log: BoolArray, mu: float) -> tuple[FloatArray, FloatArray]:
    """(s(t), t s'(t)) per entry: linear max(0, 1 - t), smoothed to
    ((1 - t) + sqrt((1 - t)^2 + 4 mu^2)) / 2 (Chen-Harker-Kanzow-Smale; exact at mu = 0),
    logscale 1 / (1 + t)."""
    gap = 1.0 - t
    root = np.sqrt(gap * gap + 4.0 * mu * mu)
    lin = 0.5 * (gap + root)
    lin_slope = -0.5 * t * (1.0 + gap / np.where(root > 0, root, 1.0))
    inv = 1.0 / (1.0 + t)
    log_slope = -t * inv * inv
    log = is_log[:, None]
    return np.where(log, inv, lin), np.where(log, log_slope, lin_slope)


def _column_sums(values: FloatArray, mk: _Market) -> FloatArray:
    """(n_groups, m) sums of (n, m) values over each group."""
    out = np.zeros((mk.n_groups, values.shape[1]))
    np.add.at(out, mk.group_index, values)
    return out


def _lambdas_at(log_p: FloatArray, log_w: FloatArray, mk: _Market, comp: BoolArray,
                rows: BoolArray, mu: float) -> FloatArray:
    """(n,) log lambda_i at which job i spends exactly b_i at the prices p (n, m per job's
    group): bisection on its decreasing spend, vectorised over jobs."""
    base = np.where(comp, log_w - log_p, np.nan)  # t_ij = 1 at log lambda = log(w / p)
    lo = np.nanmin(np.where(rows[:, None], base, 0.0), axis=1, initial=np.inf) - 60.0
    hi = np.nanmax(np.where(rows[:, None], base, 0.0), axis=1, initial=-np.inf) + 60.0
    p = np.exp(log_p)
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        t = np.exp(np.minimum(mid[:, None] + log_p - log_w, 700.0))
        spend = np.sum(np.where(comp, p * _phi(t, mk.is_log, mu)[0], 0.0), axis=1)
        over = spend > mk.budgets  # spending too much: lambda must rise
        lo = np.where(over, mid, lo)
        hi = np.where(over, hi, mid)
    out: FloatArray = np.where(rows, 0.5 * (lo + hi), 0.0)
    return out


class _State:
    """Everything at one price vector: lambda(p), shares, t s'(t), excess shares."""

    def __init__(self, log_price: FloatArray, log_w: FloatArray, mk: _Market, comp: BoolArray,
                 rows: BoolArray, columns: BoolArray, mu: float) -> None:
        self.log_price = log_price  # (n_groups, m), meaningful on columns
        log_p = np.where(comp, log_price[mk.group_index], 0.0)
        self.p = np.where(comp, np.exp(log_p), 0.0)
        self.log_lam = _lambdas_at(log_p, log_w, mk, comp, rows, mu)
        t = np.exp(np.minimum(self.log_lam[:, None] + log_p - log_w, 700.0))
        s, ts = _phi(t, mk.is_log, mu)
        self.s = np.where(comp, s, 0.0)
        self.ts = np.where(comp, ts, 0.0)
        self.excess = (_column_sums(self.s, mk) - 1.0)[columns]
        self.norm = float(np.linalg.norm(self.excess))  # 2-norm: Newton descends on it


def _jacobian(st: _State, mk: _Market, columns: BoolArray) -> FloatArray:
    """d z_(g,j) / d log p_(h,l) on the contested columns (implicit function theorem).

    Budget held: d log lambda_i = -sum_l p_l (s_il + ts_il) d log p_l / D_i with
    D_i = sum_l p_l ts_il; then d z_j = sum_i ts_ij (d log lambda_i + d log p_j).
    """
    n_groups, m = columns.shape
    d = np.sum(st.p * st.ts, axis=1)
    safe_d = np.where(d < 0, d, -1.0)
    # dlam[i, (g, l)]: d log lambda_i / d log p_(g, l), nonzero for i in group g
    dlam_local = -(st.p * (st.s + st.ts)) / safe_d[:, None]  # (n, m)
    one_hot = np.zeros((st.s.shape[0], n_groups))
    one_hot[np.arange(st.s.shape[0]), mk.group_index] = 1.0
    dlam = (one_hot[:, :, None] * dlam_local[:, None, :]).reshape(st.s.shape[0], n_groups * m)
    # dz[(g, j), (h, l)] = sum_{i in g} ts_ij dlam[i, (h, l)] + delta sum_{i in g} ts_ij
    ts_g = (one_hot[:, :, None] * st.ts[:, None, :]).reshape(st.s.shape[0], n_groups * m)
    jac = ts_g.T @ dlam + np.diag(ts_g.sum(axis=0))
    flat = columns.reshape(-1)
    out: FloatArray = jac[np.ix_(flat, flat)]
    return out


def _newton_move(st: _State, mk: _Market, columns: BoolArray, log_w: FloatArray, comp: BoolArray,
                 rows: BoolArray, mu: float) -> _State | None:
    """One Newton step in log p, halved until ||z|| falls; else a tatonnement step
    (log p += z: raise the price of over-demanded columns); None if neither helps."""
    jac = _jacobian(st, mk, columns)
    try:
        delta = np.linalg.solve(jac, -st.excess)
    except np.linalg.LinAlgError:
        delta = np.linalg.lstsq(jac, -st.excess, rcond=None)[0]
    largest = float(np.max(np.abs(delta), initial=0.0))
    scale = min(1.0, 5.0 / largest) if largest > 0 else 1.0
    for _ in range(30):
        step = np.zeros_like(st.log_price)
        step[columns] = scale * delta
        trial = _State(st.log_price + step, log_w, mk, comp, rows, columns, mu)
        if trial.norm < st.norm * (1.0 - 1e-4 * scale):
            return trial
        scale *= 0.5
    step = np.zeros_like(st.log_price)
    step[columns] = np.clip(st.excess, -1.0, 1.0)
    trial = _State(st.log_price + step, log_w, mk, comp, rows, columns, mu)
    return trial if trial.norm < st.norm else None


def price_equilibrium(mk: _Market, start: FloatArray, max_iterations: int) -> tuple[FloatArray, int]:
    """Sub-budgets b_ij = p_j s_ij at alpha = 1 from Newton in log p, and iterations used.

    Only contested entries carry money (uncontested ones bid 0, rows without a
    contested entry keep ``start``: scheduler.abacus.auction's module doc). The caller
    certifies the result with Algorithm 1's convergence test.
    """
    comp = mk.contested
    rows: BoolArray = np.any(comp, axis=1)
    columns = _column_sums(comp.astype(np.float64), mk) >= 2
    log_w = np.log(np.where(comp, mk.weights, 1.0))
    totals = _column_sums(np.where(comp, start, 0.0), mk)
    log_price = np.log(np.where(columns & (totals > 0), totals, 1.0))
    smoothing = _SMOOTHING if (~mk.is_log).any() else (0.0,)
    iterations = 0
    for mu in smoothing:  # a homotopy: each stage starts from the last one's prices
        st = _State(log_price, log_w, mk, comp, rows, columns, mu)
        last = mu == smoothing[-1]
        while iterations < max_iterations and st.norm >= (_SOLVED if last else mu):
            iterations += 1
            moved = _newton_move(st, mk, columns, log_w, comp, rows, mu)
            if moved is None:
                break
            st = moved
        log_price = st.log_price
    b = np.where(comp, st.p * st.s, 0.0)
    total = b.sum(axis=1, keepdims=True)
    b = np.where(rows[:, None], b / np.where(total > 0, total, 1.0) * mk.budgets[:, None], start)
    out: FloatArray = np.where(comp, np.maximum(b, _TINY), b)
    return out, iterations
