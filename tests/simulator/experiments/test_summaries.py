"""An experiment's summary says what its run computed. Each summary is fed two
runs with opposite outcomes; a fixed sentence ("the richer user is served first", "cost falls")
would read the same for both. (era_headline's summary is numbers only since the fidelity work:
simulator/experiments/era/headline.py.)"""

from __future__ import annotations

from simulator.experiments.abacus.fig9_10 import fig9c_summary
from simulator.experiments.cura.table7 import table7_summary


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
