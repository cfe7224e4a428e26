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

from marketplace.money import ABACUS_PRICE_UNIT, price_unit

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
_COLORWAY = ["#2563eb", "#ea580c", "#16a34a", "#9333ea", "#dc2626", "#0891b2", "#ca8a04", "#db2777", "#4b5563", "#65a30d"]
EMPTY_NOTE = "No data yet"
_RHO = "\N{GREEK SMALL LETTER RHO}"  # the fairness degree's symbol in chart titles (paper 002)


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


def _finite(value: Any) -> float | None:
    """A float to 6 significant digits (all a chart shows; it halves the JSON), or None
    (a gap in the line) for missing, NaN and infinite values."""
    if value is None:
        return None
    value = float(value)
    return float(f"{value:.6g}") if math.isfinite(value) else None


def _x(seconds: Any, unit: tuple[str, float]) -> float:
    """Simulated seconds in the axis unit, rounded to 1/10000 of the unit."""
    return round(float(seconds) / unit[1], 4)


def _unit_for(rows: list[Row], unit: tuple[str, float] | None) -> tuple[str, float]:
    if unit is not None:
        return unit
    return time_unit(max((float(r["sim_time"]) for r in rows), default=0.0))


def _layout(title: str, x_title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    axis = {"gridcolor": "#e5e7eb", "zerolinecolor": "#d1d5db", "linecolor": "#9ca3af", "automargin": True}
    layout: dict[str, Any] = {
        "title": {"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 15}},
        "font": {"family": _FONT, "size": 12, "color": "#1f2937"},
        "colorway": _COLORWAY,
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


def _figure(traces: list[dict[str, Any]], layout: dict[str, Any]) -> Figure:
    """The figure dict. Built directly rather than through ``go.Figure(...).to_dict()``: plotly's
    validation costs about 0.1 s per figure, too much for a dashboard polled every few seconds;
    the tests pass every builder's output through ``go.Figure`` instead."""
    if not traces:
        layout["annotations"] = [{
            "text": EMPTY_NOTE, "showarrow": False, "xref": "paper", "yref": "paper", "x": 0.5, "y": 0.5,
            "font": {"size": 14, "color": "#6b7280"},
        }]
    return {"data": traces, "layout": layout}


def validated(figure: Figure) -> Figure:
    """``figure`` checked by plotly's schema (raises ValueError on an unknown property or bad value)."""
    return go.Figure(figure).to_dict()


def _time_title(unit: tuple[str, float]) -> str:
    return f"Simulated time ({unit[0]})"


def _by_key(rows: Iterable[Row], key: str) -> dict[str, list[Row]]:
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        groups[str(r[key])].append(r)
    return dict(sorted(groups.items()))


def queue_allocation_figure(rows: Iterable[Row], *, resource: str, capacity: float | None = None,
                            unit: tuple[str, float] | None = None) -> Figure:
    """Units of one resource type held by each leaf queue over time, as stacked areas.

    Args:
        rows: {"sim_time": s, "queue": path, "running": units} for one resource type
            (``FairnessSample.running``); a queue missing at a time counts 0.
        capacity: drawn as a dashed line when given.
    """
    rows = list(rows)
    unit = _unit_for(rows, unit)
    times = sorted({float(r["sim_time"]) for r in rows})
    traces: list[dict[str, Any]] = []
    for queue, group in _by_key(rows, "queue").items():
        held = {float(r["sim_time"]): float(r["running"]) for r in group}
        traces.append({
            "type": "scatter", "mode": "lines", "name": queue, "stackgroup": "queues", "line": {"width": 0.5},
            "x": [_x(t, unit) for t in times], "y": [held.get(t, 0.0) for t in times],
            "hovertemplate": "%{y:.0f} units<extra>" + queue + "</extra>",
        })
    if traces and capacity is not None:
        traces.append({
            "type": "scatter", "mode": "lines", "name": "capacity", "x": [_x(times[0], unit), _x(times[-1], unit)],
            "y": [capacity, capacity], "line": {"dash": "dash", "color": "#111827", "width": 1}, "hoverinfo": "skip",
        })
    return _figure(traces, _layout(f"Units held per leaf queue: {resource}", _time_title(unit), f"{resource} units held",
                                   yaxis={"rangemode": "tozero"}))


def fairness_degree_figure(rows: Iterable[Row], *, resource: str, unit: tuple[str, float] | None = None) -> Figure:
    """Fairness degree rho_i(t) per leaf queue (paper 002, Eq. 2) with the line rho = 1.

    Args:
        rows: {"sim_time": s, "queue": path, "rho": value} for one resource type;
            NaN or infinite rho (no entitlement yet) is drawn as a gap.
    """
    rows = list(rows)
    unit = _unit_for(rows, unit)
    traces = [
        {"type": "scatter", "mode": "lines", "name": queue, "x": [_x(r["sim_time"], unit) for r in group],
         "y": [_finite(r["rho"]) for r in group], "hovertemplate": _RHO + " = %{y:.3f}<extra>" + queue + "</extra>"}
        for queue, group in _by_key(rows, "queue").items()
    ]
    layout = _layout(f"Fairness degree {_RHO} per leaf queue: {resource}", _time_title(unit), f"{_RHO} = usage / entitlement",
                     yaxis={"rangemode": "tozero"})
    if traces:
        layout["shapes"] = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": 1, "y1": 1,
                             "line": {"dash": "dot", "color": "#6b7280", "width": 1}}]
    return _figure(traces, layout)


def sharing_figure(rows: Iterable[Row], *, unit: tuple[str, float] | None = None) -> Figure:
    """Sharing benefit Psi (solid) and sharing loss Omega (dashed) per resource type (paper 002, Eqs. 4-5).

    Args:
        rows: {"sim_time": s, "resource": name, "benefit": Psi, "loss": Omega}.
    """
    rows = list(rows)
    unit = _unit_for(rows, unit)
    traces: list[dict[str, Any]] = []
    for k, (resource, group) in enumerate(_by_key(rows, "resource").items()):
        x = [_x(r["sim_time"], unit) for r in group]
        color = _COLORWAY[k % len(_COLORWAY)]
        traces.append({"type": "scatter", "mode": "lines", "name": f"Ψ benefit ({resource})", "legendgroup": resource,
                       "x": x, "y": [_finite(r["benefit"]) for r in group], "line": {"color": color}})
        traces.append({"type": "scatter", "mode": "lines", "name": f"Ω loss ({resource})", "legendgroup": resource,
                       "x": x, "y": [_finite(r["loss"]) for r in group], "line": {"color": color, "dash": "dash"}})
    return _figure(traces, _layout("Sharing benefit Ψ and sharing loss Ω", _time_title(unit), "Ψ (≥ 0) and Ω (≤ 0)"))


def utilisation_figure(rows: Iterable[Row], *, unit: tuple[str, float] | None = None) -> Figure:
    """Cluster utilisation per resource type over time (fraction of capacity in use).

    Args:
        rows: {"sim_time": s, "resource": name, "utilisation": fraction in [0, 1]}.
    """
    rows = list(rows)
    unit = _unit_for(rows, unit)
    traces = [
        {"type": "scatter", "mode": "lines", "name": resource, "x": [_x(r["sim_time"], unit) for r in group],
         "y": [_finite(r["utilisation"]) for r in group], "hovertemplate": "%{y:.1%}<extra>" + resource + "</extra>"}
        for resource, group in _by_key(rows, "resource").items()
    ]
    return _figure(traces, _layout("Cluster utilisation per resource type", _time_title(unit), "Utilisation",
                                   yaxis={"tickformat": ".0%", "range": [0, 1.05]}))


def price_figure(rows: Iterable[Row], *, unit: tuple[str, float] | None = None) -> Figure:
    """Implied unit price per resource type at each clearing (sum of sub-budgets / capacity).

    Prices hold until the next clearing, so the lines are steps.

    Args:
        rows: {"sim_time": s, "resource": name, "price": money per unit}.
    """
    rows = list(rows)
    unit = _unit_for(rows, unit)
    traces = [
        {"type": "scatter", "mode": "lines", "name": resource, "line": {"shape": "hv"},
         "x": [_x(r["sim_time"], unit) for r in group], "y": [_finite(r["price"]) for r in group],
         "hovertemplate": "%{y:.4g} per unit<extra>" + resource + "</extra>"}
        for resource, group in _by_key(rows, "resource").items()
    ]
    return _figure(traces, _layout("Implied price per resource type", _time_title(unit), f"Implied price ({price_unit(ABACUS_PRICE_UNIT)})",
                                   yaxis={"rangemode": "tozero"}))


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
        x_title = f"Simulated time since submission ({unit[0]})"
        rows = [{**r, "sim_time": float(r["sim_time"]) - origin} for r in rows]
        until = {k: float(v) - origin for k, v in until.items()}
    unit = _unit_for(rows, unit)
    groups: dict[tuple[int, str], list[Row]] = defaultdict(list)
    for r in rows:
        groups[(int(r["job_id"]), str(r["resource"]))].append(r)
    traces = []
    for (job_id, resource), group in sorted(groups.items()):
        name = f"{labels.get(job_id, f'#{job_id}')} · {resource}"
        legend = name if len(name) <= LEGEND_CHARS else f"{name[:LEGEND_CHARS - 1]}…"  # the hover keeps it whole
        times = [float(r["sim_time"]) for r in group]
        shares = [_finite(r["share"]) for r in group]
        end = until.get(job_id)
        if end is not None and end > times[-1]:
            times.append(float(end))
            shares.append(shares[-1])
        traces.append({
            "type": "scatter", "mode": "lines+markers" if len(group) <= 30 else "lines", "marker": {"size": 5},
            "name": legend, "line": {"shape": "hv"}, "legendgroup": str(job_id),
            "x": [_x(t, unit) for t in times], "y": shares, "hovertemplate": "%{y:.1%}<extra>" + name + "</extra>",
        })
    extra: dict[str, Any] = {"yaxis": {"tickformat": ".2~%", "rangemode": "tozero"}}
    if origin is not None:
        extra["xaxis"] = {"rangemode": "nonnegative"}
    return _figure(traces, _layout(title, x_title or _time_title(unit), "Share s_ij", **extra))


def dashboard_figures(
    *, resources: list[tuple[str, float]], fairness: list[Row], samples: list[Row], prices: list[Row], shares: list[Row],
    job_labels: Mapping[int, str], now: float, job_until: Mapping[int, float] | None = None,
) -> dict[str, Figure]:
    """All dashboard figures by element key, on one time unit chosen from the clock ``now``.

    Keys: ``alloc-<k>`` and ``rho-<k>`` for the k-th resource type, then ``jobs``,
    ``util``, ``sharing`` and ``prices``.

    Args:
        resources: (name, capacity) in stage order.
        fairness: rows for ``queue_allocation_figure`` / ``fairness_degree_figure``, with "resource".
        samples: rows for ``utilisation_figure`` / ``sharing_figure``.
        prices: rows for ``price_figure``; shares, job_labels, job_until: for ``job_share_figure``.
    """
    unit = time_unit(now)
    by_resource: dict[str, list[Row]] = defaultdict(list)
    for r in fairness:
        by_resource[str(r["resource"])].append(r)
    figures: dict[str, Figure] = {}
    for k, (name, capacity) in enumerate(resources):
        figures[f"alloc-{k}"] = queue_allocation_figure(by_resource.get(name, []), resource=name, capacity=capacity, unit=unit)
        figures[f"rho-{k}"] = fairness_degree_figure(by_resource.get(name, []), resource=name, unit=unit)
    figures["jobs"] = job_share_figure(shares, labels=job_labels, until=job_until, unit=unit)
    figures["util"] = utilisation_figure(samples, unit=unit)
    figures["sharing"] = sharing_figure(samples, unit=unit)
    figures["prices"] = price_figure(prices, unit=unit)
    return figures
