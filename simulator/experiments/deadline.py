"""Paper 003, Sec. 5 (Figs. 4-6): deadline extension ratio under competition, D against D' = alpha_err D.

The pure core is ``simulator.deadline.der`` (set-up and modelling choices in
its docstring): tasks of 3-15 matrix subtasks (Table 1 loads) with estimates
about 30 % off, 1 to 40 submitted together on 10 nodes of 8 units per
dimension, each served first come, first served by paper 003's Algorithm 1
planned with the deadline D or with D' = alpha_err D. Per level: lowest, mean
and highest DER (Fig. 4), the DER distribution at the largest level (Fig. 5),
Jain's index over the DERs (Fig. 6), and a table beside the paper's figures.
"""

from __future__ import annotations

import numpy as np

from simulator.deadline.der import DERResult, der_experiment, der_shares
from simulator.experiments import Experiment, Params, Progress, Result, figure, finite, register, table

STRICT = "D'"
DER_TITLE = "DER = finish time / deadline (simulated)"
RULES = {"D": "planned with D", STRICT: "planned with D' = alpha_err D"}


def _band(r: DERResult, rule: str) -> list[dict[str, object]]:
    x = r.levels.tolist()
    return [
        {"type": "scatter", "mode": "lines+markers", "name": f"highest ({rule})", "x": x, "y": [finite(v) for v in r.high[rule]]},
        {"type": "scatter", "mode": "lines+markers", "name": f"mean ({rule})", "x": x, "y": [finite(v) for v in r.mean[rule]]},
        {"type": "scatter", "mode": "lines+markers", "name": f"lowest ({rule})", "x": x, "y": [finite(v) for v in r.low[rule]]},
        {"type": "scatter", "mode": "lines", "name": "DER = 1 (the deadline)", "x": [x[0], x[-1]], "y": [1, 1],
         "line": {"dash": "dash", "color": "#6b7280"}},
    ]


def _histogram(r: DERResult, width: float) -> list[dict[str, object]]:
    top = max(float(np.max(v)) for v in r.at_max.values())
    edges = np.arange(0.0, max(top, 1.2) + width, width)
    traces = []
    for rule in RULES:
        counts, _ = np.histogram(np.minimum(r.at_max[rule], edges[-1] - 1e-9), bins=edges)
        traces.append({"type": "bar", "name": RULES[rule], "x": [finite(e + width / 2) for e in edges[:-1]], "y": counts.tolist()})
    return traces


def _beside_the_paper(r: DERResult, alpha: float) -> list[list[object]]:
    lv = r.levels
    calm, busy = lv <= 30, lv > 30
    at_max = {rule: der_shares(r.at_max[rule]) for rule in RULES}
    m_max = int(lv.max())

    def pct(x: float) -> float | None:
        return finite(100 * x, 1)

    rows: list[list[object]] = [
        ["D': % of all tasks late, m <= 30", _late_pct(r, STRICT, calm), "0 (all within about 0.7 of D)"],
        ["D: % of all tasks late, m <= 30", _late_pct(r, "D", calm), "not reported (some, up to DER 1.2)"],
        ["D': highest DER, m <= 30", finite(float(r.high["D'"][calm].max())) if calm.any() else None, "about 0.7-0.75 (never above 1)"],
        ["D': mean DER, m <= 30", finite(float(r.mean["D'"][calm].mean())) if calm.any() else None, f"about {alpha:g}"],
        [f"D': mean DER at m = {m_max}", finite(float(r.mean["D'"][-1])), "about 0.7, well below 1"],
        [f"D': highest DER at m = {m_max}", finite(float(r.high["D'"][-1])), "above 1 (short supply)"],
        ["D: mean DER, m <= 30", finite(float(r.mean["D"][calm].mean())) if calm.any() else None, "nearly 1"],
        ["D: highest DER, m <= 30", finite(float(r.high["D"][calm].max())) if calm.any() else None, "up to 1.2"],
        [f"D: % of tasks with DER in [0.95, 1.0] at m = {m_max}", pct(at_max["D"]["within_0.95_1.0"]), 52.5],
        [f"D: % late (DER > 1) at m = {m_max}", pct(at_max["D"]["late"]), 20.0],
        [f"D: % late but within 1.05 at m = {m_max}", pct(at_max["D"]["late_within_1.05"]), 17.5],
        [f"D': % late at m = {m_max}", pct(at_max["D'"]["late"]), "a few (worst cases)"],
        ["tasks no whole empty node can finish by D' (Lemma 1 fails)", f"{r.alone_infeasible} of {r.total_tasks}", "not reported"],
        ["Jain's index, lowest for m <= 30 (D / D')",
         f"{finite(float(r.jain['D'][calm].min()), 4)} / {finite(float(r.jain[STRICT][calm].min()), 4)}" if calm.any() else None,
         "above 0.99 (both)"],
        ["Jain's index, mean for m > 30 (D / D')",
         f"{finite(float(r.jain['D'][busy].mean()), 4)} / {finite(float(r.jain[STRICT][busy].mean()), 4)}" if busy.any() else None,
         "about 0.95"],
    ]
    return rows


def _late_pct(r: DERResult, rule: str, levels: np.ndarray) -> float | None:
    """Per cent of the tasks of the selected levels that finished after their deadline."""
    if r.late is None or not levels.any():
        return None
    return finite(100 * float(r.late[rule][levels].sum()) / float(r.levels[levels].sum()), 1)


def _last_on_time(r: DERResult) -> int:
    """The largest m such that, planning with D', no task of levels 1..m finished late."""
    late = np.flatnonzero(r.high[STRICT] > 1.0 + 1e-9)
    return int(r.levels[late[0] - 1]) if late.size and late[0] > 0 else (0 if late.size else int(r.levels.max()))


def run(params: Params, progress: Progress) -> Result:
    """The experiment (module docstring); DERs are finish time / deadline (dimensionless)."""
    levels = list(range(1, int(params["max_tasks"]) + 1))
    alpha = float(params["alpha_err"])
    r = der_experiment(
        levels, seed=int(params["seed"]), alpha_err=alpha, beta_err=float(params["beta_err"]), nodes=int(params["nodes"]),
        cores=float(params["cores"]), min_units=float(params["min_units"]), progress=progress,
    )
    progress(1.0, "done")
    per_level = [
        [int(m)] + [finite(float(getattr(r, k)[rule][i]), 4) for rule in RULES for k in ("low", "mean", "high", "jain")]
        for i, m in enumerate(r.levels)
    ]
    columns = ["tasks m"] + [f"{k} ({rule})" for rule in RULES for k in ("lowest DER", "mean DER", "highest DER", "Jain")]
    m_max = int(r.levels.max())
    calm = r.levels <= 30
    return {
        "figures": [
            figure("Fig. 4a: DER planning with D", _band(r, "D"), x_title="tasks submitted together m", y_title=DER_TITLE),
            figure(f"Fig. 4b: DER planning with D' = {alpha:g} D", _band(r, "D'"), x_title="tasks submitted together m",
                   y_title=DER_TITLE),
            figure(f"Fig. 5: distribution of DER at m = {m_max}", _histogram(r, 0.05), x_title="DER (bins of 0.05)",
                   y_title="number of tasks", barmode="group"),
            figure("Fig. 6: Jain's fairness index over the DERs", [
                {"type": "scatter", "mode": "lines+markers", "name": RULES[rule], "x": r.levels.tolist(),
                 "y": [finite(v) for v in r.jain[rule]]} for rule in RULES
            ], x_title="tasks submitted together m", y_title="Jain's index (1 = all DERs equal)"),
        ],
        "tables": [
            table("Beside the paper (paper 003, Sec. 5.2)", ["measure", "ours", "paper"], _beside_the_paper(r, alpha),
                  note="One seeded case per level, as in the paper; simulated cluster, no VM interference."),
            table("Per level", columns, per_level),
        ],
        "summary": (
            f"Planning with D' = {alpha:g} D kept every task of every level up to m = {_last_on_time(r)} within its deadline "
            f"(mean DER {finite(float(r.mean[STRICT][calm].mean()), 3) if calm.any() else None} for m <= 30; paper: about 0.7); "
            f"planning with D left {finite(100 * der_shares(r.at_max['D'])['late'], 1)} % of the {m_max} tasks late (paper: 20 %)."
        ),
    }


EXPERIMENT = register(Experiment(
    name="paper003_der",
    title="Paper 003 Figs. 4-6: deadline extension ratio under competition",
    source="paper 003, Sec. 5, Figs. 4-6",
    run=run,
    defaults={"max_tasks": 40, "seed": 0, "alpha_err": 0.7, "beta_err": 1.3, "nodes": 10, "cores": 8.0, "min_units": 1.0},
    description=(
        "Tasks of 3-15 matrix subtasks (Table 1) with workload estimates up to 30 % off are submitted 1 to 40 at a time to "
        "a fixed cluster of 10 nodes; each is served first come, first served by Algorithm 1 (cheapest node and resource "
        "vector for its deadline), planned with the deadline D or the stricter D' = alpha_err D. Shows the deadline extension "
        "ratio (finish time / deadline) per level of competition, its distribution at the largest level and Jain's index."
    ),
    help={
        "max_tasks": "largest number of tasks submitted together (levels 1..max_tasks)",
        "seed": "seeds the tasks of every level",
        "alpha_err": "lower bound of estimate / real work; D' = alpha_err D",
        "beta_err": "upper bound of estimate / real work",
        "nodes": "machines in the cluster",
        "cores": "units per machine on each of the 3 dimensions",
        "min_units": "least units per dimension a task accepts when its deadline cannot be met",
    },
))
