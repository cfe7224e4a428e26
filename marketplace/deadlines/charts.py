"""Plotly figures of deadline quotes (paper 003): the cost of urgency. Plain data in, dicts out."""

from __future__ import annotations

from collections.abc import Sequence

from marketplace.ledger.money import money_title
from marketplace.web.charts import Figure, base_layout, finite_or_none, make_figure, time_unit


def deadline_payment_figure(
    curve: Sequence[tuple[float, float, float]], *, quoted: tuple[float, float] | None = None, alpha_err: float = 1.0,
) -> Figure:
    """Payment against deadline for one job's work, with the quoted point marked.

    Args:
        curve: (relative deadline D in simulated seconds, whole-slot payment,
            paper 003's divisible optimum at D' = alpha_err D), money units.
        quoted: (relative deadline, payment) of the quote, or None.
        alpha_err: the estimate range's lower bound the curve was planned with.
    """
    span = max([d for d, _, _ in curve] + ([quoted[0]] if quoted else []), default=0.0)
    unit = time_unit(span)
    x = [round(d / unit[1], 4) for d, _, _ in curve]
    traces = []
    if curve:
        traces = [
            {"type": "scatter", "mode": "lines+markers", "name": "Whole slots (booked)", "line": {"shape": "hv"}, "marker": {"size": 4},
             "x": x, "y": [finite_or_none(p) for _, p, _ in curve], "hovertemplate": "%{y:.4g}<extra>whole slots</extra>"},
            {"type": "scatter", "mode": "lines", "name": "Divisible optimum (paper 003, Alg. 1)", "line": {"dash": "dot"},
             "x": x, "y": [finite_or_none(c) for _, _, c in curve], "hovertemplate": "%{y:.4g}<extra>divisible</extra>"},
        ]
    if quoted is not None:
        traces.append({
            "type": "scatter", "mode": "markers", "name": "Your quote", "marker": {"size": 13, "symbol": "star", "color": "#dc2626"},
            "x": [round(quoted[0] / unit[1], 4)], "y": [finite_or_none(quoted[1])], "hovertemplate": "%{y:.4g}<extra>your quote</extra>",
        })
    planned = "" if alpha_err == 1 else f", planned with D' = {alpha_err:g} D"
    return make_figure(traces, base_layout(
        f"Cost of urgency: payment against deadline{planned}", f"Deadline D from now, market clock ({unit[0]})", money_title("Payment"),
        yaxis={"rangemode": "tozero"}, hovermode="closest",
    ))
