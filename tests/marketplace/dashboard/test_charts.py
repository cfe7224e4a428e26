"""Plotly figure builders: plain rows in, figure dicts out (no database)."""

from __future__ import annotations

import json
import math

import pytest
from plotly.utils import PlotlyJSONEncoder

import marketplace.dashboard.charts
from marketplace.dashboard.charts import (
    dashboard_figures,
    fairness_degree_figure,
    job_share_figure,
    price_figure,
    queue_allocation_figure,
    sharing_figure,
    utilisation_figure,
)
from marketplace.web import charts


@pytest.fixture(autouse=True)
def _every_figure_passes_plotly_validation(monkeypatch):  # type: ignore[no-untyped-def]
    """The builders skip plotly's (slow) validation at run time; here every figure goes through it."""
    real = charts.make_figure

    def checked(traces, layout):  # type: ignore[no-untyped-def]
        fig = real(traces, layout)
        charts.validated(json.loads(json.dumps(fig, cls=PlotlyJSONEncoder)))
        return fig

    # every module that builds figures with it looks the name up at call time in its own namespace
    for module in (charts, marketplace.dashboard.charts):
        monkeypatch.setattr(module, "make_figure", checked)


def _trace(fig: dict, name: str) -> dict:
    matches = [t for t in fig["data"] if t.get("name") == name]
    assert len(matches) == 1, [t.get("name") for t in fig["data"]]
    return matches[0]


def _titles(fig: dict) -> tuple[str, str]:
    return fig["layout"]["xaxis"]["title"]["text"], fig["layout"]["yaxis"]["title"]["text"]


def _is_empty_figure(fig: dict) -> bool:
    notes = [a["text"] for a in fig["layout"].get("annotations", [])]
    return fig["data"] == [] and charts.EMPTY_NOTE in notes


# --- helpers ----------------------------------------------------------------------------------

TIME_UNITS = {
    "zero": (0.0, ("s", 1.0)),
    "two minutes": (120.0, ("s", 1.0)),
    "an hour": (3600.0, ("min", 60.0)),
    "a day": (86400.0, ("h", 3600.0)),
    "a week": (7 * 86400.0, ("d", 86400.0)),
}


@pytest.mark.parametrize("span,expected", TIME_UNITS.values(), ids=TIME_UNITS.keys())
def test_time_unit_suits_the_span(span, expected):
    assert charts.time_unit(span) == expected


HMS = {"zero": (0, "0:00:00"), "seconds": (59.4, "0:00:59"), "hour and more": (3725, "1:02:05"),
       "past a day": (90061, "25:01:01"), "none": (None, "—"), "nan": (math.nan, "—"), "negative": (-5, "0:00:00")}


@pytest.mark.parametrize("seconds,text", HMS.values(), ids=HMS.keys())
def test_format_hms(seconds, text):
    assert charts.format_hms(seconds) == text


# --- allocation per queue ---------------------------------------------------------------------


def test_queue_allocation_stacks_queues_fills_gaps_with_zero_and_draws_capacity():
    rows = [
        {"sim_time": 0, "queue": "root.b", "running": 4},
        {"sim_time": 0, "queue": "root.a", "running": 6},
        {"sim_time": 60, "queue": "root.a", "running": 10},  # root.b has no sample at 60 s
    ]
    fig = queue_allocation_figure(rows, resource="map", capacity=10, unit=("s", 1.0))
    assert [t["name"] for t in fig["data"]] == ["root.a", "root.b", "capacity"]
    a, b = _trace(fig, "root.a"), _trace(fig, "root.b")
    assert list(a["x"]) == [0, 60] and list(a["y"]) == [6, 10]
    assert list(b["y"]) == [4, 0]
    assert a["stackgroup"] == b["stackgroup"] == "queues"
    cap = _trace(fig, "capacity")
    assert list(cap["y"]) == [10, 10] and "stackgroup" not in cap
    assert _titles(fig) == ("Market clock (s)", "map units held")
    assert "map" in fig["layout"]["title"]["text"]


def test_queue_allocation_converts_time_to_the_unit():
    rows = [{"sim_time": 7200, "queue": "q", "running": 1}]
    fig = queue_allocation_figure(rows, resource="map", unit=("h", 3600.0))
    assert list(fig["data"][0]["x"]) == [2.0]
    assert _titles(fig)[0] == "Market clock (h)"


def test_queue_allocation_empty_keeps_axis_titles():
    fig = queue_allocation_figure([], resource="reduce", capacity=5)
    assert _is_empty_figure(fig)
    assert _titles(fig) == ("Market clock (s)", "reduce units held")


# --- fairness ---------------------------------------------------------------------------------


def test_fairness_degree_one_line_per_queue_with_gaps_for_undefined_rho_and_a_line_at_one():
    rows = [
        {"sim_time": 0, "queue": "root.a", "rho": math.nan},
        {"sim_time": 60, "queue": "root.a", "rho": 1.25},
        {"sim_time": 60, "queue": "root.b", "rho": math.inf},
        {"sim_time": 120, "queue": "root.b", "rho": 0.5},
    ]
    fig = fairness_degree_figure(rows, resource="map", unit=("s", 1.0))
    assert list(_trace(fig, "root.a")["y"]) == [None, 1.25]
    assert list(_trace(fig, "root.b")["y"]) == [None, 0.5]
    assert list(_trace(fig, "root.b")["x"]) == [60, 120]
    assert fig["layout"]["shapes"][0]["y0"] == 1
    assert _titles(fig) == ("Market clock (s)", "\N{GREEK SMALL LETTER RHO} = usage / entitlement")
    json.dumps(fig, cls=PlotlyJSONEncoder)  # no NaN or inf reaches the browser


def test_fairness_degree_empty():
    fig = fairness_degree_figure([], resource="map")
    assert _is_empty_figure(fig) and "shapes" not in fig["layout"]


def test_sharing_figure_has_benefit_and_loss_per_resource():
    rows = [
        {"sim_time": 0, "resource": "map", "benefit": 0.0, "loss": -0.5},
        {"sim_time": 60, "resource": "map", "benefit": 0.3, "loss": -0.1},
        {"sim_time": 0, "resource": "reduce", "benefit": 0.2, "loss": 0.0},
    ]
    fig = sharing_figure(rows, unit=("s", 1.0))
    assert [t["name"] for t in fig["data"]] == ["Ψ benefit (map)", "Ω loss (map)", "Ψ benefit (reduce)", "Ω loss (reduce)"]
    assert list(_trace(fig, "Ω loss (map)")["y"]) == [-0.5, -0.1]
    assert list(_trace(fig, "Ψ benefit (map)")["y"]) == [0.0, 0.3]
    assert _trace(fig, "Ω loss (map)")["line"]["dash"] == "dash"
    assert _trace(fig, "Ω loss (map)")["line"]["color"] == _trace(fig, "Ψ benefit (map)")["line"]["color"]
    assert _titles(fig) == ("Market clock (s)", "Ψ (≥ 0) and Ω (≤ 0)")
    assert _is_empty_figure(sharing_figure([]))


# --- utilisation and prices -------------------------------------------------------------------


def test_utilisation_per_resource_as_percent_axis():
    rows = [
        {"sim_time": 0, "resource": "map", "utilisation": 0.0},
        {"sim_time": 60, "resource": "map", "utilisation": 0.8},
        {"sim_time": 60, "resource": "reduce", "utilisation": 0.25},
    ]
    fig = utilisation_figure(rows, unit=("min", 60.0))
    assert list(_trace(fig, "map")["y"]) == [0.0, 0.8] and list(_trace(fig, "map")["x"]) == [0.0, 1.0]
    assert list(_trace(fig, "reduce")["y"]) == [0.25]
    assert fig["layout"]["yaxis"]["tickformat"] == ".0%"
    assert _titles(fig) == ("Market clock (min)", "Utilisation")
    assert _is_empty_figure(utilisation_figure([]))


def test_price_figure_steps_per_resource():
    rows = [
        {"sim_time": 10, "resource": "reduce", "price": 2.5},
        {"sim_time": 10, "resource": "map", "price": 1.5},
        {"sim_time": 30, "resource": "map", "price": 3.0},
    ]
    fig = price_figure(rows, unit=("s", 1.0))
    assert [t["name"] for t in fig["data"]] == ["map", "reduce"]
    assert list(_trace(fig, "map")["y"]) == [1.5, 3.0] and list(_trace(fig, "map")["x"]) == [10, 30]
    assert _trace(fig, "map")["line"]["shape"] == "hv"
    assert _titles(fig) == ("Market clock (s)", "Implied price (credits per slot)")
    assert _is_empty_figure(price_figure([]))


# --- job shares -------------------------------------------------------------------------------


def test_job_share_figure_one_step_line_per_job_and_resource_with_labels():
    rows = [
        {"sim_time": 0, "job_id": 7, "resource": "map", "share": 1.0},
        {"sim_time": 0, "job_id": 7, "resource": "reduce", "share": 0.0},
        {"sim_time": 60, "job_id": 7, "resource": "map", "share": 0.4},
        {"sim_time": 60, "job_id": 9, "resource": "map", "share": 0.6},
    ]
    fig = job_share_figure(rows, labels={7: "#7 etl"}, unit=("s", 1.0))
    assert [t["name"] for t in fig["data"]] == ["#7 etl · map", "#7 etl · reduce", "#9 · map"]
    assert list(_trace(fig, "#7 etl · map")["y"]) == [1.0, 0.4]
    assert list(_trace(fig, "#9 · map")["x"]) == [60]
    assert _trace(fig, "#9 · map")["line"]["shape"] == "hv"
    assert _titles(fig) == ("Market clock (s)", "Share s_ij")
    assert _is_empty_figure(job_share_figure([]))


# --- the dashboard set ------------------------------------------------------------------------


def test_dashboard_figures_keys_split_by_resource_and_share_one_time_unit():
    fairness = [
        {"sim_time": 3600, "queue": "root.a", "resource": "map", "rho": 1.0, "running": 3},
        {"sim_time": 3600, "queue": "root.a", "resource": "reduce", "rho": 0.5, "running": 1},
    ]
    samples = [{"sim_time": 3600, "resource": "map", "utilisation": 0.3, "benefit": 0.0, "loss": 0.0}]
    figs = dashboard_figures(
        resources=[("map", 10), ("reduce", 5)], fairness=fairness, samples=samples, prices=[], shares=[],
        job_labels={}, now=2 * 86400,
    )
    assert set(figs) == {"alloc-0", "alloc-1", "rho-0", "rho-1", "jobs", "util", "sharing", "prices", "unit-prices"}
    assert list(_trace(figs["alloc-0"], "root.a")["y"]) == [3]
    assert list(_trace(figs["alloc-1"], "root.a")["y"]) == [1]
    assert list(_trace(figs["rho-1"], "root.a")["y"]) == [0.5]
    assert list(_trace(figs["util"], "map")["x"]) == [1.0]  # hours: the clock is at two days
    assert all(_titles(f)[0] == "Market clock (h)" for f in figs.values())
    assert _is_empty_figure(figs["prices"]) and _is_empty_figure(figs["jobs"])
    json.dumps(figs, cls=PlotlyJSONEncoder)


def test_validated_rejects_unknown_properties():
    with pytest.raises(ValueError):
        charts.validated({"data": [{"type": "scatter", "colour": "red"}], "layout": {}})


def test_figures_keep_zoom_across_updates():
    fig = utilisation_figure([{"sim_time": 0, "resource": "map", "utilisation": 0.1}])
    assert fig["layout"]["uirevision"] == "keep"


def test_job_share_holds_the_last_share_until_the_job_ends_and_marks_short_series():
    rows = [{"sim_time": 0, "job_id": 7, "resource": "map", "share": 0.5},
            {"sim_time": 0, "job_id": 9, "resource": "map", "share": 0.5}]
    fig = job_share_figure(rows, until={7: 120.0, 9: 0.0}, unit=("s", 1.0))
    seven, nine = _trace(fig, "#7 · map"), _trace(fig, "#9 · map")
    assert list(seven["x"]) == [0, 120.0] and list(seven["y"]) == [0.5, 0.5]
    assert list(nine["x"]) == [0]  # no extension backwards or in place
    assert "markers" in seven["mode"]
    long = [{"sim_time": t, "job_id": 1, "resource": "map", "share": 0.1} for t in range(100)]
    assert job_share_figure(long)["data"][0]["mode"] == "lines"


def test_job_share_relative_to_submission_uses_the_jobs_own_span():
    rows = [{"sim_time": 10_000, "job_id": 3, "resource": "map", "share": 0.5},
            {"sim_time": 10_060, "job_id": 3, "resource": "map", "share": 1.0}]
    fig = job_share_figure(rows, until={3: 10_180}, origin=10_000)
    assert list(fig["data"][0]["x"]) == [0.0, 60.0, 180.0]
    assert _titles(fig)[0] == "Market clock since submission (s)"
    empty = job_share_figure([], origin=50.0)
    assert _is_empty_figure(empty) and _titles(empty)[0] == "Market clock since submission (s)"


def test_a_long_job_name_keeps_its_resource_type_in_the_legend():
    from marketplace.web.charts import job_share_figure

    rows = [{"sim_time": 0.0, "job_id": 7, "resource": r, "share": 0.5} for r in ("map", "reduce")]
    fig = job_share_figure(rows, labels={7: "#7 " + "a-very-long-job-name-" * 4})
    names = [t["name"] for t in fig["data"]]
    assert len(set(names)) == 2 and names[0].endswith("· map") and names[1].endswith("· reduce") and all("…" in n for n in names)
