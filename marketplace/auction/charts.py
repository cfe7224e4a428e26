"""Plotly figures for Abacus's tenant extras (paper 000, Secs. 5-6): plain data in, figure dicts out.

Builders never query the database (see ``marketplace.web.charts``, whose layout helpers they use).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from marketplace.ledger.money import currency
from marketplace.web.charts import Figure, base_layout, finite_or_none, make_figure


def utility_fit_figure(points: Sequence[tuple[Sequence[float], float]], weights: Sequence[float], intercept: float,
                       *, kind: str, title: str) -> Figure:
    """Measured against fitted utility of a job class's completed jobs (paper 000, Sec. 5, Eq. 2).

    Args:
        points: (average shares (m,), measured utility in 1/s) per job.
        weights: (m,) fitted weights; ``intercept`` the log fit's constant.
        kind: "linear" (u = w . s) or "log" (u = c + w . log s).
    """
    fitted, measured = [], []
    for shares, u in points:
        terms = shares if kind == "linear" else [math.log(max(s, 1e-6)) for s in shares]
        fitted.append(finite_or_none(sum(w * t for w, t in zip(weights, terms, strict=True)) + intercept))
        measured.append(finite_or_none(u))
    traces: list[dict[str, Any]] = []
    if points:
        top = max([v for v in fitted + measured if v is not None], default=1.0)
        traces = [
            {"type": "scatter", "mode": "markers", "name": "completed jobs", "x": fitted, "y": measured,
             "hovertemplate": "fitted %{x:.4g} 1/s<br>measured %{y:.4g} 1/s<extra></extra>"},
            {"type": "scatter", "mode": "lines", "name": "fit = measured", "x": [0, top], "y": [0, top],
             "line": {"dash": "dot", "color": "#9ca3af"}, "hoverinfo": "skip"},
        ]
    layout = base_layout(title, "Fitted utility (1 / s, market clock)", "Measured: 1 / response time (1 / s, market clock)",
                     hovermode="closest", height=300)
    return make_figure(traces, layout)


def price_preview_figure(rows: Sequence[dict[str, Any]], *, types: Sequence[str], entered: float | None) -> Figure:
    """Share per resource type and estimated finish time against budget (price preview).

    Args:
        rows: {"budget": money, "shares": {type: share}, "finish_s": simulated s or None} per budget.
        types: resource type names (one share trace each).
        entered: the budget entered on the form, marked with a vertical line.
    """
    budgets = [finite_or_none(r["budget"]) for r in rows]
    traces: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "lines+markers", "name": f"share of {t}", "x": budgets,
         "y": [finite_or_none(r["shares"].get(t)) for r in rows], "yaxis": "y",
         "hovertemplate": f"budget %{{x:.4g}} {currency()}: {t} share %{{y:.3f}}<extra></extra>"}
        for t in types
    ] if rows else []
    if rows:
        traces.append({
            "type": "scatter", "mode": "lines+markers", "name": "estimated finish (min)", "x": budgets,
            "y": [None if r["finish_s"] is None else finite_or_none(r["finish_s"] / 60.0) for r in rows], "yaxis": "y2",
            "line": {"dash": "dash"},
            "hovertemplate": f"budget %{{x:.4g}} {currency()}: finish in %{{y:.1f}} min (market clock)<extra></extra>",
        })
    shapes = [] if entered is None or not rows else [{
        "type": "line", "xref": "x", "yref": "paper", "x0": entered, "x1": entered, "y0": 0, "y1": 1,
        "line": {"color": "#6b7280", "dash": "dot"},
    }]
    layout = base_layout(
        "Estimate: what a budget would buy now", f"Budget ({currency()}, log scale)", "Share within your queue (0-1)",
        xaxis={"type": "log"}, yaxis={"range": [0, 1.05]}, hovermode="closest", height=320, shapes=shapes,
        yaxis2={"title": {"text": "Estimated finish (min, market clock)"}, "overlaying": "y", "side": "right",
                "rangemode": "tozero", "automargin": True},
        margin={"l": 60, "r": 60, "t": 48, "b": 50},
        legend={"orientation": "h", "x": 0, "y": -0.25, "font": {"size": 11}},
    )
    return make_figure(traces, layout)
