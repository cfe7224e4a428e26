"""Plotly figures of the dashboard: allocation per queue, fairness degree, sharing benefit and loss,
utilisation and prices over simulated time. Plain data in, figure dicts out (``web.charts`` holds the
shared layout)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from marketplace.ledger.money import SLOT, SLOT_SECOND, price_unit
from marketplace.web.charts import (
    COLORWAY,
    RHO,
    Figure,
    Row,
    axis_value,
    base_layout,
    finite_or_none,
    group_by,
    job_share_figure,
    log_axis,
    make_figure,
    time_axis_title,
    time_unit,
    unit_for_rows,
)
from marketplace.web.text import chart_text


def queue_allocation_figure(rows: Iterable[Row], *, resource: str, capacity: float | None = None,
                            unit: tuple[str, float] | None = None) -> Figure:
    """Units of one resource type held by each leaf queue over time, as stacked areas.

    Args:
        rows: {"sim_time": s, "queue": path, "running": units} for one resource type
            (``FairnessSample.running``); a queue missing at a time counts 0.
        capacity: drawn as a dashed line when given.
    """
    rows = list(rows)
    unit = unit_for_rows(rows, unit)
    times = sorted({float(r["sim_time"]) for r in rows})
    traces: list[dict[str, Any]] = []
    for queue, group in group_by(rows, "queue").items():
        held = {float(r["sim_time"]): float(r["running"]) for r in group}
        traces.append({
            "type": "scatter", "mode": "lines", "name": chart_text(queue), "stackgroup": "queues", "line": {"width": 0.5},
            "x": [axis_value(t, unit) for t in times], "y": [held.get(t, 0.0) for t in times],
            "hovertemplate": "%{y:.0f} units<extra>" + chart_text(queue) + "</extra>",
        })
    if traces and capacity is not None:
        traces.append({
            "type": "scatter", "mode": "lines", "name": "capacity", "x": [axis_value(times[0], unit), axis_value(times[-1], unit)],
            "y": [capacity, capacity], "line": {"dash": "dash", "color": "#111827", "width": 1}, "hoverinfo": "skip",
        })
    return make_figure(traces, base_layout(f"Units held per leaf queue: {resource}", time_axis_title(unit), f"{resource} units held",
                                   yaxis={"rangemode": "tozero"}))


def fairness_degree_figure(rows: Iterable[Row], *, resource: str, unit: tuple[str, float] | None = None) -> Figure:
    """Fairness degree rho_i(t) per leaf queue (paper 002, Eq. 2) with the line rho = 1.

    Args:
        rows: {"sim_time": s, "queue": path, "rho": value} for one resource type;
            NaN or infinite rho (no entitlement yet) is drawn as a gap.
    """
    rows = list(rows)
    unit = unit_for_rows(rows, unit)
    traces = [
        {"type": "scatter", "mode": "lines", "name": chart_text(queue), "x": [axis_value(r["sim_time"], unit) for r in group],
         "y": [finite_or_none(r["rho"]) for r in group], "hovertemplate": RHO + " = %{y:.3f}<extra>" + chart_text(queue) + "</extra>"}
        for queue, group in group_by(rows, "queue").items()
    ]
    layout = base_layout(f"Fairness degree {RHO} per leaf queue: {resource}", time_axis_title(unit), f"{RHO} = usage / entitlement",
                     yaxis={"rangemode": "tozero"})
    if traces:
        layout["shapes"] = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": 1, "y1": 1,
                             "line": {"dash": "dot", "color": "#6b7280", "width": 1}}]
    return make_figure(traces, layout)


def sharing_figure(rows: Iterable[Row], *, unit: tuple[str, float] | None = None) -> Figure:
    """Sharing benefit Psi (solid) and sharing loss Omega (dashed) per resource type (paper 002, Eqs. 4-5).

    Args:
        rows: {"sim_time": s, "resource": name, "benefit": Psi, "loss": Omega}.
    """
    rows = list(rows)
    unit = unit_for_rows(rows, unit)
    traces: list[dict[str, Any]] = []
    for k, (resource, group) in enumerate(group_by(rows, "resource").items()):
        x = [axis_value(r["sim_time"], unit) for r in group]
        color = COLORWAY[k % len(COLORWAY)]
        traces.append({"type": "scatter", "mode": "lines", "name": f"Ψ benefit ({resource})", "legendgroup": resource,
                       "x": x, "y": [finite_or_none(r["benefit"]) for r in group], "line": {"color": color}})
        traces.append({"type": "scatter", "mode": "lines", "name": f"Ω loss ({resource})", "legendgroup": resource,
                       "x": x, "y": [finite_or_none(r["loss"]) for r in group], "line": {"color": color, "dash": "dash"}})
    return make_figure(traces, base_layout("Sharing benefit Ψ and sharing loss Ω", time_axis_title(unit), "Ψ (≥ 0) and Ω (≤ 0)"))


def utilisation_figure(rows: Iterable[Row], *, unit: tuple[str, float] | None = None) -> Figure:
    """Cluster utilisation per resource type over time (fraction of capacity in use).

    Args:
        rows: {"sim_time": s, "resource": name, "utilisation": fraction in [0, 1]}.
    """
    rows = list(rows)
    unit = unit_for_rows(rows, unit)
    traces = [
        {"type": "scatter", "mode": "lines", "name": resource, "x": [axis_value(r["sim_time"], unit) for r in group],
         "y": [finite_or_none(r["utilisation"]) for r in group], "hovertemplate": "%{y:.1%}<extra>" + resource + "</extra>"}
        for resource, group in group_by(rows, "resource").items()
    ]
    return make_figure(traces, base_layout("Cluster utilisation per resource type", time_axis_title(unit), "Utilisation",
                                   yaxis={"tickformat": ".0%", "range": [0, 1.05]}))


def price_figure(rows: Iterable[Row], *, unit: tuple[str, float] | None = None) -> Figure:
    """Implied unit price per resource type at each clearing (sum of sub-budgets / capacity).

    Prices hold until the next clearing, so the lines are steps.

    Args:
        rows: {"sim_time": s, "resource": name, "price": money per unit}.
    """
    rows = list(rows)
    unit = unit_for_rows(rows, unit)
    traces = [
        {"type": "scatter", "mode": "lines", "name": resource, "line": {"shape": "hv"},
         "x": [axis_value(r["sim_time"], unit) for r in group], "y": [finite_or_none(r["price"]) for r in group],
         "hovertemplate": "%{y:.4g} per unit<extra>" + resource + "</extra>"}
        for resource, group in group_by(rows, "resource").items()
    ]
    return make_figure(traces, base_layout("Implied price per resource type", time_axis_title(unit),
                                           f"Implied price ({price_unit(SLOT)})", yaxis={"rangemode": "tozero"}))


SOURCE_SYMBOLS = {"reservation": "diamond", "deadline booking": "triangle-up", "pool job": "square"}


def unit_price_figure(data: Mapping[str, Any], *, now: float, unit: tuple[str, float] | None = None,
                      deadline_window_s: float = 3600.0) -> Figure:
    """Every price of the market in one unit, money per slot-second (docs/economy.md), per resource type.
    What tenants paid per slot-second of their work: the spot auction's realised rate so far (solid)
    and each reservation, deadline booking and pool job (markers: price / work). The unit prices,
    labelled as such: the price curve reservation and deadline quotes price from over the coming
    hours (dotted; ERA's, anchored to the spot rate) and the deadline quote's unit price for the next
    ``deadline_window_s`` (the curve's mean over it, a star at now). The reference rate quotes are
    anchored to and the reserve price (dashed levels; docs/economy.md, "A price nobody moves alone").
    Log scale: the prices of one market sit within a small factor of each other.

    Args:
        data: ``market.prices.one_unit_prices``: "spot" rows (sim_time, resource, rate), "curve" and
            "offered" rows (sim_time, resource, price[, source]); "reference" and "reserve": resource -> rate.
    """
    spot, curve, offered = list(data.get("spot", [])), list(data.get("curve", [])), list(data.get("offered", []))
    unit = unit or unit_for_rows([*spot, *curve, *offered, {"sim_time": now}], None)
    names = list(dict.fromkeys([str(r["resource"]) for r in (*spot, *curve, *offered)]))
    traces: list[dict[str, Any]] = []
    for k, name in enumerate(names):
        color = COLORWAY[k % len(COLORWAY)]
        rows = [r for r in spot if r["resource"] == name]
        if rows:
            traces.append({"type": "scatter", "mode": "lines", "name": f"spot, realised ({name})", "legendgroup": name,
                           "line": {"color": color}, "x": [axis_value(r["sim_time"], unit) for r in rows],
                           "y": [finite_or_none(r["rate"]) for r in rows]})
        ahead = [r for r in curve if r["resource"] == name]
        if ahead:
            traces.append({"type": "scatter", "mode": "lines", "name": f"unit price curve, next unit ({name})", "legendgroup": name,
                           "line": {"color": color, "dash": "dot", "shape": "hv"},
                           "x": [axis_value(r["sim_time"], unit) for r in ahead], "y": [finite_or_none(r["price"]) for r in ahead]})
            window = [float(r["price"]) for r in ahead if float(r["sim_time"]) < now + deadline_window_s]
            if window:
                traces.append({"type": "scatter", "mode": "markers", "name": f"deadline unit price, next hour ({name})",
                               "legendgroup": name, "marker": {"symbol": "star", "size": 13, "color": color},
                               "x": [axis_value(now, unit)], "y": [sum(window) / len(window)]})
        xs = [axis_value(r["sim_time"], unit) for r in (*rows, *ahead)] or [axis_value(now, unit)]
        span = [min(xs), max(max(xs), axis_value(now, unit))]
        for key, label, dash in (("reference", "reference rate", "dash"), ("reserve", "reserve price", "longdashdot")):
            level = float(data.get(key, {}).get(name, 0.0) or 0.0)
            if level > 0:  # a log axis: a reserve of 0 (none) is not drawn
                traces.append({"type": "scatter", "mode": "lines", "name": f"{label} ({name})", "legendgroup": name,
                               "line": {"color": color, "dash": dash, "width": 1}, "x": span, "y": [level, level]})
        for source, symbol in SOURCE_SYMBOLS.items():
            points = [r for r in offered if r["resource"] == name and r.get("source") == source]
            if points:
                traces.append({"type": "scatter", "mode": "markers", "name": f"{source}s, paid ({name})", "legendgroup": name,
                               "marker": {"symbol": symbol, "size": 8, "color": color, "opacity": 0.7},
                               "x": [axis_value(r["sim_time"], unit) for r in points],
                               "y": [finite_or_none(r["price"]) for r in points]})
    return make_figure(traces, base_layout("Prices in one unit: paid per slot-second of work, and unit prices", time_axis_title(unit),
                                           price_unit(SLOT_SECOND), yaxis=log_axis(y for t in traces for y in t["y"])))


def dashboard_figures(
    *, resources: list[tuple[str, float]], fairness: list[Row], samples: list[Row], prices: list[Row], shares: list[Row],
    job_labels: Mapping[int, str], now: float, job_until: Mapping[int, float] | None = None,
    unit_prices: Mapping[str, list[Row]] | None = None,
) -> dict[str, Figure]:
    """All dashboard figures by element key, on one time unit chosen from the clock ``now``.

    Keys: ``alloc-<k>`` and ``rho-<k>`` for the k-th resource type, then ``jobs``,
    ``util``, ``sharing``, ``prices`` and ``unit-prices`` (:func:`unit_price_figure`).

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
    figures["unit-prices"] = unit_price_figure(unit_prices or {}, now=now, unit=unit)
    return figures
