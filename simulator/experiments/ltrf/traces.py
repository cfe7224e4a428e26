"""Paper 002's fairness comparison (Sec. 7.4, Fig. 7) on real traces: KTH-SP2 and LCG.

Each selected job of a Standard Workload Format slice becomes ``procs`` tasks
of one processor for its run time (``simulator.workloads.traces.load_swf``; tasks of a
job are not gang-scheduled). The slice is replayed on the engine's cluster
(``simulator.cluster.model.Cluster``: fair share across queues, then the oldest job
inside a leaf) once per policy -- FIFO, MLRF, LTRF and H-LTRF with several
``T_wait`` -- on the same jobs, and compared by:

* sharing loss ``Omega(t)`` over time (Eq. 5; the paper's Fig. 7a/7c),
* the final fairness degree per queue (Eq. 3; Fig. 7b/7d),
* waiting time (first task start minus submit) per queue,
* utilisation.

KTH-SP2 (a 100-node IBM SP2, 1996-97): users are the leaf queues of a flat
tree. LCG (the LHC computing grid, Nov.-Dec. 2005; one-processor jobs): groups
are the first level, their users the leaves (two levels, so H-LTRF's walk and
its ``T_wait`` matter). All weights are equal. No market clearing runs: this
isolates the fair-share stage, as the paper's experiment does.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from scheduler.fairshare.fairness import QueueTree
from simulator.cluster.model import Cluster
from simulator.experiments import Experiment, Params, Progress, Result, figure, finite, register, table
from simulator.records import FairnessSample, JobFinished, JobSpec
from simulator.workloads.traces import TraceJob, load_swf

_ROOT = Path(__file__).resolve().parents[3]
TRACES = {"kth": "KTH-SP2-1996-2.1-cln.swf.gz", "lcg": "LCG.swf.gz"}
SEARCH = (_ROOT / "data" / "traces", _ROOT.parent / "shared" / "traces", Path("/work/shared/traces"))


def trace_path(trace: str) -> Path:
    """The trace file: ``data/traces/`` of the repository, else ``../shared/traces/``.
    Raises ValueError for an unknown trace, FileNotFoundError if it is nowhere."""
    if trace not in TRACES:
        raise ValueError(f"unknown trace {trace!r}; choose one of {sorted(TRACES)}")
    for folder in SEARCH:
        if (folder / TRACES[trace]).exists():
            return folder / TRACES[trace]
    raise FileNotFoundError(f"{TRACES[trace]} is in none of {[str(f) for f in SEARCH]}")


def build_tree(jobs: list[TraceJob], levels: int) -> tuple[QueueTree, dict[int, int]]:
    """Users as leaves (``levels`` 1) or groups then users (2), in order of first
    appearance; returns the tree and job id -> leaf position."""
    if levels == 1:
        paths = {f"root.{j.user}": 1.0 for j in jobs}
        key = {j.job_id: f"root.{j.user}" for j in jobs}
    else:
        paths = {f"root.{j.group}.{j.user}": 1.0 for j in jobs}
        key = {j.job_id: f"root.{j.group}.{j.user}" for j in jobs}
    tree = QueueTree.from_paths(paths)
    position = {name: k for k, name in enumerate(tree.leaf_names)}
    return tree, {jid: position[name] for jid, name in key.items()}


def replay(
    jobs: list[TraceJob], tree: QueueTree, leaf: dict[int, int], *, capacity: int, policy: str, t_wait: float,
    interval: float, window: float,
) -> tuple[list[FairnessSample], list[JobFinished], dict[int, float]]:
    """Run the slice to completion on one policy; samples every ``interval`` s up to
    ``window``; returns (samples, departures, job id -> first start)."""
    cluster = Cluster([capacity], tree, policy=policy, t_wait=t_wait, dispatch="fifo", staged=False, sample_interval=interval)
    for j in jobs:
        cluster.submit(JobSpec(j.job_id, leaf[j.job_id], j.tasks, j.task_duration, j.submit_time))
    samples: list[FairnessSample] = []
    finished: list[JobFinished] = []
    starts: dict[int, float] = {}
    report = cluster.advance(window)
    samples += report.samples
    finished += report.finished
    starts |= report.first_starts
    cluster.sample_interval = math.inf  # the drain after the window: no more samples
    while not math.isinf(t := cluster.next_event_time()):
        report = cluster.advance(t)
        finished += report.finished
        starts |= report.first_starts
    return samples, finished, starts


def _runs(params: Params) -> list[tuple[str, str, float]]:
    """(label, policy, t_wait s) per run: each policy, H-LTRF once per T_wait, plus the naive hierarchy."""
    out = []
    for p in params["policies"]:
        if p == "hltrf":
            out += [(f"H-LTRF T_wait={finite(float(tw), 1)} s", "hltrf", float(tw)) for tw in params["t_waits"]]
            if params["include_naive"]:
                out.append(("H-LTRF T_wait=off (naive)", "hltrf", math.inf))
        else:
            out.append((str(p).upper(), str(p), 0.0))
    return out


def run(params: Params, progress: Progress) -> Result:
    """Replay the slice under each policy; figures, tables and a summary (simulated seconds)."""
    progress(0.0, "loading the trace")
    jobs = load_swf(trace_path(str(params["trace"])), start_hour=float(params["start_hour"]), hours=float(params["hours"]))
    if not jobs:
        raise ValueError("the slice holds no job")
    tree, leaf = build_tree(jobs, int(params["levels"]))
    window = float(params["hours"]) * 3600.0
    interval = window / int(params["samples"])
    capacity = int(params["capacity"])
    runs = _runs(params)
    work = np.zeros(len(tree.leaves))
    for j in jobs:
        work[leaf[j.job_id]] += j.tasks[0] * j.task_duration[0]
    shown = [int(k) for k in np.argsort(-work, kind="stable")[: int(params["queues_shown"])]]
    names = [tree.leaf_names[k].removeprefix("root.") for k in shown]
    loss_traces, rho_bars, wait_bars, rows, per_queue = [], [], [], [], []
    for k, (label, policy, t_wait) in enumerate(runs):
        progress(k / len(runs), f"replaying under {label}")
        samples, finished, starts = replay(
            jobs, tree, leaf, capacity=capacity, policy=policy, t_wait=t_wait, interval=interval, window=window
        )
        final = samples[-1]
        rho = final.rho[:, 0]
        waits: dict[int, list[float]] = defaultdict(list)
        for j in jobs:
            if j.job_id in starts:
                waits[leaf[j.job_id]].append(starts[j.job_id] - j.submit_time)
        all_waits = [w for ws in waits.values() for w in ws]
        loss = [float(s.loss[0]) for s in samples]
        late = loss[len(loss) // 4:]  # after the warm-up (the paper: "after the starting stage")
        loss_traces.append({"type": "scatter", "mode": "lines", "name": label,
                            "x": [finite(s.time / 3600.0, 4) for s in samples], "y": [finite(x, 4) for x in loss]})
        rho_bars.append({"type": "bar", "name": label, "x": names, "y": [finite(float(rho[q]), 3) for q in shown]})
        wait_bars.append({"type": "bar", "name": label, "x": names,
                          "y": [finite(float(np.mean(waits[q])) / 3600.0, 3) if waits[q] else None for q in shown]})
        demanded = final.entitled[:, 0] > 0
        rows.append([
            label, finite(loss[-1], 3), finite(float(np.mean(late)), 3), finite(float(np.min(late)), 3),
            int(np.sum(rho[demanded] < 1 - 1e-9)), int(np.sum(demanded)), finite(float(rho[demanded].min()), 3),
            finite(float(np.mean(all_waits)) / 3600.0, 3), finite(float(np.percentile(all_waits, 95)) / 3600.0, 3),
            finite(float(np.mean([s.utilisation[0] for s in samples])), 3), len(finished),
        ])
        per_queue.append([label, *[finite(float(rho[q]), 3) for q in shown]])
    progress(1.0, "done")
    return _result(params, jobs, tree, loss_traces, rho_bars, wait_bars, rows, per_queue, names)


def _result(
    params: Params, jobs: list[TraceJob], tree: QueueTree, loss_traces: list[Any], rho_bars: list[Any], wait_bars: list[Any],
    rows: list[list[Any]], per_queue: list[list[Any]], names: list[str],
) -> Result:
    trace = str(params["trace"]).upper()
    by = {r[0]: r for r in rows}
    mlrf, ltrf = by.get("MLRF"), by.get("LTRF")
    summary = (
        f"{len(jobs)} jobs of {trace} ({params['hours']} h from hour {params['start_hour']}), {len(tree.leaves)} leaf queues, "
        f"{params['capacity']} units."
    )
    if mlrf and ltrf:
        summary += (
            f" Mean sharing loss after the warm-up: MLRF {mlrf[2]}, LTRF {ltrf[2]} (paper's Fig. 7: HFS/MLRF about -0.5 "
            "throughout, LTRF 0 after the start-up); queues below fairness 1 at the end: "
            f"MLRF {mlrf[4]} of {mlrf[5]}, LTRF {ltrf[4]} of {ltrf[5]}."
        )
    columns = [
        "policy", "final Ω", "mean Ω after warm-up", "worst Ω after warm-up", "queues rho<1", "queues demanding",
        "min rho", "mean wait (h)", "p95 wait (h)", "utilisation", "jobs done",
    ]
    return {
        "figures": [
            figure(f"{trace}: sharing loss Ω over time (paper 002, Eq. 5; cf. Fig. 7a/7c)", loss_traces,
                   x_title="simulated time since the slice began (h)", y_title="Ω (≤ 0; 0 = nobody lost by sharing)"),
            figure(f"{trace}: fairness degree at the end of the slice, {len(names)} busiest queues (Eq. 3; cf. Fig. 7b/7d)", rho_bars,
                   x_title="queue", y_title="rho = usage / own-partition usage", barmode="group"),
            figure(f"{trace}: mean waiting time per queue, {len(names)} busiest queues", wait_bars,
                   x_title="queue", y_title="mean wait to first task start (simulated h)", barmode="group"),
        ],
        "tables": [
            table("Per policy", columns, rows, note=(
                "Ω, rho and utilisation over the slice window (rho and queue counts at its end, the warm-up is its first quarter); "
                "waits in simulated hours over all jobs of the slice, which is drained.")),
            table("Fairness degree rho per queue at the end of the window", ["policy", *names], per_queue),
        ],
        "summary": summary,
    }


_HELP = {
    "trace": "kth (KTH-SP2, users as leaves) or lcg (LCG grid, groups then users)",
    "start_hour": "slice start, hours after the first job",
    "hours": "slice length (simulated h)",
    "capacity": "processors (units) of the cluster",
    "levels": "1 = users as leaves of a flat tree, 2 = groups then users",
    "policies": "fair-share policies (scheduler.registry.FAIRSHARE)",
    "t_waits": "H-LTRF T_wait values (simulated s)",
    "include_naive": "also run H-LTRF with T_wait off (the naive hierarchy)",
    "samples": "fairness samples over the window",
    "queues_shown": "queues in the per-queue charts (the busiest by work)",
}

KTH = register(Experiment(
    name="ltrf_traces_kth", title="LTRF on a real trace: KTH-SP2 (users as queues)",
    source="paper 002, Sec. 7.4, Fig. 7 (on KTH-SP2-1996 instead of the paper's YARN workloads)", run=run,
    defaults={"trace": "kth", "start_hour": 0.0, "hours": 336.0, "capacity": 100, "levels": 1,
              "policies": ["fifo", "mlrf", "ltrf", "hltrf"], "t_waits": [60.0], "include_naive": False, "samples": 300,
              "queues_shown": 12},
    description=("Two weeks of the KTH SP2 log (100 processors) replayed on the fair-share stage under FIFO, MLRF, LTRF and "
                 "H-LTRF (a flat tree: H-LTRF equals LTRF here). Sharing loss over time, final fairness degree and waiting time "
                 "per user queue, utilisation."),
    help=_HELP,
))

LCG = register(Experiment(
    name="ltrf_traces_lcg", title="LTRF and H-LTRF on a real trace: LCG (groups and users)",
    source="paper 002, Sec. 7.4 Fig. 7 and Sec. 7.6 (on the LCG 2005 log instead of the paper's YARN workloads)", run=run,
    defaults={"trace": "lcg", "start_hour": 0.0, "hours": 12.0, "capacity": 300, "levels": 2,
              "policies": ["fifo", "mlrf", "ltrf", "hltrf"], "t_waits": [60.0, 600.0], "include_naive": True, "samples": 300,
              "queues_shown": 12},
    description=("Twelve hours of the LCG grid log (one-processor jobs) on a 300-unit cluster, groups as the first level and "
                 "their users as leaves, under FIFO, MLRF, LTRF and H-LTRF with several T_wait and the naive hierarchy."),
    help=_HELP,
))
