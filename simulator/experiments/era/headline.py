"""ERA's headline (paper 001, Sec. 4) and its day/night case (Sec. 3.2), over seeds.

Headline: the FB-2009 trace as 6 job classes (``simulator.era.workload.fb2009_requests``;
``simulator.experiments.era.runs``) offered in arrival order to a cluster too small for
all of it, under Basic-Econ with each predictor (LP-based, spreading, a constant
reserve price), Greedy/FirstFit and On-demand. The predictors count the demand that
arrives between now and t (Sec. 3.2; the earlier rule, every past request whose window
covers t, is run beside it). Greedy's fixed price is not in the paper: it is swept over
the prices at which the low-value class can still buy (the paper's Greedy "populates most
of the cluster with the large, low-value jobs"), and Greedy's welfare is reported as the
range over the sweep. Metrics: welfare (value of accepted jobs finished by their deadline)
as a share of all requested value, revenue, late jobs, and the offline fractional optimum
of the stream (an upper bound no online mechanism reaches). The paper: Basic-Econ 51 %
against Greedy's 10 %.

Day/night: high-value jobs only by day, medium and low ones by day or night, each class
asking for the whole capacity (``day_night_requests``); Basic-Econ with the LP-based
predictor against spreading, both learning from earlier days.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from scheduler.era.mechanisms import BasicEcon
from scheduler.era.predictors import LPPredictor, SpreadingPredictor, solve_allocation_flow
from simulator.era.workload import StreamResult, day_night_requests, run_stream
from simulator.experiments import Experiment, Params, Progress, Result, figure, finite, register, table
from simulator.experiments.era.runs import LOW_UNIT_MIN, Setting, econ, fixed_price, low_class_share, stream
from simulator.experiments.fidelity import (
    Estimate,
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

PAPER = {"econ": 51.0, "greedy": 10.0}
CLASS_NAMES = ["class 0 (smallest)", "class 1", "class 2", "class 3", "class 4", "class 5 (largest, $1)"]
def _setting(params: Params, **over: float) -> Setting:
    value = {"capacity": float(params["capacity"]), "floor": float(params["floor_price"]), "slack_max": float(params["slack_max"]),
             **over}
    capacity = int(value["capacity"])  # W is capped at the capacity (a smaller cluster)
    return Setting(capacity, float(params["slot_s"]), min(int(params["max_units"]), capacity), float(params["hours"]),
                   value["floor"], value["slack_max"])


class _Seeds:
    """Per mechanism and seed: welfare share (%), revenue, late (%), accepted per class; the sweep's arrays."""

    def __init__(self, n_prices: int, n_seeds: int) -> None:
        self.share: dict[str, list[float]] = defaultdict(list)
        self.revenue: dict[str, list[float]] = defaultdict(list)
        self.late: dict[str, list[float]] = defaultdict(list)
        self.classes: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(6))
        self.greedy = np.zeros((n_prices, n_seeds))
        self.ondemand = np.zeros((n_prices, n_seeds))
        self.low = np.zeros((n_prices, n_seeds))
        self.optimum: list[float] = []

    def add(self, label: str, r: StreamResult) -> None:
        self.share[label].append(100 * r.share)
        self.revenue[label].append(r.revenue)
        self.late[label].append(r.late_pct)
        self.classes[label] += np.array([r.by_class.get(c, (0, 0, 0.0))[0] for c in range(6)])


def _headline_runs(params: Params, progress: Progress) -> _Seeds:
    seeds, prices = [int(s) for s in params["seeds"]], [float(p) for p in params["greedy_prices"]]
    rule, solver, setting = str(params["demand_rule"]), str(params["lp_solver"]), _setting(params)
    other = "covering" if rule == "arriving" else "arriving"
    out = _Seeds(len(prices), len(seeds))
    for i, seed in enumerate(seeds):
        progress(0.6 * i / len(seeds), f"seed {seed}: Basic-Econ (three predictors), Greedy and On-demand")
        requests, history, horizon = stream(setting, seed)
        requested = sum(r.value for r in requests)
        out.optimum.append(100 * solve_allocation_flow([r.past for r in requests], setting.capacity, horizon).welfare / requested)
        out.add("LP", econ(setting, requests, history, horizon, "lp", rule=rule, solver=solver))
        out.add("LP, covering rule", econ(setting, requests, history, horizon, "lp", rule=other, solver=solver))
        out.add("spreading", econ(setting, requests, history, horizon, "spreading", rule=rule))
        out.add("constant", econ(setting, requests, history, horizon, "constant", constant=float(params["constant_price"])))
        for k, price in enumerate(prices):
            g = fixed_price(setting, requests, horizon, price, "greedy")
            out.greedy[k, i], out.low[k, i] = 100 * g.share, low_class_share(requests, g)
            out.ondemand[k, i] = 100 * fixed_price(setting, requests, horizon, price, "ondemand").share
            if k == len(prices) // 2:
                out.add("Greedy", g)
    return out


def _sensitivity(params: Params, progress: Progress) -> list[list[Any]]:
    """Rows: variant, LP Basic-Econ share, Greedy's range over the sweep, the paired LP - Greedy (lowest)."""
    seeds, prices = [int(s) for s in params["seeds"]], [float(p) for p in params["greedy_prices"]]
    variants = ([("capacity", float(c)) for c in params["sensitivity_capacities"]]
                + [("floor", float(f)) for f in params["sensitivity_floors"]]
                + [("slack_max", float(s)) for s in params["sensitivity_slacks"]])
    rows = []
    for v, (key, value) in enumerate(variants):
        progress(0.6 + 0.3 * v / max(len(variants), 1), f"sensitivity: {key} = {value:g}")
        setting = _setting(params, **{key: value})
        lp, greedy = [], np.zeros((len(prices), len(seeds)))
        for i, seed in enumerate(seeds):
            requests, history, horizon = stream(setting, seed)
            lp.append(100 * econ(setting, requests, history, horizon, "lp", rule=str(params["demand_rule"])).share)
            for k, price in enumerate(prices):
                greedy[k, i] = 100 * fixed_price(setting, requests, horizon, price, "greedy").share
        worst = paired(lp, greedy[int(np.argmax(greedy.mean(axis=1)))])
        means = greedy.mean(axis=1)
        rows.append([f"{key} = {value:g}", mean_ci(lp).text(1, " %"), f"{means.min():.1f}-{means.max():.1f} %", worst.text(1, " pp")])
    return rows


def day_night(params: Params, seed: int) -> list[StreamResult]:
    """Basic-Econ with the LP-based and the spreading predictor on one seed's day/night stream."""
    days, capacity, per_day = int(params["dn_days"]), int(params["dn_capacity"]), 24
    history = [r.past for r in day_night_requests(days, capacity, seed=seed + 1)]
    requests = day_night_requests(days, capacity, seed=seed)
    horizon = days * per_day
    rule, solver = str(params.get("demand_rule", "arriving")), str(params.get("lp_solver", "flow"))
    return [
        run_stream(name, BasicEcon(capacity, horizon, pred), requests)
        for name, pred in (
            ("LP predictor", LPPredictor(history, capacity, horizon, period=per_day, solver=solver, rule=rule)),
            ("spreading predictor", SpreadingPredictor(history, horizon, period=per_day, rule=rule)),
        )
    ]


def _errors(est: Estimate) -> dict[str, Any]:
    return {"type": "data", "symmetric": False, "array": [finite(est.high - est.mean, 3)], "arrayminus": [finite(est.mean - est.low, 3)]}


def _figures(s: _Seeds, prices: list[float], dn: list[list[StreamResult]]) -> list[dict[str, Any]]:
    labels = {"LP": "Basic-Econ, LP predictor", "LP, covering rule": "Basic-Econ, LP, earlier rule (covering)",
              "spreading": "Basic-Econ, spreading", "constant": "Basic-Econ, constant price",
              "Greedy": f"Greedy at {prices[len(prices) // 2]:g}"}
    bars = []
    for key, name in labels.items():
        est = mean_ci(s.share[key])
        bars.append({"type": "bar", "name": name, "x": [name], "y": [finite(est.mean, 3)], "error_y": _errors(est)})
    bars.append({"type": "bar", "name": "paper 001 (Sec. 4)", "x": [labels["LP"], labels["Greedy"]], "y": [PAPER["econ"], PAPER["greedy"]]})
    sweep = []
    for name, arr in (("Greedy", s.greedy), ("On-demand", s.ondemand)):
        ests = [mean_ci(row) for row in arr]
        sweep.append({"type": "scatter", "mode": "lines+markers", "name": f"{name} (mean, 95 % CI)", "x": prices,
                      "y": [finite(e.mean, 3) for e in ests],
                      "error_y": {"type": "data", "symmetric": False, "array": [finite(e.high - e.mean, 3) for e in ests],
                                  "arrayminus": [finite(e.mean - e.low, 3) for e in ests]}})
    lp = mean_ci(s.share["LP"])
    sweep.append({"type": "scatter", "mode": "lines", "name": "Basic-Econ, LP (mean)", "x": [prices[0], prices[-1]],
                  "y": [finite(lp.mean, 3)] * 2, "line": {"dash": "dash"}})
    sweep.append({"type": "scatter", "mode": "markers", "name": "paper: Greedy 10 %", "x": [prices[len(prices) // 2]],
                  "y": [PAPER["greedy"]]})
    n = max(len(s.share["LP"]), 1)
    classes = [{"type": "bar", "name": CLASS_NAMES[c], "x": list(labels.values()),
                "y": [finite(float(s.classes[k][c]) / n, 2) for k in labels]} for c in range(6)]
    dn_bars = [{"type": "bar", "name": label, "x": ["LP predictor", "spreading predictor"],
                "y": [finite(float(np.mean([runs[j].by_class.get(c, (0, 0, 0.0))[0] for runs in dn])), 2) for j in range(2)]}
               for c, label in enumerate(("high (day only, 10)", "medium (day or night, 5)", "low (day or night, 1)"))]
    return [
        figure("Welfare as a share of requested value (mean over seeds, 95 % CI)", bars, x_title="mechanism",
               y_title="welfare / requested value (%)", barmode="group"),
        figure("Greedy and On-demand against their fixed price (the paper gives none)", sweep,
               x_title="fixed unit price (money per unit-slot)", y_title="welfare / requested value (%)"),
        figure("Accepted jobs per class (mean per seed)", classes, x_title="mechanism", y_title="accepted jobs", barmode="stack"),
        figure("Day/night: accepted jobs per class (mean per seed)", dn_bars, x_title="Basic-Econ predictor",
               y_title="accepted jobs", barmode="stack"),
    ]


def _regime(prices: list[float]) -> list[int]:
    """Indices of the prices at which every yahoo-5 job can buy: the paper's Greedy, which "populates
    most of the cluster with the large, low-value jobs" (all of the sweep if none is that low)."""
    inside = [k for k, p in enumerate(prices) if p <= LOW_UNIT_MIN]
    return inside or list(range(len(prices)))


def _headlines(s: _Seeds, prices: list[float], dn_diff: Estimate, rule: str) -> list[dict[str, str]]:
    lp = mean_ci(s.share["LP"])
    regime = _regime(prices)
    diffs = [paired(s.share["LP"], s.greedy[k]) for k in regime]
    beats = all(holds(d, "+") for d in diffs)
    g = [mean_ci(s.greedy[k]) for k in regime]
    lo, hi = min(e.low for e in g), max(e.high for e in g)
    band = 0.1 * PAPER["greedy"]
    greedy_verdict = "reproduced" if lo - band <= PAPER["greedy"] <= hi + band else scaled_verdict(
        "shape only" if beats else "differs", PAPER["greedy"], PAPER["greedy"], float(np.mean([e.mean for e in g])))
    low = [mean_ci(s.low[k]) for k in regime]
    most = all(e.low > 0.5 for e in low)
    top = prices[regime[-1]]
    full = s.greedy.mean(axis=1)
    opt, covering = mean_ci(s.optimum), mean_ci(s.share["LP, covering rule"])
    return [
        headline(paper="001", section="Sec. 4", quote="ERA's Basic-Econ algorithm ... achieves 51% of the requested value",
                 paper_value="51 %", ours=lp.text(1, " %"), verdict=verdict(PAPER["econ"], lp, beats),
                 cause=(f"LP predictor, demand {rule} (Sec. 3.2); the earlier covering rule gives {covering.text(1, ' %')}. "
                        f"The stream's offline fractional optimum is {opt.text(1, ' %')}: the FB-2009 stand-in for the "
                        "unpublished Yahoo classes bounds what any mechanism keeps (bench/era_gap.py)")),
        headline(paper="001", section="Sec. 4",
                 quote="the greedy algorithm ... results in a low efficiency of only 10% of the total requested value",
                 paper_value="10 %", ours=f"{min(e.mean for e in g):.1f}-{max(e.mean for e in g):.1f} % at prices <= {top:g} "
                 f"(95 % CIs {lo:.1f}-{hi:.1f} %); {full.min():.1f}-{full.max():.1f} % over the whole sweep", verdict=greedy_verdict,
                 cause=("the paper gives no price; at prices every yahoo-5 job can pay (<= $0.5) Greedy accepts whatever fits, "
                        "so its welfare does not depend on the price. Basic-Econ beats it there: paired difference "
                        f"{min(d.low for d in diffs):.1f} pp or more. Greedy keeps more than 10 % because the FB-2009 classes' "
                        "values and sizes differ from the paper's Yahoo classes (its offline optimum, row 1)")
                 if beats else "Basic-Econ does not beat Greedy at every price of the paper's regime (paired 95 % CI)"),
        headline(paper="001", section="Sec. 4",
                 quote="the greedy algorithm populates most of the cluster with the large, low-value jobs (of class yahoo-5)",
                 paper_value="most (> 50 % of the used capacity)",
                 ours=f"{100 * min(e.mean for e in low):.0f}-{100 * max(e.mean for e in low):.0f} % of Greedy's accepted unit-slots "
                 f"at prices <= {top:g}",
                 verdict="reproduced" if most else "differs",
                 cause="class 5 holds the largest jobs (sextiles of size), so first-come first-served fills the cluster with them"
                 if most else "under the swept prices Greedy's accepted capacity is not mostly class 5"),
        headline(paper="001", section="Sec. 3.2",
                 quote=("Using this demand [spreading] ... will set the price to be too low, and will accept low-value jobs "
                        "at the cost of declining medium-value ones"),
                 paper_value="LP welfare > spreading", ours=f"LP - spreading welfare {dn_diff.text(0)}",
                 verdict="reproduced" if holds(dn_diff, "+") else "differs",
                 cause="the LP fills the night with medium-value jobs and prices it at their value" if holds(dn_diff, "+")
                 else "the paired difference's interval is not above 0"),
    ]


def _setup(params: Params) -> dict[str, Any]:
    return setup_table([
        ("workload", silent("the FB-2009 SWIM sample (5,894 jobs) as 6 classes by size sextile, the largest worth $1 per "
                            "unit-slot and the others $10, times U[0.5, 1.5]", "the paper's Yahoo-derived classes (1,400-1,500 "
                            "jobs each) are not published and FB-2009 comes from the same SWIM suite [9]",
                            "capacity, floor and window slack below")),
        ("values per unit", from_paper("class yahoo-5 (largest average size) $1, all others $10")),
        ("cluster", silent(f"{params['capacity']} units (inherited default, not chosen by this issue)",
                           "the paper says only 'way too small to fit all jobs'",
                           f"capacities {params['sensitivity_capacities']} in the sensitivity table")),
        ("deadlines", silent(f"window = T x U[1.5, {params['slack_max']}] (at least T + 1 slots) from the arrival",
                             "the paper adds deadlines without saying how", f"upper ends {params['sensitivity_slacks']}")),
        ("predictor", from_paper(f"demand that arrives between now and t (Sec. 3.2); rule here: {params['demand_rule']}; "
                                 "LP-based; history: the same trace with other values and windows (seed + 1)")),
        ("floor price", silent(f"{params['floor_price']} per unit-slot where no demand is predicted (inherited default)",
                               "the paper does not price empty slots", f"floors {params['sensitivity_floors']}")),
        ("Greedy's price", silent(f"swept over {params['greedy_prices']}; the headline row reads the prices <= "
                                  f"{LOW_UNIT_MIN:g}, at which every yahoo-5 job can pay",
                                  "Sec. 4 gives none (the Azure run's 65 % of list price has no list price here), and its Greedy "
                                  "'populates most of the cluster with the large, low-value jobs', which needs a price the $1 class "
                                  "pays (its unit values are $0.5-1.5)", "the whole sweep in the price table and figure")),
        ("statistics", f"{len(params['seeds'])} seeds (workload values and windows), mean with 95 % Student-t CI; claims as "
                       "paired differences on the same seeds"),
    ])


def run(params: Params, progress: Progress) -> Result:
    """The headline over seeds, its sensitivity and the day/night case: figures, tables, headline rows."""
    prices = [float(p) for p in params["greedy_prices"]]
    s = _headline_runs(params, progress)
    sens = _sensitivity(params, progress)
    progress(0.9, "day/night case")
    dn = [day_night(params, int(seed)) for seed in params["seeds"]]
    dn_diff = paired([r[0].welfare for r in dn], [r[1].welfare for r in dn])
    progress(1.0, "done")
    heads = _headlines(s, prices, dn_diff, str(params["demand_rule"]))
    rows = []
    for key, name in (("LP", "Basic-Econ, LP predictor"), ("LP, covering rule", "Basic-Econ, LP, earlier covering rule"),
                      ("spreading", "Basic-Econ, spreading predictor"), ("constant", f"Basic-Econ, constant {params['constant_price']}"),
                      ("Greedy", f"Greedy at {prices[len(prices) // 2]:g}")):
        rows.append([name, *mean_ci(s.share[key]).row(2), finite(float(np.mean(s.revenue[key])), 2),
                     finite(float(np.mean(s.late[key])), 2)])
    rows.append(["offline fractional optimum (upper bound)", *mean_ci(s.optimum).row(2), None, None])
    sweep_rows = [[p, *mean_ci(s.greedy[k]).row(2), finite(100 * float(s.low[k].mean()), 1), *mean_ci(s.ondemand[k]).row(2),
                   paired(s.share["LP"], s.greedy[k]).text(1, " pp")] for k, p in enumerate(prices)]
    lp, cov = mean_ci(s.share["LP"]), mean_ci(s.share["LP, covering rule"])
    g = s.greedy.mean(axis=1)
    lp_dn, sp_dn = np.mean([r[0].welfare for r in dn]), np.mean([r[1].welfare for r in dn])
    return {
        "figures": _figures(s, prices, dn),
        "tables": [
            headline_table(heads),
            _setup(params),
            table("Per mechanism (welfare share over seeds)", ["mechanism", "welfare share (%)", "95 % CI low", "95 % CI high",
                                                               "revenue (money, mean)", "late jobs (%, mean)"], rows),
            table("Greedy and On-demand by fixed price", ["price (per unit-slot)", "Greedy share (%)", "CI low", "CI high",
                                                          "class-5 share of Greedy's unit-slots (%)", "On-demand share (%)",
                                                          "CI low", "CI high", "Basic-Econ LP - Greedy (paired)"], sweep_rows),
            table("Sensitivity (paper-silent choices)", ["variant", "Basic-Econ LP share", "Greedy's range over the sweep",
                                                         "LP - best Greedy (paired)"], sens),
            table("Day/night (paper 001, Sec. 3.2)",
                  ["seed", "LP welfare", "spreading welfare", "LP accepted low", "spreading accepted low"],
                  [[int(seed), finite(r[0].welfare, 2), finite(r[1].welfare, 2), r[0].by_class.get(2, (0, 0, 0.0))[0],
                    r[1].by_class.get(2, (0, 0, 0.0))[0]] for seed, r in zip(params["seeds"], dn, strict=True)]),
        ],
        "headlines": heads,
        "summary": (
            f"Over {lp.n} seeds Basic-Econ with the LP predictor (demand {params['demand_rule']}, Sec. 3.2) kept {lp.text(1, ' %')} "
            f"of the requested value (the earlier covering rule: {cov.text(1, ' %')}); Greedy kept {g.min():.1f}-{g.max():.1f} % "
            f"over its swept prices (paper: 51 % against 10 %). Day/night: LP welfare {lp_dn:,.0f} against spreading's "
            f"{sp_dn:,.0f} (mean; paired difference {dn_diff.text(0)})."
        ),
    }


SEEDS = list(range(10))
EXPERIMENT = register(
    Experiment(
        name="era_headline",
        title="ERA: Basic-Econ against Greedy and On-demand (6 job classes), and day/night",
        source="paper 001, Sec. 4 (headline) and Sec. 3.2 (LP-based predictor)",
        run=run,
        defaults={
            "seeds": SEEDS, "capacity": 20, "slot_s": 60.0, "max_units": 20, "hours": 24.0, "floor_price": 0.1,
            "slack_max": 4.0, "constant_price": 2.0, "demand_rule": "arriving",
            "greedy_prices": [0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5], "sensitivity_capacities": [10, 40],
            "sensitivity_floors": [0.0, 0.5], "sensitivity_slacks": [2.0, 8.0], "dn_days": 20, "dn_capacity": 20, "lp_solver": "flow",
        },
        description=(
            "The FB-2009 trace as six size classes of reservation requests (the largest class worth $1 per unit-slot, the others "
            "$10) on a cluster too small for all of them: welfare share over seeds under Basic-Econ with each predictor "
            "(demand arriving between now and t, paper 001 Sec. 3.2), Greedy and On-demand over a sweep of fixed prices, the "
            "stream's offline optimum, a sensitivity table for the choices the paper leaves open, and the day/night case."
        ),
        help={
            "seeds": "seeds of the workload's values and windows (the history uses seed + 1)",
            "capacity": "units of the one resource type",
            "slot_s": "simulated seconds per slot",
            "max_units": "cap on a request's units W",
            "hours": "hours of the FB-2009 trace from hour 0",
            "floor_price": "predictors' price where no demand is predicted (per unit-slot)",
            "slack_max": "windows are T times U[1.5, slack_max] slots",
            "constant_price": "the constant predictor's reserve price (per unit-slot)",
            "demand_rule": "arriving (paper 001 Sec. 3.2: demand arriving between now and t) or covering (every past request "
                           "whose window covers t)",
            "greedy_prices": "Greedy's and On-demand's fixed prices (per unit-slot), swept",
            "sensitivity_capacities": "capacities of the sensitivity runs",
            "sensitivity_floors": "floor prices of the sensitivity runs",
            "sensitivity_slacks": "window slack upper ends of the sensitivity runs",
            "dn_days": "days of the day/night stream",
            "dn_capacity": "units in the day/night case",
            "lp_solver": "the LP predictor's solver: flow (exact, fast) or highs (the LP)",
        },
    )
)

