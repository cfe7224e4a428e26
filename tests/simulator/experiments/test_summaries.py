"""Issue 23, item 16: an experiment's summary says what its run computed. Each summary is fed two
runs with opposite outcomes; a fixed sentence (the day/night explanation, "the richer user is
served first", "cost falls") would read the same for both."""

from __future__ import annotations

from simulator.era.workload import StreamResult
from simulator.experiments.abacus.fig9_10 import fig9c_summary
from simulator.experiments.cura.table7 import table7_summary
from simulator.experiments.era import headline_summary


def _stream(name: str, welfare: float, medium: int, low: int) -> StreamResult:
    return StreamResult(name, [], [], welfare, 1000.0, welfare, medium + low, 0, {0: (0, 5, 0.0), 1: (medium, 9, 0.0), 2: (low, 9, 0.0)})


def test_era_explains_day_night_only_when_the_run_shows_it():
    econ, greedy = _stream("econ", 500.0, 0, 0), _stream("greedy", 100.0, 0, 0)
    shown = headline_summary(econ, greedy, _stream("lp", 800.0, medium=6, low=1), _stream("spread", 600.0, medium=2, low=7))
    assert "Spreading let low-value jobs take slots" in shown
    assert "welfare 800, spreading's 600" in shown
    reversed_ = headline_summary(econ, greedy, _stream("lp", 600.0, medium=2, low=7), _stream("spread", 800.0, medium=6, low=1))
    assert "Spreading let low-value jobs" not in reversed_ and "welfare 600, spreading's 800" in reversed_


def test_fig9c_says_whether_the_richest_user_was_served_first():
    alphas, budgets = [0.0, 1.0], [100.0, 200.0, 400.0]
    served = fig9c_summary(alphas, budgets, [[2.0, 2.0, 2.0], [3.0, 2.5, 1.2]])
    assert "it is served first" in served and "unlike the paper" not in served
    not_served = fig9c_summary(alphas, budgets, [[2.0, 2.0, 2.0], [1.1, 2.5, 3.0]])
    assert "unlike the paper, it is not served first" in not_served and "(3.00;" in not_served


def test_table7_says_whether_the_cost_fell_or_rose():
    def stats(vi: float, vii: float) -> list[list[object]]:
        return [["VI", "", 0, 15, 10, 5, 3, vi], ["VII", "", 0, 15, 15, 14, 12, vii], ["ours", "", 0, 15, 13, 0, 0, 900.0]]

    assert "cost falls from 1200 to 1000" in table7_summary(stats(1200.0, 1000.0), [1, 2, 3], True)
    rose = table7_summary(stats(1000.0, 1200.0), [1, 2, 3], False)
    assert "cost rises from 1000 to 1200" in rose and "falls" not in rose and "Cura runs it" in rose
