"""Plotly figure of the T_wait explorer (paper 002, Sec. 5.2.1 example; Eq. 7)."""

from __future__ import annotations

from typing import Any

from marketplace.web.charts import base_layout, make_figure


def twait_explorer_figure(explorer: dict[str, Any]) -> dict[str, Any]:
    """B's units per slot after the second wave, one line per T_wait (x: simulated s since
    the new demands; y: units of the 12 granted to B in that slot)."""
    traces = [
        {"type": "scatter", "mode": "lines", "line": {"shape": "hv", "width": 3 if k == 0 else 1.5}, "name": label,
         "x": explorer["slots"], "y": units}
        for k, (label, units) in enumerate(explorer["series"].items())
    ]
    layout = base_layout(
        "Starved queue B: units per slot after the new demands (simulated)",
        "Simulated seconds since the new demands arrive", "Units allocated to B (of 12)",
        yaxis={"rangemode": "tozero"}, height=380,
    )
    return make_figure(traces, layout)
