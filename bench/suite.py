"""`make bench`: every benchmark in turn, then one table of their figures: figure, goal,
measured, ratio (>= 1: the goal is met), the machine's speed (10^7 pure-Python additions) and
the ratio against the goal scaled to it (``bench.figures``), and the load when each was measured.

Each benchmark runs as its own process with ``BENCH_FIGURES`` naming a file its
``bench.figures.record`` calls append to. A benchmark that measured a no-op stops with
``bench.figures.HOLLOW_EXIT`` and its message; it and any other failure get a row of their
own, and the suite exits with status 1 (after running the rest). Benchmarks that need
PostgreSQL (``history`` always) use ``--pg-url`` / ``$BENCH_PG_URL`` (a scratch database they drop and
re-create); the simulation-lab sweep and the split lab run (``lab-sweep``) need ``DATABASE_URL``
(PostgreSQL) and ``REDIS_URL`` and are skipped, saying so, without them. ``slurm-array`` needs a
running Slurm (``make slurm-up``) and is skipped without one, except under ``CI``. ``api-load`` serves the
demo market with gunicorn on a scratch PostgreSQL database (``$BENCH_LOAD_PG_URL``, default ``bench_load``)
and runs ``bench/load.py``'s API mix for 30 s at saturation (``bench/load.sh``; a Celery worker when
``REDIS_URL`` is set).

The machine is shared: next to each figure the table gives the 1-minute load average when it
was recorded; the benchmarks also report CPU-time figures, which move less with the load.

Usage: .venv/bin/python bench/suite.py [--only NAME ...] [--skip NAME ...] [--list]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import scratch_db  # noqa: E402
from bench.figures import HOLLOW_EXIT, Figure, load_figures  # noqa: E402

LOAD_PG_URL = os.environ.get("BENCH_LOAD_PG_URL", "postgres://postgres@127.0.0.1:5432/bench_load")

# name -> (argv after the interpreter, what it needs); in make bench's order
BENCHMARKS: dict[str, tuple[list[str], str]] = {
    "replay": (["bench/bench_replay.py"], ""),
    "clearing-pg": (["bench/bench_clearing.py", "--postgres", "--jobs", "10", "100", "1000", "5000", "10000"], ""),
    "tick-pg": (["bench/bench_tick.py", "--postgres"], ""),
    "tick-pg-5k": (["bench/bench_tick.py", "--postgres", "--active", "5000", "--repeat", "21"], ""),
    "history": (["bench/bench_history.py"], ""),
    "preview": (["bench/bench_preview.py"], ""),
    "api-load": (["bench/load.sh"], "pg-scratch"),
    "auction": (["bench/bench_auction.py"], ""),
    "abacus-convergence": (["bench/bench_abacus_convergence.py"], ""),
    "fairshare": (["bench/bench_fairshare.py"], ""),
    "simulator": (["bench/bench_simulator.py", "--hours", "24"], ""),
    "dispatch": (["bench/bench_dispatch.py"], ""),
    "memory": (["bench/bench_memory.py", "--postgres"], ""),
    "fifo-simpy": (["bench/bench_fifo_simpy.py"], ""),
    "clearing-sqlite": (["bench/bench_clearing.py", "--jobs", "10", "100", "1000"], ""),
    "deadline": (["bench/bench_deadline.py"], ""),
    "sim-sweep": (["bench/bench_sim_sweep.py", "--workers", "1", "2"], "lab"),
    "lab-sweep": (["bench/bench_lab_sweep.py", "--workers", "1", "2"], "lab"),
    "era": (["-m", "bench.bench_era"], ""),
    "fairshare-policies": (["bench/bench_fairshare_policies.py"], ""),
    "cura": (["bench/bench_cura.py", "--repeat", "1"], ""),
    "slurm-array": (["bench/bench_slurm_array.py"], "slurm"),
    "slurm-dispatch": (["bench/bench_slurm_dispatch.py"], "slurm"),
}


def _missing(need: str) -> str:
    """Why a benchmark cannot run here ("" if it can)."""
    if need == "lab" and not (os.environ.get("DATABASE_URL", "").startswith("postgres") and os.environ.get("REDIS_URL")):
        return "needs DATABASE_URL=postgres://... and REDIS_URL=redis://..."
    if need == "slurm" and not os.environ.get("CI") and not _slurm_answers():
        return "needs a running Slurm (make slurm-up, as root)"  # under CI it runs, and fails without Slurm
    return ""


def _slurm_answers() -> bool:
    """Whether ``sinfo`` reaches a controller on this machine."""
    try:
        return subprocess.run(["sinfo", "-h"], capture_output=True, timeout=10, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def run(names: list[str]) -> tuple[list[Figure], list[tuple[str, str, float]]]:
    """Run the benchmarks ``names``; their figures, and (name, problem, load) of those that
    did not finish cleanly or were skipped."""
    problems: list[tuple[str, str, float]] = []
    out_dir = Path(tempfile.mkdtemp(prefix="bench-figures-"))
    figures_file = out_dir / "figures.jsonl"
    for name in names:
        argv, need = BENCHMARKS[name]
        load = os.getloadavg()[0]
        why = _missing(need)
        if why:
            problems.append((name, f"skipped: {why}", load))
            continue
        sys.stdout.write(f"\n=== {name}: {' '.join(argv)}   (load {load:.2f}, {time.strftime('%H:%M:%S')})\n")
        sys.stdout.flush()
        env = dict(os.environ, BENCH_FIGURES=str(figures_file), PYTHONPATH=str(ROOT))
        if need == "pg-scratch":  # its own PostgreSQL database, dropped and re-created (bench.scratch_db)
            env.update(DATABASE_URL=scratch_db.database_url(True, LOAD_PG_URL), LOAD_RUNS="api", LOAD_DURATION="30")
        command = ["bash", *argv] if argv[0].endswith(".sh") else [sys.executable, *argv]
        done = subprocess.run(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True, check=False)
        sys.stderr.write(done.stderr)
        if done.returncode == HOLLOW_EXIT:
            last = [line for line in done.stderr.splitlines() if line.startswith("HOLLOW")]
            problems.append((name, last[-1] if last else "HOLLOW MEASUREMENT", load))
        elif done.returncode:
            problems.append((name, f"FAILED (exit status {done.returncode})", load))
    return load_figures(str(figures_file)), problems


def table(figures: list[Figure], problems: list[tuple[str, str, float]]) -> str:
    """The table ``make bench`` ends with (module docstring)."""
    head = f"{'figure':<70} {'goal':>16} {'measured':>16} {'ratio':>7} {'adds s':>6} {'scaled':>7} {'load':>5}"
    lines = [head, "-" * len(head)]
    for f in figures:
        goal = "-" if f.goal is None else f"{'>=' if f.better == 'higher' else '<='} {_num(f.goal)} {f.unit}"
        ratio = "-" if f.ratio is None else f"{f.ratio:.2f}"
        adds = "-" if not f.additions_s else f"{f.additions_s:.2f}"
        scaled = "-" if f.scaled_ratio is None else f"{f.scaled_ratio:.2f}"
        lines.append(f"{f.figure[:70]:<70} {goal:>16} {_num(f.measured) + ' ' + f.unit:>16} {ratio:>7} {adds:>6} {scaled:>7} "
                     f"{f.load:>5.2f}")
    for name, problem, load in problems:
        lines.append(f"{name + ': ' + problem:<{len(head) - 6}} {load:>5.2f}")
    met = [f.ratio >= 1 for f in figures if f.ratio is not None]
    scaled = [f.scaled_ratio >= 1 for f in figures if f.scaled_ratio is not None]
    lines.append(f"goals met: {sum(met)} of {len(met)}; scaled to this machine: {sum(scaled)} of {len(scaled)}; "
                 f"benchmarks failed or skipped: {len(problems)}. ratio >= 1 meets the goal; adds s: seconds of 10^7 "
                 f"pure-Python additions when it was recorded (the goals are for 0.6 s); scaled: the ratio against the goal "
                 f"scaled to that speed; load: 1-minute load average on {os.cpu_count()} cores when the figure was recorded")
    return "\n".join(lines)


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=list(BENCHMARKS), default=None)
    parser.add_argument("--skip", nargs="+", choices=list(BENCHMARKS), default=[])
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    if args.list:
        for name, (cmd, _) in BENCHMARKS.items():
            print(f"{name:<20} {' '.join(cmd)}")
        return 0
    names = [n for n in (args.only or list(BENCHMARKS)) if n not in args.skip]
    figures, problems = run(names)
    print("\n" + table(figures, problems))
    return 1 if any(not p.startswith("skipped") for _, p, _ in problems) else 0


if __name__ == "__main__":
    raise SystemExit(main())
