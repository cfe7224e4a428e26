"""Finish-time fairness of a finished run (simulator.scorecard), by hand on small cases."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.records import JobFinished
from simulator.scorecard import finish_time_fairness, mean_contention, rho_summary
from simulator.workloads.traces import TraceJob


def test_mean_contention_counts_the_jobs_in_the_system() -> None:
    # job 0 in [0, 20], job 1 in [0, 30], job 2 in [25, 40]
    submit, finish = np.array([0.0, 0.0, 25.0]), np.array([20.0, 30.0, 40.0])
    n = mean_contention(submit, finish, submit, finish)
    # job 0: 2 all along; job 1: 2 for 20 s, 1 for 5 s, 2 for 5 s -> 55 / 30; job 2: 2 for 5 s, 1 for 10 s
    assert n.tolist() == pytest.approx([2.0, 55 / 30, 20 / 15])
    # a job that never finished stays in the system
    assert mean_contention(np.array([0.0, 0.0]), np.array([10.0, np.inf]), np.array([0.0]), np.array([10.0])).tolist() == [2.0]


def test_rho_of_the_two_job_example_under_fifo() -> None:
    # 4 units; A: 8 tasks x 10 s, B: 2 tasks x 10 s, both at 0; FIFO finishes A at 20, B at 30
    jobs = [TraceJob(1, 0.0, "a", "g", (8,), (10.0,)), TraceJob(2, 0.0, "b", "g", (2,), (10.0,))]
    done = [JobFinished(1, 0.0, 0.0, 20.0), JobFinished(2, 0.0, 20.0, 30.0)]
    rho = finish_time_fairness(jobs, done, [4.0], staged=False)
    # A: N = 2, 2 units, 4 waves = 40 s -> 20 / 40; B: N = 5/3, 2.4 units, one wave = 10 s -> 30 / 10
    assert rho == pytest.approx({1: 0.5, 2: 3.0})
    assert rho_summary(list(rho.values())) == pytest.approx({"rho_max": 3.0, "rho_above_1": 0.5, "rho_mean": 1.75})
    assert rho_summary([]) == {"rho_max": None, "rho_above_1": None, "rho_mean": None}
