"""Paper 000, Sec. 7.1.4 (Fig. 11, utility learning) and Sec. 6 (SLO jobs and the prolific pool)
on the Table 1 workload, in the simulator.

* ``abacus_fig11``: user 3's completed jobs, run while it reports various
  map:reduce weight ratios (as the paper did), give (average job resource,
  1 / response time) pairs; the weights are fitted by non-negative least squares
  (``scheduler.abacus.fit``, Eq. 2) on random sets of k jobs, 20 times per k.
* ``abacus_slo_pool``: every job carries an SLO (a minimum utility of its
  average shares under its true, normalised utility); the share of SLOs met and
  the revenue with the prolific pool (``abacus``) and without it
  (``abacus_no_pool``), as the load grows.
"""

from __future__ import annotations

import math

import numpy as np

from scheduler.abacus.fit import fit_weights
from simulator.experiments import Experiment, Params, Progress, Result, figure, finite, register, table
from simulator.experiments.abacus.setup import CAPACITY, MAP_TASKS, REDUCE_TASKS, STAGED, TABLE1, Job, simulate, table1_jobs
from simulator.market.records import Bid

SETUP = (f"Table 1 users, Poisson arrivals for 30 simulated minutes, {MAP_TASKS} map + {REDUCE_TASKS} reduce tasks per "
         f"job, {CAPACITY[0]} map + {CAPACITY[1]} reduce slots, one queue")


# --- Fig. 11: utility learning


# Fig. 11's cluster: the paper names none for the learning experiment beyond "user 3's jobs". Last
# stop's Table 1 set-up (30 + 10 slots, 10 + 4 tasks, bids only on types with work left) is kept
# here: on it the fit agrees with Sec. 7.1.4 (median ratio about 5 from 5 jobs); on the Fig. 9b
# set-up (20 + 20, 10 + 10, whole-job bids) it is map-heavy but lower (median about 3). Both can
# be run (parameters capacity, tasks, whole_job_bids).
FIG11_CAPACITY, FIG11_TASKS, FIG11_WHOLE_JOB_BIDS = (30, 10), (10, 4), False


def _user3_jobs(ratios: list[float], seeds: list[int], progress: Progress, staged: bool = STAGED,
                capacity: tuple[int, int] = FIG11_CAPACITY, tasks: tuple[int, int] = FIG11_TASKS,
                whole_job_bids: bool = FIG11_WHOLE_JOB_BIDS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(served shares (k, 2), life-average shares (k, 2), 1 / response time (k,)) of user 3's jobs over the runs."""
    served, life, utilities = [], [], []
    total = max(len(ratios) * len(seeds), 1)
    for a, ratio in enumerate(ratios):
        for b, seed in enumerate(seeds):
            progress(0.8 * (a * len(seeds) + b) / total, f"user 3 reports {ratio:g}:1, seed {seed}")

            def bid(j: Job, ratio: float = ratio) -> Bid:
                weights = (ratio, 1.0) if j.user == 2 else TABLE1[j.user].true_weights
                return Bid(TABLE1[j.user].budget, weights, "linear")

            for o in simulate(table1_jobs(TABLE1, seed=seed, tasks=tasks), bid, seed=seed, staged=staged, capacity=capacity,
                              whole_job_bids=whole_job_bids):
                if o.job.user == 2:
                    served.append(o.served_shares)
                    life.append(o.average_shares)
                    utilities.append(1.0 / o.response_s)
    return _pairs(served), _pairs(life), np.array(utilities, dtype=np.float64)


def _pairs(rows: list[tuple[float, float]]) -> np.ndarray:
    return np.array(rows, dtype=np.float64).reshape(-1, 2)


def _pct(values: np.ndarray, q: float) -> float | None:
    """The q-th percentile of the finite values (a zero reduce weight makes a ratio inf)."""
    return finite(float(np.nanpercentile(np.where(np.isinf(values), np.nan, values), q)), 2)


def _fits(shares: np.ndarray, utilities: np.ndarray, ks: list[int], draws: int, seed: int) -> dict[int, np.ndarray]:
    """k -> (draws, 2) NNLS weights (Eq. 2) on ``draws`` random sets of k jobs."""
    rng = np.random.default_rng(seed)
    return {k: np.array([fit_weights(shares[idx], utilities[idx])[0]
                         for idx in (rng.choice(len(utilities), size=k, replace=False) for _ in range(draws))])
            for k in ks}


def _ratio(w: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out: np.ndarray = w[:, 0] / w[:, 1]
    return out


def run_fig11(params: Params, progress: Progress) -> Result:
    capacity = tuple(int(c) for c in params.get("capacity", FIG11_CAPACITY))
    tasks = tuple(int(t) for t in params.get("tasks", FIG11_TASKS))
    whole = bool(params.get("whole_job_bids", FIG11_WHOLE_JOB_BIDS))
    served, life, utilities = _user3_jobs([float(r) for r in params["ratios"]], [int(s) for s in params["seeds"]], progress,
                                          bool(params.get("staged", STAGED)), capacity, tasks, whole)  # type: ignore[arg-type]
    setup = (f"Table 1 users, Poisson arrivals for 30 simulated minutes, {tasks[0]} map + {tasks[1]} reduce tasks per job, "
             f"{capacity[0]} map + {capacity[1]} reduce slots, one queue, "
             + ("jobs bid on both types until they depart" if whole else "jobs bid only on types with tasks left"))
    ks = [int(k) for k in params["ks"] if int(k) <= len(utilities)]
    draws = int(params["draws"])
    true_ratio = TABLE1[2].map_s / TABLE1[2].reduce_s
    fits = _fits(served, utilities, ks, draws, int(params["seed"]))
    life_fits = _fits(life, utilities, ks, draws, int(params["seed"]))
    progress(1.0, "done")
    k0 = int(params["k_scatter"]) if int(params["k_scatter"]) in fits else ks[0]
    w = fits[k0] * 1000.0  # per 1000 s
    ratios = {k: _ratio(fits[k]) for k in ks}
    norm = {k: fits[k][:, 0] / np.maximum(fits[k].sum(axis=1), 1e-300) for k in ks}
    inside = float(np.mean((ratios[k0] >= 5.0) & (ratios[k0] <= 9.0)))
    life_ratio = _ratio(life_fits[k0])
    life_inside = float(np.mean((life_ratio >= 5.0) & (life_ratio <= 9.0)))
    top = float(np.nanmax(w)) if w.size else 1.0
    scatter: list[dict[str, object]] = [
        {"type": "scatter", "mode": "markers", "name": f"fits from {k0} jobs", "x": [finite(v) for v in w[:, 1]],
         "y": [finite(v) for v in w[:, 0]], "marker": {"symbol": "x"}},
        {"type": "scatter", "mode": "lines", "name": f"true ratio {true_ratio:g}:1", "x": [0, top / true_ratio], "y": [0, top],
         "line": {"dash": "dot"}},
    ]
    spread = [finite(float(np.std(norm[k])), 4) for k in ks]
    rows = [[k, _pct(ratios[k], 50), _pct(ratios[k], 25), _pct(ratios[k], 75), finite(float(np.std(norm[k])), 4),
             finite(float(np.var(norm[k])), 5)] for k in ks]
    median = float(np.nanmedian(np.where(np.isinf(ratios[k0]), np.nan, ratios[k0])))
    return {
        "figures": [
            figure(f"Fig. 11a: fitted utility weights from {k0} jobs of user 3 ({draws} fits)", scatter,
                   x_title="reduce weight (1 / 1000 simulated s per unit share)",
                   y_title="map weight (1 / 1000 simulated s per unit share)", hovermode="closest"),
            figure("Fig. 11b: spread of the fit against the number of jobs",
                   [{"type": "scatter", "mode": "lines+markers", "name": "std of map / (map + reduce) weight", "x": ks, "y": spread}],
                   x_title="jobs per fit (k)", y_title="standard deviation of the normalised map weight"),
        ],
        "tables": [
            table("Fitted map:reduce ratio per k (regressors: average share while served)",
                  ["k", "median ratio", "25th pct", "75th pct", "std normalised", "variance"],
                  rows, note=f"{len(utilities)} jobs of user 3 from {len(params['ratios'])} reported ratios x "
                             f"{len(params['seeds'])} seeds; {setup}"),
            table("Beside the paper (Sec. 7.1.4)", ["quantity", "paper", "ours"], [
                ["true map:reduce ratio", "6", f"{true_ratio:g}"],
                [f"fitted ratios from {k0} jobs", "usually 5 to 9", f"median {median:.2f}, {100 * inside:.0f} % in [5, 9]"],
                ["same, regressing on life-average shares (Def. 1 with 0 after a phase ends)", "-",
                 f"median {float(np.nanmedian(np.where(np.isinf(life_ratio), np.nan, life_ratio))):.2f}, "
                 f"{100 * life_inside:.0f} % in [5, 9]"],
                ["variance as k grows", "plunges", " -> ".join(f"{r[5]}" for r in rows)],
            ]),
        ],
        "summary": (f"From {k0} jobs the fitted map:reduce ratio has median {median:.2f} ({100 * inside:.0f} % of fits in "
                    f"[5, 9]; true {true_ratio:g}); its spread falls from {spread[0]} to {spread[-1]} as k grows "
                    f"from {ks[0]} to {ks[-1]}."),
    }


register(Experiment(
    name="abacus_fig11", title="Abacus Fig. 11: utility learning from user 3's jobs", source="paper 000, Sec. 7.1.4, Fig. 11",
    run=run_fig11,
    defaults={"ratios": [0.25, 1, 4, 6, 16], "seeds": [0, 1], "ks": [3, 5, 10, 20, 40], "draws": 20, "k_scatter": 5, "seed": 0,
              "staged": False, "capacity": list(FIG11_CAPACITY), "tasks": list(FIG11_TASKS), "whole_job_bids": FIG11_WHOLE_JOB_BIDS},
    description=("Measured utility = 1 / response time; regressors = each job's average share of map and of reduce slots "
                 "over the time it was served on that type (the engine's share of a type drops to 0 once the job has no "
                 "work left there, which would make the life averages of map and reduce both ~1 / response time and the "
                 "fit degenerate; the life-average fit is reported beside). Non-negative least squares (Eq. 2) on k random "
                 "jobs, repeated. Cluster: 30 + 10 slots, 10 + 4 tasks per job, bids only on types with tasks left (the "
                 "other Abacus figures use 20 + 20, 10 + 10 and whole-job bids; see FIG11_CAPACITY)."),
    help={"ratios": "map:reduce ratios user 3 reports while its jobs are recorded", "seeds": "workload seeds",
          "ks": "jobs per fit", "draws": "fits per k", "k_scatter": "k shown in the scatter", "seed": "seed of the draws",
          "staged": "true: reduces only after all the job's maps (default: independent types, as the paper)",
          "capacity": "map, reduce slots", "tasks": "map, reduce tasks per job",
          "whole_job_bids": "true: jobs bid on both types until they depart (the Fig. 9b set-up)"},
))


# --- SLO jobs: with and without the prolific pool


def run_slo(params: Params, progress: Progress) -> Result:
    loads = [float(x) for x in params["loads"]]
    seeds = [int(s) for s in params["seeds"]]
    lo, hi = (float(x) for x in params["slo_range"])
    mechanisms = ("abacus", "abacus_no_pool")
    met: dict[str, list[float]] = {m: [] for m in mechanisms}
    revenue: dict[str, list[float]] = {m: [] for m in mechanisms}
    total = max(len(loads) * len(seeds) * 2, 1)
    step = 0
    for load in loads:
        per: dict[str, list[tuple[int, int, float]]] = {m: [] for m in mechanisms}
        for seed in seeds:
            jobs = table1_jobs(TABLE1, seed=seed, rate_scale=load)
            slo = np.random.default_rng([seed, 7]).uniform(lo, hi, len(jobs))

            def bid(j: Job, slo: np.ndarray = slo) -> Bid:
                tm, tr = TABLE1[j.user].true_weights
                return Bid(TABLE1[j.user].budget, (tm / (tm + tr), tr / (tm + tr)), "linear", float(slo[j.job_id]))

            for mech in mechanisms:
                progress(step / total, f"load x{load:g}, seed {seed}, {mech}")
                step += 1
                out = simulate(jobs, bid, alpha=float(params["alpha"]), mechanism=mech, seed=seed,
                               staged=bool(params.get("staged", STAGED)))
                ok = sum(1 for o in out if not math.isnan(o.achieved) and o.achieved >= float(slo[o.job.job_id]) - 1e-9)
                per[mech].append((ok, len(jobs), sum(TABLE1[o.job.user].budget for o in out if o.paid)))
        for mech in mechanisms:
            met[mech].append(100.0 * sum(p[0] for p in per[mech]) / max(sum(p[1] for p in per[mech]), 1))
            revenue[mech].append(float(np.mean([p[2] for p in per[mech]])))
    progress(1.0, "done")
    rows = [[x, finite(met["abacus"][i], 1), finite(met["abacus_no_pool"][i], 1), finite(revenue["abacus"][i], 0),
             finite(revenue["abacus_no_pool"][i], 0)] for i, x in enumerate(loads)]
    better = sum(1 for i in range(len(loads)) if met["abacus"][i] >= met["abacus_no_pool"][i])
    return {
        "figures": [
            figure("SLOs met with and without the prolific pool",
                   [{"type": "scatter", "mode": "lines+markers", "name": "with the pool (abacus)", "x": loads,
                     "y": [finite(v) for v in met["abacus"]]},
                    {"type": "scatter", "mode": "lines+markers", "name": "without (abacus_no_pool)", "x": loads,
                     "y": [finite(v) for v in met["abacus_no_pool"]]}],
                   x_title="load (multiple of the Table 1 arrival rates)", y_title="jobs whose SLO was met (%)"),
            figure("Revenue (budgets paid: SLO met)",
                   [{"type": "bar", "name": "with the pool", "x": loads, "y": [finite(v) for v in revenue["abacus"]]},
                    {"type": "bar", "name": "without", "x": loads, "y": [finite(v) for v in revenue["abacus_no_pool"]]}],
                   x_title="load (multiple of the Table 1 arrival rates)", y_title="revenue per run ($)", barmode="group"),
        ],
        "tables": [
            table("SLOs met (%) and revenue per run ($)", ["load", "met, pool", "met, no pool", "revenue, pool", "revenue, no pool"],
                  rows, note=f"SLO of each job U[{lo:g}, {hi:g}] of its normalised true utility (weighted average share); {SETUP}"),
            table("Beside the paper (Sec. 6, 7.2.3)", ["quantity", "paper", "ours"], [
                ["SLO-met share with vs without the pool", "not reported (profit vs ARIA, Fig. 14)",
                 f"pool at least as good at {better} of {len(loads)} loads"],
            ]),
        ],
        "summary": (f"With the prolific pool {met['abacus'][-1]:.0f} % of SLOs are met at load x{loads[-1]:g} against "
                    f"{met['abacus_no_pool'][-1]:.0f} % without it (x{loads[0]:g}: {met['abacus'][0]:.0f} % vs "
                    f"{met['abacus_no_pool'][0]:.0f} %)."),
    }


register(Experiment(
    name="abacus_slo_pool", title="Abacus SLO jobs: the prolific pool as load grows", source="paper 000, Sec. 6 (and 7.2.3)",
    run=run_slo, defaults={"loads": [0.25, 0.5, 0.75, 1], "seeds": [0, 1], "slo_range": [0.1, 0.3], "alpha": 0.5, "staged": False},
    description=("Every job bids $200 with its user's true utility normalised to weights summing to 1 (so its utility is "
                 "a weighted average share, in [0, 1]) and an SLO drawn uniformly from slo_range; it pays only if the "
                 "utility of its average shares reaches the SLO. " + SETUP + "."),
    help={"loads": "multiples of the Table 1 arrival rates (x1 overloads the map slots: 124 %)", "seeds": "workload seeds",
          "slo_range": "[low, high] of the uniform SLO draw", "alpha": "auction exponent",
          "staged": "true: reduces only after all the job's maps (default: independent types, as the paper)"},
))
