"""Paper 002's own workload (Sec. 7.2, synthesised by ``simulator.workloads.ltyarn``): Fig. 8 and Fig. 10.

* ``ltrf_fig8`` (Sec. 7.5, Fig. 8): the four workloads in four equal leaf queues, all
  starting together, under static partitioning (each queue alone on a quarter of the
  containers), HFS (memoryless max-min: MLRF) and LTYARN (LTRF); per workload the
  speedup over static partitioning. The paper: Facebook and Purdue 14-19 % faster under
  HFS and 10-23 % under LTYARN; Spark and TPC-H at least as fast as static; neither
  policy better everywhere (HFS ahead on Facebook by 7 % and Spark by 2 %, LTYARN on
  Purdue by 8 % and TPC-H by 10 %).
* ``ltrf_fig10`` (Sec. 7.6, Figs. 9-10): Group1 = {Facebook, TPC-H} and Group2 =
  {Purdue, Spark} with equal shares; Facebook first, the other three 15 minutes later.
  The naive hierarchy (H-LTRF with T_wait off) starves TPC-H "for at least 680 seconds";
  H-LTRF with T_wait = 0 does not starve it; with T_wait = 10 s it keeps 2-10 TPC-H tasks
  running in that period, with 80 s 1-4 (Eq. 7: about T_task / T_wait).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scheduler.fairshare.fairness import QueueTree
from simulator.experiments import Experiment, Params, Progress, Result, figure, finite, register, table
from simulator.experiments.fidelity import (
    from_paper,
    headline,
    headline_table,
    holds,
    mean_ci,
    paired,
    scaled_verdict,
    setup_table,
    silent,
    verdict,
)
from simulator.experiments.ltrf.macro import MacroRun, mean_running, overloaded_seconds, running_of, simulate, starvation, usage_at
from simulator.workloads.ltyarn import CONTAINERS, QUEUES, TASK_MEAN_S, facebook_span, macro_workload

TRACE = Path(__file__).resolve().parents[3] / "data" / "traces" / "FB-2009_samples_24_times_1hr_0.tsv"
NAMES = {"facebook": "Facebook", "purdue": "Purdue", "tpch": "TPC-H", "spark": "Spark"}
PAPER_GAIN = {"facebook": (10.0, 23.0), "purdue": (10.0, 23.0)}  # LTYARN over static, % (Sec. 7.5)
PAPER_HFS_MINUS_LT = {"facebook": 7.0, "spark": 2.0, "purdue": -8.0, "tpch": -10.0}  # HFS speed minus LTYARN's, %
# The contention rule (2026-11-28, fixed before any run under it; it reads demand only, never a speedup or a sign):
# Fig. 6a shows Purdue, Spark and TPC-H overloaded -- demand above their share -- for 90-118 s of the first 260 s
# under LTYARN. Of these container counts (the paper's 236 and 3/4, 1/2, 1/4 of it) the largest at which each of the
# three is overloaded for at least OVERLOAD_MIN_S of the first FIG6_WINDOW_S on every calibration seed is used.
CONTAINER_COUNTS = (CONTAINERS, 177, 118, 59)
FIG6_WINDOW_S, OVERLOAD_MIN_S, CALIBRATION_SEEDS = 260.0, 60.0, (0, 1, 2)
OVERLOADED = ("purdue", "spark", "tpch")
INSIDE = {"stride": "equal shares among the queue's applications (stride)", "fifo": "the oldest application first (FIFO)"}


def _flat() -> tuple[QueueTree, dict[str, int]]:
    tree = QueueTree.from_paths({f"root.{q}": 1.0 for q in QUEUES})
    return tree, {name.rsplit(".", 1)[1]: k for k, name in enumerate(tree.leaf_names)}


def _mean_response(run: MacroRun, queue: str) -> float:
    return float(np.mean([f - s for s, f in run.jobs[queue]]))


def _setup_common() -> list[tuple[str, str]]:
    return [
        ("cluster", from_paper(f"59 slave VMs of 4 GB; memory only. Chosen: 1 GB containers, {CONTAINERS} units")),
        ("workloads", from_paper("Table 3's 100 Facebook jobs at FB-2009 submit times; 5 Purdue jobs of 40 GB every 3 min; "
                                 "20 TPC-H queries (Q1, Q9, Q12, Q17 x 5) one after another; 20 Spark applications (kmeans, "
                                 "ALS) 2 min apart")),
        ("job sizes", silent("40 GB jobs: 320 maps (128 MB blocks) and 32 reduces; a Spark application: 20 executors for 5 "
                             "task times", "the paper gives input sizes, not task counts", "none run")),
        ("task times", silent(f"{TASK_MEAN_S} s x U[0.5, 1.5] per job and phase for every workload", "the paper reports only "
                              "TPC-H's mean task time (Fig. 11a)", "the seeds redraw them")),
        ("trace", silent("FB-2009_samples_24_times_1hr_0.tsv (the paper used ..._1hr_1.tsv)", "the repository holds only "
                         "sample 0 of the same SWIM set", "none")),
    ]


def contention(capacity: int, dispatch: str, seeds: tuple[int, ...] = CALIBRATION_SEEDS) -> dict[str, float]:
    """Per workload of ``OVERLOADED``: the least, over ``seeds``, of its overloaded seconds in the first
    ``FIG6_WINDOW_S`` under LTYARN on ``capacity`` containers (the contention rule above)."""
    tree, leaf = _flat()
    out = dict.fromkeys(OVERLOADED, math.inf)
    for seed in seeds:
        r = simulate(macro_workload(seed, TRACE), tree, leaf, capacity=capacity, policy="ltrf", interval=2.0, dispatch=dispatch)
        for q in OVERLOADED:
            out[q] = min(out[q], overloaded_seconds(r, leaf[q], capacity / len(QUEUES), FIG6_WINDOW_S))
    return out


def calibrated_containers(dispatch: str) -> tuple[int, list[list[Any]]]:
    """(the container count the contention rule picks, its table: count, overloaded seconds per workload, qualifies)."""
    rows, chosen = [], CONTAINER_COUNTS[-1]
    for c in CONTAINER_COUNTS:
        over = contention(c, dispatch)
        ok = all(v >= OVERLOAD_MIN_S for v in over.values())
        rows.append([c, *[finite(over[q], 1) for q in OVERLOADED], "yes" if ok else "no"])
        if ok:
            chosen = c
            break
    return chosen, rows


Gains = dict[str, dict[str, np.ndarray]]


def _fig8_gains(seeds: list[int], capacity: int, dispatch: str) -> tuple[Gains, Gains]:
    """(gain by mean response, gain by makespan): policy -> workload -> per-seed % over static partitioning."""
    tree, leaf = _flat()
    solo = QueueTree.from_paths({"root.q": 1.0})
    resp: dict[str, dict[str, list[float]]] = {p: {q: [] for q in QUEUES} for p in ("static", "mlrf", "ltrf")}
    span: dict[str, dict[str, list[float]]] = {p: {q: [] for q in QUEUES} for p in ("static", "mlrf", "ltrf")}
    for seed in seeds:
        w = macro_workload(seed, TRACE)
        for q in QUEUES:
            r = simulate({q: w[q]}, solo, {q: 0}, capacity=max(1, capacity // len(QUEUES)), policy="fifo", dispatch=dispatch)
            resp["static"][q].append(_mean_response(r, q))
            span["static"][q].append(r.makespan(q))
        for policy in ("mlrf", "ltrf"):
            r = simulate(w, tree, leaf, capacity=capacity, policy=policy, dispatch=dispatch)
            for q in QUEUES:
                resp[policy][q].append(_mean_response(r, q))
                span[policy][q].append(r.makespan(q))
    gain = {p: {q: 100 * (np.array(resp["static"][q]) / np.array(resp[p][q]) - 1) for q in QUEUES} for p in ("mlrf", "ltrf")}
    gain_span = {p: {q: 100 * (np.array(span["static"][q]) / np.array(span[p][q]) - 1) for q in QUEUES} for p in ("mlrf", "ltrf")}
    return gain, gain_span


def run_fig8(params: Params, progress: Progress) -> Result:
    """Speedup over static partitioning per workload, HFS and LTYARN, over seeds, on the container count the
    contention rule picks; the sign of HFS - LTYARN at every candidate count, and FIFO inside the queues, beside it."""
    seeds = [int(s) for s in params["seeds"]]
    dispatch = str(params["inside"])
    progress(0.0, "the contention rule: overloaded seconds per container count")
    capacity, calibration = calibrated_containers(dispatch)
    progress(0.1, f"{capacity} containers")
    gain, gain_span = _fig8_gains(seeds, capacity, dispatch)
    progress(0.4, "the sign of HFS - LTYARN at every container count")
    signs, fifo_rows = [], []
    for c in CONTAINER_COUNTS:
        g = gain if c == capacity else _fig8_gains(seeds, c, dispatch)[0]
        signs.append([c, *[paired(g["mlrf"][q], g["ltrf"][q]).text(1, " pp") for q in QUEUES]])
    progress(0.8, "FIFO inside the queues (the earlier set-up)")
    fifo, _ = _fig8_gains(seeds, capacity, "fifo")
    fifo_rows = [[NAMES[q], mean_ci(fifo["mlrf"][q]).text(1, " %"), mean_ci(fifo["ltrf"][q]).text(1, " %"),
                  paired(fifo["mlrf"][q], fifo["ltrf"][q]).text(1, " pp")] for q in QUEUES]
    progress(1.0, "done")
    heads = _fig8_heads(gain, gain_span)
    bars = []
    for p, label in (("mlrf", "HFS (MLRF)"), ("ltrf", "LTYARN (LTRF)")):
        ests = [mean_ci(1 + gain[p][q] / 100) for q in QUEUES]
        bars.append({"type": "bar", "name": label, "x": [NAMES[q] for q in QUEUES], "y": [finite(e.mean, 3) for e in ests],
                     "error_y": {"type": "data", "symmetric": False, "array": [finite(e.high - e.mean, 3) for e in ests],
                                 "arrayminus": [finite(e.mean - e.low, 3) for e in ests]}})
    bars.append({"type": "bar", "name": "static partitioning", "x": [NAMES[q] for q in QUEUES], "y": [1.0] * len(QUEUES)})
    rows = [[NAMES[q], mean_ci(gain["mlrf"][q]).text(1, " %"), mean_ci(gain["ltrf"][q]).text(1, " %"),
             paired(gain["mlrf"][q], gain["ltrf"][q]).text(1, " pp"), mean_ci(gain_span["mlrf"][q]).text(1, " %"),
             mean_ci(gain_span["ltrf"][q]).text(1, " %")] for q in QUEUES]
    setup = setup_table([
        *_setup_common(),
        ("policies", from_paper("static partitioning (each workload alone on a quarter), HFS (memoryless: MLRF), LTYARN (LTRF); "
                                "one level, four equal queues, all starting at 0")),
        ("inside a queue", silent(f"{INSIDE.get(dispatch, dispatch)} (2026-11-28, before its run: YARN's Fair Scheduler "
                                  "shares a queue fairly among its applications by default)",
                                  "the paper runs YARN's defaults without naming the queues' internal policy",
                                  "FIFO inside the queues (the earlier set-up) in its own table")),
        ("containers", silent(f"{capacity} (the contention rule, 2026-11-28, before its run: of {', '.join(map(str, CONTAINER_COUNTS))} "
                              f"the largest at which Purdue, Spark and TPC-H each have demand above their quarter for at least "
                              f"{OVERLOAD_MIN_S:g} s of the first {FIG6_WINDOW_S:g} s under LTYARN on seeds "
                              f"{', '.join(map(str, CALIBRATION_SEEDS))}, as Fig. 6a shows 90-118 s; it reads demand, never a "
                              "speedup or a sign; task times unchanged)", "59 VMs of 4 GB give 236 1 GB containers, an offered "
                              "load near 0.4 with our job sizes, where 'shared' nearly means 'the whole cluster'",
                              "the sign of HFS - LTYARN at every candidate count in its own table")),
        ("performance", silent("speedup = static partitioning's mean job response time / the policy's",
                               "the paper's Fig. 8 says 'speedup' without its measure. Chosen after seeing, on seed 0, that "
                               "each workload's completion time (makespan) is mostly fixed by its arrivals (FB's trace times, "
                               "Spark's 2-min gaps); stated here as the issue asks. Mesos [10], whose agreement the paper "
                               "cites, sums its jobs' running times (to our reading of its Table 4), the same measure",
                               "the makespan-based gains in the table's last two columns")),
        ("statistics", f"{len(seeds)} seeds (bin order, task times), 95 % intervals; HFS vs LTYARN as paired differences"),
    ])
    return {
        "figures": [figure("Fig. 8: speedup over static partitioning (mean job response time; mean over seeds, 95 % CI)", bars,
                           x_title="workload", y_title="speedup (static = 1)", barmode="group")],
        "tables": [
            headline_table(heads), setup,
            table(f"Gains over static partitioning ({capacity} containers)", ["workload", "HFS (mean response)", "LTYARN (mean response)",
                                                     "HFS - LTYARN (paired)", "HFS (makespan)", "LTYARN (makespan)"], rows),
            table("The contention rule: least overloaded seconds in the first 260 s over the calibration seeds (LTYARN)",
                  ["containers", *[NAMES[q] for q in OVERLOADED], "all >= 60 s"], calibration,
                  note="Counts tried from the largest; the first that qualifies is used (the smallest if none does)."),
            table("Sensitivity: HFS - LTYARN (paired, mean response) against the container count",
                  ["containers", *[NAMES[q] for q in QUEUES]], signs,
                  note="The paper gives 59 VMs of 4 GB but not the container size; its signs: Facebook +7, Spark +2, "
                       "Purdue -8, TPC-H -10 pp."),
            table(f"FIFO inside the queues (the earlier set-up), {capacity} containers",
                  ["workload", "HFS (mean response)", "LTYARN (mean response)", "HFS - LTYARN (paired)"], fifo_rows),
        ],
        "headlines": heads,
        "summary": (f"Over {len(seeds)} seeds on {capacity} containers ({'equal shares' if dispatch == 'stride' else dispatch} inside "
                    "a queue) LTYARN's gain over static partitioning (mean job response time): "
                    + ", ".join(f"{NAMES[q]} {mean_ci(gain['ltrf'][q]).mean:.0f} %" for q in QUEUES)
                    + "; HFS's: " + ", ".join(f"{NAMES[q]} {mean_ci(gain['mlrf'][q]).mean:.0f} %" for q in QUEUES)
                    + " (paper: Facebook and Purdue 10-23 % under LTYARN, 14-19 % under HFS)."),
    }


def _fig8_heads(gain: dict[str, dict[str, np.ndarray]], span: dict[str, dict[str, np.ndarray]]) -> list[dict[str, str]]:
    out = []
    for q in ("facebook", "purdue"):
        lo, hi = PAPER_GAIN[q]
        est = mean_ci(gain["ltrf"][q])
        inside = est.high >= lo - 0.1 * lo and est.low <= hi + 0.1 * hi
        out.append(headline(paper="002", section="Sec. 7.5, Fig. 8", quote=f"for Facebook and Purdue workloads ... 10 ~ 23 percent "
                            f"[improvement] for LTYARN ({NAMES[q]})", paper_value="10-23 %", ours=est.text(1, " %"),
                            verdict="reproduced" if inside else
                            scaled_verdict("shape only" if holds(est, "+") else "differs", lo, hi, est.mean),
                            cause="" if inside else _fig8_cause(q, gain, span)))
    slow = [q for q in ("spark", "tpch") if holds(mean_ci(gain["ltrf"][q]), "-")]
    out.append(headline(paper="002", section="Sec. 7.5, Fig. 8", quote="For Spark and TPC-H workloads, HFS and LTYARN can be at least "
                        "as fast as static partitioning", paper_value="speedup >= 1",
                        ours=", ".join(f"{NAMES[q]} LTYARN {mean_ci(gain['ltrf'][q]).text(1, ' %')}" for q in ("spark", "tpch")),
                        verdict="differs" if slow else "reproduced",
                        cause=(f"{', '.join(NAMES[q] for q in slow)} slower than on its own quarter: its chained applications "
                               "wait for containers that other queues' running tasks hold (no pre-emption)") if slow else ""))
    for q, paper in PAPER_HFS_MINUS_LT.items():
        d = paired(gain["mlrf"][q], gain["ltrf"][q])
        side = "+" if paper > 0 else "-"
        other = "-" if side == "+" else "+"
        cause = ("" if holds(d, side) else "the opposite sign here, outside the seeds' spread" if holds(d, other)
                 else "the two policies differ by less than the seeds' spread here")
        out.append(headline(paper="002", section="Sec. 7.5, Fig. 8", quote=f"HFS is better than LTYARN for Facebook by about 7 percent "
                            f"and Spark by about 2 percent ... LTYARN outperforms HFS for Purdue ... 8 percent and TPC-H ... 10 percent "
                            f"({NAMES[q]})", paper_value=f"HFS - LTYARN = {paper:+g} pp", ours=d.text(1, " pp"),
                            verdict=verdict(paper, d, holds(d, side)),
                            cause=cause + f"; by makespan {paired(span['mlrf'][q], span['ltrf'][q]).text(1, ' pp')}"))
    return out


def _fig8_cause(q: str, gain: dict[str, dict[str, np.ndarray]], span: dict[str, dict[str, np.ndarray]]) -> str:
    return (f"a quarter of the cluster queues {NAMES[q]}'s large jobs (Table 3's 800-map jobs, Purdue's 320 maps) far longer "
            f"than their share of the whole; by the workload's completion time (makespan; a sensitivity, not the paper's "
            f"measure: the paper says only that its finding agrees with Mesos [10], whose macrobenchmark, to our reading of "
            f"Hindman et al., NSDI'11, Table 4, sums the running times of each framework's jobs, the measure of our mean "
            f"response; that paper's text is not among the project's papers) LTYARN gains "
            f"{mean_ci(span['ltrf'][q]).text(1, ' %')} and HFS {mean_ci(span['mlrf'][q]).text(1, ' %')}")


def _hierarchy() -> tuple[QueueTree, dict[str, int]]:
    groups = {"facebook": "g1", "tpch": "g1", "purdue": "g2", "spark": "g2"}
    tree = QueueTree.from_paths({f"root.{g}.{q}": 1.0 for q, g in groups.items()})
    return tree, {name.rsplit(".", 1)[1]: k for k, name in enumerate(tree.leaf_names)}


@dataclass
class _Fig10:
    """Per policy label: TPC-H's starvation (s) and mean running TPC-H tasks in the naive run's starvation
    period, one value per seed; Group1's usage at the others' arrival (container-s); seed 0's runs."""

    starve: dict[str, list[float]]
    running: dict[str, list[float]]
    g1_usage: list[float]
    shown: dict[str, MacroRun]
    g2_short: list[float]


def _fig10_runs(params: Params, progress: Progress, labels: list[str], fb_scale: float, offset: float, share: float,
                capacity: int = CONTAINERS) -> _Fig10:
    seeds, delay, dispatch = [int(s) for s in params["seeds"]], float(params["delay_s"]), str(params["inside"])
    waits = [math.inf, *[float(t) for t in params["t_waits"]]]
    tree, leaf = _hierarchy()
    starts = {"facebook": 0.0, "tpch": delay, "purdue": delay, "spark": delay}
    out = _Fig10({k: [] for k in labels}, {k: [] for k in labels}, [], {}, [])
    for i, seed in enumerate(seeds):
        progress(offset + share * i / len(seeds), f"seed {seed} (Facebook's arrivals x {fb_scale:.3g})")
        w = macro_workload(seed, TRACE, fb_time_scale=fb_scale)
        runs = {label: simulate(w, tree, leaf, capacity=capacity, policy="hltrf", t_wait=t, starts=starts,
                                interval=float(params["sample_s"]), dispatch=dispatch) for label, t in zip(labels, waits, strict=True)}
        for label in labels:
            out.starve[label].append(starvation(runs[label], "tpch", delay))
        period = max(out.starve[labels[0]][-1], float(params["sample_s"]))  # the naive run's starvation period
        for label in labels:
            out.running[label].append(mean_running(runs[label], leaf["tpch"], delay, delay + period))
        out.g1_usage.append(usage_at(runs[labels[0]], [leaf["facebook"], leaf["tpch"]], delay))
        short = [x.time for x in runs[labels[0]].samples if x.time > delay
                 and x.demand[leaf["purdue"], 0] + x.demand[leaf["spark"], 0] < capacity]
        out.g2_short.append((short[0] if short else math.inf) - delay)
        if i == 0:
            out.shown = runs
    return out


def run_fig10(params: Params, progress: Progress) -> Result:
    """TPC-H's starvation under the naive hierarchy and H-LTRF's T_wait, over seeds; and with Facebook's
    arrivals compressed into the first 15 minutes (the isolation of the cause)."""
    delay, waits = float(params["delay_s"]), [float(t) for t in params["t_waits"]]
    labels = ["naive (T_wait off)"] + [f"H-LTRF T_wait = {t:g} s" for t in waits]
    span = facebook_span(TRACE)
    capacity = calibrated_containers(str(params["inside"]))[0] if params["containers"] == "calibrated" else int(params["containers"])
    base = _fig10_runs(params, progress, labels, 1.0, 0.0, 0.5, capacity)
    fit = _fig10_runs(params, progress, labels, min(1.0, delay / span), 0.5, 0.5, capacity)
    progress(1.0, "done")
    _, leaf = _hierarchy()
    heads = _fig10_heads(base, fit, labels, waits, span, delay, capacity)
    traces: list[dict[str, Any]] = []
    groups: list[dict[str, Any]] = []
    for label, r in base.shown.items():
        t, n = running_of(r, leaf["tpch"])
        traces.append({"type": "scatter", "mode": "lines", "name": label, "x": [finite(x, 1) for x in t[:2000]], "y": n[:2000]})
    for label, r in fit.shown.items():
        t, n = running_of(r, leaf["tpch"])
        traces.append({"type": "scatter", "mode": "lines", "name": f"{label}, Facebook in 15 min", "x": [finite(x, 1) for x in t[:2000]],
                       "y": n[:2000], "line": {"dash": "dot"}})
    for name, r in (("", base.shown[labels[0]]), (", Facebook in 15 min", fit.shown[labels[0]])):
        for g, members in (("Group1 (Facebook, TPC-H)", ("facebook", "tpch")), ("Group2 (Purdue, Spark)", ("purdue", "spark"))):
            t, _ = running_of(r, 0)
            y = [int(sum(s.running[leaf[q], 0] for q in members)) for s in r.samples]
            groups.append({"type": "scatter", "mode": "lines", "name": g + name, "x": [finite(x, 1) for x in t[:2000]], "y": y[:2000]})
    rows = [[label, mean_ci(base.starve[label]).text(1, " s"), mean_ci(base.running[label]).text(2),
             mean_ci(fit.starve[label]).text(1, " s"), mean_ci(fit.running[label]).text(2)] for label in labels]
    setup = setup_table([
        *_setup_common(),
        ("hierarchy", from_paper("Group1 = {Facebook, TPC-H}, Group2 = {Purdue, Spark}, equal shares at each level; Facebook at 0, "
                                 f"the others {delay:g} s later (15 minutes)")),
        ("starvation", silent("TPC-H's first task start minus its submission; 'running tasks' are sampled every "
                              f"{params['sample_s']} s over the naive run's starvation period", "the paper reads them off Fig. 10",
                              "none")),
        ("inside a queue and containers", silent(f"{INSIDE.get(str(params['inside']), params['inside'])}; {capacity} containers "
                                                 "(2026-11-28, before the run: Fig. 8's contention rule, on its page, for the "
                                                 "same workloads and cluster)", "the paper runs YARN's defaults on 59 VMs of 4 GB "
                                                 "without naming the container size", "containers=236 and inside=fifo (the earlier "
                                                 "set-up) as parameters")),
        ("isolation", f"the same runs with Facebook's {span:.0f} s of arrivals compressed into the first {delay:g} s (the paper's "
                      "Fig. 10a has Facebook alone on the cluster then); not the default, a diagnosis"),
        ("statistics", f"{len(params['seeds'])} seeds, 95 % intervals"),
    ])
    naive = mean_ci(base.starve[labels[0]])
    return {
        "figures": [
            figure("Fig. 10a: running containers per group under the naive hierarchy (seed 0)", groups,
                   x_title="simulated time (s)", y_title="running containers"),
            figure("Fig. 10c: TPC-H's running tasks, naive hierarchy and H-LTRF (seed 0)", traces, x_title="simulated time (s)",
                   y_title="running TPC-H tasks"),
        ],
        "tables": [headline_table(heads), setup,
                   table("TPC-H per policy", ["policy", "starvation after submission", "mean running TPC-H tasks in the naive run's "
                                              "starvation period", "starvation, Facebook in 15 min", "running, Facebook in 15 min"],
                         rows)],
        "headlines": heads,
        "summary": (f"Over {naive.n} seeds the naive hierarchy starved TPC-H for {naive.text(0, ' s')} after its submission (paper: "
                    f"at least 680 s); with Facebook's arrivals compressed into the first {delay:g} s, "
                    f"{mean_ci(fit.starve[labels[0]]).text(0, ' s')}. H-LTRF with T_wait = 0 started TPC-H after "
                    f"{mean_ci(base.starve[labels[1]]).text(1, ' s')}."),
    }


def _fig10_heads(base: _Fig10, fit: _Fig10, labels: list[str], waits: list[float], span: float, delay: float,
                 capacity: int) -> list[dict[str, str]]:  # fmt: skip
    naive, squeezed = mean_ci(base.starve[labels[0]]), mean_ci(fit.starve[labels[0]])
    usage, usage_fit = mean_ci(base.g1_usage), mean_ci(fit.g1_usage)
    decided = verdict(680.0, naive, holds(naive, "+"))
    out = [headline(paper="002", section="Sec. 7.6, Fig. 10", quote="TPC-H workload ... has been starved for at least 680 seconds "
                    "(i.e., ~ 11 minutes) without being allocated resources since its submission at the 900th second",
                    paper_value="680 s", ours=naive.text(0, " s"), verdict=decided,
                    cause="" if decided == "reproduced" else
                    (f"the starvation lasts until Group2 has used what Group1 used before {delay:g} s: Group1 had used "
                     f"{usage.mean:,.0f} container-s ({usage.mean / capacity:.0f} s of the whole cluster of {capacity}), because "
                     f"the first 100 FB-2009 jobs arrive over {span:.0f} s, most after {delay:g} s. With them compressed into the first "
                     f"{delay:g} s Group1 has {usage_fit.mean:,.0f} container-s and TPC-H starves {squeezed.text(0, ' s')}: "
                     f"Group2's demand (Purdue's 320-map jobs, 20-executor Spark apps; our sizes) falls below the cluster "
                     f"{mean_ci(fit.g2_short).text(0, ' s')} after its arrival, and Group1 then gets the rest"))]
    paper_running = {10.0: (2.0, 10.0), 80.0: (1.0, 4.0)}
    for label, t in zip(labels[1:], waits, strict=True):
        if t == 0.0:
            est = mean_ci(base.starve[label])
            out.append(headline(paper="002", section="Sec. 7.6, Fig. 10c", quote="the TPC-H workload is actively allocated resources "
                                "since its submission at 900th second when T_wait = 0", paper_value="no starvation (0 s)",
                                ours=f"first task after {est.text(1, ' s')}", verdict="reproduced" if est.high < 10.0 else "differs",
                                cause=""))
        elif t in paper_running:
            lo, hi = paper_running[t]
            est, est_fit = mean_ci(base.running[label]), mean_ci(fit.running[label])
            ok = est.high >= lo and est.low <= hi
            out.append(headline(paper="002", section="Sec. 7.6, Fig. 10c", quote=f"When T_wait = {t:g} seconds, there are {lo:g} ~ {hi:g} "
                                "actively running tasks of TPC-H during its starvation period", paper_value=f"{lo:g}-{hi:g} tasks",
                                ours=f"mean {est.text(2)} (Eq. 7: T_task / T_wait = {TASK_MEAN_S / t:.1f})",
                                verdict="reproduced" if ok else "differs",
                                cause="" if ok else (f"the naive run's starvation period is only {naive.mean:.0f} s here (row 1); with "
                                                     f"Facebook compressed into {delay:g} s the mean is {est_fit.text(2)}")))
    return out


FIG8 = register(Experiment(
    name="ltrf_fig8", title="LTRF Fig. 8: speedup over static partitioning on the paper's four workloads",
    source="paper 002, Sec. 7.2 and 7.5, Fig. 8", run=run_fig8, defaults={"seeds": list(range(10)), "inside": "stride"},
    choices={"inside": ["stride", "fifo"]}, bounds={"seeds": (0, None)},
    description=("Facebook, Purdue, TPC-H and Spark workloads synthesised from the paper's job mix (Sec. 7.2) in four equal queues, "
                 "under static partitioning, HFS (MLRF) and LTYARN (LTRF); speedup of each workload over static partitioning."),
    help={"seeds": "seeds of the synthesised workloads (bin order, task times)",
          "inside": "inside a queue: stride (equal shares among its applications, YARN's default) or fifo"},
))

FIG10 = register(Experiment(
    name="ltrf_fig10", title="LTRF Fig. 10: TPC-H's starvation under the naive hierarchy and H-LTRF",
    source="paper 002, Sec. 7.6, Figs. 9-10", run=run_fig10,
    defaults={"seeds": list(range(10)), "delay_s": 900.0, "t_waits": [0.0, 10.0, 80.0], "sample_s": 10.0, "inside": "stride",
              "containers": "calibrated"},
    choices={"inside": ["stride", "fifo"]},
    bounds={"seeds": (0, None), "delay_s": (0, None), "t_waits": (0, None), "sample_s": (0.001, None)},
    description=("The paper's two-group hierarchy (Fig. 9) with Facebook first and the other three workloads 15 minutes later: how "
                 "long TPC-H waits for its first container under the naive hierarchy, and how many of its tasks H-LTRF keeps "
                 "running for each T_wait."),
    help={"seeds": "seeds of the synthesised workloads", "delay_s": "when Purdue, TPC-H and Spark arrive (s)",
          "t_waits": "H-LTRF starvation timeouts (s)", "sample_s": "seconds between samples of running tasks",
          "inside": "inside a queue: stride (equal shares, YARN's default) or fifo",
          "containers": "calibrated (Fig. 8's contention rule) or a number of 1 GB containers"},
))

