"""Utility-function estimation from completed jobs (paper 000, Sec. 5).

A tenant may bid a budget only; the job then gets the default utility (linear,
equal weights). After ``k >= m`` completed jobs of the same tenant and job
class, the weights are fitted by non-negative least squares (Eq. 2) of the
measured utility ``u(J_l)`` (for batch jobs the inverse response time, 1/s)
on each job's *average job resource* ``s_bar_l`` (Def. 1: its time-averaged
shares, (m,)):

    minimise  sum_l (u(J_l) - sum_r w_r s_bar_lr)^2   over w >= 0      (Eq. 2)

For a logscale utility the regressors are ``log s_bar_lr`` and a free constant
is added (this project's choice: ``log s <= 0`` while ``u > 0``, so without a
constant the only non-negative fit would be ``w = 0``; a constant shifts every
bid's utility equally and does not change the auction, Alg. 2).

The auction depends on a job's weights only up to a common factor, so the fit
reports them normalised to sum 1 as well. Its *spread* is the bootstrap
standard deviation of the normalised weights over jobs resampled with
replacement (Fig. 11b reports the variance shrinking as k grows).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import nnls

from scheduler.types import UTILITY_KINDS

FloatArray = NDArray[np.float64]

__all__ = ["UtilityFit", "fit_utility", "fit_weights"]

_LOG_FLOOR = 1e-6  # a share below this counts as 1e-6 in log s (never-served types)


@dataclass(frozen=True)
class UtilityFit:
    """A fitted utility function (paper 000, Sec. 5).

    Attributes:
        kind: "linear" or "log".
        weights: (m,) fitted w_r >= 0 (units: measured utility per unit share,
            or per unit log share).
        normalised: (m,) weights / sum (zeros if all are 0).
        spread: (m,) bootstrap standard deviation of ``normalised``.
        intercept: the free constant of a log fit (0 for linear).
        jobs: k, the number of completed jobs behind the fit.
        rms_residual: root-mean-square residual of Eq. 2, in the measured
            utility's units.
    """

    kind: str
    weights: FloatArray
    normalised: FloatArray
    spread: FloatArray
    intercept: float
    jobs: int
    rms_residual: float


def _design(shares: FloatArray, kind: str) -> FloatArray:
    if kind == "linear":
        return shares
    logs = np.log(np.maximum(shares, _LOG_FLOOR))
    ones = np.ones((shares.shape[0], 1))
    return np.hstack([logs, ones, -ones])  # intercept = c+ - c-, both >= 0 for nnls


def fit_weights(average_shares: ArrayLike, measured: ArrayLike, kind: str = "linear") -> tuple[FloatArray, float]:
    """(weights (m,), intercept): Eq. 2 by ``scipy.optimize.nnls`` (no checks; see :func:`fit_utility`)."""
    s = np.asarray(average_shares, dtype=np.float64)
    u = np.asarray(measured, dtype=np.float64)
    solution, _ = nnls(_design(s, kind), u)
    m = s.shape[1]
    intercept = float(solution[m] - solution[m + 1]) if kind == "log" else 0.0
    weights: FloatArray = np.asarray(solution[:m], dtype=np.float64)
    return weights, intercept


def _normalise(w: FloatArray) -> FloatArray:
    total = float(w.sum())
    out: FloatArray = w / total if total > 0 else np.zeros_like(w)
    return out


def fit_utility(average_shares: ArrayLike, measured: ArrayLike, kind: str = "linear", *,
                bootstrap: int = 200, seed: int = 0) -> UtilityFit:
    """Fit a job class's utility weights from its completed jobs (paper 000, Sec. 5, Eq. 2).

    Args:
        average_shares: (k, m) average job resource of each job, shares in [0, 1].
        measured: (k,) measured utility of each job (e.g. 1 / response time, 1/s), finite.
        kind: "linear" or "log".
        bootstrap: resamples for the spread (0: spread of zeros).
        seed: seed of the resampling.

    Returns:
        :class:`UtilityFit`.

    Raises:
        ValueError: k < m (the paper's minimum), shapes that disagree, shares
            outside [0, 1], non-finite values, or an unknown kind.
    """
    s = np.asarray(average_shares, dtype=np.float64)
    u = np.asarray(measured, dtype=np.float64)
    if kind not in UTILITY_KINDS:
        raise ValueError(f"unknown utility kind {kind!r}; use one of {UTILITY_KINDS}")
    if s.ndim != 2 or u.shape != (s.shape[0],):
        raise ValueError(f"average_shares must be (k, m) and measured (k,), got {s.shape} and {u.shape}")
    k, m = s.shape
    if m == 0 or k < m:
        raise ValueError(f"need at least m = {m} completed jobs to fit {m} weights, got {k}")
    if not (np.all(np.isfinite(s)) and np.all(np.isfinite(u))):
        raise ValueError("average shares and measured utilities must be finite")
    if np.any(s < 0) or np.any(s > 1 + 1e-9):
        raise ValueError("average shares must lie in [0, 1]")
    weights, intercept = fit_weights(s, u, kind)
    predicted = _design(s, kind)[:, :m] @ weights + intercept
    rms = float(np.sqrt(np.mean((u - predicted) ** 2)))
    rng = np.random.default_rng(seed)
    samples = [_normalise(fit_weights(s[idx], u[idx], kind)[0])
               for idx in (rng.integers(0, k, k) for _ in range(bootstrap))]
    spread = np.std(samples, axis=0) if samples else np.zeros(m)
    return UtilityFit(kind, weights, _normalise(weights), np.asarray(spread, dtype=np.float64), intercept, k, rms)
