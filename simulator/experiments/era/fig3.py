"""ERA over Azure Batch (paper 001, Sec. 4, Fig. 3): revenue and late jobs when the capacity moves and runs fail.

From the paper: ERA manages 20 % of a region whose other 80 % run non-ERA jobs, so its
units change all the time; Basic-Econ's unit price is clamped to at most the
non-pre-emptible (list) price and at most a 35 % discount; Greedy (FirstFit) charges a
fixed 65 % of the list price; On-demand accepts a job if enough units are free now
(ignoring its duration), starts it at once and charges a fixed price; every job's window
starts at its request time; Basic-Econ is run with a predictor "based on prior knowledge
of the job distributions" or one "that uses past observations", with or without an
exponential penalty for later starts, each at several capacities of the algorithm's use
(the rest is spare for re-running failed jobs). Measures: late jobs (% of accepted jobs
finishing after their deadline) and accepted revenue. Fig. 3 has no axis scales: the claim
is the shape, "ERA's econ algorithm dominates the other algorithms in terms of these two
desired measures".

What the paper leaves open is chosen below (``_setup``) and executed by
``simulator.era.execution`` (pre-emption, failures, common random numbers).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.era.mechanisms import BasicEcon, Greedy, OnDemand, ReservationMechanism
from scheduler.era.predictors import LPPredictor, PastRequest
from simulator.era.execution import execute, failure_draws, offer
from simulator.era.workload import EraRequest
from simulator.experiments import Experiment, Params, Progress, Result, figure, finite, register, table
from simulator.experiments.era.runs import Setting, stream
from simulator.experiments.fidelity import from_paper, headline, headline_table, holds, mean_ci, paired, setup_table, silent

DEFAULT = "Basic-Econ, prior LP"
Data = dict[tuple[str, float], dict[str, list[float]]]  # (mechanism, capacity use) -> measure -> one value per seed


class ObservedLP:
    """A predictor from past observations: each hour, the LP-based predictor of the requests
    that arrived in the hour before, moved one hour ahead ("the next hour looks like the last")."""

    def __init__(self, requests: Sequence[EraRequest], capacity: int, horizon: int, per_hour: int, floor: float) -> None:
        self.requests, self.capacity, self.horizon, self.per_hour, self.floor = requests, capacity, horizon, per_hour, floor
        self.hour, self.lp = -1, LPPredictor([], capacity, horizon, floor=floor)

    def at(self, now: int) -> Any:
        hour = now // self.per_hour
        if hour != self.hour:
            self.hour = hour
            lo, shift = (hour - 1) * self.per_hour, self.per_hour
            past = [PastRequest(r.units, r.duration, r.arrival + shift, r.deadline + shift, r.value) for r in self.requests
                    if lo <= r.arrival < lo + shift and r.deadline + shift <= self.horizon]
            self.lp = LPPredictor(past, self.capacity, self.horizon, floor=self.floor)
        return self.lp.at(now)

    def inverse_demand(self, t: Any, quantity: Any) -> Any:
        return self.lp.inverse_demand(t, quantity)


def real_capacity(capacity: int, slots: int, per_hour: int, max_loss: float, seed: int) -> NDArray[np.int64]:
    """(slots,) units ERA really has: each hour the non-ERA jobs take U[0, max_loss] of the nominal capacity."""
    hours = -(-slots // per_hour)
    loss = np.random.default_rng([seed, 3001]).uniform(0.0, max_loss, hours)
    per_slot = np.repeat(np.floor(capacity * (1.0 - loss)).astype(np.int64), per_hour)[:slots]
    out: NDArray[np.int64] = np.maximum(per_slot, 0)
    return out


def _mechanisms(params: Params, requests: Sequence[EraRequest], history: Sequence[PastRequest], planned: int,
                horizon: int) -> list[tuple[str, ReservationMechanism, bool]]:
    """(label, mechanism, ready at arrival) at one planned capacity."""
    price, discount, penalty = float(params["list_price"]), float(params["max_discount"]), float(params["late_penalty"])
    per_hour, floor = round(3600.0 / float(params["slot_s"])), float(params["floor_price"])
    prior = LPPredictor(history, planned, horizon, floor=floor)
    out: list[tuple[str, ReservationMechanism, bool]] = []
    for name, pen in ((DEFAULT, 0.0), ("Basic-Econ, prior LP, late penalty", penalty)):
        out.append((name, BasicEcon(planned, horizon, prior, list_price=price, max_discount=discount, late_penalty=pen), False))
    for name, pen in (("Basic-Econ, observed LP", 0.0), ("Basic-Econ, observed LP, late penalty", penalty)):
        observed = ObservedLP(requests, planned, horizon, per_hour, floor)
        out.append((name, BasicEcon(planned, horizon, observed, list_price=price, max_discount=discount, late_penalty=pen), False))
    out.append(("Greedy (FirstFit)", Greedy(planned, horizon, (1.0 - discount) * price), False))
    out.append(("On-demand", OnDemand(planned, horizon, price), True))
    return out


def runs(params: Params, progress: Progress) -> Data:
    """(mechanism, capacity use) -> {"revenue", "late", "welfare", "accepted"}: one value per seed."""
    seeds, uses = [int(s) for s in params["seeds"]], [float(u) for u in params["capacity_uses"]]
    setting = Setting(int(params["capacity"]), float(params["slot_s"]), int(params["max_units"]), float(params["hours"]),
                      float(params["floor_price"]), float(params["slack_max"]))
    per_hour = round(3600.0 / setting.slot_s)
    out: dict[tuple[str, float], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for i, seed in enumerate(seeds):
        requests, history, horizon = stream(setting, seed)
        cap = real_capacity(setting.capacity, 2 * horizon, per_hour, float(params["max_loss"]), seed)
        draws = failure_draws(len(requests), 8, seed)
        for j, use in enumerate(uses):
            progress(0.8 * (i * len(uses) + j) / (len(seeds) * len(uses)), f"seed {seed}, capacity use {use:g}")
            planned = max(1, math.floor(use * setting.capacity))
            for name, mech, at_arrival in _mechanisms(params, requests, history, planned, horizon):
                decisions = offer(mech, requests)
                ex = execute(requests, decisions, cap, fail_p=float(params["fail_p"]), draws=draws, ready_at_arrival=at_arrival)
                row = out[(name, use)]
                row["slack"].append(float(np.mean([r.deadline - int(d.start or 0) - r.duration
                                                   for r, d in zip(requests, decisions, strict=True) if d.accepted] or [0])))
                row["revenue"].append(ex.revenue)
                row["late"].append(ex.late_pct)
                row["late_all"].append(100.0 * ex.late / len(requests) if requests else 0.0)
                row["welfare"].append(100 * ex.welfare / ex.requested)
                row["accepted"].append(ex.accepted)
    return out


RIVALS = ("Greedy (FirstFit)", "On-demand")


def econ_variants(data: Data) -> list[str]:
    """Every Basic-Econ variant that ran, the default first."""
    names = {name for name, _ in data if name.startswith("Basic-Econ")}
    return [DEFAULT, *sorted(names - {DEFAULT})] if DEFAULT in names else sorted(names)


def _dominance(data: Data, uses: list[float], variant: str = DEFAULT, late: str = "late") -> dict[str, list[bool]]:
    """Per rival, per capacity use: ``variant`` has more revenue and fewer late jobs (``late``: % of accepted,
    or "late_all": % of all submitted) than the rival (paired, 95 %)."""
    out: dict[str, list[bool]] = {}
    for rival in RIVALS:
        out[f"revenue vs {rival}"] = [holds(paired(data[(variant, u)]["revenue"], data[(rival, u)]["revenue"]), "+") for u in uses]
        out[f"late vs {rival}"] = [holds(paired(data[(variant, u)][late], data[(rival, u)][late]), "-") for u in uses]
    return out


def _setup(params: Params) -> dict[str, Any]:
    return setup_table([
        ("prices", from_paper(f"Basic-Econ clamped to [{1 - float(params['max_discount']):g}, 1] x list price; Greedy at "
                              f"{1 - float(params['max_discount']):g} x list; On-demand a fixed price (the list price)")),
        ("windows", from_paper("every window starts at the request time")),
        ("variants", from_paper("Basic-Econ with a prior-knowledge predictor or one from past observations, with or without "
                                "an exponential penalty for later starts, at several capacities of the algorithm's use")),
        ("workload", silent("the headline's 6-class FB-2009 stream", "the 'standard Azure jobs' are not published",
                            "none run (the headline's sensitivity table covers the stream's choices)")),
        ("list price", silent(f"{params['list_price']} per unit-slot, the production classes' mean unit value",
                              "ERA's pre-emptible units are priced against what non-pre-emptible (production) jobs pay",
                              "set list_price to see another; the clamp and Greedy's 65 % follow it")),
        ("capacity changes", silent(f"each hour the non-ERA jobs take U[0, {params['max_loss']}] of ERA's {params['capacity']} units; "
                                    "pre-empted runs start again", "the paper says only that resources were constantly being "
                                    "allocated and freed", "max_loss = 0 isolates the failures")),
        ("failures", silent(f"a run fails with probability {params['fail_p']} at a uniform point and runs again",
                            "the paper keeps spares 'for re-running failed jobs' without a rate", "fail_p = 0 isolates the capacity")),
        ("past observations", silent("the previous hour's requests moved one hour ahead, rebuilt each hour",
                                     "the paper does not say how the past is used", "the prior-knowledge variant beside it")),
        ("late penalty", silent(f"exp({params['late_penalty']} x slots after the arrival) on the start's score (2026-11-28, "
                                "chosen before its result was seen: ln(1 / 0.65) = 0.431 per slot, the smallest rate at which one "
                                "slot of delay outweighs any price ratio the clamp [0.65, 1] x list allows, so the penalised "
                                "variants take the earliest start with room; the earlier 0.01 moved no start)",
                                "the paper gives no rate", "the variants without it")),
        ("verdict over the variants", "2026-11-28, before the run: the claim is about 'ERA's econ algorithm' and the paper "
                                      "plots every variant; it is reproduced when every Basic-Econ variant dominates Greedy and "
                                      "On-demand at every capacity use (paired 95 %), each variant's count shown; late jobs as "
                                      "% of all submitted jobs is a sensitivity row"),
        ("statistics", f"{len(params['seeds'])} seeds; the same stream, capacity path and failure draws for every mechanism"),
    ])


def run(params: Params, progress: Progress) -> Result:
    """Fig. 3: revenue against late jobs per mechanism and capacity use; headline rows for its claim."""
    uses = [float(u) for u in params["capacity_uses"]]
    data = runs(params, progress)
    names = sorted({name for name, _ in data}, key=lambda n: (not n.startswith("Basic"), n))
    traces = []
    for name in names:
        late = [mean_ci(data[(name, u)]["late"]) for u in uses]
        rev = [mean_ci(data[(name, u)]["revenue"]) for u in uses]
        traces.append({"type": "scatter", "mode": "lines+markers", "name": name, "x": [finite(e.mean, 3) for e in late],
                       "y": [finite(e.mean, 2) for e in rev], "text": [f"use {u:g}" for u in uses]})
    rows = [[name, u, *mean_ci(data[(name, u)]["revenue"]).row(1), *mean_ci(data[(name, u)]["late"]).row(2),
             finite(float(np.mean(data[(name, u)]["welfare"])), 2), finite(float(np.mean(data[(name, u)]["accepted"])), 1)]
            for name in names for u in uses]
    dom = _dominance(data, uses)
    variants = econ_variants(data)
    per_variant = {v: _dominance(data, uses, v) for v in variants}
    iso = isolate(params, progress)
    heads = _headlines(per_variant, data, uses, _causes(iso))
    progress(1.0, "done")
    won = sum(all(v) for v in dom.values())
    return {
        "figures": [figure("Fig. 3: accepted revenue against late jobs (one point per capacity use, mean over seeds)", traces,
                           x_title="late jobs (% of accepted)", y_title="accepted revenue (money)")],
        "tables": [
            headline_table(heads),
            _setup(params),
            table("Per mechanism and capacity use", ["mechanism", "capacity use", "revenue", "CI low", "CI high", "late (%)",
                                                     "CI low", "CI high", "welfare share (%)", "accepted jobs"], rows),
            table("Does each Basic-Econ variant dominate? (paired 95 % per capacity use)",
                  ["variant", "comparison", *[f"use {u:g}" for u in uses]],
                  [[name, k, *["yes" if x else "no" for x in v]] for name, d in per_variant.items() for k, v in d.items()]),
            table("Where the late jobs come from (capacity use 1; the cause isolated)",
                  ["switched on", "mechanism", "late (%)", "CI low", "CI high", "revenue", "CI low", "CI high", "accepted jobs",
                   "slack (slots)"], iso),
        ],
        "headlines": heads,
        "summary": (f"Basic-Econ (prior LP) against Greedy and On-demand at capacity uses {', '.join(f'{u:g}' for u in uses)} over "
                    f"{len(params['seeds'])} seeds: {won} of {len(dom)} comparisons hold at every capacity use (more revenue, "
                    "fewer late jobs; paired 95 %). The paper's Fig. 3: Basic-Econ dominates both on both measures."),
    }


def _headlines(per_variant: dict[str, dict[str, list[bool]]], data: Data, uses: list[float], causes: dict[str, str]
               ) -> list[dict[str, str]]:  # fmt: skip
    """The claim on both measures, judged on every Basic-Econ variant; late jobs over all submitted as a sensitivity row."""
    out = []
    quote = "ERA's econ algorithm dominates the other algorithms in terms of these two desired measures"
    for measure, side in (("revenue", "more accepted revenue"), ("late", "fewer late jobs")):
        held = {v: all(all(x) for k, x in d.items() if k.startswith(measure)) for v, d in per_variant.items()}
        detail = "; ".join(f"{v.removeprefix('Basic-Econ, ')}: " + ", ".join(
            f"{k.split(' vs ')[1].split(' (')[0]} {sum(x)}/{len(x)}" for k, x in d.items() if k.startswith(measure))
            for v, d in per_variant.items())
        diffs = [paired(data[(v, u)][measure], data[(r, u)][measure]) for v in per_variant for r in RIVALS for u in uses]
        span = f"paired differences {min(d.mean for d in diffs):.1f} to {max(d.mean for d in diffs):.1f}"
        out.append(headline(paper="001", section="Sec. 4, Fig. 3", quote=quote,
                            paper_value=f"every Basic-Econ variant has {side} than Greedy and On-demand (no scale)",
                            ours=f"{sum(held.values())} of {len(held)} variants at every use (uses won: {detail}; {span})",
                            verdict="reproduced" if all(held.values()) else "differs", cause=causes[measure]))
    every = {v: all(all(x) for k, x in _dominance(data, uses, v, "late_all").items() if k.startswith("late")) for v in per_variant}
    rates = "; ".join(f"{n.split(' (')[0]} {mean_ci(data[(n, max(uses))]['late_all']).mean:.2f} %" for n in [*per_variant, *RIVALS])
    out.append(headline(paper="001", section="Sec. 4, Fig. 3 (sensitivity: late jobs over all submitted)", quote=quote,
                        paper_value="every Basic-Econ variant has fewer late jobs than Greedy and On-demand (no scale)",
                        ours=f"{sum(every.values())} of {len(every)} variants at every use; at use {max(uses):g}: {rates}",
                        verdict="reproduced" if all(every.values()) else "differs",
                        cause="counted over every submitted job, a mechanism that accepts fewer jobs also has fewer late ones"))
    return out


ISOLATION = (("neither", 0.0, 0.0), ("capacity dips only", None, 0.0), ("failures only", 0.0, None), ("both (default)", None, None))


def isolate(params: Params, progress: Progress) -> list[list[Any]]:
    """At full capacity use: late jobs and revenue per mechanism with the dips and the failures switched on one at a time."""
    rows = []
    for k, (label, loss, fail) in enumerate(ISOLATION):
        progress(0.8 + 0.2 * k / len(ISOLATION), f"isolating the late jobs: {label}")
        over = {**params, "capacity_uses": [1.0], "max_loss": params["max_loss"] if loss is None else loss,
                "fail_p": params["fail_p"] if fail is None else fail}
        data = runs(over, lambda f, m: None)
        for name in (DEFAULT, "Greedy (FirstFit)", "On-demand"):
            rows.append([label, name, *mean_ci(data[(name, 1.0)]["late"]).row(2), *mean_ci(data[(name, 1.0)]["revenue"]).row(1),
                         finite(float(np.mean(data[(name, 1.0)]["accepted"])), 1), finite(float(np.mean(data[(name, 1.0)]["slack"])), 1)])
    return rows


def _causes(iso: list[list[Any]]) -> dict[str, str]:
    """The causes, read from the isolation table (late % per mechanism with neither, dips only, failures only)."""
    late = {(r[0], r[1]): r[2] for r in iso}
    parts = [f"{label}: " + ", ".join(f"{n.split(',')[0].split(' (')[0]} {late[(label, n)]} %" for n in
                                      (DEFAULT, "Greedy (FirstFit)", "On-demand")) for label, _, _ in ISOLATION[:3]]
    accepted = {(r[0], r[1]): r[8] for r in iso}
    slack = {r[1]: r[9] for r in iso if r[0] == "neither"}
    return {
        "late": "late jobs at full use, " + "; ".join(parts) + ". Slots left between a job's planned end and its deadline: "
                + ", ".join(f"{n.split(',')[0].split(' (')[0]} {slack[n]}" for n in (DEFAULT, "Greedy (FirstFit)", "On-demand"))
                + " (the room a re-run or a dip can use)",
        "revenue": (f"accepted jobs at full use: Basic-Econ {accepted[('both (default)', DEFAULT)]}, Greedy "
                    f"{accepted[('both (default)', 'Greedy (FirstFit)')]}, On-demand {accepted[('both (default)', 'On-demand')]}: "
                    "the clamp [0.65, 1] x list keeps Basic-Econ's price near Greedy's fixed 0.65 x list, so both sell "
                    "about the same; On-demand refuses whatever is not free at the arrival"),
    }


EXPERIMENT = register(Experiment(
    name="era_fig3",
    title="ERA Fig. 3: revenue and late jobs over a changing capacity (Azure Batch)",
    source="paper 001, Sec. 4, Fig. 3",
    run=run,
    defaults={"seeds": list(range(10)), "capacity": 20, "slot_s": 60.0, "max_units": 20, "hours": 24.0, "slack_max": 4.0,
              "floor_price": 0.1, "list_price": 10.0, "max_discount": 0.35, "late_penalty": 0.431, "capacity_uses": [0.7, 0.8, 0.9, 1.0],
              "max_loss": 0.2, "fail_p": 0.05},
    description=("The headline's request stream on ERA's pre-emptible share, whose units change hourly and whose runs fail now and "
                 "then: Basic-Econ (clamped prices; prior or observed demand; with or without a late-start penalty), Greedy at 65 % "
                 "of the list price and On-demand, each planning on a fraction of ERA's units. Revenue against late jobs."),
    help={
        "seeds": "seeds of the stream, the capacity path and the failures", "capacity": "ERA's nominal units",
        "slot_s": "simulated seconds per slot", "max_units": "cap on a request's units", "hours": "hours of the FB-2009 trace",
        "slack_max": "windows are T times U[1.5, slack_max]", "floor_price": "predictors' floor (per unit-slot)",
        "list_price": "the non-pre-emptible price per unit-slot", "max_discount": "Basic-Econ's largest discount; Greedy charges "
        "(1 - max_discount) x list", "late_penalty": "exponential penalty per slot of delay (the penalty variants)",
        "capacity_uses": "fractions of ERA's units the mechanisms plan on", "max_loss": "largest hourly share taken by non-ERA jobs",
        "fail_p": "probability that a run fails and runs again",
    },
))
