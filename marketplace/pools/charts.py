"""Plotly figures of the VM pools (paper 004): pool size and VMs busy per VM type over simulated time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from marketplace.web.charts import time_unit

Figure = dict[str, Any]
_COLORS = ["#2563eb", "#ea580c", "#16a34a", "#9333ea", "#dc2626", "#0891b2"]


def base_layout(title: str, x_title: str, y_title: str, empty: bool) -> dict[str, Any]:
    layout: dict[str, Any] = {
        "title": {"text": title}, "xaxis": {"title": {"text": x_title}}, "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
        "margin": {"t": 40, "r": 10, "b": 90, "l": 60}, "legend": {"orientation": "h", "y": -0.3}, "height": 360,
    }
    if empty:
        layout["annotations"] = [{"text": "No data yet", "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5}]
    return layout


def pool_figures(series: Mapping[str, Sequence[Mapping[str, Any]]]) -> tuple[Figure, Figure]:
    """(pool size per VM type, utilisation per VM type), both step lines over simulated time."""
    span = max((r["t"] for rows in series.values() for r in rows), default=0.0)
    unit, per = time_unit(span)
    sizes, util = [], []
    for k, (name, rows) in enumerate(series.items()):
        x = [r["t"] / per for r in rows]
        color = _COLORS[k % len(_COLORS)]
        sizes.append({"type": "scatter", "mode": "lines", "line": {"shape": "hv", "color": color}, "name": f"{name} pool", "x": x,
                      "y": [r["size"] for r in rows]})
        sizes.append({"type": "scatter", "mode": "lines", "line": {"shape": "hv", "dash": "dot", "color": color}, "name": f"{name} busy",
                      "x": x, "y": [r["busy"] for r in rows]})
        util.append({"type": "scatter", "mode": "lines", "line": {"shape": "hv", "color": color}, "name": name, "x": x,
                     "y": [r["busy"] / r["size"] if r["size"] else None for r in rows]})
    empty = not any(series.values())
    return (
        {"data": sizes, "layout": base_layout("Pool size and VMs busy per VM type", f"Market clock ({unit})", "VMs", empty)},
        {"data": util, "layout": base_layout("Pool utilisation per VM type", f"Market clock ({unit})", "busy VMs / pool size", empty)},
    )
