"""Plotly figure builders for the pages: plain data in, figure dicts out.

Every builder takes rows as mappings (``QuerySet.values()`` rows or dicts built
by hand in tests) and returns ``{"data": [...], "layout": {...}}`` ready for
``Plotly.react``. Builders never query the database; downsampling of long
series happens in the selectors, before the rows get here. With no rows a
builder returns a figure without traces whose layout still has its axis titles
and a "no data yet" note, so the page shows a labelled empty chart.

Time on the x axes is simulated time, shown in a unit that suits the span
(seconds, minutes, hours or days; see ``time_unit``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

import plotly.graph_objects as go

from marketplace.web.text import chart_text

Row = Mapping[str, Any]
Figure = dict[str, Any]

# (label, seconds per unit, largest span shown in this unit)
_TIME_UNITS: tuple[tuple[str, float, float], ...] = (
    ("s", 1.0, 180.0),
    ("min", 60.0, 3 * 3600.0),
    ("h", 3600.0, 3 * 86400.0),
    ("d", 86400.0, math.inf),
)
_FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
COLORWAY = ["#2563eb", "#ea580c", "#16a34a", "#9333ea", "#dc2626", "#0891b2", "#ca8a04", "#db2777", "#4b5563", "#65a30d"]
EMPTY_NOTE = "No data yet"
RHO = "\N{GREEK SMALL LETTER RHO}"  # the fairness degree's symbol in chart titles (paper 002)


def time_unit(span_s: float) -> tuple[str, float]:
    """The unit for a time axis covering ``span_s`` simulated seconds: (label, seconds per unit)."""
    for label, size, limit in _TIME_UNITS:
        if span_s <= limit:
            return label, size
    return _TIME_UNITS[-1][0], _TIME_UNITS[-1][1]


LEGEND_CHARS = 40  # a longer job name would squeeze the plot into a sliver beside its legend


def format_hms(seconds: float | None) -> str:
    """Simulated seconds as ``h:mm:ss`` (hours unbounded); an em dash for None."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    total = round(max(seconds, 0.0))
    h, rest = divmod(total, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}"


def finite_or_none(value: Any) -> float | None:
    """A float to 6 significant digits (all a chart shows; it halves the JSON), or None
    (a gap in the line) for missing, NaN and infinite values."""
    if value is None:
        return None
    value = float(value)
    return float(f"{value:.6g}") if math.isfinite(value) else None


def axis_value(seconds: Any, unit: tuple[str, float]) -> float:
    """Simulated seconds in the axis unit, rounded to 1/10000 of the unit."""
    return round(float(seconds) / unit[1], 4)


def unit_for_rows(rows: list[Row], unit: tuple[str, float] | None) -> tuple[str, float]:
    if unit is not None:
        return unit
    return time_unit(max((float(r["sim_time"]) for r in rows), default=0.0))


def log_axis(values: Iterable[Any]) -> dict[str, Any]:
    """A log-scale axis labelled at 1, 2 and 5 times the powers of ten that span the positive
    finite ``values`` (plotly's own minor labels read "5" for both 0.5 and 0.05), each tick written
    out in full ("0.05", "2"); an axis without such values gets plain decades."""
    positive = [float(v) for v in values if v is not None and math.isfinite(float(v)) and float(v) > 0]
    if not positive:
        return {"type": "log"}
    low, high = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
    ticks = [m * 10.0 ** e for e in range(low, high + 1) for m in (1, 2, 5)]
    ticks = [t for t in ticks if min(positive) / 2.5 <= t <= max(positive) * 2.5]
    return {"type": "log", "tickvals": ticks, "ticktext": [f"{t:.10g}" for t in ticks]}


def base_layout(title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    axis = {"gridcolor": "#e5e7eb", "zerolinecolor": "#d1d5db", "linecolor": "#9ca3af", "automargin": True}
    layout: dict[str, Any] = {
        "title": {"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 15}},
        "font": {"family": _FONT, "size": 12, "color": "#1f2937"},
        "colorway": COLORWAY,
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "margin": {"l": 60, "r": 10, "t": 48, "b": 50},
        "height": 340,
        "hovermode": "x unified",
        # A vertical legend right of the plot: plotly makes room for it however many entries it has
        # (a horizontal one below the plot gets clipped once it wraps).
        "legend": {"orientation": "v", "x": 1.01, "xanchor": "left", "y": 1, "yanchor": "top", "font": {"size": 11}},
        # A constant uirevision keeps the viewer's zoom and hidden traces across Plotly.react updates.
        "uirevision": "keep",
        "xaxis": {**axis, "title": {"text": x_title}},
        "yaxis": {**axis, "title": {"text": y_title}},
    }
    for key, value in extra.items():
        if key in ("xaxis", "yaxis"):
            layout[key] = {**layout[key], **value}
        else:
            layout[key] = value
    return layout


def make_figure(traces: list[dict[str, Any]], layout: dict[str, Any]) -> Figure:
    """The figure dict. Built directly rather than through ``go.Figure(...).to_dict()``: plotly's
    validation costs about 0.1 s per figure, too much for a dashboard polled every few seconds;
    the tests pass every builder's output through ``go.Figure`` instead."""
    if not traces:
        layout["annotations"] = [{
            "text": EMPTY_NOTE, "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5,
            "font": {"size": 14, "color": "#6b7280"},
        }]
        for axis in ("xaxis", "yaxis"):  # plotly's empty default runs from -1: no negative times or amounts on an empty chart
            if layout.get(axis, {}).get("type") != "log":
                layout[axis] = {**layout.get(axis, {}), "range": [0, 1], "rangemode": "tozero"}
    return {"data": traces, "layout": layout}


def validated(figure: Figure) -> Figure:
    """``figure`` checked by plotly's schema (raises ValueError on an unknown property or bad value)."""
    return go.Figure(figure).to_dict()


def time_axis_title(unit: tuple[str, float]) -> str:
    return f"Market clock ({unit[0]})"


def group_by(rows: Iterable[Row], key: str) -> dict[str, list[Row]]:
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        groups[str(r[key])].append(r)
    return dict(sorted(groups.items()))


def job_share_figure(rows: Iterable[Row], *, labels: Mapping[int, str] | None = None, until: Mapping[int, float] | None = None,
                     unit: tuple[str, float] | None = None, title: str = "Auction share within the queue",
                     origin: float | None = None) -> Figure:
    """Jobs' within-queue allocation probabilities s_ij over clearings (paper 000, Sec. 3).

    Shares hold until the next clearing, so the lines are steps; a job's last
    share is drawn on to ``until[job_id]`` (its finish time, or now while it runs).
    Short series get markers, so a job seen by a single clearing is still visible. The y axis
    fits the data (from 0): among many jobs in one queue every share is small.

    Args:
        rows: {"sim_time": s, "job_id": id, "resource": name, "share": fraction}, in clearing order.
        labels: job id -> legend name (default "job <id>").
        until: job id -> simulated time (s) up to which its last share holds.
        origin: when given, time is shown relative to it ("since submission"), in a unit
            chosen from the span of the data (unless ``unit`` is given).
    """
    rows = list(rows)
    labels, until = labels or {}, until or {}
    x_title = None
    if origin is not None:
        span = max([float(r["sim_time"]) for r in rows] + [float(t) for t in until.values()], default=origin) - origin
        unit = unit or time_unit(span)
        x_title = f"Market clock since submission ({unit[0]})"
        rows = [{**r, "sim_time": float(r["sim_time"]) - origin} for r in rows]
        until = {k: float(v) - origin for k, v in until.items()}
    unit = unit_for_rows(rows, unit)
    groups: dict[tuple[int, str], list[Row]] = defaultdict(list)
    for r in rows:
        groups[(int(r["job_id"]), str(r["resource"]))].append(r)
    traces = []
    for (job_id, resource), group in sorted(groups.items()):
        label = labels.get(job_id, f"#{job_id}")
        name = chart_text(f"{label} · {resource}")  # job names are tenants' text: escaped for plotly
        room = max(8, LEGEND_CHARS - len(resource) - 3)  # a long name is cut, its resource type kept (the hover keeps it whole)
        legend = name if len(label) <= room else chart_text(f"{label[:room - 1]}… · {resource}")
        times = [float(r["sim_time"]) for r in group]
        shares = [finite_or_none(r["share"]) for r in group]
        end = until.get(job_id)
        if end is not None and end > times[-1]:
            times.append(float(end))
            shares.append(shares[-1])
        traces.append({
            "type": "scatter", "mode": "lines+markers" if len(group) <= 30 else "lines", "marker": {"size": 5},
            "name": legend, "line": {"shape": "hv"}, "legendgroup": str(job_id),
            "x": [axis_value(t, unit) for t in times], "y": shares, "hovertemplate": "%{y:.1%}<extra>" + name + "</extra>",
        })
    extra: dict[str, Any] = {"yaxis": {"tickformat": ".2~%", "rangemode": "tozero"}}
    if origin is not None:
        extra["xaxis"] = {"rangemode": "nonnegative"}
    return make_figure(traces, base_layout(title, x_title or time_axis_title(unit), "Share s_ij", **extra))
