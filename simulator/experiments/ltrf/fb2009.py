"""What-if: the fair-share policies across queues on a slice of the FB-2009 trace.

The market (Abacus shares inside each leaf queue) is replayed offline on the
first ``hours`` of the SWIM Facebook 2009 trace once per policy named in
``policies`` (``scheduler.registry.FAIRSHARE``), on the same jobs, budgets and
cluster, and compared: response time per group, sharing loss ``Omega`` over
time (paper 002, Sec. 4.2, Eq. 5) and utilisation. Sources: paper 002 Sec. 7
(the comparison of MLRF, LTRF and H-LTRF) and README, "Simulation lab" (the simulator).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scheduler.fairshare.fairness import QueueTree
from simulator.experiments import Experiment, Params, Progress, Result, figure, finite, register, table
from simulator.runner import MarketParams
from simulator.runner import run as run_market
from simulator.workloads.traces import SwimRule, load_swim

TRACE = Path(__file__).resolve().parents[3] / "data" / "traces" / "FB-2009_samples_24_times_1hr_0.tsv"


def _tree(users: int) -> tuple[QueueTree, dict[str, int]]:
    tree = QueueTree.from_paths({f"root.g{k % 2}.u{k}": 1.0 for k in range(users)})
    return tree, {name.rsplit(".", 1)[1]: pos for pos, name in enumerate(tree.leaf_names)}


def run(params: Params, progress: Progress) -> Result:
    """Replay the slice under each policy; figures and a summary table (times in simulated s)."""
    policies = [str(p) for p in params["policies"]]
    users = int(params["users"])
    jobs = load_swim(TRACE, rule=SwimRule(), hours=float(params["hours"]), users=users, groups=2, seed=int(params["seed"]))
    tree, leaf = _tree(users)
    group_of = {j.job_id: j.group for j in jobs}
    groups = sorted(set(group_of.values()))
    rows, loss_traces, bars = [], [], []
    for k, policy in enumerate(policies):
        progress(k / len(policies), f"replaying under {policy}")
        params_k = MarketParams(fairshare=policy, t_wait=float(params["t_wait"]), alpha=float(params["alpha"]), seed=int(params["seed"]))
        result = run_market(jobs, tree=tree, leaf_of_user=leaf, capacity=list(params["capacity"]), params=params_k)
        summary = result.summary()
        per_group = {g: [f.response_time for f in result.finished if group_of[f.job_id] == g] for g in groups}
        bars.append(
            {"type": "bar", "name": policy, "x": groups, "y": [finite(float(np.mean(v))) if v else None for v in per_group.values()]}
        )
        step = max(1, len(result.samples) // 500)
        samples = result.samples[::step]
        loss_traces.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": policy,
                "x": [s.time - result.start_time for s in samples],
                "y": [finite(float(s.loss.sum())) for s in samples],
            }
        )
        rows.append(
            [
                policy,
                summary["finished"],
                finite(summary["mean_response_s"], 1),
                finite(summary["p95_response_s"], 1),
                finite(summary["mean_utilisation"], 3),
                finite(float(sum(summary["sharing_loss"])), 3),
            ]
        )
    progress(1.0, "done")
    best = min(rows, key=lambda r: r[2] if r[2] is not None else float("inf"))
    return {
        "figures": [
            figure("Mean response time per group", bars, x_title="group", y_title="mean response time (simulated s)", barmode="group"),
            figure(
                "Sharing loss Ω over time (paper 002, Eq. 5)",
                loss_traces,
                x_title="simulated time since the slice began (s)",
                y_title="Ω summed over types (≤ 0)",
            ),
        ],
        "tables": [
            table(
                "Per policy",
                [
                    "policy",
                    "jobs finished",
                    "mean response (sim s)",
                    "p95 response (sim s)",
                    "mean utilisation",
                    "final Ω (sum over types)",
                ],
                rows,
            )
        ],
        "summary": f"{len(jobs)} jobs of FB-2009; lowest mean response time under {best[0]}.",
    }


EXPERIMENT = register(
    Experiment(
        name="fb2009_policies",
        title="What-if: fair-share policies on FB-2009",
        source="paper 002, Sec. 7; README, Simulation lab (what-if)",
        run=run,
        defaults={
            "hours": 2.0,
            "users": 8,
            "capacity": [20, 10],
            "policies": ["fifo", "mlrf", "ltrf", "hltrf"],
            "t_wait": 30.0,
            "alpha": 0.5,
            "seed": 0,
        },
        description=(
            "Replays the first hours of the SWIM Facebook 2009 trace offline, once per fair-share policy, "
            "with Abacus shares inside each leaf queue, and compares response times per group, "
            "sharing loss over time and utilisation."
        ),
        help={
            "hours": "hours of the trace from hour 0",
            "users": "users, split over two groups g0/g1",
            "capacity": "map and reduce slots",
            "policies": "names in the FAIRSHARE registry",
            "t_wait": "H-LTRF starvation timeout (simulated s)",
            "alpha": "Abacus auction exponent in [0, 1]",
            "seed": "seeds budgets, weights and dispatch",
        },
    )
)
