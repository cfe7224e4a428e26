"""Cura's VM-aware scheduler on the paper's workload size: 11,500 arrivals over 100 minutes.

Usage:
    .venv/bin/python bench/bench_cura.py                       # 11,500 jobs, 400 servers, 3 repeats
    .venv/bin/python bench/bench_cura.py --jobs 2300 --span 1200 --repeat 1 --reconfigure

Generates the SWIM FB-2009-derived workload (``simulator.cura.workload``),
runs it through ``simulator.cura.sim.run_cura`` (Alg. 1, 1 s scheduling tick)
on ``--servers`` x 16 cores split equally over the 6 VM types, and prints the
median wall and CPU seconds of the run with the schedule's figures. Wall-clock
figures depend on the machine and its load; the run is deterministic (seeded).

What it proves it timed (``bench.figures.require``): one outcome per generated job, most of
which ran (a schedule that runs nothing is fast and means nothing).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, for scheduler and simulator

from bench.figures import record, require, run_guarded
from scheduler.cura.reconfig import ReconfigurationManager
from simulator.cura.sim import equal_split, run_cura, summarise
from simulator.cura.workload import CURA_SIZES, CURA_VM_TYPES, generate, job_classes

TRACE = Path(__file__).resolve().parents[1] / "data" / "traces" / "FB-2009_samples_24_times_1hr_0.tsv"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=11_500)
    parser.add_argument("--span", type=float, default=6000.0, help="seconds the arrivals spread over")
    parser.add_argument("--servers", type=int, default=400, help="16-core servers")
    parser.add_argument("--max-deadline", type=float, default=200.0, help="deadline slack at most, s")
    parser.add_argument("--tick", type=float, default=1.0, help="scheduling tick, s (0: every arrival)")
    parser.add_argument("--reconfigure", action="store_true", help="with the reconfiguration manager")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    jobs = generate(job_classes(TRACE), jobs=args.jobs, span=args.span, max_deadline=args.max_deadline)
    budget = args.servers * 16
    walls, cpus = [], []
    run = None
    for _ in range(args.repeat):
        manager = ReconfigurationManager(CURA_VM_TYPES, budget) if args.reconfigure else None
        w0, c0 = time.perf_counter(), time.process_time()
        run = run_cura(jobs, CURA_VM_TYPES, equal_split(CURA_VM_TYPES, budget), CURA_SIZES, reconfig=manager, tick=args.tick)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    assert run is not None
    ran = sum(o.ran for o in run.outcomes)
    require(len(run.outcomes) == len(jobs) > 0 and ran >= 0.5 * len(jobs),
            f"an outcome per job, most of them run ({len(run.outcomes)} outcomes, {ran} ran, {len(jobs)} jobs)")
    s = summarise(run.outcomes, CURA_VM_TYPES, args.servers, 16)
    print(f"{'jobs':>7} {'servers':>7} {'reconf':>6} {'wall s (median)':>15} {'cpu s (median)':>14} {'met':>6} "
          f"{'mean resp s':>11} {'util':>6} {'replans':>7} {'cancels':>7}")
    print(f"{args.jobs:>7} {args.servers:>7} {args.reconfigure!s:>6} {statistics.median(walls):>15.2f} "
          f"{statistics.median(cpus):>14.2f} {s.met:>6.4f} {s.mean_response:>11.1f} {s.utilisation:>6.3f} "
          f"{run.replans:>7} {run.cancellations:>7}")
    record(f"Cura VM-aware scheduler, {args.jobs:,} jobs on {args.servers} servers (CPU)", statistics.median(cpus), unit="s",
           better="lower", note=f"wall {statistics.median(walls):.2f} s; {s.met:.4f} met")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
