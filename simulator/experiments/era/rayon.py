"""ERA-Rayon (paper 001, Sec. 4): the same Greedy plan in ERA's simulator and on a cluster that starts jobs early.

The paper ran 815 Gridmix MapReduce jobs, arriving over one hour, asking on average for
3 GB of memory for 60 s (sigma 6 s), on 3 nodes of 80 GB under ERA's Greedy algorithm,
once on Rayon (Hadoop/YARN, which also ran a job before its reserved start when it
could, through an "empty allocation") and once in ERA's simulator (each job at its
reserved start with constant capacity), and found them alike: jobs "scheduled and running
on approximately similar points in time", "similar durations", total allocation 76,730
GB*s in the simulator against 77,056 on Rayon.

Here the "simulator" side is ERA's own stream run (``run_stream``: each accepted job at
its reserved start for its reserved whole slots) and the "cluster" side is the market
engine (``simulator.market.engine.MarketEngine``): each accepted job booked as its
reservation (``book``), submitted as W one-GB tasks of its real duration, run by the
reservation stage with Rayon's early start. What the paper leaves open is chosen in
``_setup``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scheduler.era.mechanisms import Greedy
from scheduler.fairshare.fairness import QueueTree
from scheduler.plan import Reservation
from simulator.era.workload import EraRequest, run_stream
from simulator.experiments import Experiment, Params, Progress, Result, figure, finite, register, table
from simulator.experiments.fidelity import from_paper, headline, headline_table, mean_ci, setup_table, silent, verdict
from simulator.market.engine import MarketEngine
from simulator.market.records import Bid, MarketConfig
from simulator.records import JobSpec

TREE = QueueTree.from_paths({"root.era": 1.0})
PAPER_SIM, PAPER_REAL = 76_730.0, 77_056.0  # GB*s (paper 001, Sec. 4)


def gridmix(params: Params, seed: int) -> tuple[list[EraRequest], list[float]]:
    """The jobs (1-s slots, W in GB) and each one's real duration (s), ``_setup``'s choices."""
    rng = np.random.default_rng([seed, 815])
    n, span = int(params["jobs"]), float(params["span_s"])
    arrivals = np.sort(rng.uniform(0.0, span, n))
    units = rng.integers(1, 2 * int(params["mean_gb"]), n)  # uniform 1 .. 2 * mean - 1: mean GB
    real = np.maximum(1.0, rng.normal(float(params["mean_s"]), float(params["sd_s"]), n))
    requests = []
    for k in range(n):
        a, t = int(arrivals[k]), math.ceil(real[k])  # the request asks for whole seconds
        requests.append(EraRequest(k, 0, int(units[k]), t, a, a + int(params["window_s"]), 1e9))
    return requests, real.tolist()


def on_cluster(requests: list[EraRequest], starts: list[int | None], real: list[float], capacity: int) -> dict[int, tuple[float, float]]:
    """Book every accepted job on the market engine and run it; job id -> (first start, finish) in s."""
    engine = MarketEngine.create([capacity], TREE, MarketConfig(), sample_interval=math.inf)
    for r, start in zip(requests, starts, strict=True):
        if start is None:
            continue
        engine.submit(JobSpec(r.job_id, 0, (r.units,), (real[r.job_id],), float(r.arrival)), Bid(1.0, (1.0,)))
        engine.book(Reservation(r.job_id, 0, r.units, float(start), float(start + r.duration)), 0.0)
    done: dict[int, tuple[float, float]] = {}
    engine.clear()
    while not engine.cluster.idle():
        report = engine.step(math.inf, stop_on_departure=True)
        done.update({d.job_id: (d.start_time, d.finish_time) for d in report.departures})
        engine.clear()
    return done


def one_seed(params: Params, seed: int) -> dict[str, Any]:
    """Allocation both ways (GB*s), start shifts (cluster - plan, s), jobs accepted and finished."""
    requests, real = gridmix(params, seed)
    capacity = int(params["capacity_gb"])
    horizon = max(r.deadline for r in requests) + 1
    plan = run_stream("greedy", Greedy(capacity, horizon, 1.0), requests)
    starts = [d.start if d.accepted else None for d in plan.decisions]
    done = on_cluster(requests, starts, real, capacity)
    accepted = [r for r, s in zip(requests, starts, strict=True) if s is not None]
    sim = sum(r.units * r.duration for r in accepted)
    cluster = sum(r.units * real[r.job_id] for r in accepted if r.job_id in done)
    shifts = [done[r.job_id][0] - float(starts[r.job_id] or 0) for r in accepted if r.job_id in done]
    lengths = [done[r.job_id][1] - done[r.job_id][0] - real[r.job_id] for r in accepted if r.job_id in done]
    return {"sim": sim, "cluster": cluster, "ratio": cluster / sim if sim else math.nan, "shifts": shifts, "stretch": lengths,
            "accepted": len(accepted), "finished": len(done), "late": sum(done[r.job_id][1] > r.deadline for r in accepted)}


def _setup(params: Params) -> dict[str, Any]:
    return setup_table([
        ("workload", from_paper(f"{params['jobs']} jobs arriving within one hour, {params['mean_gb']} GB on average, "
                                f"{params['mean_s']} s on average (sigma {params['sd_s']} s)")),
        ("cluster", from_paper(f"3 nodes x 80 GB = {params['capacity_gb']} GB; ERA's Greedy algorithm on one resource (GB)")),
        ("arrivals, sizes", silent("arrivals uniform over the hour; GB uniform on 1..5; durations normal, at least 1 s",
                                   "the paper gives only the means (and the duration's sigma)", "the seeds")),
        ("windows", silent(f"{params['window_s']} s from the arrival", "the paper does not give the Gridmix jobs' windows",
                           "none: with this load Greedy accepts every job")),
        ("request vs real", silent("a job reserves its duration rounded up to whole 1-s slots and really runs the exact draw",
                                   "ERA's cloud model talks to it every second", "the ratio row shows the rounding's share")),
        ("capacity changes", silent("none on the cluster side", "the paper names them ('various system considerations') without "
                                    "a model", "era_fig3 has a moving capacity")),
    ])


def run(params: Params, progress: Progress) -> Result:
    """The plan and the cluster run over seeds: allocation, start shifts, the paper's comparison."""
    seeds = [int(s) for s in params["seeds"]]
    out = []
    for i, seed in enumerate(seeds):
        progress(i / len(seeds), f"seed {seed}: Greedy plan, then the market engine")
        out.append(one_seed(params, seed))
    progress(1.0, "done")
    ratio = mean_ci([o["ratio"] for o in out])
    shift = np.concatenate([o["shifts"] for o in out])
    stretch = np.concatenate([o["stretch"] for o in out])
    med = float(np.median(np.abs(shift)))
    similar = med <= 0.1 * float(params["mean_s"])  # the criterion fixed before the run: 10 % of a mean duration
    heads = [
        headline(paper="001", section="Sec. 4 (ERA-Rayon)",
                 quote="The total allocation obtained in these two runs (GB*sec) was similar: 76,730 using the simulator vs. 77,056 "
                       "in the real cloud",
                 paper_value=f"cluster / simulator = {PAPER_REAL / PAPER_SIM:.4f}", ours=ratio.text(4),
                 verdict=verdict(PAPER_REAL / PAPER_SIM, ratio, True),
                 cause=("the cluster runs the real durations, the plan reserves them rounded up to whole seconds; our totals "
                        f"({mean_ci([o['sim'] for o in out]).mean:,.0f} GB*s planned) are what 815 jobs x 3 GB x 60 s ask "
                        "(146,700); the paper's 77,000 is about half of that, so its jobs used less than they asked")),
        headline(paper="001", section="Sec. 4 (ERA-Rayon)", quote="jobs were scheduled and running on approximately similar points in "
                 "time and had similar durations", paper_value="similar (no number)",
                 ours=f"median |start shift| {med:.1f} s, {100 * float(np.mean(shift < -1e-9)):.0f} % started early; median "
                 f"stretch {float(np.median(stretch)):.2f} s", verdict="reproduced" if similar else "differs",
                 cause="Greedy's earliest start is the arrival when units are free; early start (empty allocations) moves the rest "
                       "forward" if similar else "jobs start far from their plan on the cluster"),
    ]
    hist_x = np.clip(shift, -600, 600)
    return {
        "figures": [figure("Start on the cluster minus the planned start (all seeds)",
                           [{"type": "histogram", "x": [finite(v, 2) for v in hist_x[:2000].tolist()], "name": "jobs"}],
                           x_title="start shift (simulated s; < 0: early, Rayon's empty allocation)", y_title="jobs")],
        "tables": [
            headline_table(heads),
            _setup(params),
            table("Per seed", ["seed", "simulator GB*s", "cluster GB*s", "cluster / simulator", "accepted", "finished", "late"],
                  [[s, finite(o["sim"], 1), finite(o["cluster"], 1), finite(o["ratio"], 5), o["accepted"], o["finished"], o["late"]]
                   for s, o in zip(seeds, out, strict=True)]),
        ],
        "headlines": heads,
        "summary": (f"Over {len(seeds)} seeds the cluster's total allocation is {ratio.text(4)} of the simulator's (paper: "
                    f"{PAPER_REAL / PAPER_SIM:.4f}); {sum(o['finished'] for o in out)} of {sum(o['accepted'] for o in out)} accepted "
                    f"jobs finished (paper: all 815); median start shift {med:.1f} s."),
    }


EXPERIMENT = register(Experiment(
    name="era_rayon",
    title="ERA-Rayon: the Greedy plan in ERA's simulator and on a cluster with early start",
    source="paper 001, Sec. 4 (ERA-Rayon integration)",
    run=run,
    defaults={"seeds": list(range(10)), "jobs": 815, "span_s": 3600.0, "mean_gb": 3, "mean_s": 60.0, "sd_s": 6.0,
              "capacity_gb": 240, "window_s": 600},
    description=("815 Gridmix-like jobs over an hour on 240 GB under ERA's Greedy: the plan's allocation and start times "
                 "against the market engine running the same bookings with Rayon's early start."),
    help={"seeds": "seeds of the arrivals, sizes and durations", "jobs": "jobs in the hour", "span_s": "arrival span (s)",
          "mean_gb": "mean GB per job", "mean_s": "mean duration (s)", "sd_s": "duration's standard deviation (s)",
          "capacity_gb": "cluster memory (GB)", "window_s": "each job's window from its arrival (s)"},
))
