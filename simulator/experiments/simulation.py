"""What-if: one simulation-lab run (a trace slice under one market configuration).

The simulation lab (``marketplace`` ``SimulationStudy``) starts one run of this
experiment per configuration, each a Celery task on the ``simulation`` queue;
``manage.py simulate`` calls the same function. The work is
:func:`simulator.whatif.run.simulate`; the result is its compact form
(:func:`simulator.whatif.run.compact_result`: series, prices, per-job records,
metrics) plus the figures and table every experiment page shows. Sources:
paper 001, Sec. 2-4 (the ERA simulator's system and economic metrics); README, "Simulation lab".
"""

from __future__ import annotations

import math
import time

from simulator.cura.pools import pool_capacity
from simulator.experiments import Experiment, Params, Progress, Result, figure, register, table
from simulator.whatif.run import (
    FB2009,
    ConfigSpec,
    WorkloadSpec,
    compact_result,
    job_terms,
    leaf_names,
    load_jobs_doc,
    load_workload,
    simulate,
)
from simulator.workloads.synthetic import GENERATOR_DEFAULTS, GENERATOR_PARAMETERS

WORKLOAD_KEYS = ("trace", "trace_format", "start_hour", "hours", "time_scale", "tenants", "groups", "max_jobs", "workload_seed",
                 "generator", *GENERATOR_DEFAULTS)
CONFIG_KEYS = ("mechanism", "fairshare", "dispatch", "alpha", "t_wait", "seed", "sample_interval", "predictor")
CLUSTER_KEYS = ("capacity", "vm_pools")


def specs(params: Params) -> tuple[WorkloadSpec, list[int], ConfigSpec]:
    """The workload, capacities and configuration named by flat ``params``.

    The capacities are ``capacity``, or the slots of ``vm_pools`` when it is
    given (``simulator.cura.pools``). A generator draws its workload with seed
    ``workload_seed + seed``: the seeds of a study are replicas of the workload
    (a trace's seeds vary only the bids and the dispatch), and every
    configuration sees the same draws for the same seed. Raises ValueError (``"vm_pools: ..."``) on bad pools.
    """
    workload = WorkloadSpec(
        trace=str(params["trace"]), trace_format=str(params["trace_format"]), start_hour=float(params["start_hour"]),
        hours=float(params["hours"]), time_scale=float(params["time_scale"]), tenants=int(params["tenants"]),
        groups=int(params["groups"]), max_jobs=int(params["max_jobs"]),
        seed=int(params["workload_seed"]) + (int(params["seed"]) if params["generator"] else 0),
        generator=str(params["generator"]), **{name: float(params[name]) for name in GENERATOR_DEFAULTS},
    )
    config = ConfigSpec(
        mechanism=str(params["mechanism"]), fairshare=str(params["fairshare"]), dispatch=str(params["dispatch"]),
        alpha=float(params["alpha"]), t_wait=float(params["t_wait"]), seed=int(params["seed"]),
        sample_interval=float(params["sample_interval"]), predictor=str(params["predictor"]),
    )
    pools = str(params.get("vm_pools") or "").strip()
    capacity = pool_capacity(pools, resource_types(workload)) if pools else [int(c) for c in params["capacity"]]
    return workload, capacity, config


def resource_types(workload: WorkloadSpec) -> int:
    """How many resource types the workload's jobs have (SWF and ERA units: 1; SWIM, Table 1, Cura: 2)."""
    kind = workload.kind()
    if kind == "jobs":
        return len(load_jobs_doc(workload.trace)[0]["capacity"])
    return 1 if kind == "swf" or workload.generator == "era_classes" else 2


def run(params: Params, progress: Progress) -> Result:
    """Replay the slice under the configuration; the compact result plus figures and a metrics table."""
    workload, capacity, config = specs(params)
    began = time.monotonic()
    horizon = [math.inf]

    def observer(now: float, events: int, submitted: int) -> None:
        fraction = min(0.99, submitted / max(1, horizon[0]))
        elapsed = time.monotonic() - began
        eta = f", ETA {elapsed / fraction * (1 - fraction):.0f} s" if fraction > 0.02 else ""
        progress(fraction, f"simulated t={now - first[0]:.0f} s, {events} events, {submitted} jobs in{eta}")

    first = [0.0]
    jobs_preview = load_workload(workload)
    horizon[0], first[0] = len(jobs_preview), jobs_preview[0].submit_time
    progress(0.0, f"{len(jobs_preview)} jobs loaded")
    jobs, result = simulate(workload, capacity, config, observer)
    terms = job_terms(workload, config, jobs, len(capacity))
    out = compact_result(jobs, result, leaf_names(workload), terms)
    s, mt = out["series"], out["metrics"]
    figures = [
        figure("Utilisation", [{"type": "scatter", "mode": "lines", "name": f"type {j}", "x": s["t"], "y": u}
                               for j, u in enumerate(s["utilisation"])],
               x_title="simulated time (s)", y_title="busy slots / capacity"),
        figure("Jobs", [{"type": "scatter", "mode": "lines", "name": k, "x": s["t"], "y": s[k]} for k in ("running_jobs", "queued_jobs")],
               x_title="simulated time (s)", y_title="jobs"),
        figure("Clearing prices", [{"type": "scatter", "mode": "lines", "name": f"type {j}", "x": x, "y": y}
                                   for j, (x, y) in enumerate(zip(out["prices"]["t"], out["prices"]["price"], strict=True))],
               x_title="simulated time (s)", y_title="unit price (money / slot)"),
    ]  # fmt: skip
    rows = [[k, v if not isinstance(v, list) else ", ".join("—" if x is None else f"{x:g}" for x in v)] for k, v in mt.items()]
    return {
        **out,
        "figures": figures,
        "tables": [table("Metrics (simulated time)", ["metric", "value"], rows)],
        "summary": f"{mt['finished']} of {mt['jobs']} jobs finished; mean response {mt['mean_response_s']} simulated s.",
        "wall_s": round(time.monotonic() - began, 3),
    }


EXPERIMENT = register(
    Experiment(
        name="simulation",
        title="Simulation lab: one configuration on a trace",
        source="paper 001, Sec. 2-4; README, Simulation lab (what-if)",
        run=run,
        defaults={
            "trace": str(FB2009), "trace_format": "auto", "start_hour": 0.0, "hours": 2.0, "time_scale": 1.0,
            "tenants": 8, "groups": 2, "max_jobs": 0, "workload_seed": 0, "generator": "", **GENERATOR_DEFAULTS,
            "capacity": [100, 50], "vm_pools": "",
            "mechanism": "abacus", "fairshare": "hltrf", "dispatch": "stride", "alpha": 0.5, "t_wait": 30.0,
            "seed": 0, "sample_interval": 60.0, "predictor": "exact",
        },
        description="One market configuration replayed on a trace slice; the simulation lab compares several side by side.",
        help={
            "trace": "path of a SWIM .tsv or SWF .swf(.gz) trace",
            "capacity": "slots per resource type (SWIM: map, reduce; SWF: processors)",
            "time_scale": "multiplies submit times (0.5 = twice the arrival rate)",
            "tenants": "tenants (leaf queues) the jobs are mapped to",
            "t_wait": "H-LTRF starvation timeout (simulated s)",
            "alpha": "Abacus auction exponent in [0, 1]",
            "generator": "'' replays the trace; abacus_table1 (paper 000 Table 1), era_classes (paper 001 Sec. 4), "
                         "cura_mix (paper 004 Sec. IV-A) generate `hours` of arrivals",
            **{p.name: p.help for p in GENERATOR_PARAMETERS},
            "vm_pools": "cluster as VM pools, e.g. 'c2:10, c8:4' (overrides capacity; simulator.cura.pools)",
            "predictor": "task-duration predictor of the dispatcher: exact (known at start) or none",
        },
    )
)

