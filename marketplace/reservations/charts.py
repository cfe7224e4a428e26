"""Plotly figures of ERA reservations (paper 001): the price of every start of a quote,
the price curve over the coming horizon, promised against available capacity, and
revenue and welfare over time. Plain data in, figure dicts out (as ``charts.py``).

Time axes are simulated time on the market clock, in a unit that suits the span.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from marketplace.ledger.money import SLOT_SECOND, currency, money_title, price_unit
from marketplace.web.charts import Figure, axis_value, base_layout, finite_or_none, make_figure, time_axis_title, time_unit


def quote_figure(offers: Sequence[Sequence[float]], *, start: float, alternatives: Iterable[Sequence[float]],
                 units: int, duration: float) -> Figure:
    """Price of the whole reservation for every feasible start (money), the cheapest
    start marked with a star and the next cheapest as alternatives (EC2 Capacity Blocks'
    offerings).

    Args:
        offers: [start s, price] pairs (price None: no room; drawn as a gap).
        start: the quoted (cheapest) start, s.
        alternatives: [start s, price] of the next cheapest starts.
    """
    times = [float(t) for t, _ in offers]
    unit = time_unit(max(times, default=0.0))
    traces: list[dict[str, Any]] = []
    if offers:
        traces.append({
            "type": "scatter", "mode": "lines+markers", "name": "Price of this start", "marker": {"size": 4}, "connectgaps": False,
            "x": [axis_value(t, unit) for t in times], "y": [finite_or_none(p) for _, p in offers],
            "hovertemplate": "start %{x:.2f} " + unit[0] + "<br>price %{y:.4f} " + currency() + "<extra></extra>",
        })
        price = next((p for t, p in offers if float(t) == float(start)), None)
        traces.append({
            "type": "scatter", "mode": "markers", "name": "Cheapest (quoted)", "x": [axis_value(start, unit)], "y": [finite_or_none(price)],
            "marker": {"symbol": "star", "size": 16, "color": "#16a34a", "line": {"width": 1, "color": "#14532d"}},
        })
        alt = list(alternatives)
        if alt:
            traces.append({
                "type": "scatter", "mode": "markers", "name": "Next cheapest", "x": [axis_value(t, unit) for t, _ in alt],
                "y": [finite_or_none(p) for _, p in alt], "marker": {"symbol": "diamond", "size": 11, "color": "#ea580c"},
            })
    title = f"Price of {units} units for {duration:g} s, by start"
    return make_figure(traces, base_layout(title, f"Start, {time_axis_title(unit).lower()}", money_title("Price of the reservation")))


def price_curve_figure(curve: Mapping[str, Any]) -> Figure:
    """The next unit's price per coming slot, per slot-second (the market's one unit of price), from
    the predictor, the promised and busy capacity and the auction's queued work (paper 001, Alg. 1
    line 7 with i = 1; anchored to the spot market's realised rate once it has sold)."""
    times = list(curve["times"])
    unit = time_unit(max(times, default=0.0))
    traces = []
    if times:
        traces.append({
            "type": "scatter", "mode": "lines", "line": {"shape": "hv"}, "name": f"{curve['resource']}: next unit",
            "x": [axis_value(t, unit) for t in times], "y": [finite_or_none(p) for p in curve["slot_second_price"]],
        })
    slot = curve["slot_seconds"]
    anchor = "anchored to the spot rate" if curve.get("anchored") else "no spot sale yet: the reserve price"
    # the detail goes in plotly's subtitle, a smaller line under the title: one long title was clipped at the chart's
    # width, and a <br><sup> second line overlapped the first (superscript is raised into the line above)
    layout = base_layout(f"Unit price over the coming horizon: {curve['resource']}", time_axis_title(unit), price_unit(SLOT_SECOND),
                         yaxis={"rangemode": "tozero"}, margin={"l": 60, "r": 10, "t": 70, "b": 50})
    layout["title"]["subtitle"] = {"text": f"slot = {slot:g} s; {anchor}", "font": {"size": 12, "color": "#4b5563"}}
    return make_figure(traces, layout)


def capacity_figure(curve: Mapping[str, Any]) -> Figure:
    """Per coming slot: units promised to reservations and bookings, units the auction's running
    tasks still hold (never pre-empted), and the units still available."""
    times = list(curve["times"])
    unit = time_unit(max(times, default=0.0))
    traces = []
    if times:
        x = [axis_value(t, unit) for t in times]
        cap = int(curve["capacity"])
        busy = list(curve.get("busy") or [0] * len(times))
        traces = [
            {"type": "scatter", "mode": "lines", "line": {"shape": "hv"}, "stackgroup": "units", "name": "Promised",
             "x": x, "y": list(curve["promised"])},
            {"type": "scatter", "mode": "lines", "line": {"shape": "hv"}, "stackgroup": "units", "name": "Running tasks",
             "x": x, "y": busy},
            {"type": "scatter", "mode": "lines", "line": {"shape": "hv"}, "stackgroup": "units", "name": "Available",
             "x": x, "y": [max(cap - p - b, 0) for p, b in zip(curve["promised"], busy, strict=True)]},
        ]
    # quantities in the unit of the dashboard's allocation chart ("map units held"): units of the named type
    return make_figure(traces, base_layout(f"Promised, busy and available {curve['resource']} units", time_axis_title(unit),
                                           f"{curve['resource']} units", yaxis={"rangemode": "tozero"}))


def revenue_figure(rows: Sequence[Mapping[str, float]]) -> Figure:
    """Cumulative revenue of reservations and welfare (values of completed booked jobs), by start."""
    unit = time_unit(max((r["time"] for r in rows), default=0.0))
    traces = []
    if rows:
        x = [axis_value(r["time"], unit) for r in rows]
        traces = [
            {"type": "scatter", "mode": "lines", "line": {"shape": "hv"}, "name": "Revenue", "x": x,
             "y": [finite_or_none(r["revenue"]) for r in rows]},
            {"type": "scatter", "mode": "lines", "line": {"shape": "hv"}, "name": "Welfare (completed)", "x": x,
             "y": [finite_or_none(r["welfare"]) for r in rows]},
        ]
    return make_figure(traces, base_layout("Revenue and welfare of reservations", f"Reservation start, {time_axis_title(unit).lower()}",
                                   money_title("Cumulative amount"), yaxis={"rangemode": "tozero"}))
