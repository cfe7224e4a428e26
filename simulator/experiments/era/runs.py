"""The runs behind ERA's headline (paper 001, Sec. 4): one seed's stream offered to every mechanism.

A seed draws the stream (``simulator.era.workload.fb2009_requests``: the FB-2009
trace as six size classes, values and windows seeded) and the predictors'
history (the same trace with seed + 1: other values and windows, the same job
shapes, i.e. "prior knowledge of the job distributions"). Every mechanism sees
the same stream. Greedy and On-demand are run once per fixed price of a sweep
(the paper gives no price for the headline's Greedy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scheduler.era.mechanisms import BasicEcon, Greedy, OnDemand
from scheduler.era.predictors import ConstantPrice, LPPredictor, PastRequest, SpreadingPredictor
from simulator.era.workload import EraRequest, StreamResult, fb2009_requests, run_stream

TRACE = Path(__file__).resolve().parents[3] / "data" / "traces" / "FB-2009_samples_24_times_1hr_0.tsv"
LOW_CLASS = 5  # "yahoo-5": the largest jobs, $1 per unit-slot
LOW_UNIT_MIN = 0.5  # the lowest unit value of class yahoo-5 ($1 x the noise's 0.5): at or below it every such job can buy


@dataclass(frozen=True)
class Setting:
    """One set-up of the headline's stream: cluster units, slot length (s), cap on W, hours of the
    trace, the predictors' floor price (money per unit-slot), the window slack's upper end."""

    capacity: int
    slot_s: float
    max_units: int
    hours: float
    floor: float
    slack_max: float


def stream(setting: Setting, seed: int) -> tuple[list[EraRequest], list[PastRequest], int]:
    """(requests, the predictors' history, horizon in slots) for one seed."""
    kw = {"slot_s": setting.slot_s, "max_units": setting.max_units, "hours": setting.hours, "slack": (1.5, setting.slack_max)}
    requests = fb2009_requests(TRACE, seed=seed, **kw)  # type: ignore[arg-type]
    history = [r.past for r in fb2009_requests(TRACE, seed=seed + 1, **kw)]  # type: ignore[arg-type]
    horizon = max(max(r.deadline for r in requests), max(p.deadline for p in history)) + 1
    return requests, history, horizon


def econ(setting: Setting, requests: Sequence[EraRequest], history: Sequence[PastRequest], horizon: int, predictor: str, *,
         rule: str = "arriving", solver: str = "flow", constant: float = 2.0) -> StreamResult:
    """Basic-Econ with the named predictor ("lp", "spreading" or "constant") over the stream.

    Raises:
        ValueError: an unknown predictor.
    """
    cap = setting.capacity
    if predictor == "lp":
        pred: object = LPPredictor(history, cap, horizon, floor=setting.floor, solver=solver, rule=rule)
    elif predictor == "spreading":
        pred = SpreadingPredictor(history, horizon, floor=setting.floor, rule=rule)
    elif predictor == "constant":
        pred = ConstantPrice(constant)
    else:
        raise ValueError(f"unknown predictor {predictor!r}")
    return run_stream(predictor, BasicEcon(cap, horizon, pred), requests)  # type: ignore[arg-type]


def fixed_price(setting: Setting, requests: Sequence[EraRequest], horizon: int, price: float, kind: str) -> StreamResult:
    """Greedy (FirstFit) or On-demand at a fixed unit price over the stream."""
    if kind == "greedy":
        return run_stream(f"greedy {price:g}", Greedy(setting.capacity, horizon, price), requests)
    return run_stream(f"on-demand {price:g}", OnDemand(setting.capacity, horizon, price), requests, fifo_execution=True)


def low_class_share(requests: Sequence[EraRequest], result: StreamResult) -> float:
    """The share of the accepted unit-slots (W * T) that went to the low-value class yahoo-5 (0 if none accepted)."""
    used = low = 0.0
    for r, d in zip(requests, result.decisions, strict=True):
        if d.accepted:
            used += r.units * r.duration
            low += r.units * r.duration if r.cls == LOW_CLASS else 0.0
    return low / used if used else 0.0
