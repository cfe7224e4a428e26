"""docs/published_schedulers.md from a saved result of the study (``published_schedulers``).

Usage::

    python -m simulator.experiments published_schedulers workers=2 > var/published.json
    python -m simulator.experiments.published.document var/published.json docs/published_schedulers.md

The tables and paragraphs are rebuilt from the result's "Every run" table with the current
``simulator.experiments.published.report`` (so a change of wording needs no new run); the set-up
text is :data:`SETUP`, with every choice dated.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from simulator.experiments.published.report import METRICS, build, counted
from simulator.experiments.published.setup import TRACES

SETUP = """## Set-up (fixed before the results; later choices are dated)

- **Windows.** Each starts at a random point of its trace: FB-2009 (SWIM) 2 h, KTH-SP2 7 days, LCG 2 h
  (quick: 15 min, 12 h, 15 min). FB-2009's jobs get one of 8 users in 2 groups; KTH-SP2's users are the
  leaves of a flat tree (so H-LTRF is LTRF there, paper 002 Theorem 1); LCG's groups, then users.
- **Load.** (1) Each resource type gets `C_j = ceil(W_j / (0.9 x window))` units, `W_j` the work the
  window's jobs would do inside it on an infinite cluster, a job's reduce stage starting when its
  maps end (offered load 0.9); an SWF job wider than that sets `C` and the arrivals are compressed.
  (2) A reference run (H-LTRF) measures each type's busy fraction over the window; a type below 0.75
  shrinks to `ceil(C_j x busy / 0.8)`, at most 3 times and never past an offered load of 1.0.
  Utilisation is the cluster's busy unit-seconds over its unit-seconds in the window. *Step (2), the
  stage order in step (1) and counting every unit once were added after the first set-up gave FB-2009
  a mean utilisation of 0.67, before any comparison under them was seen (2026-11-26).*
- **Jobs.** A budget U[50, 200] and weights U[0.5, 2] per job (paper 000's set-up); its value is its
  budget if it finishes by submit + 3x its ideal time (welfare, paper 001 Sec. 4).
- **Configurations.** *The controls below were added on 2026-11-28, before any of their results was
  seen (an independent review found that Abacus was the only configuration sharing inside its queues
  and Themis the only job-level policy reading exact sizes).*
  - Every queue-level policy without money runs twice: the oldest job of a queue first (FIFO, the
    plain label) and equal shares of the queue's units among its jobs (stride dispatch,
    "+ equal share"): H-LTRF (T_wait 60 s), DRF as YARN's Fair Scheduler, Slurm 2^(-U/S) with a 7-day
    half-life, Karma (alpha 0.5, 60 s quanta; tied credits now served in the library's order and
    rotated in the adapter). LTRF runs with FIFO inside its queues.
  - Two markets over H-LTRF: "Abacus over H-LTRF" (each queue's units split by the budget auction,
    alpha 0.5, stride dispatch) and "ERA reservations over H-LTRF" (Basic-Econ prices each job's stages
    from its exact task counts and durations; the rejected jobs run best-effort, FIFO inside a queue).
  - Job-level policies: Tiresias as its authors run it (two queues with a 3,600 unit-s limit,
    cumulative pending-time promotion after waiting 2x the execution) and its three-limit variant
    (30 min, 1 h, 2 h); Themis (f = 0.8) reading exact sizes and Themis estimating task durations from
    attained service (the mean of a job's finished tasks, else the cluster's, never below its oldest
    running task's age); SRPT, the shortest remaining work first, with the same exact sizes as Themis'
    oracle variant: the control for reading sizes.
  - The tables say what decides inside a queue and what each configuration reads before a job runs
    ("exact job sizes": every task count and duration, an oracle; H-LTRF's usage counts a task's
    duration when it starts). Tasks are never preempted.
"""


def rows_of(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The study's rows (trace, seed, policy, metrics, cell) from its "Every run" table. Raises StopIteration without one."""
    runs = next(t for t in result["tables"] if t["title"] == "Every run")
    names = {v: k for k, v in TRACES.items()}
    titles = {title: key for key, title, _ in METRICS}
    out = []
    for row in runs["rows"]:
        cells = dict(zip(runs["columns"], row, strict=True))
        capacity = [int(x) for x in str(cells["capacity (units per type)"]).split(", ")]
        out.append({
            "trace": names[cells["trace"]], "seed": int(cells["seed"]), "policy": cells["configuration"],
            "metrics": {titles[t]: cells[t] for t in titles if t in cells},
            "cell": {"jobs": cells["jobs"], "capacity": capacity, "start_h": cells["window start (h)"],
                     "time_scale": cells["arrival compression"]},
        })
    return out


def _table(t: Mapping[str, Any]) -> list[str]:
    def cell(v: Any) -> str:
        return "—" if v is None else str(v).replace("|", "\\|")

    lines = [f"### {t['title']}", "", "| " + " | ".join(map(str, t["columns"])) + " |", "|" + "---|" * len(t["columns"])]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in t["rows"]]
    return [*lines, ""]


def markdown(result: Mapping[str, Any], *, size: str, wall: str, command: str, bench: Sequence[str] = ()) -> str:
    """The page: what the study is, how to run it, its set-up, the paragraphs and the tables."""
    rows = rows_of(result)
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    rebuilt = build(rows, policies)
    windows = len({r["seed"] for r in rows})
    lines = [
        "# The lab against the published schedulers", "",
        "Our LTRF and H-LTRF (paper 002), and the markets Abacus (paper 000) and ERA (paper 001) over H-LTRF, beside",
        "published schedulers re-implemented from their papers in `scheduler/published/`: DRF (Ghodsi et al., NSDI'11),",
        "Slurm's classic fair share, Karma (Vuppalapati et al., OSDI'23), Tiresias (Gu et al., NSDI'19) and Themis",
        "(Mahajan et al., NSDI'20), with controls: every queue-level policy with FIFO and with equal shares inside its",
        "queues, and SRPT with Themis' size oracle. Every configuration replays the same windows of the same traces",
        "through the same engine and is scored by the same metrics. The study is `published_schedulers` in the registry",
        "(`simulator/experiments/published/`); its page in the lab shows these tables with the figures and CSV export.",
        "", "## Reproduce", "", "```", command,
        "PYTHONPATH=. .venv/bin/python -m simulator.experiments.published.document var/published.json docs/published_schedulers.md",
        "```", "",
        f"This page: {size}, {counted(windows, 'window')} per trace, {counted(len(policies), 'configuration')}; {wall}. "
        "The page is generated "
        "from the saved result (`simulator/experiments/published/document.py`); do not edit it by hand.", "",
        *bench, SETUP,
        "## What wins where, and why", "",
        "These paragraphs are the study's own text, written from the numbers of this run (each trace's second half reads "
        "the controls):", "",
    ]
    lines += [f"- {p}" for p in rebuilt["paragraphs"].values()]
    heading = (f"## Tables (mean ± 95 % Student-t interval over the {windows} windows)" if windows > 1
               else "## Tables (one window per trace: values without an interval)")
    lines += ["", heading, ""]
    for t in rebuilt["tables"]:
        if t["title"].split(":")[0] in TRACES.values():
            lines += _table(t)
    return "\n".join(lines).rstrip() + "\n"


BENCH = [
    "## On one and on two workers", "",
    "`bench/bench_lab_sweep.py` runs the study as a split lab run on W real `celery worker -Q simulation",
    "--concurrency=1` processes (PostgreSQL, Redis), requires every part done, a row per (trace, window,",
    "policy) and the same result whatever W, and times it (2026-11-26, this 2-core machine, quiet, with the nine",
    "configurations of that date):", "",
    "| size | 1 worker | 2 workers | speed-up |", "|---|---|---|---|",
    "| quick windows, 10 per trace (30 parts): `bench_lab_sweep.py --seeds 10` | 147.4 s | 80.7 s | 1.83x |",
    "| full windows, 2 per trace (6 parts of uneven length): `--seeds 2 --no-quick` | 248.9 s | 169.3 s | 1.47x |", "",
    "With few uneven parts the longest part bounds the speed-up (an FB-2009 or LCG cell takes several",
    "times a KTH-SP2 one).", "",
]


def main(argv: Sequence[str]) -> int:
    """``RESULT.json OUT.md``: write the page; 2 on a usage error."""
    if len(argv) != 2:
        sys.stderr.write("usage: python -m simulator.experiments.published.document RESULT.json OUT.md\n")
        return 2
    result = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    quick = bool(result.get("params", {}).get("quick"))
    workers = result.get("workers", 1)
    wall = f"{float(result.get('wall_s', 0.0)) / 60:.1f} min of wall time on {workers} worker process{'es' if workers != 1 else ''}"
    command = ("PYTHONPATH=. .venv/bin/python -m simulator.experiments published_schedulers "
               + ("quick=true " if quick else "") + f"workers={workers} > var/published.json")
    size = "quick windows (15 min, 12 h, 15 min)" if quick else "full windows (2 h, 7 days, 2 h)"
    Path(argv[1]).write_text(markdown(result, size=size, wall=wall, command=command, bench=BENCH), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
