"""The Abacus auction's rounds in plain Python for small markets (paper 000, Sec. 4.2, Eq. 1,
Algorithms 1-2).

``scheduler.abacus.auction`` runs its rounds as numpy operations on (n, m) arrays. On the
markets of a few to a few dozen jobs that the offline replay clears at every event, each
of those operations costs more in call overhead than in arithmetic. :func:`small_auction`
runs the same clearing (validation, warm start, the newcomers' warm-up, the damped
Newton-scaled simultaneous rounds, Algorithm 1's convergence test) on flat float lists
(entry ``2 i + j``: two resource types), operation for operation, so that its results are
bit-identical:

* every element-wise step is the same IEEE operation, in the same order;
* sums are taken in numpy's order: a row sum (``steps._row_sum``, BLAS) from 0.0; a column
  sum of one group from 0.0 row after row (numpy's reduction over the outer axis); a sum
  over several groups (``np.bincount``) from 0.0 job after job;
* logarithms, exponentials and powers b^alpha other than alpha = 1 (b itself) and
  alpha = 1/2 (a correctly rounded square root, as numpy's) go through numpy's own
  functions, one batch per round: numpy's may differ from ``math``'s in the last place.

It covers the common case only. It returns None, and the caller clears the market with
the numpy path from the start (the same result: that path is deterministic), for invalid
inputs (the numpy path raises), markets of more than MAX_JOBS jobs or other than TYPES types, and
a market that would reach the numpy path's joint solve or sequential rounds, or whose
convergence test needs the KKT corner check (``auction._corner_violated``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import reduce
from operator import add

import numpy as np
from numpy.typing import ArrayLike

from scheduler.abacus.state import AuctionResult, FloatArray, _Market
from scheduler.abacus.steps import _DAMPING_REGROWTH, _MAX_DOWN, _MAX_UP, _MIN_DAMPING, _MIN_SLOPE, _TINY, NEGLIGIBLE
from scheduler.abacus.utility import check_alpha, check_iteration
from scheduler.types import UTILITY_KINDS

__all__ = ["KKT_MAX_JOBS", "MAX_JOBS", "TYPES", "iterate_market", "small_auction", "small_kkt_max"]

MAX_JOBS = 32  # from about this size the numpy rounds are as fast (measured on the replay's markets)
KKT_MAX_JOBS = 64  # the KKT read-out (one pass, no rounds): as fast as numpy's up to about 100 jobs
TYPES = 2  # the only m it takes (the replay's map and reduce slots): its sums are written for it

Floats = list[float]
Flags = list[bool]
# (jobs, contested entries, max_rounds) -> the round after which the numpy path leaves
# its simultaneous rounds (joint solve or sequential rounds): this path stops there
Handover = Callable[[int, int, int], int]


class _Leave(Exception):
    """The market left the cases this path covers: the numpy path clears it."""


class _Lists:
    """A validated market as flat lists (the fields of ``state._Market``, entry 2 i + j)."""

    __slots__ = ("active", "all_log", "alpha", "any_log", "budget", "budgets", "contested", "equal", "fallback",
                 "floor", "is_log", "n", "n_groups", "rival", "slot", "weights")

    def __init__(self, budgets: Floats, weights: Floats, is_log: Flags, active: Flags, contested: Flags,
                 slot: list[int], n_groups: int, alpha: float, fallback: Floats, equal: Floats,
                 rival: Floats | None) -> None:
        self.n = len(budgets)
        self.budgets, self.weights, self.is_log = budgets, weights, is_log
        self.active, self.contested, self.slot, self.n_groups = active, contested, slot, n_groups
        self.alpha, self.fallback, self.equal, self.rival = alpha, fallback, equal, rival
        self.any_log, self.all_log = any(is_log), all(is_log)
        self.budget = [b for b in budgets for _ in (0, 1)]  # b_i per entry
        self.floor = [max(NEGLIGIBLE * b, _TINY) for b in self.budget]  # _change_by_entry's floor

    def rows(self, keep: Flags, rival: Floats) -> _Lists:
        """``auction._newcomers_market``: the rows ``keep`` against the others' frozen ``rival`` power."""
        entries = [k for k in range(2 * self.n) if keep[k >> 1]]
        groups = [self.slot[k] >> 1 for k in entries[::2]]
        dense = {g: pos for pos, g in enumerate(sorted(set(groups)))}
        return _Lists(
            [b for b, k in zip(self.budgets, keep, strict=True) if k], [self.weights[k] for k in entries],
            [f for f, k in zip(self.is_log, keep, strict=True) if k], [self.active[k] for k in entries],
            [self.contested[k] for k in entries], [2 * dense[g] + j for g in groups for j in (0, 1)],
            len(dense), self.alpha, [self.fallback[k] for k in entries], [self.equal[k] for k in entries],
            [rival[k] for k in entries],
        )


def _row_sum(values: Floats) -> Floats:
    """(n,) ``steps._row_sum`` (BLAS): 0.0 plus each row's two entries in order."""
    return [(0.0 + a) + b for a, b in zip(values[0::2], values[1::2], strict=True)]


def _group_sum(values: Floats, mk: _Lists) -> Floats:
    """``steps._group_sum`` per entry: the column sums of the entry's group."""
    return _sum_by_slot(values, mk.n_groups, mk.slot)


def _sum_by_slot(values: Floats, n_groups: int, slot: list[int]) -> Floats:
    """:func:`_group_sum` of the groups ``slot // 2`` (entry k in column k % 2): numpy's column sum of
    one group (from 0.0, row after row), ``np.bincount``'s of several (from 0.0, job after job)."""
    if n_groups == 1:
        return [reduce(add, values[0::2], 0.0), reduce(add, values[1::2], 0.0)] * (len(values) // 2)
    totals = [0.0] * (2 * n_groups)
    for s, v in zip(slot, values, strict=True):
        totals[s] += v
    return [totals[s] for s in slot]


def _power(b: Floats, mk: _Lists) -> Floats:
    """``auction._power``: b_ij^alpha of competitors, 0 elsewhere."""
    alpha = mk.alpha
    if alpha == 0.0:
        return [1.0 if a else 0.0 for a in mk.active]
    if alpha == 1.0:
        return [v if a else 0.0 for v, a in zip(b, mk.active, strict=True)]
    if alpha == 0.5:
        return [math.sqrt(v) if a else 0.0 for v, a in zip(b, mk.active, strict=True)]
    powered: Floats = (np.array(b) ** alpha).tolist()
    return [v if a else 0.0 for v, a in zip(powered, mk.active, strict=True)]


def _total_power(power: Floats, mk: _Lists) -> Floats:
    total = _group_sum(power, mk)
    return total if mk.rival is None else [t + r for t, r in zip(total, mk.rival, strict=True)]


def _shares_and_rest(b: Floats, mk: _Lists) -> tuple[Floats, Floats]:
    """``auction._shares_and_rest``: (s, 1 - s), Eq. 1 within each group."""
    power = _power(b, mk)
    total = _total_power(power, mk)
    if min(total) > 0:
        safe = total
        shares = [p / t for p, t in zip(power, total, strict=True)]
        dominant = [k for k, s in enumerate(shares) if s > 0.5]
    else:
        safe = [t if t > 0 else 1.0 for t in total]
        shares = [p / s if t > 0 else e for p, s, t, e in zip(power, safe, total, mk.equal, strict=True)]
        dominant = [k for k, (s, t) in enumerate(zip(shares, total, strict=True)) if s > 0.5 and t > 0]
    rest = [1.0 - s for s in shares]
    if dominant:
        for k in dominant:
            power[k] = 0.0  # power is this function's own list
        others = _total_power(power, mk)
        for k in dominant:
            rest[k] = others[k] / safe[k]
    return shares, rest


def _marginal(shares: Floats, rest: Floats, mk: _Lists) -> Floats:
    """``auction._marginal``: x_ij = w s (1 - s) (linear) or w (1 - s) (log)."""
    if not mk.any_log:
        return [w * s * r for w, s, r in zip(mk.weights, shares, rest, strict=True)]
    if mk.all_log:
        return [w * r for w, r in zip(mk.weights, rest, strict=True)]
    return [w * r if mk.is_log[k >> 1] else w * s * r for k, (w, s, r) in enumerate(zip(mk.weights, shares, rest, strict=True))]


def _best_response_of(x: Floats, mk: _Lists) -> Floats:
    """``auction._best_response_of``: b_i x_ij / sum_l x_il, or the fallback split."""
    out: Floats = []
    fallback = mk.fallback
    for i, (x0, x1, b) in enumerate(zip(x[0::2], x[1::2], mk.budgets, strict=True)):
        total = (0.0 + x0) + x1
        out += (x0 / total * b, x1 / total * b) if total > 0 else (fallback[2 * i], fallback[2 * i + 1])
    return out


def _converged(b: Floats, target: Floats, shares: Floats, rest: Floats, mk: _Lists, tol: float) -> bool:
    """``auction._converged``; leaves when the KKT corner check would be needed."""
    largest, corner = 0.0, False
    for bv, tv, floor, c in zip(b, target, mk.floor, mk.contested, strict=True):
        step = tv - bv
        if bv < floor and bv + step < floor:  # negligible: no change
            corner = corner or c
        elif abs(step) / (bv if bv > floor else floor) > largest:
            largest = abs(step) / (bv if bv > floor else floor)
    if largest < tol and (mk.alpha == 0.0 or not corner):
        return True
    change: Floats = []
    negligible: Flags = []
    for bv, tv, floor in zip(b, target, mk.floor, strict=True):
        step = tv - bv
        low = bv < floor and bv + step < floor
        negligible.append(low)
        change.append(0.0 if low else abs(step) / (bv if bv > floor else floor))
    flat: Flags | None = None
    if max(change) >= tol:
        flat = _flat_rows(shares, rest, mk)
        if not any(flat) or max(0.0 if flat[k >> 1] else c for k, c in enumerate(change)) >= tol:
            return False
    if mk.alpha == 0.0 or not any(low and c for low, c in zip(negligible, mk.contested, strict=True)):
        return True
    if flat is None:
        flat = _flat_rows(shares, rest, mk)
    if any(low and c and not flat[k >> 1] for k, (low, c) in enumerate(zip(negligible, mk.contested, strict=True))):
        raise _Leave
    return True


def _flat_rows(shares: Floats, rest: Floats, mk: _Lists) -> Flags:
    """``steps._flat_rows``: linear jobs that no split can gain NEGLIGIBLE of their utility."""
    if mk.all_log or min(rest) > TYPES * NEGLIGIBLE:
        return [False] * mk.n
    gain = _row_sum([w * r for w, r in zip(mk.weights, rest, strict=True)])
    utility = _row_sum([w * s for w, s in zip(mk.weights, shares, strict=True)])
    return [not lg and 0 < g <= NEGLIGIBLE * u for lg, g, u in zip(mk.is_log, gain, utility, strict=True)]


def _newton_log_step(b: Floats, target: Floats, x: Floats, shares: Floats, rest: Floats, mk: _Lists) -> Floats:
    """``steps._newton_log_step``: the (n, m) Newton step in log b on each job's KKT condition."""
    alpha = mk.alpha
    both = [bv > 0 and tv > 0 and a for bv, tv, a in zip(b, target, mk.active, strict=True)]
    count = _row_sum([1.0 if f else 0.0 for f in both])
    single = [c < 2 for c in count]
    used = [k for k, f in enumerate(both) if f]
    positive = [k for k in used if x[k] > 0]
    alone = [k for k in used if single[k >> 1]]
    logs: Floats = np.log(np.array([b[k] for k in used] + [x[k] for k in positive]
                                   + [target[k] for k in alone])).tolist()
    size = len(b)
    log_b, log_x = [0.0] * size, [0.0] * size
    first, second = len(used), len(used) + len(positive)
    for k, v in zip(used, logs[:first], strict=True):
        log_b[k] = v
    for k, v in zip(positive, logs[first:second], strict=True):
        log_x[k] = v
    g = [a - c for a, c in zip(log_x, log_b, strict=True)]
    inv_h: Floats = []
    for k, (f, s, r) in enumerate(zip(both, shares, rest, strict=True)):
        h = -alpha * s - 1.0 if mk.is_log[k >> 1] else alpha * (r - s) - 1.0
        inv_h.append(1.0 / (-1.0 if h < -1.0 else (-_MIN_SLOPE if h > -_MIN_SLOPE else h)) if f else 0.0)
    weight = [bv * ih for bv, ih in zip(b, inv_h, strict=True)]
    denominator = _row_sum(weight)
    numerator = _row_sum([wt * gv for wt, gv in zip(weight, g, strict=True)])
    lam = [num / (den if den < 0 else -1.0) for num, den in zip(numerator, denominator, strict=True)]
    step = [(lam[k >> 1] - gv) * ih for k, (gv, ih) in enumerate(zip(g, inv_h, strict=True))]
    if alone:
        for k in range(size):
            if single[k >> 1]:
                step[k] = 0.0
        for k, v in zip(alone, logs[second:], strict=True):
            step[k] = v - log_b[k]
    return [-_MAX_DOWN if s < -_MAX_DOWN else (_MAX_UP if s > _MAX_UP else s) for s in step]


def _adapt_damping(theta: Floats, step: Floats, previous: Floats, b: Floats) -> Floats:
    """``steps._adapt_damping``: halve a job's step when its log step reverses, else regrow it."""
    swing = _row_sum([(s * p) * bv for s, p, bv in zip(step, previous, b, strict=True)])
    return [max(t * 0.5, _MIN_DAMPING) if r < 0 else min(t * _DAMPING_REGROWTH, 1.0) for t, r in zip(theta, swing, strict=True)]


def _damped_move(b: Floats, target: Floats, log_step: Floats, theta: Floats, mk: _Lists) -> Floats:
    """``steps._damped_move``, then the underflow guard of ``auction._iterate``."""
    t = [th for th in theta for _ in (0, 1)]
    both = [k for k, (bv, tv) in enumerate(zip(b, target, strict=True)) if bv > 0 and tv > 0]
    moved = [bv + tt * (tv - bv) for bv, tv, tt in zip(b, target, t, strict=True)]
    for k, e in zip(both, np.exp(np.array([t[k] * log_step[k] for k in both])).tolist(), strict=True):
        moved[k] = b[k] * e
    total = [s for s in _row_sum(moved) for _ in (0, 1)]
    out = [v / s * bud if s > 0 else v for v, s, bud in zip(moved, total, mk.budget, strict=True)]
    return [(v if v > _TINY else _TINY) if c else v for v, c in zip(out, mk.contested, strict=True)]


def _iterate(mk: _Lists, b: Floats, tol: float, max_rounds: int, handover: Handover) -> tuple[Floats, int, bool]:
    """``auction._iterate`` up to its handover round (then :class:`_Leave`)."""
    theta = [1.0] * mk.n
    previous = [0.0] * len(b)
    stop = handover(mk.n, sum(mk.contested), max_rounds)
    rounds = 0
    while rounds < max_rounds:
        rounds += 1
        shares, rest = _shares_and_rest(b, mk)
        x = _marginal(shares, rest, mk)
        target = _best_response_of(x, mk)
        if _converged(b, target, shares, rest, mk, tol):
            return b, rounds, True
        if rounds >= stop:
            raise _Leave
        step = _newton_log_step(b, target, x, shares, rest, mk)
        theta = _adapt_damping(theta, step, previous, b)
        b = _damped_move(b, target, step, theta, mk)
        previous = step
    return b, max_rounds, False


def _finite(values: Floats) -> bool:
    """All finite and >= 0 (NaN fails)."""
    return all(0.0 <= v < math.inf for v in values)


def _group_index(groups: ArrayLike | None, n: int) -> list[int]:
    """``steps._group_index``'s dense labels, or :class:`_Leave` where it raises."""
    if groups is None:
        return [0] * n
    arr = np.asarray(groups)
    if arr.shape != (n,) or arr.dtype.kind not in "iu":  # other integer-like dtypes: the numpy path
        raise _Leave
    labels = arr.tolist()
    position = {label: k for k, label in enumerate(sorted(set(labels)))}
    return [position[v] for v in labels]


def _log_mask(utility: str | Sequence[str], n: int) -> Flags:
    """``utility.log_mask`` as a list, or :class:`_Leave` where it raises."""
    kinds = [utility] * n if isinstance(utility, str) else list(utility)
    if len(kinds) != n or any(str(k) not in UTILITY_KINDS for k in kinds):
        raise _Leave
    return [bool(k == "log") for k in kinds]


def _demand(demand: ArrayLike | None, n: int) -> Flags:
    """``utility.demand_mask`` flattened, or :class:`_Leave` where it raises."""
    if demand is None:
        return [True] * (n * TYPES)
    arr = np.asarray(demand)
    if arr.shape != (n, TYPES) or arr.dtype != np.bool_:
        raise _Leave
    flags: Flags = arr.ravel().tolist()
    return flags


def _prepare(budgets: ArrayLike, weights: ArrayLike, utility: str | Sequence[str], alpha: float,
             groups: ArrayLike | None, demand: ArrayLike | None) -> _Lists:
    """``auction._prepare`` on lists; leaves on anything the numpy path would reject or not run here."""
    b_arr = np.asarray(budgets, dtype=np.float64)
    if b_arr.ndim != 1 or not 0 < b_arr.shape[0] <= MAX_JOBS:
        raise _Leave
    n = b_arr.shape[0]
    w_arr = np.asarray(weights, dtype=np.float64)
    if w_arr.shape != (n, TYPES):
        raise _Leave
    b: Floats = b_arr.tolist()
    w: Floats = w_arr.ravel().tolist()
    if not (_finite(b) and _finite(w)):
        raise _Leave
    dem, index, is_log = _demand(demand, n), _group_index(groups, n), _log_mask(utility, n)
    w = [v if d else 0.0 for v, d in zip(w, dem, strict=True)]
    active = [d and v > 0 and bi > 0 for v, d, bi in zip(w, dem, [bi for bi in b for _ in (0, 1)], strict=True)]
    slot = [s for g in index for s in (2 * g, 2 * g + 1)]
    n_groups = max(index) + 1
    n_active = _sum_by_slot([1.0 if a else 0.0 for a in active], n_groups, slot)
    n_demand = _sum_by_slot([1.0 if d else 0.0 for d in dem], n_groups, slot)
    fallback: Floats = []
    for a0, a1, d0, d1, bi in zip(active[0::2], active[1::2], dem[0::2], dem[1::2], b, strict=True):
        s0, s1 = (a0, a1) if a0 or a1 else (d0, d1)  # the split over competed types, else demanded ones
        count = max(s0 + s1, 1)
        fallback += (bi / count if s0 else 0.0, bi / count if s1 else 0.0)
    equal = [(1.0 if a else 0.0) / max(na, 1.0) if na > 0 else (1.0 if d else 0.0) / max(nd, 1.0)
             for a, d, na, nd in zip(active, dem, n_active, n_demand, strict=True)]
    contested = [a and na >= 2 for a, na in zip(active, n_active, strict=True)]
    return _Lists(b, w, is_log, active, contested, slot, n_groups, alpha, fallback, equal, None)


def _initial_sub_budgets(mk: _Lists, warm_start: ArrayLike | None, tol: float, max_rounds: int,
                         handover: Handover) -> Floats:
    """``auction._initial_sub_budgets``: the fallback split, or the warm start with the newcomers' warm-up."""
    start = list(mk.fallback)
    if warm_start is None:
        return start
    w_arr = np.asarray(warm_start, dtype=np.float64)
    if w_arr.shape != (mk.n, TYPES):
        raise _Leave
    raw: Floats = w_arr.ravel().tolist()
    new = [v0 != v0 or v1 != v1 for v0, v1 in zip(raw[0::2], raw[1::2], strict=True)]  # v != v: NaN
    warm = [0.0 if new[k >> 1] else v for k, v in enumerate(raw)]
    if not _finite(warm):
        raise _Leave
    warm = [v if s > 0 else 0.0 for v, s in zip(warm, start, strict=True)]
    warm = [s if c and v <= 0 else v for v, s, c in zip(warm, start, mk.contested, strict=True)]
    total = [a + c for a, c in zip(warm[0::2], warm[1::2], strict=True)]
    usable = [not f and t > NEGLIGIBLE * bud for f, t, bud in zip(new, total, mk.budgets, strict=True)]
    for i, (use, t, bud) in enumerate(zip(usable, total, mk.budgets, strict=True)):
        if use:
            start[2 * i], start[2 * i + 1] = warm[2 * i] / t * bud, warm[2 * i + 1] / t * bud
    if any(usable) and not all(usable):
        rows = [not u for u in usable]
        frozen = [0.0 if rows[k >> 1] else p for k, p in enumerate(_power(start, mk))]
        newcomers = mk.rows(rows, _group_sum(frozen, mk))
        entries = [k for k in range(len(start)) if rows[k >> 1]]
        solved, _, _ = _iterate(newcomers, [start[k] for k in entries], tol, max_rounds, handover)
        for k, v in zip(entries, solved, strict=True):
            start[k] = v
    return start


def small_auction(budgets: ArrayLike, weights: ArrayLike, *, utility: str | Sequence[str], alpha: float,
                  tol: float, max_rounds: int, groups: ArrayLike | None, demand: ArrayLike | None,
                  warm_start: ArrayLike | None, handover: Handover) -> AuctionResult | None:
    """``auction.auction`` for a small market, bit for bit, or None (module doc).

    Arguments as :func:`scheduler.abacus.auction.auction`; ``handover`` gives the round
    after which that function's rounds leave the simultaneous ones (this path stops there).
    Returns the same AuctionResult, (n, m) shares and sub-budgets, or None where the numpy
    path must clear the market (it also raises what this path never raises).
    """
    try:
        a, t = check_alpha(alpha), float(tol)
        check_iteration(tol, max_rounds)
        mk = _prepare(budgets, weights, utility, a, groups, demand)
        start = _initial_sub_budgets(mk, warm_start, t, int(max_rounds), handover)
        b, rounds, converged = _iterate(mk, start, t, int(max_rounds), handover)
    except (_Leave, TypeError, ValueError, OverflowError):
        return None
    shares = np.array(_shares_and_rest(b, mk)[0]).reshape(mk.n, TYPES)
    return AuctionResult(shares, np.array(b).reshape(mk.n, TYPES), rounds=rounds, converged=converged)


def iterate_market(mk: _Market, start: FloatArray, tol: float, max_rounds: int,
                   handover: Handover) -> FloatArray | None:
    """``auction._iterate(mk, start, tol, max_rounds)``'s sub-budgets, bit for bit, for a market of at
    most MAX_JOBS jobs and TYPES types given as arrays (the newcomers' warm-up of a larger market,
    with its rivals' frozen power); None where the numpy path must run it (another size, or rounds
    past ``handover``)."""
    n, m = mk.weights.shape
    if m != TYPES or not 0 < n <= MAX_JOBS:
        return None
    active, demand = mk.active.ravel().tolist(), mk.demand.ravel().tolist()
    equal = [(1.0 if a else 0.0) / max(na, 1.0) if na > 0 else (1.0 if d else 0.0) / max(nd, 1.0)
             for a, d, na, nd in zip(active, demand, mk.n_active.ravel().tolist(), mk.n_demand.ravel().tolist(), strict=True)]
    lists = _Lists(
        mk.budgets.tolist(), mk.weights.ravel().tolist(), mk.is_log.tolist(), active, mk.contested.ravel().tolist(),
        [s for g in mk.group_index.tolist() for s in (2 * g, 2 * g + 1)], mk.n_groups, mk.alpha, mk.fallback.ravel().tolist(),
        equal, None if mk.rival_power is None else mk.rival_power.ravel().tolist(),
    )
    try:
        b, _, _ = _iterate(lists, start.ravel().tolist(), tol, max_rounds, handover)
    except (_Leave, OverflowError):
        return None
    return np.array(b, dtype=np.float64).reshape(n, TYPES)


def small_kkt_max(result: AuctionResult, weights: ArrayLike, utility: str | Sequence[str],
                  demand: ArrayLike | None, groups: ArrayLike | None) -> float | None:
    """``float(np.max(kkt.kkt_residual(result, weights, utility, demand, groups), initial=0.0))``
    for a small market, bit for bit (only maxima, minima and comparisons of element-wise
    values: no sum's order reaches it), or None where that function must compute it
    (invalid inputs, over KKT_MAX_JOBS jobs or other than TYPES types, an infinite x / b)."""
    try:
        b: Floats = np.asarray(result.sub_budgets, dtype=np.float64).ravel().tolist()
        s: Floats = np.asarray(result.shares, dtype=np.float64).ravel().tolist()
        w_arr = np.asarray(weights, dtype=np.float64)
        n = len(b) // TYPES
        if w_arr.shape != result.sub_budgets.shape or w_arr.shape != (n, TYPES) or not 0 < n <= KKT_MAX_JOBS:
            return None
        w: Floats = w_arr.ravel().tolist()
        if not _finite(w):
            return None
        dem, is_log, index = _demand(demand, n), _log_mask(utility, n), _group_index(groups, n)
    except (_Leave, TypeError, ValueError):
        return None
    slot = [s for g in index for s in (2 * g, 2 * g + 1)]
    others = _sum_by_slot([0.0 if v > 0.5 else v for v in s], max(index) + 1, slot)
    rest = [(o if v > 0.5 else 1.0 - v) if d else 0.0 for v, o, d in zip(s, others, dem, strict=True)]
    x = [(wv * r if is_log[k >> 1] else wv * v * r) if d else 0.0
         for k, (wv, v, r, d) in enumerate(zip(w, s, rest, dem, strict=True))]
    ratio = [xv / (bv if bv > 0 else 1.0) for xv, bv in zip(x, b, strict=True)]
    if not all(r < math.inf for r in ratio):
        return None
    worst = 0.0
    for i in range(n):
        k0, k1 = 2 * i, 2 * i + 1
        budget = b[k0] + b[k1]  # numpy's row sum: a0 + a1 (order-free for >= 0; only compared and scaled)
        in0, in1 = dem[k0] and b[k0] > NEGLIGIBLE * budget, dem[k1] and b[k1] > NEGLIGIBLE * budget
        r0, r1 = ratio[k0], ratio[k1]
        if in0 and in1:
            lam, low = (r0, r1) if r0 >= r1 else (r1, r0)
        else:
            lam, low = (r0, r0) if in0 else ((r1, r1) if in1 else (0.0, math.inf))
        safe_lam = lam if lam > 0 else 1.0
        residual = (lam - min(low, lam)) / safe_lam if lam > 0 else 0.0  # the spread
        if not (in0 and in1):  # bound entries: the largest excess of du/db over lambda_i
            total_x = max(x[k0] + x[k1], _TINY)
            for k, inside in ((k0, in0), (k1, in1)):
                if dem[k] and not inside and (budget * x[k] / total_x > NEGLIGIBLE * budget
                                              or (b[k] > 0 and ratio[k] > lam)):
                    excess = ratio[k] / safe_lam - 1.0 if b[k] > 0 and lam > 0 else 1.0
                    residual = max(residual, min(max(excess, 0.0), 1.0))
        flat = w[k0] * rest[k0] + w[k1] * rest[k1] <= NEGLIGIBLE * (w[k0] * s[k0] + w[k1] * s[k1])
        if not is_log[i] and flat:  # a linear job that no split can gain NEGLIGIBLE of its utility counts 0
            residual = 0.0
        worst = max(worst, residual)
    return worst
