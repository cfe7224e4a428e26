"""Paper 000, Sec. 7.1.3, Fig. 10(b) and 10(c): total completion time against FIFO as user 3's bid changes.

* Fig. 10(b): user 3's budget varies; "the system performs well when all jobs have the
  same budget, i.e. when user #3's budget is $100" (Abacus then works like the Fair
  Scheduler).
* Fig. 10(c): user 3 submits different utility functions; "Abacus improves the system
  performance by about 20 %, even when the user is not reporting the true utility
  functions. The performance gain increases further when the user tells her true
  utility function."

The workload is ``simulator.experiments.abacus.setup``'s Table 1 (its documented choices:
10 + 10 tasks per job on 20 + 20 slots, whole-job bids, independent types); the measure
is the time until every job submitted in the 30 minutes has finished, under Abacus and
under FIFO (jobs in arrival order), on the same seeded workloads.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simulator.experiments import Experiment, Params, Progress, Result, figure, finite, register, table
from simulator.experiments.abacus.setup import CAPACITY, Outcome, simulate
from simulator.experiments.fidelity import (
    TOLERANCE,
    from_paper,
    headline,
    headline_table,
    holds,
    mean_ci,
    paired,
    setup_table,
    silent,
    verdict,
)
from simulator.market.records import Bid
from simulator.workloads.table1 import MAP_TASKS, REDUCE_TASKS, TABLE1, Job, table1_jobs

TRUE_RATIO = TABLE1[2].map_s / TABLE1[2].reduce_s


def _span(out: list[Outcome]) -> float:
    return max(o.job.submit + o.response_s for o in out) if out else 0.0


def work_bound(jobs: list[Job]) -> float:
    """A lower bound on any schedule's total time (s): the busier slot type's work over its slots."""
    return max(sum(j.tasks[k] * j.task_s[k] for j in jobs) / CAPACITY[k] for k in range(2))


Spans = tuple[dict[float, list[float]], dict[float, list[float]], list[float], list[float]]


def _spans(params: Params, progress: Progress) -> Spans:
    """Per seed: Abacus's total time per user-3 budget (b) and per user-3 ratio (c), FIFO's, the work bound (s)."""
    seeds, alpha = [int(s) for s in params["seeds"]], float(params["alpha"])
    budgets, ratios, others = [float(b) for b in params["budgets"]], [float(r) for r in params["ratios"]], float(params["others_budget_b"])
    by_budget: dict[float, list[float]] = {b: [] for b in budgets}
    by_ratio: dict[float, list[float]] = {r: [] for r in ratios}
    fifo_b: list[float] = []
    bounds: list[float] = []
    for i, seed in enumerate(seeds):
        progress(i / len(seeds), f"seed {seed}")
        jobs = table1_jobs(TABLE1, seed=seed)
        bounds.append(work_bound(jobs))
        for b in budgets:
            def bid_b(j: Job, b: float = b) -> Bid:
                return Bid(b if j.user == 2 else others, TABLE1[j.user].true_weights, "linear")
            by_budget[b].append(_span(simulate(jobs, bid_b, alpha=alpha, seed=seed)))
        for r in ratios:
            def bid_c(j: Job, r: float = r) -> Bid:
                weights = (r, 1.0) if j.user == 2 else TABLE1[j.user].true_weights
                return Bid(TABLE1[j.user].budget, weights, "linear")
            by_ratio[r].append(_span(simulate(jobs, bid_c, alpha=alpha, seed=seed)))
        fifo_b.append(_span(simulate(jobs, lambda j: Bid(TABLE1[j.user].budget, TABLE1[j.user].true_weights, "linear"), fifo=True,
                                     seed=seed)))
    return by_budget, by_ratio, fifo_b, bounds


def run(params: Params, progress: Progress) -> Result:
    by_budget, by_ratio, fifo_b, bounds = _spans(params, progress)
    progress(1.0, "done")
    fifo = np.array(fifo_b)
    slack = mean_ci(100 * (fifo - np.array(bounds)) / fifo)
    gain = {r: 100 * (fifo - np.array(v)) / fifo for r, v in by_ratio.items()}  # % faster than FIFO
    untrue = [r for r in gain if abs(r - TRUE_RATIO) > 1e-9]
    mean_untrue = np.mean([gain[r] for r in untrue], axis=0) if untrue else np.zeros_like(fifo)
    est = mean_ci(mean_untrue)
    true_key = min(gain, key=lambda r: abs(r - TRUE_RATIO))
    more = paired(gain[true_key], mean_untrue)
    same = float(params["others_budget_b"])
    others = [b for b in by_budget if b != same]
    best = {b: paired(by_budget[same], by_budget[b]) for b in others} if same in by_budget else {}
    # 2026-11-28, fixed before the report under it: a gain the work bound rules out for every order of the jobs
    # (FIFO's whole excess over the bound below the paper's number less the 10 % band) cannot be tested in this model
    untestable = slack.high < 20.0 * (1 - TOLERANCE)
    decided = "not testable" if untestable else verdict(20.0, est, holds(est, "+"))
    heads = [
        headline(paper="000", section="Sec. 7.1.3, Fig. 10(c)", quote="Abacus improves the system performance by about 20%, even "
                 "when the user is not reporting the true utility functions", paper_value="about 20 % faster than FIFO",
                 ours=f"{est.text(1, ' %')} (mean over user 3's untrue ratios)", verdict=decided,
                 cause="" if decided == "reproduced" else
                 (f"not testable in this model: FIFO's total time is only {slack.text(1, ' %')} above the work bound (the busier "
                  "slot type's work over its slots), which no order of the jobs can beat, so no scheduler can gain 20 %. Our "
                  "map and reduce slots are independent types; Hadoop 0.20's reduce slow-start, where reduces take slots "
                  "while the maps run and hold them idle until the maps end, is the likely source of the paper's gain (an "
                  "order that starts reduces late frees those slots) and is not modelled. Set-up: Table 1 (10 + 10 tasks, "
                  "20 + 20 slots; the paper gives neither)" if untestable else
                  f"FIFO's total time is {slack.text(1, ' %')} above the work bound (the busier slot type's work over its slots)")),
        headline(paper="000", section="Sec. 7.1.3, Fig. 10(c)", quote="The performance gain increases further when the user tells "
                 "her true utility function", paper_value="gain(true) > gain(untrue)",
                 ours=f"gain at ratio {true_key:g} minus the untrue ratios' mean: {more.text(2, ' pp')}",
                 verdict="reproduced" if holds(more, "+") else "differs",
                 cause="" if holds(more, "+") else "within the seeds' spread: one user's reported ratio moves the total time little"),
        headline(paper="000", section="Sec. 7.1.3, Fig. 10(b)", quote="the system performs well when all jobs have the same budget, "
                 "i.e. when user #3's budget is $100", paper_value=f"shortest total time at ${same:g}",
                 ours="; ".join(f"${same:g} minus ${b:g}: {d.text(0, ' s')}" for b, d in best.items()),
                 verdict="reproduced" if best and all(holds(d, "-") for d in best.values()) else "differs",
                 cause="" if best and all(holds(d, "-") for d in best.values()) else
                 "the total time barely moves with user 3's budget: the budgets reorder jobs, the work and the slots stay"),
    ]
    b_rows = [[b, *mean_ci(np.array(v) / 60).row(2), *mean_ci(np.array(fifo_b) / 60).row(2)] for b, v in by_budget.items()]
    c_rows = [[r, *mean_ci(gain[r]).row(2)] for r in gain]
    fifo_min = finite(float(np.mean(fifo_b)) / 60, 2)
    lines_b: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "lines+markers", "name": "Abacus", "x": list(by_budget),
         "y": [finite(float(np.mean(v)) / 60, 2) for v in by_budget.values()]},
        {"type": "scatter", "mode": "lines", "name": "FIFO", "x": list(by_budget), "y": [fifo_min] * len(by_budget),
         "line": {"dash": "dash"}},
    ]
    ests = [mean_ci(g) for g in gain.values()]
    lines_c: list[dict[str, Any]] = [
        {"type": "bar", "name": "Abacus gain over FIFO", "x": [f"{r:g}:1" for r in gain], "y": [finite(e.mean, 2) for e in ests],
         "error_y": {"type": "data", "symmetric": False, "array": [finite(e.high - e.mean, 2) for e in ests],
                     "arrayminus": [finite(e.mean - e.low, 2) for e in ests]}},
    ]
    return {
        "figures": [figure("Fig. 10(b): total completion time against user 3's budget", lines_b, x_title="user 3's budget ($)",
                           y_title="time to finish all jobs (simulated min)"),
                    figure("Fig. 10(c): Abacus's gain over FIFO against user 3's reported map:reduce ratio (mean, 95 % CI)", lines_c,
                           x_title=f"user 3's reported ratio (true {TRUE_RATIO:g}:1)", y_title="FIFO's time minus Abacus's (% of FIFO's)")],
        "tables": [
            headline_table(heads),
            setup_table([
                ("workload", from_paper("Table 1's three users, Poisson arrivals for 30 minutes; total time to finish all jobs, Abacus "
                                        "against FIFO")),
                ("jobs and cluster", silent(f"{MAP_TASKS} + {REDUCE_TASKS} tasks per job on {CAPACITY[0]} + {CAPACITY[1]} slots (the "
                                            "other Abacus figures' set-up)", "the paper gives neither", "none run here")),
                ("Fig. 10(b) budgets", silent(f"users 1 and 2 bid ${same:g}", "the text says all jobs share a budget when user 3's is "
                                              "$100", "none")),
                ("statistics", f"{len(params['seeds'])} seeds, the same workloads under Abacus and FIFO (paired)"),
            ]),
            table("Fig. 10(b): total time (simulated min)", ["user 3 budget ($)", "Abacus", "CI low", "CI high", "FIFO", "CI low",
                                                              "CI high"], b_rows),
            table("Fig. 10(c): Abacus's gain over FIFO (%)", ["user 3's ratio", "gain", "CI low", "CI high"], c_rows),
        ],
        "headlines": heads,
        "summary": (f"Over {est.n} seeds Abacus finished all jobs {est.mean:.1f} % sooner than FIFO when user 3 misreported its utility "
                    f"(paper: about 20 %), {mean_ci(gain[true_key]).mean:.1f} % with its true ratio."),
    }


EXPERIMENT = register(Experiment(
    name="abacus_fig10bc", title="Abacus Fig. 10(b)(c): total completion time against FIFO as user 3's bid changes",
    source="paper 000, Sec. 7.1.3, Fig. 10(b)(c)", run=run,
    defaults={"seeds": list(range(10)), "alpha": 0.5, "budgets": [50, 100, 200, 400], "others_budget_b": 100.0,
              "ratios": [0.25, 1, 4, 6, 16]},
    description=("Table 1's three users; user 3 changes its budget (b) or its reported map:reduce ratio (c); the time to finish every "
                 "job under Abacus against FIFO on the same workloads."),
    help={"seeds": "workload seeds", "alpha": "auction exponent", "budgets": "user 3's budgets in (b) ($)",
          "others_budget_b": "users 1 and 2's budget in (b) ($)", "ratios": "user 3's reported ratios in (c)"},
))

