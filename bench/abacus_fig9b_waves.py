"""Diagnostic for issue 10's Fig. 9b gap (paper 000, Sec. 7.1.2): does user 3 peak nearer its
true map:reduce ratio when jobs run in several waves?

Scales every job to ``k`` times the tasks at 1/k of the task times (the same work and offered
load, the same true ratio 6) and sweeps user 3's reported ratio as ``abacus_fig9b`` does.

A second argument multiplies every user's arrival rate (more contention, the same job shapes).

Usage: PYTHONPATH=. .venv/bin/python bench/abacus_fig9b_waves.py 6 [rate]   (k = 1, rate = 1: the experiment as is)
"""

from __future__ import annotations

import sys

import simulator.experiments._abacus_table1 as t1
from simulator.experiments import abacus_fig9_10 as fig


def main(k: float, rate: float = 1.0) -> None:
    if k != 1 or rate != 1:
        t1.MAP_TASKS, t1.REDUCE_TASKS = round(10 * k), round(4 * k)
        t1.TABLE1 = tuple(t1.User(u.name, u.map_s / k, u.reduce_s / k, u.budget, u.rate * rate) for u in t1.TABLE1)
        fig.TABLE1 = t1.TABLE1  # type: ignore[misc]
    params = {"ratios": [0.25, 1, 2, 4, 6, 8, 16], "seeds": [0, 1], "alpha": 0.5, "staged": False}
    result = fig.run_fig9b(params, lambda fraction, message="": None)
    print(f"k = {k:g}, rate x {rate:g}: {result['summary']}")
    print("ratio, efficiency of users 1-3 (1 / 1000 simulated s)")
    for row in result["tables"][0]["rows"]:
        print(row)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 6.0, float(sys.argv[2]) if len(sys.argv) > 2 else 1.0)
