"""Executing accepted reservations on a moving capacity with failing runs (paper 001, Sec. 4, Fig. 3)."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.era.mechanisms import BasicEcon, Decision
from scheduler.era.predictors import ConstantPrice
from simulator.era.execution import execute, failure_draws, offer
from simulator.era.workload import EraRequest, run_stream


def _requests() -> list[EraRequest]:
    return [EraRequest(k, 0, 2, 3, k, k + 8, 10.0) for k in range(6)]


def test_without_dips_or_failures_reservations_finish_as_planned() -> None:
    reqs = _requests()
    planned = run_stream("econ", BasicEcon(4, 30, ConstantPrice(1.0)), reqs)
    ex = execute(reqs, planned.decisions, np.full(60, 4), fail_p=0.0, draws=failure_draws(len(reqs), 4, 0))
    assert ex.finish == planned.finish and ex.late == 0 and ex.reruns == 0
    assert ex.revenue == pytest.approx(planned.revenue) and ex.welfare == pytest.approx(60.0)


def test_a_capacity_drop_preempts_the_newest_run_which_starts_again() -> None:
    # A (2 units) from slot 0, B (2 units) from slot 1; at slot 2 only 2 units remain until slot 5
    reqs = [EraRequest(0, 0, 2, 3, 0, 20, 1.0), EraRequest(1, 0, 2, 3, 1, 20, 1.0)]
    decisions = [Decision(True, 0, 1.0), Decision(True, 1, 1.0)]
    cap = np.array([4, 4, 2, 2, 2, 4, 4, 4, 4, 4, 4, 4])
    ex = execute(reqs, decisions, cap, fail_p=0.0, draws=failure_draws(2, 4, 0))
    assert ex.finish == [3, 6] and ex.reruns == 1  # B restarts at 3 (A's units) and runs 3 slots


def test_a_failed_run_runs_again_from_the_start() -> None:
    reqs = [EraRequest(0, 0, 1, 4, 0, 6, 5.0)]
    draws = np.array([[0.0, 0.9, 0.5, 0.5]])  # attempt 0 fails at 50 % of its run; attempt 1 succeeds
    ex = execute(reqs, [Decision(True, 0, 1.0)], np.full(20, 1), fail_p=0.5, draws=draws)
    assert ex.finish == [2 + 4] and ex.late == 0 and ex.reruns == 1
    late = execute(reqs, [Decision(True, 1, 1.0)], np.full(20, 1), fail_p=0.5, draws=draws)
    assert late.finish == [7] and late.late == 1  # the same failure one slot later misses the deadline


def test_a_request_wider_than_the_planned_capacity_is_refused() -> None:
    reqs = [EraRequest(0, 0, 5, 1, 0, 3, 9.0), EraRequest(1, 0, 2, 1, 0, 3, 9.0)]
    assert [d.accepted for d in offer(BasicEcon(4, 10, ConstantPrice(1.0)), reqs)] == [False, True]
