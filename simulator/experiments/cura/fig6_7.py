"""Cura, paper 004 Sec. IV-B 2-3 (Figs. 6-7), and the reconfiguration manager's beta.

* ``cura_fig6_7``:
  Fig. 6 -- success rate (jobs meeting their deadlines) and response time of the successful
  jobs against the number of servers, Cura against per-job clusters. The paper: "Cura has a
  high success rate even with 250 servers, whereas the per-job cluster approach obtains close
  to 100 % rate only with 2000 servers"; Cura's response time lower.
  Fig. 7 -- per job size (small 100 MB, medium 1 GB, large 10 GB, extra large 100 GB; mean
  deadline 100 s, 1000 s for extra large): servers needed, mean response time and per-job
  cost of Cura against per-job clusters. The paper: "up to 9x improvement for the short and
  medium jobs" in servers; response time "up to 87 % reduced" for small, 69 % medium, 60 %
  large, 30 % extra large; cost reduction larger for small and medium jobs.
* ``cura_reconfig``: the reconfiguration manager (Sec. III-B) acts "only if ... the estimated
  cost benefit exceeds the reconfiguration cost by a factor of beta". The paper gives no
  value. Servers Cura needs with and without reconfiguration for a sweep of beta, and the
  per-job clusters' servers against the VM boot time (the set-up's one assumed number that
  moves the -80 % headline), which isolates where the gap to the paper comes from.

Workloads: ``simulator.cura.workload`` (50 FB-2009 job classes, 50 customers, Poisson
arrivals at the paper's rate of 11,500 per 100 minutes), a slice of ``span_s`` seconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simulator.cura.baselines import run_per_job, servers_needed
from simulator.cura.sim import Summary, summarise
from simulator.cura.workload import CURA_SIZES, CURA_VM_TYPES, generate, job_classes
from simulator.experiments import Experiment, Params, Progress, Result, figure, finite, register, table
from simulator.experiments.cura.fig5 import TRACE, _lower_bound, compare, cura_run
from simulator.experiments.fidelity import (
    from_paper,
    headline,
    headline_table,
    holds,
    mean_ci,
    scaled_verdict,
    setup_table,
    silent,
    verdict,
)

SIZES = ("small", "medium", "large", "xlarge")
PAPER_RESPONSE_CUT = {"small": 87.0, "medium": 69.0, "large": 60.0, "xlarge": 30.0}


def _jobs(params: Params, seed: int, *, categories: tuple[str, ...] | None = None, max_deadline: float | None = None,
          boot: float | None = None) -> list[Any]:
    classes = job_classes(TRACE, n=int(params["classes"]), seed=seed)
    return generate(classes, jobs=int(params["jobs"]), span=float(params["span_s"]), customers=int(params["customers"]),
                    max_deadline=float(params["max_deadline_s"] if max_deadline is None else max_deadline), seed=seed,
                    boot_s=float(params["boot_s"] if boot is None else boot), framework_start=float(params["framework_start_s"]),
                    categories=categories)


def _fig6(params: Params, progress: Progress, share: float) -> dict[str, dict[int, list[Summary]]]:
    servers, seeds = [int(n) for n in params["servers"]], [int(s) for s in params["seeds"]]
    out: dict[str, dict[int, list[Summary]]] = {"Cura": {n: [] for n in servers}, "per-job clusters": {n: [] for n in servers}}
    cores = int(params["cores_per_server"])
    for i, seed in enumerate(seeds):
        jobs = _jobs(params, seed)
        for k, n in enumerate(servers):
            progress(share * (i * len(servers) + k) / (len(seeds) * len(servers)), f"Fig. 6: seed {seed}, {n} servers")
            run = cura_run(jobs, n, params, reconfigure=True)
            out["Cura"][n].append(summarise(run.outcomes, CURA_VM_TYPES, n, cores))
            pj = run_per_job(jobs, CURA_VM_TYPES, CURA_SIZES, servers=n, cores_per_server=cores, boot_s=float(params["boot_s"]),
                             framework_start=float(params["framework_start_s"]))
            out["per-job clusters"][n].append(summarise(pj.outcomes, CURA_VM_TYPES, n, cores, useful=pj.useful))
    return out


def _fig7(params: Params, progress: Progress, offset: float, share: float) -> tuple[dict[str, dict[str, list[Summary]]], list[str]]:
    """Per size and approach the summaries at the servers each needs; and the searches that failed (a size on which
    Cura misses some deadline at every server count up to what per-job and dedicated clusters need)."""
    seeds = [int(s) for s in params["size_seeds"]]
    out: dict[str, dict[str, list[Summary]]] = {c: {"Cura": [], "per-job clusters": []} for c in SIZES}
    failed: list[str] = []
    for i, seed in enumerate(seeds):
        for k, cat in enumerate(SIZES):
            lo = offset + share * (i * len(SIZES) + k) / (len(seeds) * len(SIZES))
            deadline = 2.0 * float(params["mean_deadline_xl_s"] if cat == "xlarge" else params["mean_deadline_s"])
            jobs = _jobs(params, seed, categories=(cat,), max_deadline=deadline)

            def inner(fraction: float, message: str, lo: float = lo) -> None:
                progress(lo, f"Fig. 7: {message}")

            try:
                res = compare(jobs, params, inner, lo, lo)
            except ValueError as error:  # servers_needed: no count up to the baselines' meets every deadline
                failed.append(f"{cat} (seed {seed}): {error}")
                continue
            out[cat]["Cura"].append(res["Cura"][0])
            out[cat]["per-job clusters"].append(res["per-job clusters"][0])
    return out, failed


def _cut(a: list[Summary], b: list[Summary], attr: str) -> np.ndarray:
    """Per seed, 100 x (1 - a / b) of the attribute (% lower for a)."""
    return np.array([100 * (1 - getattr(x, attr) / getattr(y, attr)) for x, y in zip(a, b, strict=True)])


def _fig6_heads(f6: dict[str, dict[int, list[Summary]]]) -> list[dict[str, str]]:
    servers = sorted(f6["Cura"])
    low = 250 if 250 in servers else (servers[1] if len(servers) > 1 else servers[0])  # the paper names 250
    cura = mean_ci([s.met * 100 for s in f6["Cura"][low]])
    top = servers[-1]
    pj_top = mean_ci([s.met * 100 for s in f6["per-job clusters"][top]])
    pj_low = mean_ci([s.met * 100 for s in f6["per-job clusters"][low]])
    high = cura.low >= 90.0
    return [
        headline(paper="004", section="Sec. IV-B 2, Fig. 6(a)", quote="the Cura approach has a high success rate even with 250 servers, "
                 "whereas the per-job cluster approach obtains close to 100% rate only with 2000 servers",
                 paper_value="Cura high at 250; per-job ~100 % only at 2000",
                 ours=f"Cura {cura.text(1, ' %')} at {low}; per-job {pj_low.text(1, ' %')} at {low}, {pj_top.text(1, ' %')} at {top}",
                 verdict="reproduced" if high and pj_low.high < cura.low else ("shape only" if cura.mean > pj_low.mean else "differs"),
                 cause="" if high and pj_low.high < cura.low else "per-job clusters already meet most deadlines with few servers: "
                 "our deadlines leave every job its per-job shortest time (t_min) as slack"),
    ]


def _fig7_heads(f7: dict[str, dict[str, list[Summary]]], failed: list[str]) -> list[dict[str, str]]:
    out = []
    sizes = [c for c in SIZES if f7[c]["Cura"]]
    servers = {c: mean_ci([p.servers / max(c_.servers, 1) for c_, p in zip(f7[c]["Cura"], f7[c]["per-job clusters"], strict=True)])
               for c in sizes}
    note = f"; no server count found for {', '.join(failed)}" if failed else ""
    best = max((servers[c].mean for c in ("small", "medium") if c in servers), default=0.0)
    out.append(headline(paper="004", section="Sec. IV-B 3, Fig. 7(a)", quote="up to 9x improvement for the short and medium jobs with "
                        "Cura approach compared to the per-job cluster approach", paper_value="up to 9x fewer servers",
                        ours=", ".join(f"{c} {servers[c].text(1, 'x')}" for c in sizes) + note,
                        verdict="reproduced" if best >= 9 * 0.9 else
                        scaled_verdict("shape only" if best > 1 else "differs", 9.0, 9.0, best),
                        cause="" if best >= 9 * 0.9 else "see cura_reconfig: the per-job clusters' VM boot time sets most of the "
                        "gap, and it is an assumed number"))
    for c in sizes:
        cut = mean_ci(_cut(f7[c]["Cura"], f7[c]["per-job clusters"], "mean_response"))
        out.append(headline(paper="004", section="Sec. IV-B 3, Fig. 7(b)", quote=f"[response time] up to {PAPER_RESPONSE_CUT[c]:g}% "
                            f"[lower] ({c} jobs)", paper_value=f"{PAPER_RESPONSE_CUT[c]:g} % lower", ours=cut.text(1, " %"),
                            verdict=verdict(PAPER_RESPONSE_CUT[c], cut, holds(cut, "+")),
                            cause="" if verdict(PAPER_RESPONSE_CUT[c], cut, True) == "reproduced" else
                            "the per-job cluster pays its VM boot (an assumed 60 s) on every job; the longer the job the smaller "
                            "that share"))
    return out


def run_fig6_7(params: Params, progress: Progress) -> Result:
    f6 = _fig6(params, progress, 0.5)
    f7, failed = _fig7(params, progress, 0.5, 0.5)
    progress(1.0, "done")
    heads = _fig6_heads(f6) + _fig7_heads(f7, failed)
    servers = sorted(f6["Cura"])
    success = [{"type": "scatter", "mode": "lines+markers", "name": a, "x": servers,
                "y": [finite(100 * float(np.mean([s.met for s in f6[a][n]])), 2) for n in servers]} for a in f6]
    response = [{"type": "scatter", "mode": "lines+markers", "name": a, "x": servers,
                 "y": [finite(float(np.nanmean([s.mean_response for s in f6[a][n]])), 1) for n in servers]} for a in f6]
    def avg(rows: list[Summary], attr: str, digits: int = 2) -> float | None:
        return finite(float(np.nanmean([getattr(x, attr) for x in rows])), digits) if rows else None

    bars = []
    for attr, label in (("servers", "servers needed"), ("mean_response", "mean response (s)"), ("per_job_cost", "server-s per job")):
        bars.append(figure(f"Fig. 7: {label} per job size", [
            {"type": "bar", "name": a, "x": list(SIZES), "y": [avg(f7[c][a], attr) for c in SIZES]}
            for a in ("Cura", "per-job clusters")], x_title="job size", y_title=label, barmode="group"))
    rows6 = [[n, a, mean_ci([100 * x.met for x in f6[a][n]]).text(1, " %"), avg(f6[a][n], "mean_response", 1)]
             for n in servers for a in f6]
    rows7 = [[c, a, avg(f7[c][a], "servers", 1), avg(f7[c][a], "mean_response", 1), avg(f7[c][a], "per_job_cost")]
             for c in SIZES for a in ("Cura", "per-job clusters")]
    ratio = {c: float(np.mean([p.servers for p in f7[c]["per-job clusters"]])) / max(float(np.mean([q.servers for q in f7[c]["Cura"]])), 1)
             for c in SIZES if f7[c]["Cura"]}
    return {
        "figures": [figure("Fig. 6(a): success rate against servers", success, x_title="servers",
                           y_title="jobs meeting their deadline (%)"),
                    figure("Fig. 6(b): mean response time against servers", response, x_title="servers",
                           y_title="mean response time (simulated s)"), *bars],
        "tables": [
            headline_table(heads),
            setup_table([
                ("workload", from_paper("50 FB-2009 job classes, 50 customers, Poisson arrivals at 11,500 per 100 min; small, medium, "
                                        "large (and, Fig. 7, extra large) inputs; 10 s framework start")),
                ("slice", silent(f"{params['jobs']} jobs over {params['span_s']} s (the paper's rate)", "the full 100 minutes take "
                                 "too long per run on a shared machine", "jobs=11500 span_s=6000")),
                ("deadlines", silent(f"t_min + U(0, {params['max_deadline_s']} s) (Fig. 6); mean slack {params['mean_deadline_s']} s, "
                                     f"{params['mean_deadline_xl_s']} s for extra large (Fig. 7)", "the paper gives a 'mean deadline' "
                                     "without saying from when; t_min keeps every job feasible (simulator.cura.workload)", "none")),
                ("VM boot", silent(f"{params['boot_s']} s per per-job cluster", "the paper gives none", "cura_reconfig sweeps it")),
                ("beta", silent(f"{params['beta']}", "the paper gives no value", "cura_reconfig sweeps it")),
                ("statistics", f"Fig. 6: {len(params['seeds'])} seeds; Fig. 7 (server searches): {len(params['size_seeds'])} seeds"),
            ]),
            table("Fig. 6 per server count", ["servers", "approach", "success rate", "mean response (s)"], rows6),
            table("Fig. 7 per job size (mean over seeds)", ["size", "approach", "servers needed", "mean response (s)",
                                                            "server-s per job"], rows7),
        ],
        "headlines": heads,
        "summary": (f"Cura's success rate at {servers[0]} servers {100 * float(np.mean([s.met for s in f6['Cura'][servers[0]]])):.0f} % "
                    f"against per-job clusters' {100 * float(np.mean([s.met for s in f6['per-job clusters'][servers[0]]])):.0f} %; "
                    "per job size: " + ", ".join(f"{c} {ratio[c]:.1f}x fewer servers" for c in ratio)
                    + (f"; no server count found for {'; '.join(failed)}" if failed else "") + "."),
    }


def _per_job_needed(jobs: list[Any], params: Params, boot: float) -> int:
    """Fewest servers on which per-job clusters with VMs booting in ``boot`` s meet every deadline they can meet at
    all (a job no configuration serves in time after that boot is left out: more servers cannot help it).

    Raises:
        RuntimeError: no server count up to 2^20 serves them (a bug, not a workload).
    """
    cores, fs = int(params["cores_per_server"]), float(params["framework_start_s"])

    def ok(n: int) -> bool:
        r = run_per_job(jobs, CURA_VM_TYPES, CURA_SIZES, servers=n, cores_per_server=cores, boot_s=boot, framework_start=fs)
        return all(o.met or o.rejected for o in r.outcomes)

    top = 1
    while not ok(top):
        top *= 2
        if top > 1 << 20:
            raise RuntimeError("per-job clusters never meet the feasible deadlines")
    return servers_needed(ok, 1, top)


def _cura_needed(jobs: list[Any], params: Params, lo: int, hi: int, *, reconfigure: bool) -> int:
    return servers_needed(lambda n: cura_run(jobs, n, params, reconfigure=reconfigure, stop_on_miss=True).all_met, lo, hi)


def run_reconfig(params: Params, progress: Progress) -> Result:
    """Servers with and without reconfiguration per beta; per-job clusters' servers per VM boot time (the
    workload's deadlines fixed at the default boot, so only the per-job clusters' boot changes)."""
    seeds, betas, boots = [int(s) for s in params["seeds"]], [float(b) for b in params["betas"]], [float(b) for b in params["boots_s"]]
    red: dict[float, list[float]] = {b: [] for b in betas}
    gap: dict[float, list[float]] = {b: [] for b in boots}
    for i, seed in enumerate(seeds):
        progress(i / len(seeds), f"seed {seed}: servers needed without reconfiguration, then per beta and per VM boot")
        jobs = _jobs(params, seed)
        per_job = {b: _per_job_needed(jobs, params, b) for b in boots}
        lo, hi = _lower_bound(jobs, params), max(per_job.values())
        plain = _cura_needed(jobs, params, lo, hi, reconfigure=False)
        cura = plain
        for b in betas:
            with_ = _cura_needed(jobs, {**params, "beta": b}, lo, hi, reconfigure=True)
            red[b].append(100 * (1 - with_ / plain))
            if b == float(params["beta"]):
                cura = with_
        for b in boots:
            gap[b].append(100 * (1 - cura / per_job[b]))
    progress(1.0, "done")
    b1 = float(params["beta"]) if float(params["beta"]) in red else betas[0]
    est = mean_ci(red[b1])
    boot_default = float(params["boot_s"])
    at_default = mean_ci(gap[boot_default]) if boot_default in gap else mean_ci(gap[boots[0]])
    heads = [
        headline(paper="004", section="Sec. IV-B 1, Fig. 5(a)", quote="the Cura approach ... has a much lower resource requirement having "
                 "up to 80% reduction in terms of the number of servers", paper_value="up to 80 % fewer servers than per-job clusters",
                 ours=f"{at_default.text(1, ' %')} at VM boot {boot_default:g} s; " + ", ".join(
                     f"{mean_ci(gap[b]).mean:.0f} % at {b:g} s" for b in boots),
                 verdict=verdict(80.0, at_default, holds(at_default, "+")),
                 cause=("the reduction follows the per-job clusters' VM boot time, which the paper does not give (ours: an assumed "
                        f"{boot_default:g} s); reconfiguration adds {est.text(1, ' %')} fewer servers at beta = {b1:g}")),
        headline(paper="004", section="Sec. III-B", quote="The algorithm triggers the reconfiguration process only if it finds that the "
                 "estimated cost benefit exceeds the reconfiguration cost by a factor of beta", paper_value="no value of beta given",
                 ours="; ".join(f"beta {b:g}: {mean_ci(red[b]).text(1, ' %')} fewer servers" for b in betas),
                 verdict="reproduced" if holds(est, "+") else "differs",
                 cause="" if holds(est, "+") else (f"at beta = {b1:g} the manager's changes do not lower the servers needed: one "
                                                    "window's estimated benefit rarely exceeds the cost of shutting VMs down and "
                                                    "booting others")),
    ]
    rows = [[b, mean_ci(red[b]).text(1, " %")] for b in betas]
    rows_boot = [[b, mean_ci(gap[b]).text(1, " %")] for b in boots]
    return {
        "figures": [figure("Servers saved by reconfiguration against beta", [
            {"type": "scatter", "mode": "lines+markers", "name": "with vs without reconfiguration", "x": betas,
             "y": [finite(mean_ci(red[b]).mean, 2) for b in betas]}], x_title="beta", y_title="fewer servers (%)"),
                    figure("Cura's server reduction against per-job clusters, by VM boot time", [
                        {"type": "scatter", "mode": "lines+markers", "name": "Cura vs per-job", "x": boots,
                         "y": [finite(mean_ci(gap[b]).mean, 2) for b in boots]}], x_title="VM boot time (s)", y_title="fewer servers (%)")],
        "tables": [
            headline_table(heads),
            setup_table([
                ("beta", silent(f"1 (read literally: 'exceeds the cost by a factor of beta'); swept over {betas}", "the paper gives no "
                                "value; cura_fig5's 0.25 was an earlier stop's choice", "the sweep")),
                ("VM boot", silent(f"swept over {boots} s, the workload's deadlines fixed at the default {params['boot_s']} s",
                                   "the paper gives no boot time for per-job clusters", "the sweep")),
                ("slice", silent(f"{params['jobs']} jobs over {params['span_s']} s", "server searches take minutes per run", "none")),
                ("statistics", f"{len(seeds)} seeds"),
            ]),
            table("Reconfiguration per beta", ["beta", "fewer servers than without reconfiguration"], rows),
            table("Cura vs per-job clusters per VM boot time", ["VM boot (s)", "fewer servers"], rows_boot),
        ],
        "headlines": heads,
        "summary": (f"Reconfiguration saves {est.text(1, ' %')} servers at beta = {b1:g}; Cura's reduction against per-job clusters is "
                    + ", ".join(f"{mean_ci(gap[b]).mean:.0f} % at a {b:g} s boot" for b in boots) + " (paper: up to 80 %)."),
    }


COMMON = {"jobs": 575, "span_s": 300.0, "customers": 50, "classes": 50, "max_deadline_s": 200.0, "boot_s": 60.0,
          "framework_start_s": 10.0, "shutdown_s": 10.0, "cores_per_server": 16, "reconf_window_s": 300.0, "beta": 1.0, "tick_s": 1.0}
HELP = {"jobs": "arrivals in the slice", "span_s": "seconds they arrive over", "customers": "customers", "classes": "job classes",
        "max_deadline_s": "maximum deadline slack beyond t_min (s)", "boot_s": "per-job clusters' VM boot (s)",
        "framework_start_s": "Hadoop start (s)", "shutdown_s": "VM shutdown (s)", "cores_per_server": "vCPUs per server",
        "reconf_window_s": "reconfiguration window (s)", "beta": "reconfiguration benefit-to-cost factor", "tick_s": "Cura's tick (s)"}

FIG6_7 = register(Experiment(
    name="cura_fig6_7", title="Cura Figs. 6-7: success rate against servers, and the effect of job size",
    source="paper 004, Sec. IV-B 2-3, Figs. 6-7", run=run_fig6_7,
    defaults={**COMMON, "servers": [60, 125, 250, 500, 1000], "seeds": list(range(10)), "size_seeds": [0, 1, 2],
              "mean_deadline_s": 100.0, "mean_deadline_xl_s": 1000.0},
    description=("Cura against per-job clusters on a fixed number of servers (success rate, response time) and per job size (servers "
                 "needed, response time, cost), on the FB-2009-derived workload at the paper's arrival rate."),
    help={**HELP, "servers": "server counts of Fig. 6", "seeds": "workload seeds of Fig. 6", "size_seeds": "workload seeds of Fig. 7",
          "mean_deadline_s": "mean deadline slack of small, medium and large jobs (s)",
          "mean_deadline_xl_s": "mean deadline slack of extra large jobs (s)"},
))

RECONFIG = register(Experiment(
    name="cura_reconfig", title="Cura: the reconfiguration's beta and the VM boot time behind the -80 % headline",
    source="paper 004, Sec. III-B and IV-B 1", run=run_reconfig,
    defaults={**COMMON, "seeds": [0, 1, 2], "betas": [0.25, 1.0, 4.0],
              "boots_s": [0.0, 30.0, 60.0, 120.0]},
    description=("Servers Cura needs with and without pool reconfiguration for a sweep of beta (the paper gives no value), and Cura's "
                 "server reduction against per-job clusters for a sweep of the VM boot time (the paper gives none)."),
    help={**HELP, "seeds": "workload seeds", "betas": "reconfiguration factors", "boots_s": "VM boot times (s)"},
))

