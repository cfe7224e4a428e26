"""Run metrics: response times, utilisation and fairness time series.

Pure numpy over the records the cluster produces; no state.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from simulator.records import FairnessSample, JobFinished


def response_times(finished: Sequence[JobFinished]) -> NDArray[np.float64]:
    """(n,) ``finish - submit`` in seconds, in the order given."""
    return np.array([f.finish_time - f.submit_time for f in finished], dtype=np.float64)


def response_stats(times: NDArray[np.float64]) -> dict[str, float | None]:
    """Mean, median and 95th percentile (linear interpolation) of response
    times in seconds; None for an empty array."""
    if times.size == 0:
        return {"mean_response_s": None, "median_response_s": None, "p95_response_s": None}
    return {
        "mean_response_s": float(times.mean()),
        "median_response_s": float(np.median(times)),
        "p95_response_s": float(np.percentile(times, 95)),
    }


def slowdowns(finished: Sequence[JobFinished], critical_path: dict[int, float]) -> NDArray[np.float64]:
    """(n,) response time / critical path per finished job (>= 1 up to
    rounding); jobs with a zero critical path are left out."""
    out = [(f.finish_time - f.submit_time) / critical_path[f.job_id] for f in finished if critical_path.get(f.job_id, 0.0) > 0]
    return np.array(out, dtype=np.float64)


def mean_utilisation(usage: NDArray[np.float64], capacity: NDArray[np.int64], span: float) -> float | None:
    """Time-averaged busy fraction over ``span`` seconds, averaged over the
    resource types with capacity.

    Args:
        usage: (L, m) or (m,) resource-seconds used (a sample's ``usage``).
        capacity: (m,) slots.
        span: seconds the usage was accumulated over (> 0).

    Returns:
        A fraction in [0, 1], or None when ``span`` is 0 or no type has
        capacity.
    """
    used = usage.sum(axis=0) if usage.ndim == 2 else usage
    has = capacity > 0
    if span <= 0 or not has.any():
        return None
    return float(np.mean(used[has] / (capacity[has] * span)))


def fairness_series(samples: Sequence[FairnessSample]) -> dict[str, NDArray[np.float64]]:
    """Stack samples into arrays for plots (paper 002, Fig. 7 style).

    Returns:
        ``time`` (T,), ``rho`` (T, L, m), ``benefit`` (T, m), ``loss`` (T, m),
        ``utilisation`` (T, m); empty leading dimension without samples.
    """
    if not samples:
        empty = np.zeros((0,))
        return {"time": empty, "rho": empty, "benefit": empty, "loss": empty, "utilisation": empty}
    return {
        "time": np.array([s.time for s in samples]),
        "rho": np.stack([s.rho for s in samples]),
        "benefit": np.stack([s.benefit for s in samples]),
        "loss": np.stack([s.loss for s in samples]),
        "utilisation": np.stack([s.utilisation for s in samples]),
    }
