"""ERA simulations (paper 001, Sec. 4): the 6-class FB-2009 stream, execution, metrics, the
day/night case, and the registered experiment."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.era.mechanisms import BasicEcon, Decision
from scheduler.era.predictors import ConstantPrice
from simulator.era.workload import EraRequest, _fifo_finish, _metrics, day_night_requests, fb2009_requests, run_stream
from simulator.experiments.era.headline import day_night
from simulator.experiments.era.runs import TRACE


def test_fb2009_becomes_six_equal_classes_the_largest_worth_one_dollar_per_unit_slot() -> None:
    reqs = fb2009_requests(TRACE, hours=2.0, seed=3)
    counts = np.bincount([r.cls for r in reqs], minlength=6)
    assert counts.max() - counts.min() <= 1 and counts.sum() == len(reqs)
    size = {c: np.mean([r.units * r.duration for r in reqs if r.cls == c]) for c in range(6)}
    assert max(size, key=size.get) == 5
    for r in reqs:
        unit = r.value / (r.units * r.duration)
        assert (0.5 <= unit <= 1.5) if r.cls == 5 else (5.0 <= unit <= 15.0)
        assert r.arrival + r.duration < r.deadline and 1 <= r.units <= 50
    assert [r.arrival for r in reqs] == sorted(r.arrival for r in reqs)


def test_fifo_execution_delays_a_job_that_does_not_fit_and_it_is_late() -> None:
    # capacity 4: A holds 3 units in [0, 2); B (2 units, due by 2) waits until 2 and ends at 3: late
    reqs = [EraRequest(0, 0, 3, 2, 0, 5, 6.0), EraRequest(1, 1, 2, 1, 1, 2, 4.0), EraRequest(2, 0, 1, 1, 1, 3, 1.0)]
    decisions = [Decision(True, 0, 1.0), Decision(True, 1, 1.0), Decision(True, 1, 1.0)]
    finish = _fifo_finish(reqs, decisions, 4)
    assert finish == [2, 3, 3]  # job 2 waits behind job 1 (first come, first served)
    result = _metrics("x", reqs, decisions, finish)
    assert (result.accepted, result.late, result.welfare, result.revenue) == (3, 1, 7.0, 3.0)
    assert result.share == pytest.approx(7.0 / 11.0) and result.late_pct == pytest.approx(100 / 3)


def test_a_stream_through_basic_econ_runs_at_its_reserved_starts() -> None:
    reqs = [EraRequest(k, 0, 2, 3, k, k + 6, 100.0) for k in range(6)]
    result = run_stream("econ", BasicEcon(4, 20, ConstantPrice(1.0)), reqs)
    # 2 units each on 4: at most two at once; each takes the earliest start with room
    assert [d.start for d in result.decisions] == [0, 1, 3, 4, 6, 7]
    assert result.finish == [3, 4, 6, 7, 9, 10] and result.late == 0
    assert result.revenue == pytest.approx(6 * 6.0) and result.share == 1.0


@pytest.mark.parametrize("solver", ["flow", "highs"])
def test_day_night_lp_beats_spreading_by_refusing_low_value_jobs_at_night(solver: str) -> None:
    for seed in range(5):  # a property of every seed, not of a lucky one
        lp, spread = day_night({"dn_days": 6, "dn_capacity": 10, "lp_solver": solver}, seed)
        assert lp.by_class[2][0] == 0  # no low-value job: the night is priced at the medium value
        assert spread.by_class[2][0] > 0 and spread.by_class[1][0] < lp.by_class[1][0]
        assert lp.welfare > spread.welfare
    days = day_night_requests(2, 10, seed=0)
    assert {r.deadline - r.arrival for r in days} == {12, 24}
