"""Comparison figures of a simulation study: configurations side by side on the same axes.

Echoes the ERA simulator's screen (paper 001, Sec. 4): system metrics (load,
latency, queues) first, economic metrics (prices, revenue) and fairness after.
One trace per configuration (its first seed), built from the runs' stored
series, which are already downsampled (``simulator.whatif.run``), so a figure
stays far below 2 MB.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from marketplace.ledger.money import SLOT, money_title, price_unit
from marketplace.web.text import chart_text
from simulator.experiments import figure

SIM_T = "simulated time since the first arrival (s)"


def _lines(runs: list[tuple[str, dict[str, Any]]], pick: Any) -> list[dict[str, Any]]:
    out = []
    for label, result in runs:
        xy = pick(result)
        if xy is not None:
            out.append({"type": "scatter", "mode": "lines", "name": chart_text(label), "x": xy[0], "y": xy[1]})
    return out


def _cdf(result: dict[str, Any]) -> tuple[list[float], list[float]] | None:
    resp = np.sort(np.array([r for r in result["jobs"]["response_s"] if r is not None], dtype=np.float64))
    if not len(resp):
        return None
    idx = np.unique(np.linspace(0, len(resp) - 1, min(len(resp), 500)).astype(np.int64))
    return [round(float(v), 3) for v in resp[idx]], [round(float((i + 1) / len(resp)), 5) for i in idx]


def comparison_figures(runs: list[tuple[str, dict[str, Any]]], type_names: list[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """``{"system": [...], "economic": [...], "fairness": [...]}`` plotly figure dicts.

    Args:
        runs: ``(label, result)`` per configuration; ``result`` is a stored
            ``simulation`` experiment result.
        type_names: the resource types' names ("map", "reduce"); "type 0", ... when not given.
    """
    m = max((len(r["series"]["utilisation"]) for _, r in runs), default=0)
    names = [*(type_names or []), *(f"type {j}" for j in range(len(type_names or []), m))]
    system = [
        figure(f"Utilisation, {names[j]}", _lines(runs, lambda r, j=j: (r["series"]["t"], r["series"]["utilisation"][j])),
               x_title=SIM_T, y_title="busy slots / capacity")
        for j in range(m)
    ]  # fmt: skip
    system += [
        figure("Running jobs", _lines(runs, lambda r: (r["series"]["t"], r["series"]["running_jobs"])), x_title=SIM_T, y_title="jobs"),
        figure("Queued jobs (arrived, no task started)", _lines(runs, lambda r: (r["series"]["t"], r["series"]["queued_jobs"])),
               x_title=SIM_T, y_title="jobs"),
        figure("Response time, distribution", _lines(runs, _cdf), x_title="response time (simulated s)", y_title="fraction of jobs",
               xaxis={"type": "log", "title": {"text": "response time (simulated s, log scale)"}}),
    ]  # fmt: skip
    economic = [
        figure(f"Clearing price, {names[j]}", _lines(runs, lambda r, j=j: (r["prices"]["t"][j], r["prices"]["price"][j])),
               x_title=SIM_T, y_title=f"unit price ({price_unit(SLOT)})")
        for j in range(m)
    ]  # fmt: skip
    economic.append(
        figure("Revenue, cumulative", _lines(runs, lambda r: (r["series"]["t"], r["series"]["revenue"])), x_title=SIM_T,
               y_title=money_title("revenue"))
    )
    economic.append(
        figure("Welfare, cumulative (paper 001, Sec. 4)", _lines(runs, _welfare),
               x_title=SIM_T, y_title=money_title("value met by the deadline"))
    )  # fmt: skip
    fairness = [
        figure("Sharing loss Ω (paper 002, Eq. 5)", _lines(runs, lambda r: (r["series"]["t"], r["series"]["loss"])),
               x_title=SIM_T, y_title="Ω summed over types (resource-s, ≤ 0)"),
        figure("Lowest fairness degree rho over queues (paper 002, Eq. 3)", _lines(runs, _min_rho),
               x_title=SIM_T, y_title="min rho (1 = entitled share)"),
    ]  # fmt: skip
    return {"system": system, "economic": economic, "fairness": fairness}


def _welfare(result: dict[str, Any]) -> tuple[list[float], list[float]] | None:
    """Cumulative value of the deadline-met jobs at their finish times (at most 1000 points)."""
    jobs = result["jobs"]
    if "deadline_met" not in jobs:
        return None  # a result stored before the lab kept deadlines
    done = sorted((f, v) for f, v, ok in zip(jobs["finish_s"], jobs["value"], jobs["deadline_met"], strict=True) if ok and f is not None)
    if not done:
        return None
    t, cum = np.array([f for f, _ in done]), np.cumsum([v for _, v in done])
    idx = np.unique(np.linspace(0, len(t) - 1, min(len(t), 1000)).astype(np.int64))
    return [round(float(x), 3) for x in t[idx]], [round(float(y), 4) for y in cum[idx]]


def _min_rho(result: dict[str, Any]) -> tuple[list[float], list[float | None]] | None:
    rho = result["series"]["rho"]
    if not rho:
        return None
    arr = np.array([[np.nan if v is None else v for v in col] for col in rho.values()], dtype=np.float64)
    with np.errstate(all="ignore"):
        low = np.nanmin(np.where(np.isnan(arr), np.inf, arr), axis=0)
    return result["series"]["t"], [None if not np.isfinite(v) else round(float(v), 4) for v in low]
