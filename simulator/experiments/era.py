"""ERA's headline (paper 001, Sec. 4) and its day/night case (Sec. 3.2), reproduced.

Headline: the FB-2009 trace as 6 job classes (``simulator.era.workload.fb2009_requests``:
classes are sextiles of job size; the largest class is worth $1 per unit-slot, the
others $10) offered in arrival order to a cluster too small for all of it, under
Basic-Econ with each predictor (LP-based, spreading, constant reserve price),
Greedy/FirstFit and On-demand. The predictors learn from a history drawn from the
same trace with other values and windows (prior knowledge of the job distribution,
as the paper's "linear predictor based on prior knowledge"). Metrics: welfare
(value of accepted jobs finished by their deadline) as a share of all requested
value, revenue, late jobs. The paper: Basic-Econ 51 % against Greedy's 10 %.

Day/night: high-value jobs only by day, medium and low ones by day or night, each
class asking for the whole capacity (``day_night_requests``); Basic-Econ with the
LP-based predictor against spreading, both learning from earlier days.
"""

from __future__ import annotations

from pathlib import Path

from scheduler.era.mechanisms import BasicEcon, Greedy, OnDemand, ReservationMechanism
from scheduler.era.predictors import ConstantPrice, LPPredictor, SpreadingPredictor
from simulator.era.workload import StreamResult, day_night_requests, fb2009_requests, run_stream
from simulator.experiments import Experiment, Params, Progress, Result, figure, finite, register, table

TRACE = Path(__file__).resolve().parents[2] / "data" / "traces" / "FB-2009_samples_24_times_1hr_0.tsv"
PAPER = {"Basic-Econ": 51.0, "Greedy": 10.0}
CLASS_NAMES = ["class 0 (smallest)", "class 1", "class 2", "class 3", "class 4", "class 5 (largest, $1)"]


def headline(params: Params, progress: Progress) -> list[StreamResult]:
    """Every mechanism over the 6-class FB-2009 stream (module docstring)."""
    slot, units, seed = float(params["slot_s"]), int(params["max_units"]), int(params["seed"])
    capacity, floor = int(params["capacity"]), float(params["floor_price"])
    hours = float(params["hours"])
    requests = fb2009_requests(TRACE, slot_s=slot, max_units=units, seed=seed, hours=hours)
    history = [r.past for r in fb2009_requests(TRACE, slot_s=slot, max_units=units, seed=seed + 1, hours=hours)]
    horizon = max(max(r.deadline for r in requests), max(p.deadline for p in history)) + 1
    progress(0.05, "solving the LP-based predictor's allocation of the history")
    mechanisms: list[tuple[str, ReservationMechanism, bool]] = [
        ("Basic-Econ, LP predictor", BasicEcon(capacity, horizon, LPPredictor(history, capacity, horizon, floor=floor,
                                                                              solver=str(params["lp_solver"]))), False),
        ("Basic-Econ, spreading predictor", BasicEcon(capacity, horizon, SpreadingPredictor(history, horizon, floor=floor)), False),
        (f"Basic-Econ, constant {params['constant_price']}", BasicEcon(capacity, horizon, ConstantPrice(float(params["constant_price"]))),
         False),
        ("Greedy (FirstFit)", Greedy(capacity, horizon, float(params["fixed_price"])), False),
        ("On-demand", OnDemand(capacity, horizon, float(params["fixed_price"])), True),
    ]
    out = []
    for k, (name, mech, fifo) in enumerate(mechanisms):
        progress(0.1 + 0.7 * k / len(mechanisms), f"offering {len(requests)} requests to {name}")
        out.append(run_stream(name, mech, requests, fifo_execution=fifo))
    return out


def day_night(params: Params) -> list[StreamResult]:
    """Basic-Econ with the LP-based and the spreading predictor on the day/night stream."""
    days, capacity, per_day = int(params["dn_days"]), int(params["dn_capacity"]), 24
    seed = int(params["seed"])
    history = [r.past for r in day_night_requests(days, capacity, seed=seed + 1)]
    requests = day_night_requests(days, capacity, seed=seed)
    horizon = days * per_day
    out = []
    for name, pred in (
        ("LP predictor", LPPredictor(history, capacity, horizon, period=per_day, solver=str(params.get("lp_solver", "flow")))),
        ("spreading predictor", SpreadingPredictor(history, horizon, period=per_day)),
    ):
        out.append(run_stream(name, BasicEcon(capacity, horizon, pred), requests))
    return out


def run(params: Params, progress: Progress) -> Result:
    """The headline and the day/night case: figures, tables beside the paper, a summary."""
    results = headline(params, progress)
    progress(0.85, "day/night case")
    dn = day_night(params)
    progress(1.0, "done")
    names = [r.name for r in results]
    share_bars = [{"type": "bar", "name": "this run", "x": names, "y": [finite(100 * r.share) for r in results]}]
    paper_x = [n for n in names if n.startswith("Basic-Econ, LP") or n.startswith("Greedy")]
    share_bars.append({"type": "bar", "name": "paper 001 (Sec. 4)", "x": paper_x, "y": [PAPER["Basic-Econ"], PAPER["Greedy"]]})
    class_bars = [
        {"type": "bar", "name": CLASS_NAMES[c], "x": names, "y": [r.by_class.get(c, (0, 0, 0.0))[0] for r in results]}
        for c in range(6)
    ]
    dn_bars = [
        {"type": "bar", "name": label, "x": [r.name for r in dn], "y": [r.by_class.get(c, (0, 0, 0.0))[0] for r in dn]}
        for c, label in enumerate(("high (day only, 10)", "medium (day or night, 5)", "low (day or night, 1)"))
    ]
    rows = [
        [r.name, finite(100 * r.share, 4), finite(r.revenue, 6), r.accepted, finite(r.late_pct, 4),
         PAPER["Basic-Econ"] if r.name.startswith("Basic-Econ, LP") else PAPER["Greedy"] if r.name.startswith("Greedy") else None]
        for r in results
    ]
    dn_rows = [[r.name, finite(r.welfare, 6), finite(100 * r.share, 4), *[r.by_class.get(c, (0, 0, 0.0))[0] for c in range(3)]]
               for r in dn]
    econ, greedy = results[0], results[3]
    lp, spread = dn
    return {
        "figures": [
            figure("Welfare as a share of requested value", share_bars, x_title="mechanism", y_title="welfare / requested value (%)",
                   barmode="group"),
            figure("Accepted jobs per class", class_bars, x_title="mechanism", y_title="accepted jobs", barmode="stack"),
            figure("Day/night: accepted jobs per class", dn_bars, x_title="Basic-Econ predictor", y_title="accepted jobs",
                   barmode="stack"),
        ],
        "tables": [
            table("Headline beside the paper", ["mechanism", "welfare share (%)", "revenue (money)", "accepted jobs", "late jobs (%)",
                                                 "paper welfare share (%)"], rows,
                  note=f"{sum(v[1] for v in econ.by_class.values())} requests, capacity {params['capacity']} units, "
                       f"slots of {params['slot_s']} simulated s; late = finished after the deadline."),
            table("Day/night (paper 001, Sec. 3.2)", ["predictor", "welfare (money)", "welfare share (%)", "accepted high",
                                                      "accepted medium", "accepted low"], dn_rows),
        ],
        "summary": headline_summary(econ, greedy, lp, spread),
    }


def headline_summary(econ: StreamResult, greedy: StreamResult, lp: StreamResult, spread: StreamResult) -> str:
    """The run's conclusion, computed from it: the headline's shares, and the day/night case's
    welfare and accepted jobs per class (0 high, 1 medium, 2 low) of each predictor. The
    explanation (low-value jobs taking night slots medium ones would have paid more for) is
    given only when this run's counts show it: spreading accepted more low-value and fewer
    medium-value jobs than the LP predictor, for less welfare."""
    def accepted(r: StreamResult, c: int) -> int:
        return r.by_class.get(c, (0, 0, 0.0))[0]

    text = (f"Basic-Econ with the LP predictor kept {100 * econ.share:.0f} % of the requested value against Greedy's "
            f"{100 * greedy.share:.0f} % (paper: 51 % against 10 %). Day/night: the LP predictor's welfare {lp.welfare:,.0f}, "
            f"spreading's {spread.welfare:,.0f}; accepted medium / low-value jobs {accepted(lp, 1)} / {accepted(lp, 2)} with "
            f"the LP predictor, {accepted(spread, 1)} / {accepted(spread, 2)} with spreading.")
    if spread.welfare < lp.welfare and accepted(spread, 2) > accepted(lp, 2) and accepted(spread, 1) < accepted(lp, 1):
        text += (" Spreading let low-value jobs take slots that medium-value ones would have paid more for "
                 "(it counts the flexible low-value demand in the night too and prices the night below the medium value).")
    return text


EXPERIMENT = register(
    Experiment(
        name="era_headline",
        title="ERA: Basic-Econ against Greedy and On-demand (6 job classes), and day/night",
        source="paper 001, Sec. 4 (headline) and Sec. 3.2 (LP-based predictor)",
        run=run,
        defaults={
            "capacity": 20, "slot_s": 60.0, "max_units": 20, "fixed_price": 0.5, "floor_price": 0.1,
            "constant_price": 2.0, "seed": 0, "dn_days": 20, "dn_capacity": 20, "hours": 24.0,
            "lp_solver": "flow",
        },
        description=(
            "The FB-2009 trace as six size classes of reservation requests (the largest class worth $1 per unit-slot, "
            "the others $10) on a cluster too small for all of them: welfare share, revenue and late jobs under "
            "Basic-Econ with each predictor, Greedy and On-demand; then the day/night case where the LP-based "
            "predictor beats spreading."
        ),
        help={
            "capacity": "units of the one resource type",
            "slot_s": "simulated seconds per slot",
            "max_units": "cap on a request's units W",
            "fixed_price": "Greedy's and On-demand's price per unit-slot",
            "floor_price": "predictors' price where no demand is predicted (per unit-slot)",
            "constant_price": "the constant predictor's reserve price (per unit-slot)",
            "seed": "values and windows (the history uses seed + 1)",
            "dn_days": "days of the day/night stream",
            "dn_capacity": "units in the day/night case",
            "hours": "hours of the FB-2009 trace from hour 0",
            "lp_solver": "the LP predictor's solver: flow (exact, fast) or highs (the LP); both optimal, the allocations "
                         "may differ where several are optimal",
        },
    )
)
