"""Run metrics on hand-made records."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.metrics import fairness_series, mean_utilisation, response_stats, response_times, slowdowns
from simulator.records import JobFinished


def test_response_times_and_stats() -> None:
    finished = [JobFinished(k, 10.0 * k, 10.0 * k + 1, 10.0 * k + k + 1) for k in range(1, 21)]
    times = response_times(finished)
    assert times.tolist() == [float(k + 1) for k in range(1, 21)]
    stats = response_stats(times)
    assert stats["mean_response_s"] == pytest.approx(11.5)
    assert stats["median_response_s"] == pytest.approx(11.5)
    assert stats["p95_response_s"] == pytest.approx(20.05)
    assert response_stats(np.zeros(0))["p95_response_s"] is None


def test_slowdowns_skip_zero_critical_paths() -> None:
    finished = [JobFinished(1, 0.0, 0.0, 4.0), JobFinished(2, 0.0, 0.0, 0.0)]
    assert slowdowns(finished, {1: 2.0, 2: 0.0}).tolist() == [2.0]


@pytest.mark.parametrize(
    ("name", "usage", "capacity", "span", "expected"),
    [
        ("half and three quarters busy", np.array([[25.0, 10.0], [25.0, 5.0]]), np.array([10, 2]), 10.0, 0.625),
        ("a type without slots is ignored", np.array([30.0, 0.0]), np.array([3, 0]), 10.0, 1.0),
        ("no time", np.array([1.0]), np.array([1]), 0.0, None),
    ],
)
def test_mean_utilisation(name: str, usage: np.ndarray, capacity: np.ndarray, span: float, expected: float | None) -> None:
    assert mean_utilisation(usage, capacity, span) == expected, name


def test_fairness_series_shapes() -> None:
    from scheduler.fairshare.fairness import QueueTree
    from simulator.cluster.model import Cluster
    from simulator.records import JobSpec

    cluster = Cluster([2, 1], QueueTree.flat(["a", "b", "c"]), sample_interval=1.0)
    cluster.submit(JobSpec(1, 0, (4, 1), (1.5, 1.0), 0.0))
    series = fairness_series(cluster.advance(5.0).samples)
    assert series["time"].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert series["rho"].shape == (5, 3, 2) and series["benefit"].shape == (5, 2)
    assert np.all(series["loss"] <= 0) and np.all(series["benefit"] >= 0)
    assert fairness_series([])["time"].shape == (0,)
