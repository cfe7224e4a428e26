"""Slurm's own start rate on this machine: one job array of short tasks.

Submits one ``sbatch --array`` of ``--tasks`` one-CPU tasks that each ``sleep --seconds`` on
the ``--partition`` partition (``make slurm-up``: map, capped at 40 CPUs) and polls ``sdiag``
(one cheap RPC; ``squeue --json`` of hundreds of records would take the CPU the starts need)
until every task has ended. Reported: the sustained start rate (a least-squares slope of
sdiag's "Jobs started" over time between 10 % and 90 % of the tasks), the rate over the whole
array (tasks / wall seconds from ``sbatch`` to the last completion), and the rate the
partition would allow if starting cost nothing (CPUs / task length). Each start forks a
``slurmstepd``, so on a 2-core machine the cores, not the 40 CPUs, are the limit.

What it proves it measured (``bench.figures.require``): sdiag's "Jobs completed" rose by at
least the number of tasks, and ``squeue`` lists every element of the array COMPLETED with exit
status 0. Without a running Slurm it stops with a message (a failure under ``CI``).

Usage: .venv/bin/python bench/bench_slurm_array.py [--tasks 400] [--seconds 0.2] [--partition map]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root

from bench.figures import python_additions_s, record, require, run_guarded
from marketplace.slurm.client import CliSlurmClient, SlurmError, SlurmUnavailable


def slope(points: list[tuple[float, int]]) -> float:
    """Least-squares slope (count per second) of (seconds, count) points."""
    n = len(points)
    mt = sum(t for t, _ in points) / n
    mc = sum(c for _, c in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    return sum((t - mt) * (c - mc) for t, c in points) / var if var > 0 else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=400)
    parser.add_argument("--seconds", type=float, default=0.2, help="Each task's sleep.")
    parser.add_argument("--partition", default="map")
    parser.add_argument("--timeout", type=float, default=300.0, help="Give up after this many wall seconds.")
    args = parser.parse_args(argv)

    print(f"10^7 pure-Python additions: {python_additions_s():.2f} s")
    client = CliSlurmClient()
    try:
        version = client.version()
        caps = {p.name: p.max_cpus_per_node for p in client.partitions()}
    except (SlurmUnavailable, SlurmError) as exc:
        message = f"Slurm is not running here ({exc}); start it with `make slurm-up` (as root)"
        if os.environ.get("CI"):
            print(f"CI requires Slurm: {message}", file=sys.stderr)
            return 1
        print(f"skipped: {message}")
        return 0
    require(args.partition in caps, f"a partition {args.partition!r} (Slurm has {sorted(caps)})")
    cpus = caps[args.partition] or 1
    print(f"Slurm {version}; partition {args.partition}: {cpus} CPUs; {args.tasks} tasks of sleep {args.seconds:g} s")

    before = client.diag()
    t0 = time.perf_counter()
    array_id = client.submit_array(name="bench-array", comment=f"bench{int(time.time())}", partition=args.partition,
                                   count=args.tasks, command=f"sleep {args.seconds:g}", time_limit_s=60)
    submit_s = time.perf_counter() - t0
    samples: list[tuple[float, int]] = []
    completed = 0
    while time.perf_counter() - t0 < args.timeout:
        d = client.diag()
        samples.append((time.perf_counter() - t0, d.started - before.started))
        completed = d.completed - before.completed
        if completed >= args.tasks:
            break
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    require(completed >= args.tasks, f"sdiag's Jobs completed to rise by {args.tasks} (it rose by {completed} in {wall:.0f} s)")
    mine = [t for t in client.jobs() if t.array_job_id == array_id]
    done = [t for t in mine if t.state == "COMPLETED" and t.exit_code == 0]
    require(len(done) == args.tasks, f"every element COMPLETED with exit 0 ({len(done)} of {args.tasks}; "
                                     f"states {sorted({t.state for t in mine})})")

    lo, hi = 0.1 * args.tasks, 0.9 * args.tasks
    middle = [(t, c) for t, c in samples if lo <= c <= hi]
    sustained = slope(middle) if len(middle) >= 3 else args.tasks / wall
    print(f"sbatch of {args.tasks} tasks: {submit_s * 1000:.0f} ms; all ended after {wall:.1f} s; "
          f"ideal (free starts): {cpus / args.seconds:.0f} starts/s")
    record(f"Slurm array: sustained starts/s ({args.tasks} x {args.seconds:g} s on {cpus} CPUs)", sustained, unit="starts/s",
           note=f"{len(middle)} sdiag samples between 10% and 90% started")
    record(f"Slurm array: tasks/s, sbatch to last completion ({args.tasks} x {args.seconds:g} s)", args.tasks / wall,
           unit="tasks/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_guarded(main))
