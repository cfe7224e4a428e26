"""Utility-function estimation (paper 000, Sec. 5, Eq. 2)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import lsq_linear  # type: ignore[import-untyped]

from scheduler.abacus.fit import fit_utility


def test_exact_linear_data_recover_the_weights() -> None:
    """The paper's argument: m jobs determine m weights exactly (Sec. 5, Fig. 5)."""
    rng = np.random.default_rng(0)
    shares = rng.uniform(0.05, 0.9, (2, 2))
    true = np.array([6.0, 1.0])
    fit = fit_utility(shares, shares @ true, "linear", bootstrap=0)
    np.testing.assert_allclose(fit.weights, true, rtol=1e-9)
    np.testing.assert_allclose(fit.normalised, true / 7.0)
    assert fit.jobs == 2 and fit.rms_residual < 1e-12


def test_exact_log_data_recover_weights_and_constant() -> None:
    rng = np.random.default_rng(1)
    shares = rng.uniform(0.05, 0.9, (6, 3))
    true = np.array([2.0, 0.5, 1.0])
    fit = fit_utility(shares, 3.0 + np.log(shares) @ true, "log", bootstrap=0)
    np.testing.assert_allclose(fit.weights, true, rtol=1e-8)
    assert fit.intercept == pytest.approx(3.0)


@pytest.mark.parametrize("seed", range(5))
def test_matches_scipy_bounded_least_squares_on_noisy_data(seed: int) -> None:
    """Independent oracle: scipy's lsq_linear with bounds [0, inf) (a different solver)."""
    rng = np.random.default_rng(seed)
    shares = rng.uniform(0.0, 1.0, (12, 4))
    u = shares @ rng.uniform(-1.0, 3.0, 4) + rng.normal(0, 0.2, 12)  # some true weights negative
    fit = fit_utility(shares, u, "linear", bootstrap=0)
    oracle = lsq_linear(shares, u, bounds=(0.0, np.inf), tol=1e-12).x
    np.testing.assert_allclose(fit.weights, oracle, atol=1e-6)
    assert np.all(fit.weights >= 0)


def test_spread_shrinks_as_more_jobs_are_seen() -> None:
    """Fig. 11b: the variance of the fit falls with k."""
    rng = np.random.default_rng(2)
    true = np.array([6.0, 1.0])

    def spread(k: int) -> float:
        shares = rng.uniform(0.1, 0.9, (k, 2))
        u = shares @ true * rng.lognormal(0.0, 0.1, k)
        return float(fit_utility(shares, u, bootstrap=300, seed=k).spread[0])

    assert spread(40) < spread(5)


@pytest.mark.parametrize(("shares", "measured", "kind", "message"), [
    ([[0.5, 0.5]], [1.0], "linear", "at least m = 2"),
    ([[0.5, 0.5], [0.2, 0.1]], [1.0], "linear", "must be"),
    ([[0.5, 1.5], [0.2, 0.1]], [1.0, 2.0], "linear", r"\[0, 1\]"),
    ([[0.5, np.nan], [0.2, 0.1]], [1.0, 2.0], "linear", "finite"),
    ([[0.5, 0.5], [0.2, 0.1]], [1.0, 2.0], "cubic", "unknown utility"),
])
def test_bad_input_is_refused(shares: list[list[float]], measured: list[float], kind: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit_utility(shares, measured, kind)
