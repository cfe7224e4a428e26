"""Why ERA's headline (``era_headline``) kept ~42 % of the requested value where paper 001 saw 51 %.

A diagnosis, not a benchmark: for each seed it prints, on the headline's FB-2009 stream
(6 classes, 20 units, 60 s slots, as ``simulator.experiments.era.runs``):

* ``offline``: the fractional, preemptive optimum of the stream itself (the allocation
  LP of paper 001 Sec. 3.2 solved on the real requests): an upper bound no online
  mechanism reaches;
* ``constant 2.0``: Basic-Econ with a reserve price between the classes' unit values
  ($0.5-1.5 for the largest class, $5-15 for the others), i.e. perfect class separation;
* ``covering``: Basic-Econ with the predictors counting every history request whose
  window covers t (the rule the headline used before the fidelity report);
* ``arriving``: the same demand, but only of history requests arriving between the
  current request's arrival and t. That is the paper's interface (Sec. 3.2: "the demand
  that arrives from the current time till t") and now the predictors' default
  (``DemandCurves.at``); without it, demand that has already arrived is counted twice,
  once as promised units (Alg. 1 line 7) and once more in the predicted curve, and
  prices come out too high.

Run from the repository root:

    .venv/bin/python -m bench.era_gap --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from scheduler.era.mechanisms import BasicEcon
from scheduler.era.predictors import ConstantPrice, LPPredictor, SpreadingPredictor, solve_allocation_flow
from simulator.era.workload import run_stream
from simulator.experiments.era.runs import Setting, stream


def rows(seed: int, capacity: int = 20, floor: float = 0.1) -> list[tuple[str, float]]:
    setting = Setting(capacity, 60.0, 20, 24.0, floor, 4.0)
    reqs, history, horizon = stream(setting, seed)
    requested = sum(r.value for r in reqs)
    out = [("offline fractional optimum", solve_allocation_flow([r.past for r in reqs], capacity, horizon).welfare / requested)]
    out.append(("constant 2.0", run_stream("c", BasicEcon(capacity, horizon, ConstantPrice(2.0)), reqs).share))
    for rule in ("covering", "arriving"):
        for name, pred in (
            (f"LP (flow), {rule}", LPPredictor(history, capacity, horizon, floor=floor, rule=rule)),
            (f"LP (HiGHS), {rule}", LPPredictor(history, capacity, horizon, floor=floor, solver="highs", rule=rule)),
            (f"spreading, {rule}", SpreadingPredictor(history, horizon, floor=floor, rule=rule)),
        ):
            out.append((name, run_stream(name, BasicEcon(capacity, horizon, pred), reqs).share))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args(argv)
    for seed in args.seeds:
        for name, share in rows(seed):
            print(f"seed {seed}  {name:<28} {100 * share:6.1f} %", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
