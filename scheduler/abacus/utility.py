"""Utility functions of a bid (paper 000, Sec. 3) and their input checks.

Job i's utility is ``u_i(s_i) = sum_j g_ij(s_ij)`` over its allocation
probabilities (shares) s_ij, with ``g_ij`` linear (``w_ij s_ij``) or logscale
(``w_ij log s_ij``), ``w_ij >= 0`` (paper 000, Sec. 3). The auction
(``scheduler.abacus.auction``) needs the marginal term ``x_ij = (du_i/ds_ij) s_ij
(1 - s_ij)`` of its best response (Alg. 2, line 3); the market engine needs
the utility itself to settle SLO payments (Sec. 6).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scheduler.types import UTILITY_KINDS

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]


def check_nonnegative(name: str, values: ArrayLike, ndim: int) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0")
    return arr


def check_alpha(alpha: float) -> float:
    """alpha of Eq. 1 as a float; raises ValueError outside [0, 1] (paper 000, Sec. 4.2)."""
    if not (np.isfinite(alpha) and 0.0 <= alpha <= 1.0):
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    return float(alpha)


def check_iteration(tol: float, max_rounds: int) -> None:
    """Raises ValueError unless tol is finite and > 0 and max_rounds a positive integer."""
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive finite number, got {tol}")
    if int(max_rounds) != max_rounds or max_rounds < 1:
        raise ValueError(f"max_rounds must be a positive integer, got {max_rounds}")


def log_mask(utility: str | Sequence[str], n: int) -> BoolArray:
    """(n,) True where the job's utility is logscale; raises on unknown kinds."""
    kinds = [utility] * n if isinstance(utility, str) else list(utility)
    if len(kinds) != n:
        raise ValueError(f"utility has {len(kinds)} entries for {n} jobs")
    present = set(kinds)
    if not present <= _KINDS:  # kinds are read as str
        unknown = sorted({str(k) for k in kinds} - _KINDS)
        if unknown:
            raise ValueError(f"unknown utility kind(s) {unknown}; use {UTILITY_KINDS}")
    elif len(present) == 1:  # one kind for every job (most markets): no pass over the list
        return np.full(n, "log" in present, dtype=np.bool_)
    return np.array([k == "log" for k in kinds], dtype=np.bool_)


_KINDS = frozenset(UTILITY_KINDS)


def demand_mask(demand: ArrayLike | None, shape: tuple[int, int]) -> BoolArray:
    if demand is None:
        return np.ones(shape, dtype=np.bool_)
    arr = np.asarray(demand)
    if arr.shape != shape:
        raise ValueError(f"demand has shape {arr.shape}, expected {shape}")
    if arr.dtype != np.bool_:
        raise ValueError(f"demand must be a bool array, got dtype {arr.dtype}")
    return arr


def marginal(shares: FloatArray, rest: FloatArray, weights: FloatArray,
              is_log: BoolArray) -> FloatArray:
    """x_ij = (du_i/ds_ij) s_ij (1 - s_ij) (Algorithm 2, line 3), with rest = 1 - s.

    Linear: du/ds = w, so x = w s (1 - s). Logscale: du/ds = w / s, so
    x = w (1 - s), which stays finite at s = 0.
    """
    return np.where(is_log[:, None], weights * rest, weights * shares * rest)


def utility_of(shares: ArrayLike, weights: ArrayLike, utility: str | Sequence[str], *,
               demand: ArrayLike | None = None) -> FloatArray:
    """(n,) job utilities u_i(s_i) = sum_j g_ij(s_ij) (paper 000, Sec. 3).

    Linear: sum_j w_ij s_ij. Logscale: sum_j w_ij log s_ij over the terms with
    w_ij > 0; a term with w_ij > 0 and s_ij = 0 makes the utility -inf (the
    paper's reading: the job cannot finish without that resource). Terms with
    w_ij = 0, or where ``demand`` (optional (n, m) bool) is False, count 0.
    Raises ValueError like :func:`auction` on bad weights or utility kinds.
    """
    s = np.asarray(shares, dtype=np.float64)
    w = check_nonnegative("weights", weights, 2)
    if s.shape != w.shape:
        raise ValueError(f"shares has shape {s.shape}, weights {w.shape}")
    w = np.where(demand_mask(demand, (w.shape[0], w.shape[1])), w, 0.0)
    is_log = log_mask(utility, w.shape[0])
    with np.errstate(divide="ignore"):
        log_terms = np.where(w > 0, w * np.log(np.where(w > 0, s, 1.0)), 0.0)
    utilities: FloatArray = np.where(is_log, log_terms.sum(axis=1), (w * s).sum(axis=1))
    return utilities
